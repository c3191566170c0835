"""The DynamoDB memory store on moto: round trips, limits, duplicates, the counter and books staying exact."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.errors import StoreUnavailable
from kioku.adapters.dynamodb.keys import (
    ItemKey,
    book_key,
    counter_key,
    index_by_key,
    owner_pk,
    user_profile_key,
)
from kioku.adapters.dynamodb.ltm_store import (
    BookLayout,
    DynamoMemoryStore,
    book_entry,
    entry_attribute,
    memory_from_item,
)
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.domain.forgetting import SpeakerForgotten
from kioku.domain.ltm.memory import (
    DuplicateMemory,
    Memory,
    MemoryDraft,
    MemoryLimitReached,
    MemoryNotFound,
    MemoryScope,
    MemoryStatus,
    MemoryStoreFailed,
    ScopeKind,
    TargetPrivacyRestricted,
)
from kioku.domain.ltm.vectors import VECTOR_BYTES
from kioku.domain.models import PrivacyLevel, UserProfile
from kioku.domain.privacy import Origin, Place, PrivacyMode, PrivacyPolicy

HERE = Origin("500", "700", private=False)
SEEN_HERE = {"place": Place("500", "700"), "policy": PrivacyPolicy("500")}
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
SERVER, ALICE, BOB = "500", "101", "102"
MAX_MEMORIES, MAX_LENGTH = 1000, 4000  # the highest settings allow
WIDE = "\N{MUSICAL SYMBOL G CLEF}"  # 4 bytes in UTF-8
LONGEST_AUTHOR = "1" * 20  # a Discord id has at most 20 digits
LATEST = datetime(2025, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)  # the longest ISO time kioku writes


def draft(scope: MemoryScope, content: str) -> MemoryDraft:
    return MemoryDraft(scope=scope, content=content, author_id=ALICE, created_at=NOW, origin=HERE)


def stored_items(table, kind: ScopeKind, owner_id: str, prefix: str | None = None) -> list[dict]:
    if prefix is None:
        items, _ = table.query("pk = :pk", values={":pk": owner_pk(kind, owner_id)})
        return [item for item in items if item["sk"] != "PROFILE"]  # a person's profile shares the partition
    items, _ = table.query(
        "pk = :pk AND begins_with(sk, :prefix)", values={":pk": owner_pk(kind, owner_id), ":prefix": prefix}
    )
    return items


def assert_books_match_memories(table, kind: ScopeKind, owner_id: str) -> None:
    """Every book shard of the owner holds exactly one entry per memory of its scope kept there, and
    counts them."""
    items, start = [], None
    while True:
        page, start = table.query("pk = :pk", values={":pk": owner_pk(kind, owner_id)}, consistent=True)
        items += page
        if start is None:
            break
    expected: dict[str, dict] = {}
    for item in items:
        if item["sk"].startswith("M#"):
            memory = memory_from_item(item)
            entry = book_entry(memory)
            book = expected.setdefault(book_key(memory.scope, memory.book_shard).sk, {"k": 0})
            book[entry_attribute(memory.memory_id)] = entry
            book["k"] += 1
    books = {
        item["sk"]: {name: value for name, value in item.items() if name not in ("pk", "sk")}
        for item in items
        if item["sk"].startswith(book_key(MemoryScope(kind, owner_id, 0)).sk[:-1])
    }
    assert {sk: entries for sk, entries in books.items() if entries.get("k")} == expected


def count_requests(table) -> list[str]:
    """The names of the DynamoDB operations ``table`` sends from now on."""
    calls: list[str] = []
    table.client.meta.events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
    return calls


LONGEST_ORIGIN = Origin(LONGEST_AUTHOR, "2" * 20, "3" * 20, private=True, private_thread=True)


def longest_memory(scope: MemoryScope, memory_id: str, chars: int, origin: Origin = LONGEST_ORIGIN) -> Memory:
    """An entry at its longest: the longest author, time, origin and subject, ``chars`` 4-byte
    characters, an embedding and an expiry."""
    return Memory(
        scope,
        memory_id,
        WIDE * chars,
        LONGEST_AUTHOR,
        LATEST,
        LATEST,
        origin=origin,
        subject_id="4" * 20,
        embedding=bytes(range(128)) * (VECTOR_BYTES // 128),
        expires_at=LATEST + timedelta(days=3650),
    )


def full_book(
    scope: MemoryScope,
    entries: int,
    chars: int,
    *,
    origin: Origin = LONGEST_ORIGIN,
    shard: int = 0,
    first: int = 0,
) -> dict:
    """A book shard of ``entries`` entries, each the longest an entry can be (``chars`` 4-byte
    characters), counted as the store counts them."""
    book: dict = {**book_key(scope, shard).as_item(), "k": entries}
    for index in range(first, first + entries):
        memory_id = str(10000 + index)
        book[entry_attribute(memory_id)] = book_entry(longest_memory(scope, memory_id, chars, origin))
    return book


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


@pytest.mark.parametrize("personal", [False, True], ids=["server", "personal (full scope)"])
def test_a_save_its_own_turn_made_earlier_is_known_as_that_turns_another_turns_is_a_duplicate(
    table, personal
):
    # Given a fact saved by turn T1 (an attempt that died before it kept its notice)
    store = DynamoMemoryStore(table)
    scope = MemoryScope.personal(BOB, 1) if personal else MemoryScope.server(SERVER, 1)
    first = store.create(replace(draft(scope, "{user} likes tea"), turn_id="T1"), limit=1)

    # When T1's retry saves it again, and then another turn does
    retried = store.create(replace(draft(scope, "{user} likes tea"), turn_id="T1"), limit=1)
    other = store.create(replace(draft(scope, "{user} likes tea"), turn_id="T2"), limit=1)

    # Then the retry's save is T1's own (created: it owes its notice), the other turn's a duplicate
    assert retried == replace(first, created=True) and other == replace(first, created=False)
    assert len(stored_items(table, scope.kind, scope.owner_id, "M#")) == 1


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


def test_a_memory_made_private_since_lends_its_guard_to_the_same_fact_said_in_public(table):
    # Given a fact saved in public #700, whose channel a manager then made private
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    first = store.create(draft(scope, "the launch is on March 3"), limit=5).memory_id
    now = PrivacyPolicy(SERVER, {HERE.channel_id: PrivacyMode.PRIVATE})
    elsewhere = replace(draft(scope, "The launch is on march 3"), origin=Origin(SERVER, "701", private=False))

    # When the same fact is said in #701, twice
    second = store.create(elsewhere, limit=5, policy=now)
    again = store.create(elsewhere, limit=5, policy=now)

    # Then the first saves a memory of its own, which takes the guard; the second is its duplicate
    assert second.created and second.memory_id != first
    assert not again.created and again.memory_id == second.memory_id
    assert not store.find(ScopeKind.SERVER, SERVER, first).holds_guard
    # the first can still be deleted, and leaves the guard to the second
    store.delete(store.find(ScopeKind.SERVER, SERVER, first))
    assert len(stored_items(table, ScopeKind.SERVER, SERVER, "H#")) == 1
    assert not store.create(elsewhere, limit=5, policy=now).created
    # without the override the first would have refused it (in a scope of its own)
    other = MemoryScope.server(SERVER, 2)
    store.create(draft(other, "the launch is on March 3"), limit=5)
    assert not store.create(replace(elsewhere, scope=other), limit=5, policy=PrivacyPolicy(SERVER)).created


def test_a_pending_memory_refuses_neither_a_save_nor_a_rewrite_of_its_words(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    pending = store.create(replace(draft(scope, "quiz night"), status=MemoryStatus.PENDING), limit=5)
    coffee = store.find(ScopeKind.SERVER, SERVER, store.create(draft(scope, "coffee"), limit=5).memory_id)

    rewritten = store.replace_content(coffee, "Quiz night", NOW)
    saved = store.create(draft(scope, "quiz  night"), limit=5)

    assert rewritten.content == "Quiz night" and rewritten.holds_guard
    assert not store.find(ScopeKind.SERVER, SERVER, pending.memory_id).holds_guard
    assert not saved.created and saved.memory_id == coffee.memory_id  # the active one refuses it
    store.reject(store.find(ScopeKind.SERVER, SERVER, pending.memory_id))
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


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
    with pytest.raises(MemoryNotFound):
        store.replace_content(coffee, "Espresso", NOW)  # a stale read, even with the same fact
    assert store.find(ScopeKind.SERVER, SERVER, coffee.memory_id).content == "espresso"
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


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
    assert_books_match_memories(table, ScopeKind.PERSONAL, BOB)


def whole_book(table, scope: MemoryScope) -> dict:
    """The entries of every shard of a scope's book (default layout), as one mapping."""
    book: dict = {}
    for key in BookLayout().keys(scope):
        book.update({name: value for name, value in (table.get(key) or {}).items() if name.startswith("m")})
    return book


