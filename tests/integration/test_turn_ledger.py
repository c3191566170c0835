"""A turn's completion record (and the drop of its outbox) commits with its capture, so a second attempt can neither count nor
record the turn again; DynamoDB's conditions enforce it, not the callers."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore, server_config_to_item
from kioku.adapters.dynamodb.errors import StoreUnavailable
from kioku.adapters.dynamodb.forgetting import forgotten_at_from_item, mark_forgotten
from kioku.adapters.dynamodb.keys import (
    ItemKey,
    attempts_key,
    forgotten_key,
    outbox_key,
    stm_row_key,
    turn_record_key,
)
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.dynamodb.turn_ledger import RECORD_RETENTION, TurnLedger, outcome_from_item
from kioku.adapters.dynamodb.turn_repository import TurnRepository, _outbox_from_item
from kioku.domain.forgetting import Said, SpeakerForgotten
from kioku.domain.ltm.memory import Memory, MemoryDraft, MemoryScope, ScopeKind
from kioku.domain.models import Persona, ServerConfig
from kioku.domain.privacy import Origin
from kioku.domain.stm.capture import StmRowIdentity, TurnCapture
from kioku.domain.stm.entries import StmAddress
from kioku.domain.turn import (
    Outbox,
    PersonaRemoved,
    TurnAlreadyRecorded,
    TurnClaimed,
    TurnCommitFailed,
    TurnKey,
    TurnOutcome,
)
from kioku.domain.turn_read import TurnMemoryQuery
from tests.integration.stm_rows import identity
from tests.unit.stm_builders import CHANNEL, LIMITS, NOW, message


@pytest.fixture
def table(resources) -> KiokuTable:
    """The table read at these tests' time (``NOW``): what it keeps for a while is not yet past it."""
    return KiokuTable(resources.table_name, clock=lambda: NOW)


def test_the_record_commits_with_the_capture_and_a_second_attempt_changes_nothing(table):
    store, ledger = StmStore(table), TurnLedger(table)
    done = ledger.op_record("message", "700000000000000001", TurnOutcome(reply_ids=("800",)), NOW)
    store.capture(
        identity(), None, [message("hi", message_id="700000000000000001")], NOW, LIMITS, also=[done]
    )
    row = store.get(identity().address)
    assert row.turns_since_refresh == 1
    record = outcome_from_item(table.get(turn_record_key("message", "700000000000000001")))
    assert record == TurnOutcome(reply_ids=("800",))

    # a second attempt of the same turn, with other words (a model that answered differently)
    again = ledger.op_record("message", "700000000000000001", TurnOutcome(reply_ids=("801",)), NOW)
    with pytest.raises(TurnAlreadyRecorded):
        store.capture(identity(), row, [message("hi again", message_id="900")], NOW, LIMITS, also=[again])
    row = store.get(identity().address)
    assert row.turns_since_refresh == 1
    assert [m.text for m in row.crude] == ["hi"]


def test_a_failed_row_condition_is_merged_and_retried_inside_the_transaction(table):
    store, ledger = StmStore(table), TurnLedger(table)
    store.capture(identity(), None, [message("first", message_id="1")], NOW, LIMITS)
    stale_read = None  # this attempt loaded before the row existed
    done = ledger.op_record("message", "2", TurnOutcome(), NOW)
    store.capture(identity(), stale_read, [message("second", message_id="2")], NOW, LIMITS, also=[done])
    row = store.get(identity().address)
    assert [m.text for m in row.crude] == ["first", "second"]
    assert row.turns_since_refresh == 2
    assert table.get(turn_record_key("message", "2")) is not None


def test_a_full_privacy_turn_is_counted_and_recorded_once(table):
    store, ledger = StmStore(table), TurnLedger(table)
    store.count_turn(identity(), NOW, LIMITS, also=[ledger.op_record("message", "3", TurnOutcome(), NOW)])
    with pytest.raises(TurnAlreadyRecorded):
        store.count_turn(identity(), NOW, LIMITS, also=[ledger.op_record("message", "3", TurnOutcome(), NOW)])
    assert store.get(identity().address).turns_since_refresh == 1


