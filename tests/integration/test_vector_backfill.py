"""The janitor gives memories saved without a vector theirs, on moto: bounded per run, idempotent,
never over a memory edited since it was read, the book entry and the memory together."""

from __future__ import annotations

from dataclasses import replace

from kioku.adapters.dynamodb.ltm_backfill import LtmVectorBackfill
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.domain.ltm.memory import MemoryScope, ScopeKind
from kioku.domain.ltm.vectors import quantise
from kioku.services.vector_backfill import backfill_vectors
from tests.integration.test_ltm_store import (
    NOW,
    PORTO_VECTOR,
    SEEN_HERE,
    SERVER,
    assert_books_match_memories,
    draft,
)


class LengthEmbedder:
    """A vector per text that its words decide (this checks the writes, not a model), and what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def embed(self, texts):
        self.asked += texts
        return [quantise([float(len(text)), 1.0, float(len(text.split()))]) for text in texts]


def saved(store: DynamoMemoryStore, count: int, *, start: int = 0, vector: bytes | None = None) -> list[str]:
    scope = MemoryScope.server(SERVER, 1)
    return [
        store.create(
            replace(draft(scope, f"fact number {n} about {{user}}"), embedding=vector), limit=100
        ).memory_id
        for n in range(start, start + count)
    ]


def vectors_recalled(store: DynamoMemoryStore) -> dict[str, bytes | None]:
    return {m.memory_id: m.embedding for m in store.recall(SERVER, 1, [], **SEEN_HERE).server}


def test_memories_without_a_vector_get_theirs_bounded_per_run_in_memory_and_book(table):
    # Given seven memories saved without a vector and one with
    store, embedder = DynamoMemoryStore(table), LengthEmbedder()
    bare = saved(store, 7)
    (with_vector,) = saved(store, 1, start=7, vector=PORTO_VECTOR)

    # When the janitor runs with a bound of three per run, on scan pages of two items
    backfill = LtmVectorBackfill(table)
    first = backfill_vectors(Paged(backfill), embedder, 3)

    # Then three got the vector of their own text (pronouns as at save), in the memory and its book
    assert (first.found, first.embedded, first.skipped) == (3, 3, 0)
    recalled = vectors_recalled(store)
    filled = [memory_id for memory_id in bare if recalled[memory_id] is not None]
    assert len(filled) == 3
    for memory_id in filled:
        memory = store.find(ScopeKind.SERVER, SERVER, memory_id)
        assert (
            memory.embedding
            == recalled[memory_id]
            == embedder.embed([memory.content.replace("{user}", "they")])[0]
        )
    assert recalled[with_vector] == PORTO_VECTOR
    assert all("{user}" not in text for text in embedder.asked)
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)

    # And the next runs take the rest, then find nothing and write nothing (the one with a vector untouched)
    assert backfill_vectors(Paged(backfill), embedder, 3).embedded == 3
    assert backfill_vectors(Paged(backfill), embedder, 3).embedded == 1
    asked = len(embedder.asked)
    last = backfill_vectors(Paged(backfill), embedder, 3)
    assert (last.found, last.embedded) == (0, 0) and len(embedder.asked) == asked
    assert all(vector is not None for vector in vectors_recalled(store).values())
    assert vectors_recalled(store)[with_vector] == PORTO_VECTOR


class Paged:
    """The backfill reading the table two items a scan page, so the bound and the pages both show."""

    def __init__(self, backfill: LtmVectorBackfill) -> None:
        self._backfill = backfill

    def without_vector(self, limit):
        return self._backfill.without_vector(limit, page_items=2)

    def fill(self, memory, vector):
        return self._backfill.fill(memory, vector)


def test_a_memory_edited_after_it_was_read_keeps_its_edit_and_gets_no_stale_vector(table):
    # Given a memory without a vector, read by the janitor
    store, backfill = DynamoMemoryStore(table), LtmVectorBackfill(table)
    (memory_id,) = saved(store, 1)
    (read,) = backfill.without_vector(10)

    # When someone rewrites it before the janitor writes (without a vector: their embeddings failed)
    store.replace_content(store.find(ScopeKind.SERVER, SERVER, memory_id), "Bob moved to Braga", NOW)
    stale = LengthEmbedder().embed([read.content])[0]

    # Then the janitor's write is refused: the memory keeps the edit and no vector of the old text
    assert backfill.fill(read, stale) is False
    after = store.find(ScopeKind.SERVER, SERVER, memory_id)
    assert after.content == "Bob moved to Braga" and after.embedding is None
    assert vectors_recalled(store)[memory_id] is None

    # And a memory given its vector meanwhile (a concurrent save's) is not overwritten either
    (other_id,) = saved(store, 1, start=1)
    (other,) = [m for m in backfill.without_vector(10) if m.memory_id == other_id]
    current = store.find(ScopeKind.SERVER, SERVER, other_id)
    store.replace_content(current, current.content, current.updated_at, embedding=PORTO_VECTOR)
    assert backfill.fill(other, stale) is False
    assert store.find(ScopeKind.SERVER, SERVER, other_id).embedding == PORTO_VECTOR
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


def test_a_deleted_memory_is_skipped(table):
    store, backfill = DynamoMemoryStore(table), LtmVectorBackfill(table)
    (memory_id,) = saved(store, 1)
    (read,) = backfill.without_vector(10)
    store.delete(store.find(ScopeKind.SERVER, SERVER, memory_id))
    assert backfill.fill(read, PORTO_VECTOR) is False
    assert store.find(ScopeKind.SERVER, SERVER, memory_id) is None
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)
