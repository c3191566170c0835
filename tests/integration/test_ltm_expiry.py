"""Memories that expire, on moto: kept with their expiry, never recalled or counted once it passed,
released by a full scope's save, and deleted by the janitor with everything kept beside them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.keys import ItemKey, counter_key, guard_key, owner_pk
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.domain.ltm.memory import MemoryDraft, MemoryLimitReached, MemoryNotFound, MemoryScope, ScopeKind
from kioku.domain.privacy import Origin, Place, PrivacyPolicy
from tests.integration.test_ltm_store import assert_books_match_memories

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
SERVER, ALICE, BOB = "500", "101", "102"
HERE = Origin(SERVER, "700", private=False)
SEEN_HERE = {"place": Place(SERVER, "700"), "policy": PrivacyPolicy(SERVER)}


@pytest.fixture(autouse=True)
def at_the_tests_time(table):
    table.clock = lambda: NOW  # the store hides what expired by its clock: read at the tests' time


def draft(scope: MemoryScope, content: str, *, days: int | None = None, at: datetime = NOW) -> MemoryDraft:
    return MemoryDraft(
        scope=scope,
        content=content,
        author_id=ALICE,
        created_at=at,
        origin=HERE,
        expires_at=at + days * DAY if days is not None else None,
    )


def recalled_ids(store: DynamoMemoryStore, now: datetime, people=(BOB,)) -> set[str]:
    found = store.recall(SERVER, 1, list(people), now=now, **SEEN_HERE)
    return {m.memory_id for m in (*found.server, *(m for own in found.personal.values() for m in own))}


def partition(table, kind: ScopeKind, owner_id: str) -> dict[str, dict]:
    items, _ = table.query("pk = :pk", values={":pk": owner_pk(kind, owner_id)}, consistent=True)
    return {item["sk"]: item for item in items}


def test_a_memory_keeps_its_expiry_and_is_recalled_only_until_then(table):
    store = DynamoMemoryStore(table)
    plan = store.create(draft(MemoryScope.personal(BOB, 1), "{user} is in Tokyo this week", days=7), limit=5)
    lasting = store.create(draft(MemoryScope.server(SERVER, 1), "the server meets on Fridays"), limit=5)

    found = store.find(ScopeKind.PERSONAL, BOB, plan.memory_id)
    assert found is not None and found.expires_at == NOW + 7 * DAY
    assert store.find(ScopeKind.SERVER, SERVER, lasting.memory_id).expires_at is None
    # not the table's TTL attribute: a TTL deletion would leave its counter, guard and book behind
    item = partition(table, ScopeKind.PERSONAL, BOB)[f"M#{plan.memory_id}"]
    assert "expires_at" not in item and item["memory_expires_at"] == int((NOW + 7 * DAY).timestamp())

    assert recalled_ids(store, NOW + 6 * DAY) == {plan.memory_id, lasting.memory_id}
    assert recalled_ids(store, NOW + 7 * DAY) == {lasting.memory_id}
    assert recalled_ids(store, NOW + 400 * DAY) == {lasting.memory_id}


def test_a_full_server_scope_releases_its_expired_memories_for_the_save(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    gone = store.create(draft(scope, "a bake sale this weekend", days=2), limit=2)
    kept = store.create(draft(scope, "the server's mascot is a crow"), limit=2)
    with pytest.raises(MemoryLimitReached):  # not expired yet: the limit holds
        store.create(draft(scope, "a third fact", at=NOW + DAY), limit=2)

    later = NOW + 3 * DAY
    saved = store.create(draft(scope, "a third fact", at=later), limit=2)

    assert saved.created
    assert store.find(ScopeKind.SERVER, SERVER, gone.memory_id) is None
    assert store.find(ScopeKind.SERVER, SERVER, kept.memory_id) is not None
    assert table.get(counter_key(ScopeKind.SERVER, SERVER))["n_1"] == 2
    with pytest.raises(MemoryLimitReached):  # and still no more than the limit
        store.create(draft(scope, "a fourth fact", at=later), limit=2)


def test_a_full_personal_scope_releases_expired_memories_of_its_lineage_and_global_ones(table):
    store = DynamoMemoryStore(table)
    glob = store.create(draft(MemoryScope.personal(BOB, 0), "{user} has a cold", days=3), limit=2)
    store.create(draft(MemoryScope.personal(BOB, 1), "{user} plays the cello"), limit=2)
    other = store.create(draft(MemoryScope.personal(BOB, 2), "{user} is on holiday", days=1), limit=2)

    saved = store.create(draft(MemoryScope.personal(BOB, 1), "{user} likes tea", at=NOW + 4 * DAY), limit=2)

    assert saved.created
    assert store.find(ScopeKind.PERSONAL, BOB, glob.memory_id) is None
    # another lineage's memory does not count here: it waits for the janitor
    assert store.find(ScopeKind.PERSONAL, BOB, other.memory_id) is not None
    assert store.personal_target(BOB).ledger.counts == {0: 0, 1: 2, 2: 1}


def test_the_janitor_deletes_expired_memories_with_their_trail_guard_and_book_entry(table):
    store = DynamoMemoryStore(table)
    personal, server = MemoryScope.personal(BOB, 1), MemoryScope.server(SERVER, 1)
    expired = [store.create(draft(personal, f"{{user}} plan {n}", days=1 + n), limit=50) for n in range(5)]
    later = store.create(draft(server, "a festival next year", days=300), limit=50)
    lasting = store.create(draft(personal, "{user} was born in Osaka"), limit=50)
    trail = ItemKey(owner_pk(ScopeKind.PERSONAL, BOB), f"M#{expired[0].memory_id}#V#1")
    table.put({**trail.as_item(), "content": "an earlier text"})
    expired_memory = store.find(ScopeKind.PERSONAL, BOB, expired[0].memory_id)

    report = store.purge_expired(NOW + 10 * DAY, at_most=3)  # bounded per run
    assert (report.found, report.deleted) == (3, 3)
    report = store.purge_expired(NOW + 10 * DAY)
    assert (report.found, report.deleted, report.kept) == (2, 2, 0)

    items = partition(table, ScopeKind.PERSONAL, BOB)
    assert [sk for sk in items if sk.startswith("M#")] == [f"M#{lasting.memory_id}"]
    assert trail.sk not in items
    assert guard_key(personal, expired_memory.fingerprint, expired_memory.duplicate_domain).sk not in items
    assert_books_match_memories(table, ScopeKind.PERSONAL, BOB)
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)
    assert items["COUNT"]["n_1"] == 1
    assert store.find(ScopeKind.SERVER, SERVER, later.memory_id) is not None
    assert store.purge_expired(NOW + 10 * DAY).found == 0


def test_the_janitor_keeps_a_memory_whose_expiry_changed_after_the_index_was_read(table):
    store = DynamoMemoryStore(table)
    saved = store.create(draft(MemoryScope.personal(BOB, 1), "{user} is moving", days=1), limit=5)
    memory = store.find(ScopeKind.PERSONAL, BOB, saved.memory_id)
    # an edit gave it another expiry meanwhile; the janitor still holds what it read
    table.update(
        ItemKey(owner_pk(ScopeKind.PERSONAL, BOB), f"M#{saved.memory_id}"),
        "SET memory_expires_at = :later",
        values={":later": int((NOW + 30 * DAY).timestamp())},
    )
    report = store._delete_all([memory], NOW + 2 * DAY)
    assert (report.deleted, report.kept) == (0, 1)
    assert store.find(ScopeKind.PERSONAL, BOB, saved.memory_id) is not None
    with pytest.raises(MemoryNotFound):  # never one that has not expired
        store._delete_expired(replace(memory, expires_at=NOW + 30 * DAY), NOW + 2 * DAY)


def test_the_janitor_handler_reports_the_expired_memories_it_deleted(env, table):
    from kioku.entrypoints.janitor import handle

    store = DynamoMemoryStore(table)
    store.create(draft(MemoryScope.server(SERVER, 1), "a sale today", days=1), limit=5)
    report = handle({}, now=NOW + 2 * DAY)
    assert (report["expired_found"], report["expired_deleted"]) == (1, 1)


def test_the_same_words_as_an_expired_memory_are_a_new_memory_not_already_remembered(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    first = store.create(draft(scope, "movie night on Friday", days=1), limit=5)
    again = store.create(draft(scope, "movie night on Friday", at=NOW + 2 * DAY), limit=5)
    assert again.created and again.memory_id != first.memory_id
    assert recalled_ids(store, NOW + 2 * DAY, people=()) == {again.memory_id}
    # the janitor then deletes the expired one without taking the new one's guard with it
    assert store.purge_expired(NOW + 2 * DAY).deleted == 1
    assert store.create(draft(scope, "movie night on Friday", at=NOW + 3 * DAY), limit=5) == again.__class__(
        again.memory_id, created=False
    )


def test_last_shown_reads_when_each_memory_was_last_shown_from_the_turns_notes(table):
    table.clock = lambda: NOW  # the notes are 16 days' long: read at the tests' time
    from kioku.adapters.dynamodb.turn_traces import commit_parts
    from kioku.domain.turn import TurnKey
    from kioku.domain.why import MemoryUse, TurnTrace, UsedMemory, memory_key_text

    def shown(turn_id: str, at: datetime, *memory_ids: str) -> None:
        used = tuple(UsedMemory(ScopeKind.PERSONAL, BOB, m, MemoryUse.RECALLED, BOB) for m in memory_ids)
        trace = TurnTrace(SERVER, "700", 1, at, channel_private=False, memories=used)
        key = TurnKey("message", turn_id, BOB, at)
        table.transact_write(commit_parts(table, key, trace, (), int((at + 16 * DAY).timestamp())))

    shown("900000000000000001", NOW - 5 * DAY, "11111", "22222")
    shown("900000000000000002", NOW - DAY, "11111")
    last = DynamoMemoryStore(table).last_shown([BOB, ALICE])
    assert last == {
        memory_key_text(ScopeKind.PERSONAL, BOB, "11111"): NOW - DAY,
        memory_key_text(ScopeKind.PERSONAL, BOB, "22222"): NOW - 5 * DAY,
    }


def test_an_edit_changes_or_clears_the_expiry_keeps_the_old_one_in_history_and_the_janitor_follows(table):
    # Given two plans that expire in a day
    from kioku.domain.ltm.memory import ExpiryChange

    store = DynamoMemoryStore(table)
    scope = MemoryScope.personal(BOB, 1)
    moved, stays = (
        store.create(draft(scope, text, days=1), limit=5) for text in ("{user} trip", "{user} job")
    )

    # When one is given 30 days from a day later, and the other's expiry is cleared (its text unchanged)
    for saved, expiry in ((moved, ExpiryChange.in_days(NOW + DAY / 2, 30)), (stays, ExpiryChange(None))):
        memory = store.find(ScopeKind.PERSONAL, BOB, saved.memory_id)
        store.replace_content(memory, memory.content, NOW + DAY / 2, changed_by=ALICE, expiry=expiry)

    # Then each keeps its text, its new expiry, and a version noting the old expiry
    later, lasting = (store.find(ScopeKind.PERSONAL, BOB, s.memory_id) for s in (moved, stays))
    assert later.expires_at == NOW + DAY / 2 + 30 * DAY and lasting.expires_at is None
    for memory, text in ((later, "{user} trip"), (lasting, "{user} job")):
        assert memory.content == text and memory.changes == 1
        assert [(v.content, v.expires_at, v.changed_by) for v in memory.history] == [(text, NOW + DAY, ALICE)]
    items = partition(table, ScopeKind.PERSONAL, BOB)
    assert not {"memory_expires_at", "gsi2pk", "gsi2sk"} & set(items[f"M#{stays.memory_id}"])
    assert_books_match_memories(table, ScopeKind.PERSONAL, BOB)
    # and the janitor deletes neither at the old time, nor the cleared one ever; the other at its new time
    assert recalled_ids(store, NOW + 2 * DAY) == {moved.memory_id, stays.memory_id}
    assert store.purge_expired(NOW + 2 * DAY).found == 0
    assert store.purge_expired(NOW + 3650 * DAY).deleted == 1
    assert [sk for sk in partition(table, ScopeKind.PERSONAL, BOB) if sk.startswith("M#")] == [
        f"M#{stays.memory_id}"
    ]
