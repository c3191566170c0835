"""The ranking's machinery under the recall budget: the indexed BM25 scores what the formula says,
a section's cached index is never used once its book changed, a warm worker ranks as a fresh one,
and the embeddings' first cut by signs keeps the nearest memories (issue 20)."""

from __future__ import annotations

import math
import random
import unicodedata
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.domain.ltm import recall as recall_module
from kioku.domain.ltm.memory import Memory, MemoryScope
from kioku.domain.ltm.notification import show_names
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.ltm.ranking import (
    BM25_B,
    BM25_K1,
    SEMANTIC_WEIGHT,
    SERVER,
    Part,
    RecallQuery,
    index,
    rank,
    terms,
)
from kioku.domain.ltm.recall import SEMANTIC_SHORTLIST, build_recall, rank_recall
from kioku.domain.ltm.stemming import words
from kioku.domain.ltm.vectors import DIMENSIONS, cosine, nearest, quantise, sign_agreement
from kioku.domain.models import Participant
from kioku.services.ltm import recall_context
from tests.unit.ltm_fakes import ALICE, BOB, HERE, NOW, make_turn
from tests.unit.ltm_fakes import SERVER as SERVER_ID

SERVER_SCOPE = MemoryScope.server(SERVER_ID, 1)
BOBS = MemoryScope.personal(BOB.user_id, 1)
VOCABULARY = [
    "cat",
    "dog",
    "Lisbon",
    "Porto",
    "moved",
    "cello",
    "chess",
    "pottery",
    "aquarium",
    "museum",
    "Mia",
    "Noah",
    "Friday",
]


def memory(scope: MemoryScope, memory_id: int, content: str, age_days: float = 0, embedding=None) -> Memory:
    when = NOW - timedelta(days=age_days)
    return Memory(scope, str(memory_id), content, ALICE.user_id, when, when, origin=HERE, embedding=embedding)


def chatter(count: int, first_id: int = 40000, scope: MemoryScope = SERVER_SCOPE) -> list[Memory]:
    rng = random.Random(first_id)
    return [
        memory(scope, first_id + n, " ".join(rng.choices(VOCABULARY, k=rng.randint(3, 9))), age_days=n / 10)
        for n in range(count)
    ]


def shown_ids(recall) -> list[str]:
    return [recall.candidates[number].memory.memory_id for number in recall.shown]


def textbook_bm25(documents: list[list[str]], lengths: list[int], query: dict[str, float]) -> list[float]:
    """Okapi BM25, as written in the books: the reference the index must agree with."""
    n = len(documents)
    average = sum(lengths) / n
    scores = []
    for document, length in zip(documents, lengths, strict=True):
        score = 0.0
        for term, weight in query.items():
            df = sum(term in other for other in documents)
            tf = document.count(term)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
                score += weight * idf * tf * (BM25_K1 + 1) / (tf + norm)
        scores.append(score)
    return scores


