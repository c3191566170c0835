"""A memory's history on moto: what an edit keeps, within what bounds, in the same write as the
edit; never in the book recall reads; gone with the memory, and with the people it names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.keys import book_key, memory_key
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.domain.ltm.memory import (
    MAX_MEMORY_VERSIONS,
    MemoryDraft,
    MemoryNotFound,
    MemoryScope,
    ScopeKind,
)
from kioku.domain.privacy import Origin, Place, PrivacyPolicy
from kioku.services import memory_control

HERE = Origin("500", "700", private=False)
SEEN_HERE = {"place": Place("500", "700"), "policy": PrivacyPolicy("500")}
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
SERVER, ALICE, BOB, CAROL = "500", "101", "102", "103"
WIDE = "\N{MUSICAL SYMBOL G CLEF}"  # 4 bytes in UTF-8
MAX_LENGTH = 4000  # the highest MAX_MEMORY_LENGTH allows


def saved(store: DynamoMemoryStore, scope: MemoryScope, content: str, author: str = ALICE):
    draft = MemoryDraft(scope=scope, content=content, author_id=author, created_at=NOW, origin=HERE)
    memory_id = store.create(draft, limit=100).memory_id
    return store.find(scope.kind, scope.owner_id, memory_id)


def test_an_edit_keeps_the_text_it_replaces_with_when_and_by_whom(table):
    store = DynamoMemoryStore(table)
    memory = saved(store, MemoryScope.personal(BOB, 1), "{user} lives in Porto")
    first, second = NOW + timedelta(days=1), NOW + timedelta(days=2)

    # When Bob corrects it, then a turn of Carol's rewrites it
    store.replace_content(memory, "{user} lives in Lisbon", first, author_id=BOB, changed_by=BOB)
    edited = store.find(ScopeKind.PERSONAL, BOB, memory.memory_id)
    store.replace_content(edited, "{user} lives in Braga", second, author_id=CAROL)

    # Then it says the last text, and keeps both earlier ones, oldest first: from and until when,
    # who wrote each, who replaced it
    now = store.find(ScopeKind.PERSONAL, BOB, memory.memory_id)
    assert (now.content, now.author_id, now.changes) == ("{user} lives in Braga", CAROL, 2)
    assert [(v.content, v.since, v.until, v.author_id, v.changed_by) for v in now.history] == [
        ("{user} lives in Porto", NOW, first, ALICE, BOB),
        ("{user} lives in Lisbon", first, second, BOB, CAROL),
    ]


def test_history_keeps_the_last_ten_texts_within_the_item_limit(table):
    # Given a memory at the longest length allowed, in 4-byte characters
    store = DynamoMemoryStore(table)
    memory = saved(store, MemoryScope.server(SERVER, 1), WIDE * MAX_LENGTH)

    # When it is rewritten, at full length, twelve times
    for n in range(12):
        memory = store.replace_content(memory, f"{n:02d}" + WIDE * (MAX_LENGTH - 2), NOW + timedelta(hours=n))

    # Then it keeps the ten texts before the current one (the newest ten) and counts every change
    kept = store.find(ScopeKind.SERVER, SERVER, memory.memory_id)
    assert len(kept.history) == MAX_MEMORY_VERSIONS and kept.changes == 12
    assert [v.content[:2] for v in kept.history] == [f"{n:02d}" for n in range(1, 11)]
    assert kept.content.startswith("11")


def test_the_same_text_again_keeps_no_version(table):
    # Given a memory rewritten once
    store = DynamoMemoryStore(table)
    memory = saved(store, MemoryScope.server(SERVER, 1), "Quiz night is on Fridays")
    once = store.replace_content(memory, "Quiz night is on Tuesdays", NOW + timedelta(hours=1))

    # When the same rewrite comes again (a retried turn's model asking for it once more)
    store.replace_content(once, "Quiz night is on Tuesdays", NOW + timedelta(hours=2))

    # Then the history holds one version, not two
    kept = store.find(ScopeKind.SERVER, SERVER, memory.memory_id)
    assert [v.content for v in kept.history] == ["Quiz night is on Fridays"] and kept.changes == 1


def test_an_edit_from_a_stale_read_writes_neither_text_nor_history(table):
    # Given a memory two editors read, and the first one's edit
    store = DynamoMemoryStore(table)
    memory = saved(store, MemoryScope.server(SERVER, 1), "Quiz night is on Fridays")
    store.replace_content(memory, "Quiz night is on Tuesdays", NOW + timedelta(hours=1))

    # When the second edits what it read, then edits it back to the text the first replaced
    with pytest.raises(MemoryNotFound):
        store.replace_content(memory, "Quiz night is on Mondays", NOW + timedelta(hours=2))

    # Then the memory is the first edit's, with one version of history
    kept = store.find(ScopeKind.SERVER, SERVER, memory.memory_id)
    assert kept.content == "Quiz night is on Tuesdays"
    assert [v.content for v in kept.history] == ["Quiz night is on Fridays"]


def test_an_edit_of_a_memory_read_from_its_book_keeps_the_history_it_has(table):
    # Given a memory edited once, read as recall reads it (its book entry, without its history)
    store = DynamoMemoryStore(table)
    memory = saved(store, MemoryScope.server(SERVER, 1), "Quiz night is on Fridays")
    store.replace_content(memory, "Quiz night is on Tuesdays", NOW + timedelta(hours=1))
    (from_book,) = store.recall(SERVER, 1, [], **SEEN_HERE).server
    assert from_book.history == () and from_book.changes == 0

    # When it is edited from that read
    store.replace_content(from_book, "Quiz night is on Mondays", NOW + timedelta(hours=2))

    # Then the history is the item's, one older text longer
    kept = store.find(ScopeKind.SERVER, SERVER, memory.memory_id)
    assert [v.content for v in kept.history] == ["Quiz night is on Fridays", "Quiz night is on Tuesdays"]


def test_recall_never_reads_the_history(table):
    # Given a memory edited twice
    store = DynamoMemoryStore(table)
    memory = saved(store, MemoryScope.server(SERVER, 1), "The secret word is apple")
    memory = store.replace_content(memory, "The secret word is pear", NOW + timedelta(hours=1))
    store.replace_content(memory, "The secret word is plum", NOW + timedelta(hours=2))

    # Then its book, all recall reads, holds only the current text
    book = [table.get(book_key(MemoryScope.server(SERVER, 1), shard)) for shard in range(8)]  # any shard
    assert "apple" not in str(book) and "pear" not in str(book) and "plum" in str(book)
    (recalled,) = store.recall(SERVER, 1, [], **SEEN_HERE).server
    assert recalled.content == "The secret word is plum"


def test_forget_and_forget_all_remove_the_history(table):
    store, stm, ledger = DynamoMemoryStore(table), StmStore(table), TurnLedger(table)
    # Given Bob's memory, and a server memory about nobody Carol wrote then Alice corrected
    bobs = saved(store, MemoryScope.personal(BOB, 1), "{user} lives in Porto")
    store.replace_content(bobs, "{user} lives in Lisbon", NOW, author_id=BOB)
    rules = saved(store, MemoryScope.server(SERVER, 1), "No spoilers before Sunday", author=CAROL)
    rules = store.replace_content(rules, "No spoilers before Monday", NOW, author_id=ALICE)
    store.replace_content(rules, "No spoilers at all", NOW + timedelta(hours=1), author_id=BOB)

    # When Bob forgets his memory, and Carol forgets everything
    memory_control.forget_memory_about(BOB, bobs.memory_id, store)
    memory_control.forget_all(CAROL, store, stm, ledger=ledger, now=NOW + timedelta(days=1))

    # Then Bob's memory is gone with its history, and the server memory stays, still Bob's text,
    # without the history that named Carol
    assert store.find(ScopeKind.PERSONAL, BOB, bobs.memory_id) is None
    kept = store.find(ScopeKind.SERVER, SERVER, rules.memory_id)
    assert (kept.content, kept.author_id, kept.history) == ("No spoilers at all", BOB, ())
    assert CAROL not in str(table.get(memory_key(ScopeKind.SERVER, SERVER, rules.memory_id)))


def test_the_export_includes_a_memorys_history(table):
    store, stm = DynamoMemoryStore(table), StmStore(table)
    memory = saved(store, MemoryScope.personal(BOB, 1), "{user} lives in Porto", author=BOB)
    store.replace_content(memory, "{user} lives in Lisbon", NOW + timedelta(days=1), author_id=BOB)

    document = memory_control.export(
        BOB, store, stm, NOW, place=Place(SERVER, "700"), ledger=TurnLedger(table)
    )

    (record,) = document["long_term_memories"]
    assert record["text"] == "{user} lives in Lisbon" and record["times_changed"] == 1
    assert record["history"] == [
        {
            "text": "{user} lives in Porto",
            "from": NOW.isoformat(),
            "until": (NOW + timedelta(days=1)).isoformat(),
            "written_by": BOB,
            "changed_by": BOB,
        }
    ]