def test_the_book_follows_creates_updates_deletes_and_duplicates(table):
    store = DynamoMemoryStore(table)
    for scope in (MemoryScope.server(SERVER, 1), MemoryScope.personal(BOB, 1), MemoryScope.personal(BOB, 0)):
        kind, owner = scope.kind, scope.owner_id
        # Given three memories, and a repeated fact that stores nothing
        ids = [store.create(draft(scope, f"fact {n}"), limit=5).memory_id for n in range(3)]
        assert not store.create(draft(scope, "FACT 0"), limit=5).created
        book = whole_book(table, scope)
        assert {name: entry["c"] for name, entry in book.items()} == {
            entry_attribute(memory_id): f"fact {n}" for n, memory_id in enumerate(ids)
        }
        assert book[entry_attribute(ids[0])] == {
            "c": "fact 0",
            "u": NOW.isoformat(),
            "a": ALICE,
            "o": "500/700//",
        }
        # When one is reworded, one rewritten and one deleted
        later = NOW + timedelta(hours=1)
        store.replace_content(store.find(kind, owner, ids[0]), "Fact 0", later)
        store.replace_content(store.find(kind, owner, ids[1]), "fact one", later)
        store.delete(store.find(kind, owner, ids[2]))
        # Then the book says what the memories say
        book = whole_book(table, scope)
        assert book[entry_attribute(ids[1])] == {
            "c": "fact one",
            "u": later.isoformat(),
            "a": ALICE,
            "o": "500/700//",
        }
        assert entry_attribute(ids[2]) not in book
        assert_books_match_memories(table, kind, owner)


