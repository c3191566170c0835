"""A burst's covered messages in DynamoDB: marked covered when the covering turn keeps its answer
(before anything is posted), only where no other turn answered or is answering them, and recorded
with the reply by its commit without overwriting a record another turn wrote. Conditions in the
store decide, not the channel's FIFO order, which a dead-letter redrive breaks."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kioku.adapters.dynamodb.keys import turn_record_key
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.dynamodb.turn_ledger import COVERED_BY, TurnLedger
from kioku.domain.turn import CoveredElsewhere, Outbox, TurnAlreadyRecorded, TurnKey, TurnOutcome
from tests.integration.test_turn_ledger import KEY, _memory, outbox_of, repository
from tests.unit.stm_builders import NOW

LATER = ("700000000000000006", "700000000000000007")
ANSWER = Outbox(reply="hello", chunks=("hello",), covers=LATER, claim="attempt-1")


@pytest.fixture
def table(resources) -> KiokuTable:
    """The table read at these tests' time (``NOW``)."""
    return KiokuTable(resources.table_name, clock=lambda: NOW)


def key_of(turn_id: str) -> TurnKey:
    return replace(KEY, turn_id=turn_id)


def covered_by(table, turn_id: str) -> str | None:
    return (table.get(turn_record_key(KEY.source, turn_id)) or {}).get(COVERED_BY)


def test_keeping_an_answer_marks_the_messages_it_covers_before_anything_is_posted(table):
    turns = repository(table)

    assert turns.keep(KEY, ANSWER, NOW)

    # each covered message's own job, delivered next, finds it done (the gate's one GetItem), even
    # if the covering turn is dead-lettered before it posts or commits
    for turn_id in LATER:
        assert covered_by(table, turn_id) == KEY.turn_id
        assert turns.done(key_of(turn_id)) == TurnOutcome()
    # the covering turn's own redelivery does not take its marks for another turn's answers
    assert turns.read(KEY, _memory(), recall_lineage=1, later=LATER).later_done == frozenset()
    # another turn reading them finds them answered
    other = key_of("700000000000000004")
    assert turns.read(other, _memory(), recall_lineage=1, later=LATER).later_done == frozenset(LATER)
    # a covered message's own attempt cannot keep an answer of its own now
    with pytest.raises(TurnAlreadyRecorded):
        turns.keep(key_of(LATER[0]), Outbox(reply="again", chunks=("again",), claim="attempt-2"), NOW)

    # keeping it again (the chunks posted so far) and committing record them with the reply
    assert turns.keep(KEY, replace(ANSWER, reply_ids=("900",)), NOW)
    turns.commit(KEY, TurnOutcome(reply_ids=("900",), covered=LATER), NOW, None)
    for turn_id in LATER:
        assert covered_by(table, turn_id) == KEY.turn_id
        assert turns.done(key_of(turn_id)) == TurnOutcome(reply_ids=("900",))
    assert table.get(outbox_of(KEY)) is None


@pytest.mark.parametrize("elsewhere", ["recorded", "kept"])
def test_an_answer_covering_a_message_another_turn_answered_or_is_answering_is_not_kept(table, elsewhere):
    turns = repository(table)
    # Given the second message answered by its own job (a redrive broke the channel's order), or
    # its own job's answer kept and being posted
    if elsewhere == "recorded":
        ledger = TurnLedger(table)
        table.transact_write([ledger.op_record(KEY.source, LATER[1], TurnOutcome(reply_ids=("950",)), NOW)])
    else:
        assert turns.keep(key_of(LATER[1]), Outbox(reply="its own", chunks=("its own",), claim="c"), NOW)

    # Then the turn's read finds it answered, so a fresh attempt covers no more than the first
    read = turns.read(KEY, _memory(), recall_lineage=1, later=LATER)
    assert read.later_done == frozenset({LATER[1]})

    # And an answer read before that cannot be kept: nothing kept, nothing marked, posted nothing
    with pytest.raises(CoveredElsewhere):
        turns.keep(KEY, ANSWER, NOW)
    assert table.get(outbox_of(KEY)) is None
    assert covered_by(table, LATER[0]) is None


def test_a_commit_leaves_a_covered_record_another_turn_wrote(table):
    turns, ledger = repository(table), TurnLedger(table)
    # Given an answer kept before its covered messages were marked (a release before), and the
    # second message answered by its own job since
    table.put({**outbox_of(KEY).as_item(), "chunks": ["hello"], "answered": True})
    table.transact_write([ledger.op_record(KEY.source, LATER[1], TurnOutcome(reply_ids=("950",)), NOW)])

    # When the covering turn commits
    turns.commit(KEY, TurnOutcome(reply_ids=("900",), covered=LATER), NOW, None)

    # Then it is recorded, the first message with its reply, the second keeps its own job's
    assert turns.done(KEY) == TurnOutcome(reply_ids=("900",))
    assert turns.done(key_of(LATER[0])) == TurnOutcome(reply_ids=("900",))
    assert turns.done(key_of(LATER[1])) == TurnOutcome(reply_ids=("950",))
    assert covered_by(table, LATER[1]) is None
    # and a second commit of the same turn is still refused as a twin's
    with pytest.raises(TurnAlreadyRecorded):
        turns.commit(KEY, TurnOutcome(reply_ids=("901",), covered=LATER), NOW, None)


def test_a_retry_whose_kept_answer_was_withdrawn_reads_the_messages_its_earlier_attempt_marked(table):
    turns = repository(table)
    # Given the covering turn's answer kept (both later messages marked), then withdrawn by a
    # forget-all of someone its notice quoted (its outbox dropped, the marks left)
    assert turns.keep(KEY, ANSWER, NOW)
    table.delete(outbox_of(KEY))

    # Then its retry's read names them as its own earlier attempt's (to cover again), not as answered
    read = turns.read(KEY, _memory(), recall_lineage=1, later=LATER)
    assert read.later_marked == frozenset(LATER) and read.later_done == frozenset()
    # while another turn's read takes them as answered, and names none as its own
    other = turns.read(key_of("700000000000000004"), _memory(), recall_lineage=1, later=LATER)
    assert other.later_marked == frozenset() and other.later_done == frozenset(LATER)
    # and the retry, covering them again, records them with its reply
    assert turns.keep(KEY, replace(ANSWER, claim="attempt-2"), NOW)
    turns.commit(KEY, TurnOutcome(reply_ids=("900",), covered=LATER), NOW, None)
    assert [turns.done(key_of(turn_id)) for turn_id in LATER] == [TurnOutcome(reply_ids=("900",))] * 2
