"""Optional embeddings: quantised vectors, the hybrid ranking, and the fallback to words whenever
the embeddings cannot answer (a save or a turn never fails for them)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from datetime import timedelta

import pytest

from kioku.domain.ltm.memory import Memory, MemoryScope
from kioku.domain.ltm.ports import EmbeddingsUnavailable, RecallSet
from kioku.domain.ltm.ranking import RecallQuery
from kioku.domain.ltm.statuses import SaveStatus, SearchStatus, UpdateStatus
from kioku.domain.ltm.vectors import DIMENSIONS, InvalidVector, cosine, embedded_text, quantise
from kioku.playground.standins import standin_embedding
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.ltm import (
    create_long_term_memory,
    recall_context,
    update_long_term_memory,
)
from kioku.services.ltm_search import search_long_term_memory
from tests.unit.ltm_fakes import (
    ALICE,
    BOB,
    HERE,
    NOW,
    SERVER,
    FakeMemoryStore,
    make_turn,
    member_lookup,
    members,
    settings,
)

SERVER_SCOPE = MemoryScope.server(SERVER, 1)
BOBS = MemoryScope.personal(BOB.user_id, 1)
ALICES = MemoryScope.personal(ALICE.user_id, 1)
PORTO = "{user} lives in Porto with two flatmates, in an old flat up the hill above the river"
"""Longer than the chatter: its name alone would not rank it first."""
FILLER = (
    "{user} went to the board game evening and talked about the weather",
    "{user} watched the football match and complained about the referee",
    "{user} cooked soup on Sunday and shared it with the neighbours",
    "{user} took the train to the coast and came back late",
)


class StandInEmbedder:
    """The embeddings stand-in's vectors without its HTTP server (the integration tests use that):
    counts its calls, and fails when told to."""

    def __init__(self, *, failing: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.failing = failing

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        self.calls.append(list(texts))
        if self.failing:
            raise EmbeddingsUnavailable("the endpoint is down")
        return [quantise(standin_embedding(text, DIMENSIONS)) for text in texts]


def vector(content: str) -> bytes:
    """A memory's embedding, as a save computes it."""
    return quantise(standin_embedding(embedded_text(content), DIMENSIONS))


def memory(scope: MemoryScope, memory_id: int, content: str, age_days: float = 0, *, embedded=True) -> Memory:
    when = NOW - timedelta(days=age_days)
    return Memory(
        scope,
        str(memory_id),
        content,
        ALICE.user_id,
        when,
        when,
        origin=HERE,
        embedding=vector(content) if embedded else None,
    )


def bobs_many_memories(*, embedded: bool = True) -> dict[str, tuple[Memory, ...]]:
    """Bob's three hundred memories of chatter, newest first, and, a year old, where he lives."""
    chatter = [
        memory(BOBS, 40000 + n, f"{FILLER[n % len(FILLER)]} (day {n})", n, embedded=embedded)
        for n in range(300)
    ]
    fact = memory(BOBS, 31337, PORTO, 365, embedded=embedded)
    return {BOB.user_id: (*chatter, fact)}


# -- the vectors --------------------------------------------------------------------------------------


def test_quantised_vectors_keep_their_cosine_and_take_256_bytes():
    rng = random.Random(3)
    for _ in range(20):
        a = [rng.gauss(0, 1) for _ in range(DIMENSIONS)]
        b = [x + rng.gauss(0, 1) for x in a]
        exact = sum(x * y for x, y in zip(a, b, strict=True)) / math.hypot(*a) / math.hypot(*b)
        assert len(quantise(a)) == DIMENSIONS
        assert cosine(quantise(a), quantise(b)) == pytest.approx(exact, abs=0.01)


def test_a_longer_vector_is_cut_to_its_first_256_components_renormalised():
    rng = random.Random(4)
    head = [rng.gauss(0, 1) for _ in range(DIMENSIONS)]
    longer = [*head, *(rng.gauss(0, 5) for _ in range(1280))]
    assert quantise(longer) == quantise(head) == quantise([x * 10 for x in head])