def test_recall_is_one_request_for_the_server_and_every_person(table):
    # Given memories across lineages, and Bob who has turned privacy on
    store = DynamoMemoryStore(table)
    store.create(draft(MemoryScope.server(SERVER, 1), "server one"), limit=5)
    store.create(draft(MemoryScope.server(SERVER, 2), "server two"), limit=5)
    store.create(draft(MemoryScope.personal(ALICE, 1), "alice one"), limit=5)
    store.create(draft(MemoryScope.personal(ALICE, 0), "alice global"), limit=5)
    store.create(draft(MemoryScope.personal(ALICE, 3), "alice three"), limit=5)
    store.create(draft(MemoryScope.personal(BOB, 1), "bob one"), limit=5)
    ConfigStore(table).save_user_profile(UserProfile(BOB, privacy_level=PrivacyLevel.PARTIAL))
    requests = count_requests(table)
    # When
    recalled = store.recall(SERVER, 1, [ALICE, BOB, "103"], **SEEN_HERE)
    # Then one BatchGetItem answered, with the privacy level read in the same batch
    assert requests == ["BatchGetItem"]
    assert [m.content for m in recalled.server] == ["server one"]
    assert sorted(m.content for m in recalled.personal[ALICE]) == ["alice global", "alice one"]
    assert {m.scope for m in recalled.personal[ALICE]} == {
        MemoryScope.personal(ALICE, 1),
        MemoryScope.personal(ALICE, 0),
    }
    assert BOB not in recalled.personal
    assert recalled.personal["103"] == ()
    # And the ids are the ones an update can quote
    for memory in recalled.personal[ALICE]:
        assert store.find(ScopeKind.PERSONAL, ALICE, memory.memory_id).content == memory.content