@pytest.mark.parametrize("seed", range(5))
def test_the_indexed_bm25_scores_what_the_formula_says_over_parts_and_subsets(seed, monkeypatch):
    from kioku.domain.ltm import ranking

    monkeypatch.setattr(ranking, "NEIGHBOUR_LIFT", 0.0)  # the formula alone: neighbours and
    monkeypatch.setattr(ranking, "FEEDBACK_TERMS", 0)  # feedback have tests of their own
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(VOCABULARY, k=rng.randint(1, 12))) for _ in range(60)]
    ids = [str(10000 + n) for n in range(60)]
    label = "Bob (@bob)"
    # Given the documents in two parts (as two sections), each with its label and ids
    parts = [
        Part(index(texts[:25], label, ids[:25]), 0, SERVER, [0.0] * 25),
        Part(index(texts[25:], label, ids[25:]), 25, SERVER, [0.0] * 35),
    ]
    query = RecallQuery(" ".join(rng.choices(VOCABULARY, k=4)) + " 10007", ("dog Porto",))
    documents = [terms(text) + terms(label) + [memory_id] for text, memory_id in zip(texts, ids, strict=True)]
    lengths = [len(document) for document in documents]
    expected = textbook_bm25(documents, lengths, query.weights())
    lifted = 1 + 0.1  # every document is as new as the newest: the recency lift is whole

    # When ranked whole, and among a subset only
    whole = {place.index: place.relevance / lifted for place in rank(parts, query)}
    subset = list(range(0, 60, 3))
    among = {place.index: place.relevance / lifted for place in rank(parts, query, among=subset)}

    # Then every score is the formula's, the id quoted counts as a word, and the subset is ranked
    # as if it were all there is
    assert whole.keys() == set(range(60))
    assert [whole[n] for n in range(60)] == pytest.approx(expected)
    assert whole[7] > 0
    alone = textbook_bm25([documents[n] for n in subset], [lengths[n] for n in subset], query.weights())
    assert among.keys() == set(subset)
    assert [among[n] for n in subset] == pytest.approx(alone)


def test_a_cached_section_is_never_used_once_its_book_changed():
    # Given a big server whose section a warm worker has ranked (and kept) once; its newest fact
    fact = memory(SERVER_SCOPE, 12345, "Bob's cat is called Miso", 0)
    server = [fact, *chatter(300, first_id=40000)]
    assert "12345" in shown_ids(recall(server, "what is Bob's cat called?", budget=1000))

    # When the fact is rewritten in place (same id, same place in the book, new words)
    rewritten = [memory(SERVER_SCOPE, 12345, "Bob's pet tortoise is called Shelly", 0), *server[1:]]
    after = recall(rewritten, "what is Bob's tortoise called?", budget=1000)

    # Then the next ranking reads the new words, never the old
    assert shown_ids(after)[0] == "12345"
    assert "[#12345] 2025-05-01: Bob's pet tortoise is called Shelly" in after.item.content
    assert "Miso" not in after.item.content
    assert "12345" not in shown_ids(recall(rewritten, "Miso the cat", budget=500))

    # and a memory saved or forgotten since is ranked, or gone
    added = memory(SERVER_SCOPE, 23456, "Carol keeps bees on her roof", 2)
    forgotten = rewritten[5]
    changed = [m for m in rewritten if m is not forgotten] + [added]
    later = recall(changed, "who keeps bees?", budget=1000)
    assert shown_ids(later)[0] == "23456"
    assert forgotten.memory_id not in {c.memory.memory_id for c in later.candidates}


def test_a_server_memory_naming_the_speaker_is_written_for_whoever_speaks_to_whichever_persona():
    server = [memory(SERVER_SCOPE, 31000, "{user} asked {bot} for a haiku", 0), *chatter(300)]
    for speaker, persona in ((ALICE, "Kioku"), (BOB, "Kioku"), (BOB, "Mochi")):
        turn = make_turn(user=speaker)
        turn = replace(turn, config=replace(turn.config, persona=replace(turn.config.persona, name=persona)))
        recalled = build_recall(turn, server, {}, (), budget=1000, query=RecallQuery("a haiku"))
        assert (
            f"[#31000] 2025-05-01: {speaker.display_name} asked {persona} for a haiku"
            in recalled.item.content
        )


def test_a_renamed_person_is_written_and_ranked_by_the_names_they_have_now():
    # Given Bob's memories, recalled (and kept) while his username was bob
    theremin = memory(BOBS, 31337, "{user} plays the theremin", 200)
    memories = RecallSet(personal={BOB.user_id: (*chatter(300, scope=BOBS), theremin)})
    before = recalled_for(BOB, memories, "theremin")
    assert (
        "About Bob (@bob):" in before.item.content and "[#31337] 2024-10-13: Bob plays" in before.item.content
    )

    # When he is still Bob but @robert in the next turn, then Rob
    still_bob = recalled_for(Participant(BOB.user_id, "robert", nickname="Bob"), memories, "theremin")
    rob = recalled_for(Participant(BOB.user_id, "robert", nickname="Rob"), memories, "theremin")

    # Then his memories read, and rank, with his names as they are now
    (first, *_) = rank_recall(still_bob.candidates, still_bob.parts, RecallQuery("robert"))
    assert first.relevance > 0 and still_bob.candidates[first.index].memory.scope == BOBS
    assert "About Rob (@robert):" in rob.item.content and "[#31337] 2024-10-13: Rob plays" in rob.item.content