@pytest.mark.parametrize("bad", [[], [0.0] * 8, [1.0, float("nan")], [1.0, "x"], [float("inf")]])
def test_what_is_not_an_embedding_is_refused(bad):
    with pytest.raises(InvalidVector):
        quantise(bad)


# -- ranking ----------------------------------------------------------------------------------------


def recall_for(message: str, personal, embedder=None, *, budget: int = 8000):
    turn = make_turn(user=ALICE, participants=(ALICE, BOB))
    embeddings = TurnEmbeddings(embedder) if embedder else None
    memories = RecallSet(personal=personal)
    return recall_context(turn, memories, query=RecallQuery(message), budget=budget, embeddings=embeddings)


def shown_ids(recall) -> set[str]:
    return {recall.candidates[index].memory.memory_id for index in recall.shown}


def test_a_paraphrase_sharing_no_word_is_recalled_by_meaning_and_missed_by_words_alone():
    # Given Bob's year-old memory that he lives in Porto among three hundred newer ones
    question = "kioku, which city is Bob based in?"

    # When Alice asks in words it does not share with it, with and without embeddings
    lexical = recall_for(question, bobs_many_memories(embedded=False))
    hybrid = recall_for(question, bobs_many_memories(), StandInEmbedder())

    # Then only the hybrid ranking shows it, and both keep to the budget
    assert "31337" not in shown_ids(lexical)
    assert "31337" in shown_ids(hybrid)
    assert len(hybrid.item.content) <= 8000 and len(lexical.item.content) <= 8000


def test_the_query_is_embedded_once_and_only_when_not_everything_fits():
    embedder = StandInEmbedder()
    small = {BOB.user_id: (memory(BOBS, 31337, "{user} lives in Porto"),)}
    assert recall_for("where does Bob live?", small, embedder).left_out == 0
    assert embedder.calls == []  # everything fits: nothing to rank

    recall_for("which city is Bob based in?", bobs_many_memories(), embedder)
    assert embedder.calls == [["which city is Bob based in?"]]


def test_failing_embeddings_rank_by_words_as_if_there_were_none():
    question = "kioku, which city is Bob based in?"
    embedder = StandInEmbedder(failing=True)
    failed = recall_for(question, bobs_many_memories(), embedder)
    lexical = recall_for(question, bobs_many_memories(embedded=False))
    assert failed.shown == lexical.shown and failed.item == lexical.item
    assert len(embedder.calls) == 1


def test_a_memory_saved_without_an_embedding_still_competes_by_its_words():
    # Given the fact asked about has no embedding (saved while embeddings were off)
    personal = bobs_many_memories()
    fact = Memory(
        BOBS,
        "31338",
        "{user} has a dog called Pixel",
        ALICE.user_id,
        NOW - timedelta(days=400),
        NOW - timedelta(days=400),
        origin=HERE,
    )
    personal = {BOB.user_id: (*personal[BOB.user_id], fact)}

    # When Alice asks about it in its own words
    recall = recall_for("what is Bob's dog called?", personal, StandInEmbedder())

    # Then it is shown first: its BM25, scaled, stands for its whole relevance
    assert "31338" in shown_ids(recall)


def test_the_search_finds_a_paraphrase_by_meaning():
    recall = recall_for("what's for lunch?", bobs_many_memories(), StandInEmbedder(), budget=1000)
    turn = make_turn(user=ALICE, participants=(ALICE, BOB))
    assert "31337" not in shown_ids(recall)

    with_meaning = search_long_term_memory(
        {"query": "Bob's home town"}, turn, recall, TurnEmbeddings(StandInEmbedder())
    )
    by_words = search_long_term_memory({"query": "Bob's home town"}, turn, recall)

    assert with_meaning.status == SearchStatus.FOUND
    assert with_meaning.data["memories"][0]["memory_id"] == "31337"
    assert "31337" not in str(by_words.data)