def test_recall_keys_are_fixed_and_recall_from_items_maps_them():
    # Given the keys of a recall
    store = DynamoMemoryStore(None, layout=BookLayout(server_limit=100, personal_limit=50, max_length=1000))
    keys = store.recall_keys(SERVER, 2, [ALICE, BOB])
    assert keys == [
        ItemKey(f"LTM#S#{SERVER}", "BOOK#L2"),
        ItemKey(f"LTM#S#{SERVER}", "BOOK#L2#1"),  # 100 memories of 1,000 characters: two shards
        user_profile_key(ALICE),
        ItemKey(f"USER#{ALICE}", "LTM#BOOK#L2"),
        ItemKey(f"USER#{ALICE}", "LTM#BOOK#L0"),
        user_profile_key(BOB),
        ItemKey(f"USER#{BOB}", "LTM#BOOK#L2"),
        ItemKey(f"USER#{BOB}", "LTM#BOOK#L0"),
    ]
    assert store.recall_keys(None, 2, []) == []
    # When the items found come back, by key, Bob's profile forbidding personal memories
    entry = {"c": "{user} likes tea", "u": NOW.isoformat(), "a": BOB, "o": "500/700//"}
    later = {"c": "newer", "u": (NOW + timedelta(days=1)).isoformat(), "a": ALICE, "o": "500/700//"}
    older = {"c": "older", "u": (NOW - timedelta(days=1)).isoformat(), "a": ALICE, "o": "500/700//"}
    from_before_origins = {"c": "no origin kept", "u": NOW.isoformat(), "a": ALICE}
    from_private_channel = {"c": "said in #secret", "u": NOW.isoformat(), "a": ALICE, "o": "500/701//p"}
    server_book = {
        "m11111": entry,
        "m22222": later,
        "m55555": from_before_origins,
        "m66666": from_private_channel,
    }
    items = index_by_key(
        [
            {"pk": "LTM#S#500", "sk": "BOOK#L2", **server_book},
            {"pk": f"USER#{ALICE}", "sk": "LTM#BOOK#L0", "m33333": entry},
            {"pk": f"USER#{BOB}", "sk": "PROFILE", "privacy_level": "full"},
            {"pk": f"USER#{BOB}", "sk": "LTM#BOOK#L2", "m44444": entry},
            {"pk": "LTM#S#500", "sk": "BOOK#L2#1", "m77777": older},
        ]
    )
    recalled = store.recall_from_items(items, SERVER, 2, [ALICE, BOB], **SEEN_HERE)
    # Then the memories are those of the books this channel may see, newest first, without Bob's
    assert [(m.memory_id, m.content, m.author_id) for m in recalled.server] == [
        ("22222", "newer", ALICE),
        ("11111", "{user} likes tea", BOB),
        ("77777", "older", ALICE),
    ]
    assert recalled.server[1].scope == MemoryScope.server(SERVER, 2)
    assert recalled.server[1].updated_at == NOW
    assert [(m.memory_id, m.scope) for m in recalled.personal[ALICE]] == [
        ("33333", MemoryScope.personal(ALICE, 0))
    ]
    assert BOB not in recalled.personal


def test_a_memory_of_the_longest_length_is_recalled_whole(table):
    # Given a memory of MAX_MEMORY_LENGTH characters at the highest settings
    store = DynamoMemoryStore(table, layout=BookLayout(MAX_MEMORIES, MAX_MEMORIES, MAX_LENGTH))
    content = "{user} " + "x" * (MAX_LENGTH - 7)
    memory_id = store.create(draft(MemoryScope.server(SERVER, 1), content), limit=MAX_MEMORIES).memory_id
    # When it is recalled, Then recall shows every character
    (recalled,) = store.recall(SERVER, 1, [], **SEEN_HERE).server
    assert recalled.content == content
    assert store.find(ScopeKind.SERVER, SERVER, memory_id).content == content


@pytest.mark.parametrize(
    ("limit", "length"), [(1, 4000), (7, 4000), (100, 1000), (333, 10), (MAX_MEMORIES, MAX_LENGTH)]
)
def test_a_full_shard_of_the_longest_entries_fits_one_item_and_the_shards_hold_the_limit(
    table, limit, length
):
    # Given a layout, and a shard full of entries at their longest: the content in 4-byte characters,
    # the longest author, time, origin and subject
    layout = BookLayout(limit, limit, length)
    assert layout.capacity * layout.shards(ScopeKind.SERVER) >= limit
    # When the full shard is written, Then DynamoDB (moto enforces the 400 KB item limit) accepts it
    table.put(full_book(MemoryScope.server(SERVER, 1), min(limit, layout.capacity), length))


