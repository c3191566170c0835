"""The DynamoDB memory store on moto: round trips, limits, duplicates, the counter staying exact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore, counter_key, owner_pk
from kioku.domain.ltm.memory import (
    DuplicateMemory,
    MemoryDraft,
    MemoryLimitReached,
    MemoryNotFound,
    MemoryScope,
    MemoryStoreFailed,
    ScopeKind,
    TargetPrivacyRestricted,
)
from kioku.domain.models import PrivacyLevel, UserProfile

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
SERVER, ALICE, BOB = "500", "101", "102"


def draft(scope: MemoryScope, content: str) -> MemoryDraft:
    return MemoryDraft(scope=scope, content=content, author_id=ALICE, created_at=NOW)


def stored_items(table, kind: ScopeKind, owner_id: str, prefix: str | None = None) -> list[dict]:
    if prefix is None:
        items, _ = table.query("pk = :pk", values={":pk": owner_pk(kind, owner_id)})
        return [item for item in items if item["sk"] != "PROFILE"]  # a person's profile shares the partition
    items, _ = table.query(
        "pk = :pk AND begins_with(sk, :prefix)", values={":pk": owner_pk(kind, owner_id), ":prefix": prefix}
    )
    return items


def test_a_server_memory_round_trips(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    outcome = store.create(draft(scope, "{bot} hosts quiz night"), limit=5)
    assert outcome.created
    found = store.find(ScopeKind.SERVER, SERVER, outcome.memory_id)
    assert found.scope == scope
    assert found.content == "{bot} hosts quiz night"
    assert found.author_id == ALICE
    assert found.created_at == found.updated_at == NOW
    assert table.get(counter_key(ScopeKind.SERVER, SERVER))["n_1"] == 1


def test_a_duplicate_answers_the_first_id_even_when_the_scope_is_full(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    first = store.create(draft(scope, "{user} likes tea"), limit=1)
    again = store.create(draft(scope, "{USER}  LIKES tea"), limit=1)
    assert again.memory_id == first.memory_id and not again.created
    assert len(stored_items(table, ScopeKind.SERVER, SERVER, "M#")) == 1
    with pytest.raises(MemoryLimitReached):
        store.create(draft(scope, "{user} likes coffee"), limit=1)


def test_the_same_fact_in_another_lineage_is_another_memory(table):
    store = DynamoMemoryStore(table)
    a = store.create(draft(MemoryScope.server(SERVER, 1), "same"), limit=5)
    b = store.create(draft(MemoryScope.server(SERVER, 2), "same"), limit=5)
    assert a.memory_id != b.memory_id and b.created


def test_an_id_collision_retries_with_a_new_id(table):
    ids = iter(["11111", "11111", "22222"])
    store = DynamoMemoryStore(table, new_id=lambda: next(ids), sleep=lambda _: None)
    scope = MemoryScope.server(SERVER, 1)
    assert store.create(draft(scope, "first"), limit=5).memory_id == "11111"
    assert store.create(draft(scope, "second"), limit=5).memory_id == "22222"
    assert table.get(counter_key(ScopeKind.SERVER, SERVER))["n_1"] == 2


def test_the_personal_limit_counts_global_memories(table):
    store = DynamoMemoryStore(table)
    store.create(draft(MemoryScope.personal(BOB, 0), "global fact"), limit=3)
    store.create(draft(MemoryScope.personal(BOB, 1), "fact a"), limit=3)
    store.create(draft(MemoryScope.personal(BOB, 1), "fact b"), limit=3)
    with pytest.raises(MemoryLimitReached):
        store.create(draft(MemoryScope.personal(BOB, 1), "fact c"), limit=3)
    # another lineage has its own room beside the global memory
    assert store.create(draft(MemoryScope.personal(BOB, 2), "fact c"), limit=3).created
    # and a new global memory must fit every lineage
    with pytest.raises(MemoryLimitReached):
        store.create(draft(MemoryScope.personal(BOB, 0), "global two"), limit=3)
    target = store.personal_target(BOB)
    assert target.ledger.counts == {0: 1, 1: 2, 2: 1}
    assert target.privacy_level is PrivacyLevel.NONE


def test_a_stale_ledger_is_corrected_from_the_cancellation(table):
    # Given a ledger read before two other saves
    store = DynamoMemoryStore(table)
    stale = store.personal_target(BOB).ledger
    store.create(draft(MemoryScope.personal(BOB, 1), "fact a"), limit=2)
    store.create(draft(MemoryScope.personal(BOB, 1), "fact b"), limit=2)
    # When a save uses the stale ledger, Then the limit still holds
    with pytest.raises(MemoryLimitReached):
        store.create(draft(MemoryScope.personal(BOB, 1), "fact c"), limit=2, ledger=stale)
    assert len(stored_items(table, ScopeKind.PERSONAL, BOB, "M#")) == 2


def test_privacy_changed_after_resolution_still_refuses(table):
    store = DynamoMemoryStore(table)
    target = store.personal_target(BOB)
    ConfigStore(table).save_user_profile(UserProfile(BOB, privacy_level=PrivacyLevel.FULL))
    with pytest.raises(TargetPrivacyRestricted):
        store.create(draft(MemoryScope.personal(BOB, 1), "fact"), limit=5, ledger=target.ledger)
    assert stored_items(table, ScopeKind.PERSONAL, BOB) == []
    assert store.personal_target(BOB).privacy_level is PrivacyLevel.FULL


def test_replace_content_moves_the_guard(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    created = store.create(draft(scope, "{user} likes tea"), limit=5)
    memory = store.find(ScopeKind.SERVER, SERVER, created.memory_id)
    later = NOW + timedelta(hours=1)
    updated = store.replace_content(memory, "{user} likes green tea", later)
    assert store.find(ScopeKind.SERVER, SERVER, created.memory_id) == updated
    assert updated.updated_at == later and updated.created_at == NOW
    # the old fact is free again, the new one is guarded
    assert store.create(draft(scope, "{user} likes tea"), limit=5).created
    assert store.create(draft(scope, "{user} likes GREEN tea"), limit=5).memory_id == created.memory_id


def test_replace_content_refuses_another_memorys_fact_and_stale_reads(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    tea = store.create(draft(scope, "tea"), limit=5).memory_id
    coffee = store.find(ScopeKind.SERVER, SERVER, store.create(draft(scope, "coffee"), limit=5).memory_id)
    with pytest.raises(DuplicateMemory) as raised:
        store.replace_content(coffee, "TEA", NOW)
    assert raised.value.existing_id == tea
    reworded = store.replace_content(coffee, "Coffee", NOW)
    assert reworded.content == "Coffee"
    store.replace_content(reworded, "espresso", NOW)
    with pytest.raises(MemoryNotFound):
        store.replace_content(coffee, "latte", NOW)
    assert store.find(ScopeKind.SERVER, SERVER, coffee.memory_id).content == "espresso"


def test_delete_gives_the_slot_back_and_frees_the_fact(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.personal(BOB, 1)
    kept = store.create(draft(scope, "kept"), limit=2)
    gone = store.find(ScopeKind.PERSONAL, BOB, store.create(draft(scope, "gone"), limit=2).memory_id)
    store.delete(gone)
    assert store.find(ScopeKind.PERSONAL, BOB, gone.memory_id) is None
    assert store.personal_target(BOB).ledger.counts == {1: 1}
    assert stored_items(table, ScopeKind.PERSONAL, BOB, "H#")[0]["memory_id"] == kept.memory_id
    assert store.create(draft(scope, "gone"), limit=2).created
    with pytest.raises(MemoryNotFound):
        store.delete(gone)
    assert store.personal_target(BOB).ledger.counts == {1: 2}


def test_recall_returns_this_lineage_and_global_memories_of_allowed_users(table):
    # Given memories across lineages, and Bob who has turned privacy on
    store = DynamoMemoryStore(table)
    store.create(draft(MemoryScope.server(SERVER, 1), "server one"), limit=5)
    store.create(draft(MemoryScope.server(SERVER, 2), "server two"), limit=5)
    store.create(draft(MemoryScope.personal(ALICE, 1), "alice one"), limit=5)
    store.create(draft(MemoryScope.personal(ALICE, 0), "alice global"), limit=5)
    store.create(draft(MemoryScope.personal(ALICE, 3), "alice three"), limit=5)
    store.create(draft(MemoryScope.personal(BOB, 1), "bob one"), limit=5)
    ConfigStore(table).save_user_profile(UserProfile(BOB, privacy_level=PrivacyLevel.PARTIAL))
    # When
    recalled = store.recall(SERVER, 1, [ALICE, BOB, "103"])
    # Then
    assert [m.content for m in recalled.server] == ["server one"]
    assert sorted(m.content for m in recalled.personal[ALICE]) == ["alice global", "alice one"]
    assert BOB not in recalled.personal
    assert recalled.personal["103"] == ()


def test_an_unreachable_table_is_a_store_failure(table):
    store = DynamoMemoryStore(type(table)("no-such-table", client=table.client))
    with pytest.raises(MemoryStoreFailed):
        store.create(draft(MemoryScope.server(SERVER, 1), "fact"), limit=5)
    with pytest.raises(MemoryStoreFailed):
        store.recall(SERVER, 1, [ALICE])