def test_recording_alone_says_whether_it_was_first(table):
    turns = repository(table)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    key = TurnKey("slash_command", "4", "42", now)
    turns.commit(key, TurnOutcome(apologised=True), now, None)
    with pytest.raises(TurnAlreadyRecorded):
        turns.commit(key, TurnOutcome(), now, None)
    item = table.get(turn_record_key("slash_command", "4"))
    assert item["apologised"] is True and item["expires_at"] > now.timestamp()
    assert table.get(stm_row_key(identity().address)) is None


def test_failed_attempts_are_counted_once_per_delivery_and_start_again_when_forgotten(table):
    ledger = TurnLedger(table)
    # Given a turn whose first delivery failed, and Lambda reporting that same delivery twice
    assert ledger.count_failed_attempt("message", "7", "m-1#1", NOW) == 1
    assert ledger.count_failed_attempt("message", "7", "m-1#1", NOW) == 1
    # When it fails on its next deliveries
    assert ledger.count_failed_attempt("message", "7", "m-1#2", NOW) == 2
    assert ledger.count_failed_attempt("message", "7", "m-1#3", NOW) == 3
    # Then each counted once, another turn's count is its own, and the count expires with the records
    assert ledger.count_failed_attempt("message", "8", "m-2#1", NOW) == 1
    item = table.get(attempts_key("message", "7"))
    assert item["expires_at"] == int((NOW + RECORD_RETENTION).timestamp())
    # and a dead-lettered turn, redriven, starts counting again
    ledger.forget_attempts("message", "7")
    assert ledger.count_failed_attempt("message", "7", "m-3#1", NOW) == 1


# -- forget-all and the turns still on their way ------------------------------------------------------

ALICE, BOB = "400000000000000001", "400000000000000002"
SENT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _key(author: str, turn_id: str, sent: datetime = SENT) -> TurnKey:
    return TurnKey("message", turn_id, author, sent)


def outbox_of(key: TurnKey) -> ItemKey:
    return outbox_key(key.author_id, key.source, key.turn_id)


def repository(table) -> TurnRepository:
    return TurnRepository(table, StmStore(table), DynamoMemoryStore(table))


def test_forget_all_drops_every_reply_waiting_for_the_person_and_those_quoting_them(table):
    # Given outboxes kept for Alice, and one kept for Bob whose notice shows a memory about Alice
    turns, ledger = repository(table), TurnLedger(table)
    for turn_id in ("700000000000000001", "700000000000000002"):
        assert turns.keep(_key(ALICE, turn_id), Outbox("hi", ("hi",)), NOW)
    assert turns.keep(_key(BOB, "700000000000000003"), Outbox("noted", ("noted",), quoted=(ALICE,)), NOW)
    assert turns.keep(_key(BOB, "700000000000000004"), Outbox("x", ("x",)), NOW)
    # When Alice forgets everything
    assert ledger.forget_turns_of(ALICE, SENT + timedelta(minutes=1)) == 3
    # Then none of them is left, Bob's other reply is, and she is marked
    assert [table.get(outbox_of(_key(ALICE, t))) for t in ("700000000000000001", "700000000000000002")] == [
        None,
        None,
    ]
    assert table.get(outbox_of(_key(BOB, "700000000000000003"))) is None
    assert _outbox_from_item(table.get(outbox_of(_key(BOB, "700000000000000004")))).reply == "x"
    assert forgotten_at_from_item(table.get(forgotten_key(ALICE))) == SENT + timedelta(minutes=1)