def test_without_shards_the_longest_entries_would_not_fit_one_item(table):
    layout = BookLayout(100, 100, 1000)
    with pytest.raises(StoreUnavailable):
        table.put(full_book(MemoryScope.server(SERVER, 1), 100, 1000))
    assert layout.shards(ScopeKind.SERVER) == 2


def test_the_defaults_keep_two_shards_of_eighty_five_entries():
    assert (BookLayout().capacity, BookLayout().shards(ScopeKind.SERVER)) == (85, 2)


def test_a_save_into_a_full_shard_goes_to_another_and_recall_reads_every_shard_in_one_request(table):
    # Given the highest settings, a scope one memory short of its limit, every shard full but the last
    layout = BookLayout(MAX_MEMORIES, MAX_MEMORIES, MAX_LENGTH)
    shards, capacity = layout.shards(ScopeKind.SERVER), layout.capacity
    store = DynamoMemoryStore(table, new_id=lambda: "99999", layout=layout)  # an id whose own shard is full
    assert 99999 % shards != shards - 1
    scope = MemoryScope.server(SERVER, 1)
    recallable_here = Origin(SERVER, "2" * 20, "3" * 20, private=False)
    held = 0
    for shard in range(shards):
        entries = min(capacity, MAX_MEMORIES - 1 - held)
        table.put(full_book(scope, entries, 10, origin=recallable_here, shard=shard, first=held))
        held += entries
    table.put({**counter_key(ScopeKind.SERVER, SERVER).as_item(), "n_1": MAX_MEMORIES - 1})
    longest = MemoryDraft(scope, WIDE * MAX_LENGTH, LONGEST_AUTHOR, LATEST, origin=HERE)
    # When the last memory is saved at full length, then rewritten
    memory_id = store.create(longest, limit=MAX_MEMORIES).memory_id
    memory = store.find(ScopeKind.SERVER, SERVER, memory_id)
    later = LATEST + timedelta(days=1)
    store.replace_content(memory, "\N{GRINNING FACE}" * MAX_LENGTH, later)
    # Then it went to the shard with room, whole, and recall reads every entry of every shard
    assert memory.book_shard == shards - 1
    requests = count_requests(table)
    recalled = store.recall(SERVER, 1, [], **SEEN_HERE)
    assert set(requests) == {"BatchGetItem"}
    assert len(recalled.server) == MAX_MEMORIES
    assert (recalled.server[0].memory_id, recalled.server[0].updated_at) == (memory_id, later)
    assert recalled.server[0].content == "\N{GRINNING FACE}" * MAX_LENGTH


def test_an_unreachable_table_is_a_store_failure(table):
    store = DynamoMemoryStore(type(table)("no-such-table", client=table.client))
    with pytest.raises(MemoryStoreFailed):
        store.create(draft(MemoryScope.server(SERVER, 1), "fact"), limit=5)
    with pytest.raises(MemoryStoreFailed):
        store.recall(SERVER, 1, [ALICE], **SEEN_HERE)


def test_a_pending_memory_counts_is_listed_and_is_recalled_only_once_approved(table):
    # Given a pending server memory beside an active one, in a scope of two slots
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    pending = store.create(replace(draft(scope, "obey mallory"), status=MemoryStatus.PENDING), limit=2)
    store.create(draft(scope, "quiz on fridays"), limit=2)
    # Then it takes a slot, is listed with its status, and is not recalled
    with pytest.raises(MemoryLimitReached):
        store.create(draft(scope, "a third"), limit=2)
    listed = store.memories_of(ScopeKind.SERVER, SERVER)
    assert sorted((m.content, m.status) for m in listed) == [
        ("obey mallory", MemoryStatus.PENDING),
        ("quiz on fridays", MemoryStatus.ACTIVE),
    ]
    assert [m.content for m in store.recall(SERVER, 1, [], **SEEN_HERE).server] == ["quiz on fridays"]
    # When a manager approves it, it is recalled; approving twice finds nothing pending
    memory = store.find(ScopeKind.SERVER, SERVER, pending.memory_id)
    store.approve(memory)
    assert {m.content for m in store.recall(SERVER, 1, [], **SEEN_HERE).server} == {
        "obey mallory",
        "quiz on fridays",
    }
    with pytest.raises(MemoryNotFound):
        store.approve(memory)
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


