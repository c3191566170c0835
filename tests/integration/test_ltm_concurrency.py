"""Limits, duplicates and recall books under concurrency, on a single-threaded moto server (each request
atomic).

Every worker has its own client and store, as separate Lambda containers would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from kioku.adapters.dynamodb.keys import counter_key, owner_pk
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.domain.ltm.memory import (
    Memory,
    MemoryDraft,
    MemoryLimitReached,
    MemoryNotFound,
    MemoryScope,
    SaveOutcome,
    ScopeKind,
)
from kioku.domain.privacy import Origin, Place, PrivacyPolicy
from tests.integration.test_ltm_store import assert_books_match_memories

HERE = Origin("500", "700", private=False)
SEEN_HERE = {"place": Place("500", "700"), "policy": PrivacyPolicy("500")}
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
SERVER, BOB = "500", "102"
LIMIT = 10
WORKERS = 32


def draft(scope: MemoryScope, content: str) -> MemoryDraft:
    return MemoryDraft(scope=scope, content=content, author_id="101", created_at=NOW, origin=HERE)


def run_together(moto_server, jobs: list[Callable[[DynamoMemoryStore], Any]]) -> list[Any]:
    """Run each job on its own store and client, released at once; exceptions are returned, not raised."""
    stores = [DynamoMemoryStore(moto_server.table()) for _ in jobs]
    start = threading.Barrier(len(jobs))

    def run(index: int) -> Any:
        start.wait()
        try:
            return jobs[index](stores[index])
        except Exception as exc:  # the outcome under test
            return exc

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        return list(pool.map(run, range(len(jobs))))


def memory_items(table, kind: ScopeKind, owner_id: str) -> list[dict]:
    items, _ = table.query(
        "pk = :pk AND begins_with(sk, :m)",
        values={":pk": owner_pk(kind, owner_id), ":m": "M#"},
        consistent=True,
    )
    return items


def saves(results: list[Any]) -> list[SaveOutcome]:
    return [r for r in results if isinstance(r, SaveOutcome) and r.created]


def creator(scope: MemoryScope, content: str) -> Callable[[DynamoMemoryStore], SaveOutcome]:
    return lambda store: store.create(draft(scope, content), limit=LIMIT)


def personal_creator(scope: MemoryScope, content: str) -> Callable[[DynamoMemoryStore], SaveOutcome]:
    def create(store: DynamoMemoryStore) -> SaveOutcome:
        ledger = store.personal_target(scope.owner_id).ledger
        return store.create(draft(scope, content), limit=LIMIT, ledger=ledger)

    return create


def assert_outcomes(results: list[Any], *, saved: int) -> None:
    assert len(saves(results)) == saved
    others = [r for r in results if not (isinstance(r, SaveOutcome) and r.created)]
    assert all(isinstance(r, MemoryLimitReached) for r in others), others


@pytest.fixture
def table(moto_server):
    return moto_server.table()


def test_32_creates_with_5_slots_left_save_exactly_5(moto_server, table):
    # Given a server scope with 5 of its 10 slots used
    scope = MemoryScope.server(SERVER, 1)
    store = DynamoMemoryStore(table)
    for index in range(LIMIT - 5):
        store.create(draft(scope, f"existing {index}"), limit=LIMIT)
    # When 32 callers save different facts at once
    results = run_together(moto_server, [creator(scope, f"new {i}") for i in range(WORKERS)])
    # Then exactly 5 are saved, the rest hit the limit, and the count is exact
    assert_outcomes(results, saved=5)
    assert table.get(counter_key(ScopeKind.SERVER, SERVER))["n_1"] == LIMIT
    assert len(memory_items(table, ScopeKind.SERVER, SERVER)) == LIMIT
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


def test_mixed_deletes_and_creates_keep_the_count_exact(moto_server, table):
    # Given a full server scope
    scope = MemoryScope.server(SERVER, 1)
    store = DynamoMemoryStore(table)
    ids = [store.create(draft(scope, f"existing {i}"), limit=LIMIT).memory_id for i in range(LIMIT)]
    doomed = [store.find(ScopeKind.SERVER, SERVER, memory_id) for memory_id in ids[:8]]
    # When 8 deletes and 24 creates race
    jobs = [lambda s, m=m: s.delete(m) for m in doomed] + [creator(scope, f"new {i}") for i in range(24)]
    results = run_together(moto_server, jobs)
    # Then every delete landed, creates never overflowed, and the counter matches the items
    assert results[:8] == [None] * 8
    assert_outcomes(results[8:], saved=len(saves(results[8:])))
    stored = len(memory_items(table, ScopeKind.SERVER, SERVER))
    assert stored == LIMIT - 8 + len(saves(results))
    assert stored <= LIMIT
    assert table.get(counter_key(ScopeKind.SERVER, SERVER))["n_1"] == stored
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)
    # And the slots left fill exactly under another burst
    left = LIMIT - stored
    results = run_together(moto_server, [creator(scope, f"burst {i}") for i in range(WORKERS)])
    assert_outcomes(results, saved=left)
    assert table.get(counter_key(ScopeKind.SERVER, SERVER))["n_1"] == LIMIT
    assert len(memory_items(table, ScopeKind.SERVER, SERVER)) == LIMIT
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


def test_20_saves_of_the_same_fact_store_one_memory(moto_server, table):
    scope = MemoryScope.server(SERVER, 1)
    results = run_together(
        moto_server,
        [creator(scope, " {user} LIKES  tea" if i % 2 else "{user} likes tea") for i in range(20)],
    )
    assert all(isinstance(r, SaveOutcome) for r in results), results
    assert len({r.memory_id for r in results}) == 1
    assert len(saves(results)) == 1
    assert len(memory_items(table, ScopeKind.SERVER, SERVER)) == 1
    assert table.get(counter_key(ScopeKind.SERVER, SERVER))["n_1"] == 1
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


def test_the_personal_limit_holds_across_global_and_persona_memories(moto_server, table):
    # Given Bob with 3 global and 2 lineage-1 memories: 5 slots left in lineage 1
    store = DynamoMemoryStore(table)
    for index in range(3):
        store.create(draft(MemoryScope.personal(BOB, 0), f"global {index}"), limit=LIMIT)
    for index in range(2):
        store.create(draft(MemoryScope.personal(BOB, 1), f"persona {index}"), limit=LIMIT)
    # When 16 global saves and 16 lineage-1 saves race
    jobs = [personal_creator(MemoryScope.personal(BOB, 0), f"new global {i}") for i in range(16)]
    jobs += [personal_creator(MemoryScope.personal(BOB, 1), f"new persona {i}") for i in range(16)]
    results = run_together(moto_server, jobs)
    # Then exactly the 5 slots were taken, and the counts match the items per lineage
    assert_outcomes(results, saved=5)
    lineages = [int(item["lineage"]) for item in memory_items(table, ScopeKind.PERSONAL, BOB)]
    counter = table.get(counter_key(ScopeKind.PERSONAL, BOB))
    assert lineages.count(0) + lineages.count(1) == LIMIT
    assert counter["n_0"] == lineages.count(0)
    assert counter["n_1"] == lineages.count(1)
    assert_books_match_memories(table, ScopeKind.PERSONAL, BOB)


def test_racing_updates_deletes_and_creates_leave_every_book_exact(moto_server, table):
    # Given Bob with 4 global and 4 lineage-1 memories
    store = DynamoMemoryStore(table)
    memories = []
    for lineage in (0, 1):
        for index in range(4):
            scope = MemoryScope.personal(BOB, lineage)
            created = store.create(draft(scope, f"fact {lineage}.{index}"), limit=LIMIT)
            memories.append(store.find(ScopeKind.PERSONAL, BOB, created.memory_id))
    # When each memory is rewritten twice at once (one rewrite of each pair wins), half are also
    # deleted, and new facts are saved alongside
    jobs: list[Callable[[DynamoMemoryStore], Any]] = []
    for memory in memories:
        for attempt in range(2):
            jobs.append(lambda s, m=memory, a=attempt: s.replace_content(m, f"{m.content} v{a}", NOW))
    jobs += [lambda s, m=m: s.delete(m) for m in memories[::2]]
    jobs += [personal_creator(MemoryScope.personal(BOB, 1), f"new {i}") for i in range(8)]
    results = run_together(moto_server, jobs)
    # Then every outcome is a success, a lost race, or the limit, and the books match the memories
    expected = Memory | SaveOutcome | MemoryNotFound | MemoryLimitReached
    assert all(r is None or isinstance(r, expected) for r in results), results
    assert sum(isinstance(r, Memory) for r in results) >= len(memories) // 2  # each kept one was rewritten
    assert_books_match_memories(table, ScopeKind.PERSONAL, BOB)
    counter = table.get(counter_key(ScopeKind.PERSONAL, BOB))
    lineages = [int(item["lineage"]) for item in memory_items(table, ScopeKind.PERSONAL, BOB)]
    assert (counter["n_0"], counter["n_1"]) == (lineages.count(0), lineages.count(1))