def test_forget_all_records_done_an_answer_withdrawn_after_its_posts_began_and_drops_one_never_posted(table):
    turns, ledger = repository(table), TurnLedger(table)
    # Given Bob's two answers quoting Alice, both killed mid-delivery: one posted its first chunk
    # (noted before the second) covering his later message as a burst's, spoken by Luna; the other
    # kept, posted nothing
    luna = ("200000000000000001", "luna")
    posting = replace(_key(BOB, "700000000000000005.luna"), persona=luna)
    later = replace(_key(BOB, "700000000000000006.luna"), persona=luna)
    answer = Outbox("one\n\ntwo", ("one", "two"), quoted=(ALICE,), covers=("700000000000000006",))
    assert turns.keep(posting, answer, NOW)
    assert turns.record_posted(posting, replace(answer, reply_ids=("900",)))
    unposted = _key(BOB, "700000000000000007")
    assert turns.keep(unposted, Outbox("three", ("three",), quoted=(ALICE,)), NOW)

    # When Alice forgets everything
    assert ledger.forget_turns_of(ALICE, SENT + timedelta(minutes=1)) == 2

    # Then both outboxes are gone; the one that posted is done with what it posted (its retry answers
    # nothing again), its covered message keeps the keep's mark (done too), the other is left for its
    # retry to answer afresh; nothing of what they said is in the record
    assert table.get(outbox_of(posting)) is None and table.get(outbox_of(unposted)) is None
    assert turns.done(posting) == TurnOutcome(reply_ids=("900",))
    assert set(table.get(turn_record_key("message", posting.turn_id))) == {
        "pk",
        "sk",
        "reply_ids",
        "apologised",
        "completed_at",
        "expires_at",
    }
    assert turns.done(later) == TurnOutcome()
    assert table.get(turn_record_key("message", later.turn_id))["covered_by"] == posting.turn_id
    assert turns.done(unposted) is None
    # and a second forget-all, or one racing a live attempt's commit, writes over no record
    recorded = _key(BOB, "700000000000000008", SENT + timedelta(minutes=2))
    assert turns.keep(recorded, replace(answer, reply_ids=("901",), covers=()), NOW)
    table.put({**turn_record_key("message", recorded.turn_id).as_item(), "reply_ids": ["902"]})
    ledger.forget_turns_of(ALICE, SENT + timedelta(minutes=3))
    assert turns.done(recorded) == TurnOutcome(reply_ids=("902",))


def test_a_reply_to_or_quoting_someone_who_forgot_since_is_not_kept(table):
    turns = repository(table)
    TurnLedger(table).forget_turns_of(ALICE, SENT)
    assert turns.keep(_key(ALICE, "1"), Outbox("a", ("a",)), NOW) is False
    assert turns.keep(_key(BOB, "2"), Outbox("b", ("b",), quoted=(ALICE,)), NOW) is False
    assert table.get(outbox_of(_key(ALICE, "1"))) is None
    assert table.get(outbox_of(_key(BOB, "2"))) is None
    # what was said after the forget-all is kept as usual
    later = SENT + timedelta(milliseconds=1)
    assert turns.keep(_key(ALICE, "3", later), Outbox("c", ("c",)), NOW)
    assert table.get(outbox_of(_key(ALICE, "3"))) is not None


def test_the_mark_only_moves_forward(table):
    ledger = TurnLedger(table)
    ledger.forget_turns_of(ALICE, SENT)
    ledger.forget_turns_of(ALICE, SENT - timedelta(hours=1))  # a late, older forget-all
    assert forgotten_at_from_item(table.get(forgotten_key(ALICE))) == SENT
    ledger.forget_turns_of(ALICE, SENT + timedelta(hours=1))
    assert forgotten_at_from_item(table.get(forgotten_key(ALICE))) == SENT + timedelta(hours=1)


# -- the turn repository: its one read, its outbox, its commit ------------------------------------

KEY = TurnKey("message", "700000000000000005", "42", SENT)
DM = StmRowIdentity(StmAddress.of(None, KEY.author_id, CHANNEL, "kioku"), lineage_id=1)  # their DM's row


def _memory() -> TurnMemoryQuery:
    """The turn's read of its short-term memory, in the DM of ``KEY``'s author."""
    return TurnMemoryQuery(
        guild_id=None,
        channel_id=CHANNEL,
        user_id=KEY.author_id,
        parent_channel_id=None,
        persona_hint="kioku",
        active_since=NOW - timedelta(days=1),
        other_limit=0,
    )


def _capture(lines, said: Said | None = None) -> TurnCapture:
    """What the turn writes to its short-term memory row with its commit."""
    return TurnCapture(DM, None, tuple(lines), KEY.author_id, NOW, LIMITS, said=said)