def recalled_for(person: Participant, memories: RecallSet, message: str):
    turn = make_turn(participants=(person,))
    return recall_context(turn, memories, query=RecallQuery(message), budget=600)


def test_a_warm_worker_ranks_exactly_as_a_fresh_one():
    server = chatter(1000)
    personal = {BOB.user_id: tuple(chatter(200, first_id=60000, scope=BOBS))}
    turn = make_turn(participants=(BOB,))
    query = RecallQuery("who took Mia to the aquarium on Friday?", ("Porto or Lisbon?", "moved again"))
    recall_module.clear_caches()
    cold = recall_context(turn, RecallSet(server=tuple(server), personal=personal), query=query, budget=3000)
    warm = recall_context(turn, RecallSet(server=tuple(server), personal=personal), query=query, budget=3000)
    assert cold.left_out and cold.item.content == warm.item.content and cold.shown == warm.shown


def test_memories_saved_at_the_same_instant_rank_the_same_whatever_order_the_book_gives():
    same_time = [
        memory(SERVER_SCOPE, 30000 + n, f"a note about the cello number {n % 7}") for n in range(300)
    ]
    first = recall(same_time, "the cello note", budget=1500)
    for _ in range(3):
        shuffled = random.Random(_).sample(same_time, len(same_time))
        assert recall(shuffled, "the cello note", budget=1500).item.content == first.item.content


def recall(server, message, budget=8000):
    return build_recall(make_turn(), server, {}, (), budget=budget, query=RecallQuery(message))


# -- the embeddings' first cut ------------------------------------------------------------------------


def gaussian(rng: random.Random) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(DIMENSIONS)]


def test_the_first_cut_by_signs_keeps_the_vectors_nearest_by_cosine():
    rng = random.Random(11)
    others = [quantise(gaussian(rng)) for _ in range(1000)]
    target = gaussian(rng)
    close = [quantise([x + rng.gauss(0, 0.8) for x in target]) for _ in range(5)]
    vectors = list(enumerate([*others, *close]))
    query = quantise(target)

    kept = nearest(query, vectors, SEMANTIC_SHORTLIST)

    exact = sorted(vectors, key=lambda pair: -cosine(query, pair[1]))
    assert {number for number, _ in exact[:5]} <= set(kept) and len(kept) == SEMANTIC_SHORTLIST
    assert sign_agreement(query, query) == pytest.approx(1.0)
    assert sign_agreement(query, quantise([-x for x in target])) == pytest.approx(-1.0)