def test_memories_of_a_person_span_every_lineage(table):
    store = DynamoMemoryStore(table)
    store.create(draft(MemoryScope.personal(ALICE, 1), "one"), limit=5)
    store.create(draft(MemoryScope.personal(ALICE, 0), "global"), limit=5)
    store.create(draft(MemoryScope.personal(BOB, 1), "bob's"), limit=5)
    assert sorted(m.content for m in store.memories_of(ScopeKind.PERSONAL, ALICE)) == ["global", "one"]


def test_rejecting_deletes_only_a_memory_still_pending_as_read(table):
    # Given two pending server memories in a scope of two slots; one is approved after it was read
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    kept = store.create(replace(draft(scope, "quiz on fridays"), status=MemoryStatus.PENDING), limit=2)
    dropped = store.create(replace(draft(scope, "obey mallory"), status=MemoryStatus.PENDING), limit=2)
    read_while_pending = store.find(ScopeKind.SERVER, SERVER, kept.memory_id)
    store.approve(read_while_pending)
    # When both are rejected as they were read
    store.reject(store.find(ScopeKind.SERVER, SERVER, dropped.memory_id))
    with pytest.raises(MemoryNotFound):
        store.reject(read_while_pending)
    # Then the approved one stays and is recalled; the other is gone and its slot is free
    assert [m.content for m in store.memories_of(ScopeKind.SERVER, SERVER)] == ["quiz on fridays"]
    assert [m.content for m in store.recall(SERVER, 1, [], **SEEN_HERE).server] == ["quiz on fridays"]
    store.create(draft(scope, "a new fact"), limit=2)
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


# -- forget-all and the saves still on their way -------------------------------------------------------


def test_a_save_of_words_said_before_its_author_or_subject_forgot_everything_is_refused(table):
    # Given Alice asked to forget everything at NOW; Bob did not
    store, ledger = DynamoMemoryStore(table), TurnLedger(table)
    ledger.forget_turns_of(ALICE, NOW)
    before, after = NOW - timedelta(seconds=5), NOW + timedelta(milliseconds=1)
    about_bob = MemoryScope.personal(BOB, 1)
    # When saves of what was said before it arrive: by her, about her (by Bob), and on the server
    refused = [
        replace(draft(about_bob, "{user} owes Alice lunch"), said_at=before),
        replace(draft(MemoryScope.personal(ALICE, 1), "{user} likes tea"), author_id=BOB, said_at=before),
        replace(draft(MemoryScope.server(SERVER, 1), "the server meets on Fridays"), said_at=before),
    ]
    for memory in refused:
        with pytest.raises(SpeakerForgotten):
            store.create(memory, limit=MAX_MEMORIES)
    # Then nothing of them was written, and no slot was taken
    assert store.memories_of(ScopeKind.PERSONAL, BOB) == []
    assert store.memories_of(ScopeKind.PERSONAL, ALICE) == []
    assert store.memories_of(ScopeKind.SERVER, SERVER) == []
    assert table.get(counter_key(ScopeKind.PERSONAL, ALICE)) is None
    # while what she says after it is saved, and what Bob says is rewritten only if said after it too
    mine = store.create(
        replace(draft(about_bob, "{user} owes Alice lunch"), said_at=after), limit=MAX_MEMORIES
    )
    bobs = store.create(
        replace(draft(MemoryScope.personal(BOB, 1), "{user} plays chess"), author_id=BOB, said_at=before),
        limit=MAX_MEMORIES,
    )
    assert mine.created and bobs.created
    (kept, _) = sorted(store.memories_of(ScopeKind.PERSONAL, BOB), key=lambda m: m.content)
    with pytest.raises(SpeakerForgotten):
        store.replace_content(kept, "{user} owes Alice dinner", NOW, author_id=ALICE, said_at=before)
    store.replace_content(kept, "{user} owes Alice dinner", NOW, author_id=ALICE, said_at=after)
    assert store.find(ScopeKind.PERSONAL, BOB, kept.memory_id).content == "{user} owes Alice dinner"