def test_an_outbox_is_read_with_the_turn_and_dropped_by_the_commit_that_captures_it(table):
    turns, store = repository(table), StmStore(table)
    lines = (message("hi", message_id=KEY.turn_id), message("hello there", message_id="900"))
    outbox = Outbox(
        reply="hello there",
        chunks=("hello", "there"),
        notices=({"title": "Memory saved", "description": "Alice loves green tea"},),
        lines=lines,
        reply_ids=("900",),
    )
    turns.keep(KEY, outbox, NOW)
    assert table.get(outbox_of(KEY))["pk"] == "USER#42"  # in its author's partition

    read = turns.read(KEY, _memory(), recall_lineage=1)
    assert read.done is None and read.author_forgotten_at is None
    # the reply is kept once, as its chunks: what a redelivery posts
    assert read.outbox == replace(outbox, reply="hello\n\nthere") and read.outbox.answered
    assert "reply" not in table.get(outbox_of(KEY))

    turns.commit(KEY, TurnOutcome(reply_ids=("900", "901")), NOW, _capture(lines))

    read = turns.read(KEY, _memory(), recall_lineage=1)
    assert read.outbox is None and read.done == TurnOutcome(reply_ids=("900", "901"))
    assert [line.text for line in read.memory.state.current.crude] == ["hi", "hello there"]
    # a second attempt's commit is refused by the record and captures nothing
    with pytest.raises(TurnAlreadyRecorded):
        turns.commit(KEY, TurnOutcome(), NOW, _capture([message("hi again", message_id="902")]))
    assert store.get(DM.address).turns_since_refresh == 1


def test_a_speaker_who_forgot_everything_since_refuses_the_whole_commit(table):
    # Given a kept outbox, and its author's forget-all mark written after the message was sent
    turns, store = repository(table), StmStore(table)
    turns.keep(KEY, Outbox(reply="hi", chunks=("hi",)), NOW)
    mark_forgotten(table, KEY.author_id, SENT + timedelta(minutes=1))

    # When the turn commits what it captured of the message
    with pytest.raises(SpeakerForgotten):
        turns.commit(KEY, TurnOutcome(), NOW, _capture([message("hi")], said=Said(KEY.author_id, SENT)))

    # Then nothing was written: no line, no record, and the outbox stays
    read = turns.read(KEY, _memory(), recall_lineage=1)
    assert store.get(DM.address) is None and read.done is None
    assert read.outbox is not None
    assert read.author_forgotten_at == SENT + timedelta(minutes=1)


def test_a_capture_that_cannot_be_written_fails_the_commit_and_keeps_the_outbox(table, monkeypatch):
    # Given a kept outbox, and DynamoDB refusing every transaction
    turns = repository(table)
    turns.keep(KEY, Outbox(reply="hi", chunks=("hi",)), NOW)
    real_call = table._call

    def unavailable(operation, **params):
        if operation == "transact_write_items":
            raise StoreUnavailable("transact_write_items failed: EndpointConnectionError")
        return real_call(operation, **params)

    monkeypatch.setattr(table, "_call", unavailable)

    # When the turn commits, Then it fails for the retry, with nothing recorded and its outbox kept
    with pytest.raises(TurnCommitFailed):
        turns.commit(KEY, TurnOutcome(), NOW, _capture([message("hi")]))
    monkeypatch.setattr(table, "_call", real_call)
    read = turns.read(KEY, _memory(), recall_lineage=1)
    assert read.done is None and read.outbox is not None


# -- a tool's change to a memory, kept with the notice it owes --------------------------------------

CAROL = "400000000000000003"
UPDATED = {"title": "Memory updated", "description": "Bob loves matcha"}


def _bobs_memory(memories: DynamoMemoryStore) -> Memory:
    """A memory about Bob, saved by Alice."""
    draft = MemoryDraft(
        scope=MemoryScope.personal(BOB, 1),
        content="{user} loves tea",
        author_id=ALICE,
        created_at=NOW,
        origin=Origin("500", "700", private=False),
    )
    saved = memories.create(draft, limit=5)
    memory = memories.find(ScopeKind.PERSONAL, BOB, saved.memory_id)
    assert memory is not None
    return memory