def test_a_scope_within_the_shortlist_is_blended_with_every_exact_cosine(monkeypatch):
    from kioku.domain.ltm import ranking

    monkeypatch.setattr(ranking, "FEEDBACK_TERMS", 0)  # the blend alone: feedback has its own test
    # Given as many memories as the shortlist holds, each with a vector
    rng = random.Random(12)
    memories = [
        memory(SERVER_SCOPE, 50000 + n, " ".join(rng.choices(VOCABULARY, k=5)), n, quantise(gaussian(rng)))
        for n in range(SEMANTIC_SHORTLIST)
    ]
    query_vector = quantise(gaussian(rng))
    query = RecallQuery("cello Porto")

    # When they are ranked with the query's embedding
    built = build_recall(make_turn(), memories, {}, (), budget=500, query=query, embed=lambda _: query_vector)
    ranked = {
        place.index: place.relevance
        for place in rank_recall(built.candidates, built.parts, query, lambda _: query_vector)
    }

    # Then each one's relevance is the blend of its words, as a share of the best words, and its
    # exact cosine's place between the median cosine (or below: 0) and the best
    candidates = built.candidates
    documents = [[*terms(c.memory.content), "server", c.memory.memory_id] for c in candidates]
    lengths = [len(document) for document in documents]
    lexical = textbook_bm25(documents, lengths, query.weights())
    cosines = [cosine(query_vector, c.memory.embedding) for c in candidates]
    positive = sorted(c for c in cosines if c > 0)
    median, best = positive[(len(positive) - 1) // 2], positive[-1]
    oldest = max((NOW - c.memory.updated_at).total_seconds() for c in candidates)
    for number, candidate in enumerate(candidates):
        meaning = max(cosines[number] - median, 0) / (best - median)
        blend = (1 - SEMANTIC_WEIGHT) * lexical[number] / max(lexical) + SEMANTIC_WEIGHT * meaning
        lift = 1 + 0.1 * (1 - (NOW - candidate.memory.updated_at).total_seconds() / oldest)
        if blend:
            assert ranked[number] == pytest.approx(blend * lift)
        else:
            assert number not in ranked or ranked[number] == 0
    assert sum(1 for number in ranked if ranked[number] > 0) < len(candidates)  # some had neither


def test_a_name_that_writes_a_token_is_not_expanded_twice():
    assert (
        show_names("{user} thanked {bot}", user_name="Ann {bot}", bot_name="Kio") == "Ann {bot} thanked Kio"
    )
    assert (
        show_names("{user} met {bot} and {other}", user_name="Ann", bot_name="Kio")
        == "Ann met Kio and {other}"
    )


@pytest.mark.parametrize(
    "texts",
    [
        ["Bob moved to Porto on 2025-03-14.", "a well-known (and) long day, the 3rd of Mar", "", "Dune"],
        ["Zoë moved to Kraków on 2025-03-14", "ＦＵＬＬ width!", "plain 2024-12-01"],
        ["a text that holds \x00 the separator", "another one"],
    ],
)
def test_texts_indexed_together_read_as_each_one_alone(texts):
    recall_module.clear_caches()
    assert [list(terms_of) for terms_of in index(texts).documents] == [terms(text) for text in texts]


def test_a_section_indexed_when_the_kept_texts_are_full_is_indexed_whole(monkeypatch):
    from kioku.domain.ltm import ranking

    monkeypatch.setattr(ranking, "_TEXT_CACHE_LIMIT", 4)
    recall_module.clear_caches()
    index(["cat dog", "Porto trip", "chess club"])
    # a section of which some texts are kept and some are not, more than there is room for
    section = ["cat dog", "Porto trip", "a new one", "another new one"]
    assert [list(terms_of) for terms_of in index(section).documents] == [terms(text) for text in section]


INDEX_WORDS = [
    *VOCABULARY,
    "the",
    "and",
    "cats",
    "moving",
    "well-known",
    "2025-03-14",
    "3rd",
    "Mar",
    "a",
    "-",
    "!",
    "Zoë",
    "ＦＵＬＬ",
    "\x00",
    "cat-dog",
    "cat-cat",
    "07",
    "\x00\x00",
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(INDEX_WORDS), max_size=10).map(" ".join), max_size=12),
    st.sampled_from(["", "Bob (@bob)", "cat club"]),
)
def test_every_term_is_counted_in_the_documents_that_hold_it_and_nowhere_else(texts, label):
    recall_module.clear_caches()
    ids = [str(10000 + n) for n in range(len(texts))]
    built = index(texts, label, ids)
    shared = terms(label)
    asked = {term for text in texts for term in terms(text)} | set(shared) | {"10001", "absent", "\x00"}
    for term in asked:
        expected = {}
        for number, text in enumerate(texts):
            count = terms(text).count(term) + shared.count(term) + (ids[number] == term)
            if count:
                expected[number] = count
        assert built.counts(term) == expected, term
    assert built.lengths == tuple(len(terms(text)) + len(shared) + 1 for text in texts)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="aZ9- -.,_'é", max_size=24))