# -- embeddings ---------------------------------------------------------------------------------------

PORTO_VECTOR = bytes(range(0, 256))
LISBON_VECTOR = bytes(range(255, -1, -1))


def test_a_memorys_embedding_is_kept_in_its_book_and_recalled_with_it_in_the_same_one_request(table):
    # Given a memory saved with its embedding
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    saved = replace(draft(scope, "Bob lives in Porto"), embedding=PORTO_VECTOR)
    memory_id = store.create(saved, limit=5).memory_id

    # Then its book entry holds the 256 bytes as a binary attribute, and the memory item too
    (book,) = stored_items(table, ScopeKind.SERVER, SERVER, "BOOK#")
    assert bytes(book[entry_attribute(memory_id)]["v"]) == PORTO_VECTOR
    assert store.find(ScopeKind.SERVER, SERVER, memory_id).embedding == PORTO_VECTOR
    # and recall returns it, still in one request
    calls = count_requests(table)
    (recalled,) = store.recall(SERVER, 1, [], **SEEN_HERE).server
    assert recalled.embedding == PORTO_VECTOR and calls == ["BatchGetItem"]
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)


def test_an_update_replaces_the_embedding_or_drops_it_and_an_approval_keeps_it(table):
    store = DynamoMemoryStore(table)
    scope = MemoryScope.server(SERVER, 1)
    memory_id = store.create(
        replace(draft(scope, "Bob lives in Porto"), embedding=PORTO_VECTOR), limit=5
    ).memory_id
    memory = store.find(ScopeKind.SERVER, SERVER, memory_id)

    # When the content is replaced with its new embedding, then with none (embeddings failed)
    store.replace_content(memory, "Bob lives in Lisbon", NOW, embedding=LISBON_VECTOR)
    after_first = store.find(ScopeKind.SERVER, SERVER, memory_id)
    assert after_first.embedding == LISBON_VECTOR
    assert store.recall(SERVER, 1, [], **SEEN_HERE).server[0].embedding == LISBON_VECTOR
    store.replace_content(after_first, "Bob lives in Braga", NOW)

    # Then the old vector, which described the old text, is gone from the memory and its book
    assert store.find(ScopeKind.SERVER, SERVER, memory_id).embedding is None
    assert store.recall(SERVER, 1, [], **SEEN_HERE).server[0].embedding is None
    assert_books_match_memories(table, ScopeKind.SERVER, SERVER)

    # And a pending memory approved keeps the embedding it was saved with
    pending = replace(
        draft(scope, "Quiz night is on Tuesdays"), embedding=PORTO_VECTOR, status=MemoryStatus.PENDING
    )
    pending_id = store.create(pending, limit=5).memory_id
    store.approve(store.find(ScopeKind.SERVER, SERVER, pending_id))
    recalled = {m.memory_id: m for m in store.recall(SERVER, 1, [], **SEEN_HERE).server}
    assert recalled[pending_id].embedding == PORTO_VECTOR


def test_a_full_scope_of_the_highest_settings_with_embeddings_stays_inside_the_item_limit(table):
    # Given the highest limit (1,000 memories a scope) and longest memories (4,000 4-byte characters)
    layout = BookLayout(MAX_MEMORIES, MAX_MEMORIES, MAX_LENGTH)
    scope = MemoryScope.server(SERVER, 1)
    # When every shard is written full of the longest entries, each with its embedding
    held = 0
    for shard in range(layout.shards(ScopeKind.SERVER)):
        entries = min(layout.capacity, MAX_MEMORIES - held)
        table.put(full_book(scope, entries, MAX_LENGTH, shard=shard, first=held))
        held += entries
    # Then DynamoDB (moto enforces 400 KB) took them all, and they hold the whole limit
    assert held == MAX_MEMORIES