# -- one turn's embeddings ----------------------------------------------------------------------------


def test_a_turn_embeds_each_text_once_and_stops_asking_after_a_failure():
    embedder = StandInEmbedder()
    embeddings = TurnEmbeddings(embedder)
    assert embeddings.embed("hello there") == embeddings.embed("hello there") == vector("hello there")
    assert embedder.calls == [["hello there"]]
    assert embeddings.embed("   ") is None and len(embedder.calls) == 1

    embedder.failing = True
    assert embeddings.embed("something else") is None
    assert embeddings.embed("and more") is None
    assert len(embedder.calls) == 2  # one failure, then no more calls this turn


# -- saving and updating ---------------------------------------------------------------------------------


def save(content: str, store: FakeMemoryStore, embedder, *, limit: int = 100):
    turn = make_turn()
    shown = store.recall(SERVER, 1, [ALICE.user_id], place=turn.place, policy=turn.config.privacy)
    return create_long_term_memory(
        {"memory_content": content, "memory_scope": "target_user", "target_user": "Alice"},
        turn,
        store=store,
        members=members(lambda guild, query: [], member_lookup),
        settings=settings(MAX_PERSONAL_MEMORIES=limit),
        recalled=recall_context(turn, shown),
        embeddings=TurnEmbeddings(embedder),
    )


def test_a_saved_memory_keeps_its_contents_embedding():
    store = FakeMemoryStore()
    result = save("{user} lives in Porto", store, StandInEmbedder())
    assert result.status == SaveStatus.SAVED
    (saved,) = store.memories.values()
    assert saved.embedding == vector("{user} lives in Porto")


def test_a_save_whose_embedding_fails_is_saved_without_one():
    store = FakeMemoryStore()
    result = save("{user} lives in Porto", store, StandInEmbedder(failing=True))
    assert result.status == SaveStatus.SAVED
    (saved,) = store.memories.values()
    assert saved.content == "{user} lives in Porto" and saved.embedding is None


def test_a_close_embedding_alone_never_refuses_a_different_fact():
    # Given Alice lives in Lisbon: the same words but the city, so close in meaning too
    store = FakeMemoryStore()
    store.add(memory(ALICES, 30001, "{user} lives in Lisbon", 30))
    assert cosine(vector("{user} lives in Lisbon"), vector("{user} lives in Porto")) >= 0.5

    # When she moves, Then the new fact is saved: refusing is left to the words (Jaccard)
    assert save("{user} lives in Porto", store, StandInEmbedder()).status == SaveStatus.SAVED


def test_a_full_scope_names_what_is_alike_in_meaning_too():
    store = FakeMemoryStore()
    store.add(memory(ALICES, 30001, "{user} has a dog called Pixel", 30))
    store.add(memory(ALICES, 30002, "{user} works as a nurse", 20))
    result = save("{user}'s pup is Mochi", store, StandInEmbedder(), limit=2)
    assert result.status == SaveStatus.LIMIT_EXCEEDED
    assert result.data["similar"][0]["memory_id"] == "30001"


def test_an_update_replaces_the_embedding_and_drops_it_when_embeddings_fail():
    store = FakeMemoryStore()
    store.add(memory(ALICES, 30001, "{user} lives in Lisbon", 30))

    def update(content: str, embedder) -> None:
        result = update_long_term_memory(
            {"memory_id": 30001, "memory_content": content, "target_user": "Alice"},
            make_turn(),
            store=store,
            members=members(lambda guild, query: [], member_lookup),
            settings=settings(),
            embeddings=TurnEmbeddings(embedder),
        )
        assert result.status == UpdateStatus.UPDATED

    update("{user} lives in Porto", StandInEmbedder())
    (updated,) = store.memories.values()
    assert updated.embedding == vector("{user} lives in Porto")

    update("{user} lives in Braga", StandInEmbedder(failing=True))
    (updated,) = store.memories.values()
    assert updated.content == "{user} lives in Braga" and updated.embedding is None