def _rewrite(memories: DynamoMemoryStore, memory: Memory):
    """Alice's turn rewriting ``memory``, given the parts to write with it."""
    return lambda also: memories.replace_content(
        memory, "{user} loves matcha", NOW, author_id=ALICE, said_at=SENT, also=also
    )


def test_a_rewrite_and_its_notice_are_written_in_one_transaction(table, monkeypatch):
    # Given Alice's turn, about to rewrite Bob's memory (its notice quotes Bob)
    turns, memories = repository(table), DynamoMemoryStore(table)
    memory, key = _bobs_memory(memories), _key(ALICE, "700000000000000010")
    outbox = Outbox(notices=(UPDATED,), quoted=(BOB,))
    requests: list[str] = []
    real_call = table._call

    def counted(operation, **params):
        requests.append(operation)
        return real_call(operation, **params)

    monkeypatch.setattr(table, "_call", counted)

    # When it rewrites it
    updated, kept = turns.write_announced(key, outbox, NOW, _rewrite(memories, memory))

    # Then the memory says the new text and the outbox holds the notice, in one request (the
    # forget-all checks of Alice and Bob made once, though both the rewrite and the outbox make them)
    monkeypatch.setattr(table, "_call", real_call)
    assert kept and requests == ["transact_write_items"]
    assert memories.find(ScopeKind.PERSONAL, BOB, memory.memory_id) == updated
    assert updated.content == "{user} loves matcha"
    assert _outbox_from_item(table.get(outbox_of(key))).notices == (UPDATED,)


def test_a_rewrite_is_made_without_its_notice_when_someone_the_notice_quotes_forgot_everything(table):
    # Given Alice's turn, whose earlier notice quotes Carol, and Carol forgetting everything since
    turns, memories = repository(table), DynamoMemoryStore(table)
    memory, key = _bobs_memory(memories), _key(ALICE, "700000000000000011")
    mark_forgotten(table, CAROL, SENT + timedelta(minutes=1))
    outbox = Outbox(notices=({"title": "Memory saved"}, UPDATED), quoted=(CAROL, BOB))

    # When the turn rewrites Bob's memory
    updated, kept = turns.write_announced(key, outbox, NOW, _rewrite(memories, memory))

    # Then the memory is rewritten, and nothing kept
    assert not kept and updated.content == "{user} loves matcha"
    assert memories.find(ScopeKind.PERSONAL, BOB, memory.memory_id) == updated
    assert table.get(outbox_of(key)) is None


def test_a_rewrite_refused_as_forgotten_keeps_no_notice(table):
    # Given Bob forgetting everything since Alice's message
    turns, memories = repository(table), DynamoMemoryStore(table)
    memory, key = _bobs_memory(memories), _key(ALICE, "700000000000000012")
    mark_forgotten(table, BOB, SENT + timedelta(minutes=1))

    # When her turn rewrites his memory, Then it is refused as before, nothing changed or kept
    with pytest.raises(SpeakerForgotten) as refused:
        turns.write_announced(key, Outbox(notices=(UPDATED,), quoted=(BOB,)), NOW, _rewrite(memories, memory))
    assert not refused.value.by_notice  # the rewrite's own refusal, not the notice's
    assert memories.find(ScopeKind.PERSONAL, BOB, memory.memory_id) == memory
    assert table.get(outbox_of(key)) is None


def _delete(memories: DynamoMemoryStore, memory: Memory):
    return lambda also: memories.delete(memory, also=also)


@pytest.mark.parametrize("write", [_rewrite, _delete], ids=["rewrite", "delete"])
def test_a_change_whose_notice_finds_the_turn_another_attempt_s_is_not_made(table, write):
    # Given a twin attempt holding Alice's turn (its notices kept as its claim)
    turns, memories = repository(table), DynamoMemoryStore(table)
    memory, key = _bobs_memory(memories), _key(ALICE, "700000000000000013")
    assert turns.keep(key, Outbox(notices=({"title": "Memory saved"},), claim="m#1#twin"), NOW)

    # When this attempt changes Bob's memory with its notice, as its own claim
    outbox = Outbox(notices=(UPDATED,), quoted=(BOB,), claim="m#1#mine")
    with pytest.raises(TurnClaimed) as claimed:
        turns.write_announced(key, outbox, NOW, write(memories, memory))

    # Then it is told whose the turn is; the memory and the twin's outbox are as they were
    assert claimed.value.claim == "m#1#twin"
    assert memories.find(ScopeKind.PERSONAL, BOB, memory.memory_id) == memory
    assert _outbox_from_item(table.get(outbox_of(key))).claim == "m#1#twin"

    # and, taking the twin's claim over (its receive over), the change is made and the notice kept
    _, kept = turns.write_announced(key, outbox, NOW, write(memories, memory), "m#1#twin")
    assert kept and _outbox_from_item(table.get(outbox_of(key))).claim == "m#1#mine"