def test_an_ascii_text_is_cut_into_the_words_the_pattern_finds(text):
    from kioku.domain.ltm import stemming

    # the fast path for ASCII text and the pattern every other text is read with agree (a text
    # holding the batch separator, NUL, is cut alone: test_texts_indexed_together_…)
    assert words(text) == stemming._WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def test_a_word_of_separators_is_counted_where_it_is_and_nowhere_else():
    # A reviewer's property test found an index that kept documents in one string match this
    # word across two empty documents next to each other
    texts = ["x", "", "y", "\x00\x00", *(f"filler {n}" for n in range(20))]
    recall_module.clear_caches()
    assert index(texts).counts("\x00\x00") == {3: 1}


def test_a_memory_without_a_vector_never_outranks_a_newer_one_with_the_same_words():
    # Given a correction saved with embeddings on (its cosine no better than the median) and the
    # fact it corrects, saved before embeddings were on (no vector)
    texts = ["Bob lives in Porto", "Bob lives in Lisbon", "Carol plays chess", "Dan likes tea", "Eve paints"]
    part = Part(index(texts, "", [str(100 + n) for n in range(5)]), 0, SERVER, [0.0, 2.6e6, 1e6, 2e6, 3e6])
    query = RecallQuery("Where does Bob live?")
    cosines = {0: 0.45, 2: 0.45, 3: 0.30, 4: 0.60}  # no entry for 1: it has no vector

    by_words = [place.index for place in rank([part], query)]
    hybrid = [place.index for place in rank([part], query, semantic=lambda best: cosines)]

    # Then the correction ranks first either way: a missing vector adds no meaning, it is not a bonus
    assert by_words[:2] == [0, 1]
    assert hybrid[:2] == [0, 1]


def test_only_the_documents_ranked_have_a_say_in_the_meaning():
    # Given cosines for every document, but a ranking among two of them only
    texts = ["cat", "dog", "fish"]
    part = Part(index(texts, "", ["100", "101", "102"]), 0, SERVER, [0.0, 1.0, 2.0])
    cosines = {0: 0.1, 1: 0.2, 2: 0.9}

    ranked = list(rank([part], RecallQuery("bird"), semantic=lambda best: cosines, among=[0, 1]))

    # Then the third is not ranked, and does not set the scale of the others' meaning
    assert [place.index for place in ranked] == [1, 0]
    assert ranked[0].relevance > 0


def test_a_few_texts_that_are_not_ascii_leave_the_rest_on_the_fast_path(monkeypatch):
    from kioku.domain.ltm import stemming

    # Given a section of ASCII memories with two that are not (a curly quote, an emoji)
    texts = [f"Caroline said on 8 May 2023: the support group was great ({n})" for n in range(300)]
    texts[7], texts[200] = "Melanie said: it’s lovely", "Caroline said: 🌟 so proud"
    read_by_the_pattern: list[str] = []
    pattern = stemming._WORD

    class Watched:
        def findall(self, text):
            read_by_the_pattern.append(text)
            return pattern.findall(text)

    monkeypatch.setattr(stemming, "_WORD", Watched())
    recall_module.clear_caches()

    # When a fresh worker indexes it
    built = index(texts)

    # Then only those two are read by the pattern (the slow path), and every text reads as alone
    assert sum(map(len, read_by_the_pattern)) < len(texts[7]) + len(texts[200]) + 10
    assert [list(d) for d in built.documents] == [terms(text) for text in texts]


def test_a_short_form_of_a_name_asks_about_that_persons_memories():
    # Given Caroline's and Melanie's memories, each painting a sunset (Caroline's the newer)
    caroline = ["Caroline painted a sunset at the beach.", "Caroline adopted a guinea pig."]
    melanie = ["Melanie painted a sunset at the lake.", "Melanie ran a charity race."]
    parts = [
        Part(index(caroline, "Caroline", ("101", "102")), 0, SERVER, [10.0, 20.0]),
        Part(index(melanie, "Melanie", ("201", "202")), 2, SERVER, [30.0, 40.0]),
    ]

    # When a question names Melanie by her short form, and when it says "mel" not as a name
    best = next(iter(rank(parts, RecallQuery("What did Mel paint?")))).index
    lowercase = next(iter(rank(parts, RecallQuery("what did mel paint?")))).index

    # Then her painting ranks first; a word not written as a name is no short form
    assert best == 2
    assert lowercase == 0


def test_a_question_naming_a_day_finds_what_was_saved_that_day_and_the_day_lengthens_no_memory():
    # Given a hundred memories of the last ten days, and one saved on 2025-04-20 (eleven days ago)
    server = [*chatter(100), memory(SERVER_SCOPE, 1, "Dana went on a long hike", age_days=11)]
    # When asked what happened on the older one's day, in words
    shown = shown_ids(recall(server, "what happened on 20 April 2025?", budget=400))
    # Then the memory saved that day is shown first
    assert shown[:1] == ["1"]
    # and the day's words add nothing to a memory's length: BM25 scores the text as before
    plain = index(["Dana went on a long hike"], "", ("1",))
    dated = index(["Dana went on a long hike"], "", ("1",), ("2025-04-20",))
    assert dated.lengths == plain.lengths and dated.postings["april"] == [0]


HYPHENATED_PIECES = [
    "-",
    "--",
    "---",
    "2025-03-14",
    "2025-00-14",
    "2025-3-7",
    "well-known",
    "co-op",
    "1st-2nd",
    "the",
    "went",
    "3rd",
    "07",
    "Mar",
    "moving",
    "studies",
    "friendship",
    "ＦＵＬＬ",
    "－",
    "é",
    "\x00",
    " ",
    " ",
    ",",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(HYPHENATED_PIECES), max_size=12).map("".join), min_size=1, max_size=8),
    st.lists(
        st.sampled_from(["2023-05-08", "2023-05-25", "2022-10-25", "2024-01-07"]), min_size=8, max_size=8
    ),
    st.booleans(),
)
def test_a_batch_of_texts_and_days_is_indexed_as_each_text_and_day_alone(texts, days, warm):
    # Given texts whose chunks carry hyphens at their ends or in runs, dates, stop words and the
    # batch separator, each with a day (in any order, not only in runs), on a fresh or a warm worker
    recall_module.clear_caches()
    if warm:
        for text in texts[: len(texts) // 2]:
            terms(text)
    days = days[: len(texts)]

    built = index(texts, "", [], days)

    # Then each document reads as its text alone, then its day, and every term is posted in order
    # once for each time a document holds it
    assert [list(built.terms_of(n)) for n in range(len(texts))] == [
        terms(text) + terms(day) for text, day in zip(texts, days, strict=True)
    ]
    expected: dict[str, list[int]] = {}
    for number, (text, day) in enumerate(zip(texts, days, strict=True)):
        for term in terms(text) + terms(day):
            expected.setdefault(term, []).append(number)
    assert {term: list(numbers) for term, numbers in built.postings.items()} == expected
    assert built.lengths == tuple(len(terms(text)) for text in texts)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="aeiouyszgdlnrtshipmc", min_size=1, max_size=14))
def test_a_new_words_term_is_the_same_through_the_memo_as_worked_out_in_full(word):
    from kioku.domain.ltm import stemming

    # the memo works the common case out itself (a call less per new word): it must agree with _term
    assert stemming._Terms()[word] == stemming._term(word)
    assert stemming._Terms()[word + "ship"] == stemming._term(word + "ship")