def test_a_change_whose_turn_is_done_is_not_made(table):
    # Given Alice's turn recorded done by a twin
    turns, memories = repository(table), DynamoMemoryStore(table)
    memory, key = _bobs_memory(memories), _key(ALICE, "700000000000000014")
    turns.commit(key, TurnOutcome(), NOW, None)

    # When this attempt deletes Bob's memory with its notice, Then nothing is deleted or kept
    with pytest.raises(TurnAlreadyRecorded):
        turns.write_announced(
            key, Outbox(notices=(UPDATED,), claim="m#1#mine"), NOW, _delete(memories, memory)
        )
    assert memories.find(ScopeKind.PERSONAL, BOB, memory.memory_id) == memory
    assert table.get(outbox_of(key)) is None


def test_an_alter_persona_s_outbox_is_kept_only_while_the_server_still_has_the_persona(table):
    # Given Luna on a server, and a turn of hers
    configs, turns = ConfigStore(table), repository(table)
    luna = Persona(persona_id="700000000000000099", lineage_id=7, name="Luna", alter=True)
    config = configs.save_server_config(ServerConfig(guild_id="500", alters=(luna,)))
    key = replace(_key(ALICE, "700000000000000015"), persona=("500", luna.persona_id))
    answer = Outbox(reply="hi", chunks=("hi",), claim="m#1#mine")

    # When her answer is kept while she is there, Then it is
    assert turns.keep(key, answer, NOW)

    # When a manager removes her before another attempt keeps its answer
    configs.save_server_config(replace(config, alters=()))
    other = replace(_key(ALICE, "700000000000000016"), persona=("500", luna.persona_id))

    # Then that keep is refused and nothing is kept
    with pytest.raises(PersonaRemoved):
        turns.keep(other, answer, NOW)
    assert table.get(outbox_of(other)) is None


def test_a_configuration_saved_before_persona_ids_does_not_refuse_a_keep(table):
    # Given a server's configuration as an older release stored it (no persona_ids)
    luna = Persona(persona_id="700000000000000098", lineage_id=7, name="Luna", alter=True)
    item = server_config_to_item(ServerConfig(guild_id="501", alters=(luna,)))
    del item["persona_ids"]
    table.put(item)
    key = replace(_key(ALICE, "700000000000000017"), persona=("501", luna.persona_id))

    # When Luna's answer is kept, Then it is
    assert repository(table).keep(key, Outbox(reply="hi", chunks=("hi",), claim="m#1#mine"), NOW)


def test_an_alter_persona_s_turn_whose_persona_was_removed_before_its_commit_is_recorded_uncaptured(table):
    # Given a server that no longer has Luna (removed after her turn kept and posted its answer)
    turns, store = repository(table), StmStore(table)
    ConfigStore(table).save_server_config(ServerConfig(guild_id="502"))
    key = replace(KEY, turn_id="700000000000000018", persona=("502", "700000000000000097"))
    lines = (message("hi", message_id=key.turn_id), message("hello there", message_id="903"))

    # When her turn commits, Then it is recorded done and no row of hers is written
    turns.commit(key, TurnOutcome(reply_ids=("903",)), NOW, _capture(lines))
    assert turns.done(key) == TurnOutcome(reply_ids=("903",))
    assert store.get(DM.address) is None
    # and a second attempt's commit is refused as before
    with pytest.raises(TurnAlreadyRecorded):
        turns.commit(key, TurnOutcome(), NOW, _capture(lines))
