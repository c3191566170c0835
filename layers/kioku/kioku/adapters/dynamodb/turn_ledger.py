"""The record that a turn is done: written in the same transaction as the turn's capture, so that
a redelivered or duplicated turn is recognised (and never replies or counts twice) with no
request of its own: the record is read in the turn's first BatchGetItem.

Besides the record (``keys.turn_record_key``: reply ids, apologised, expires_at after ``RECORD_RETENTION``), the
ledger keeps the failed attempts of a turn (``keys.attempts_key``: the worker counts them itself,
so that it dead-letters by attempts, not by receives), drops a person's outboxes when they forget
everything (``keys.outbox_range``: their turns' outboxes, see turn_repository, and the pointers to
replies whose notices show a memory about them), and counts a person's turns per minute
(``keys.rate_key``, each turn once, against the minute it was sent).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.forgetting import mark_forgotten
from kioku.adapters.dynamodb.keys import (
    ItemKey,
    attempts_key,
    outbox_key,
    outbox_range,
    pointed_outbox,
    rate_key,
    turn_record_key,
)
from kioku.adapters.dynamodb.stm_items import crude_lines_from_items
from kioku.adapters.dynamodb.table import Cursor, Item, KiokuTable, UpdateExpression
from kioku.adapters.dynamodb.turn_traces import TurnTraces, shown_index, trace_attributes
from kioku.domain.turn import RateTaken, TurnOutcome
from kioku.domain.waiting_replies import WaitingReply

COVERED_BY: Final = "covered_by"
"""On a burst's covered record: the record id of the turn that answers it."""
RECORD_RETENTION: Final = timedelta(days=16)
"""Longer than a turn can wait to be tried again: a day in the turn queue, 14 in the dead-letter
queue, a day in the turn queue after a redrive (template.yaml); a record gone before then would let
a redriven turn that was answered be answered again."""


def outcome_from_item(item: Item | None) -> TurnOutcome | None:
    if item is None:
        return None
    return TurnOutcome(reply_ids=tuple(item.get("reply_ids", ())), apologised=bool(item.get("apologised")))


class TurnLedger:
    def __init__(self, table: KiokuTable) -> None:
        self._table = table
        self.traces = TurnTraces(table)
        """What each turn's model was shown, found by a reply's message id ("Why this answer?")."""

    def count_failed_attempt(self, source: str, turn_id: str, delivery: str, now: datetime) -> int:
        """Count a failed attempt of the turn and return how many have failed. ``delivery`` names
        the attempt (SQS message id and receive count): an attempt reported twice counts once. Only
        failures are written, so a turn that succeeds first time makes no request here."""
        expression = UpdateExpression()
        expression.add("attempts", 1)
        expression.set("delivery", delivery)
        expression.set("expires_at", int((now + RECORD_RETENTION).timestamp()))
        delivered = expression.name("delivery")
        try:
            item = self._table.update_with(
                attempts_key(source, turn_id),
                expression,
                condition=f"attribute_not_exists({delivered}) OR {delivered} <> {expression.value(delivery)}",
                return_new=True,
            )
        except ConditionFailed as exc:
            return int((exc.old_item or {}).get("attempts", 1))
        return int((item or {}).get("attempts", 1))

    def forget_attempts(self, source: str, turn_id: str, author_id: str | None = None) -> None:
        """Start the count again (a dead-lettered turn redriven gets its attempts anew), and release
        ``author_id``'s outbox of the turn from the claim of its dead-lettered attempt (a redrive
        takes it over at once: nobody else is posting it)."""
        self._table.delete(attempts_key(source, turn_id))
        if author_id is not None:
            with suppress(ConditionFailed):
                self._table.update(
                    outbox_key(author_id, source, turn_id), "REMOVE claim", condition="attribute_exists(pk)"
                )

    def op_record(self, source: str, turn_id: str, outcome: TurnOutcome, now: datetime) -> dict[str, Any]:
        """A transaction operation recording the turn as done, refused if it already is."""
        return self._table.op_put(
            _record_item(source, turn_id, outcome, now), condition="attribute_not_exists(pk)"
        )

    def op_covered(
        self, source: str, turn_id: str, by: str, reply_ids: tuple[str, ...], now: datetime
    ) -> dict[str, Any]:
        """A transaction operation recording as done a later turn that turn ``by`` answers (a burst's
        message): its reply is that turn's. Written first with the covering turn's outbox, before
        anything is posted (no reply ids yet: the covered message's own job, finding it, ends as
        done even if the covering turn is dead-lettered mid-delivery), then with its commit. Never
        over a record another turn wrote (its own job's, another burst's): a dead-letter redrive
        breaks the FIFO order this would otherwise lean on."""
        item = {**_record_item(source, turn_id, TurnOutcome(reply_ids=reply_ids), now), COVERED_BY: by}
        return self._table.op_put(
            item,
            condition="attribute_not_exists(pk) OR #by = :by",
            names={"#by": COVERED_BY},
            values={":by": by},
        )

    def op_no_outbox(self, author_id: str, source: str, turn_id: str) -> dict[str, Any]:
        """A transaction check that turn ``turn_id`` of ``author_id`` keeps no outbox: no attempt of
        its own has an answer (or notices) under way, which a turn covering it would answer twice."""
        return self._table.op_check(outbox_key(author_id, source, turn_id), "attribute_not_exists(pk)")

    def covered_elsewhere(self, source: str, record_ids: Sequence[str], by: str) -> frozenset[str]:
        """Of the records ``record_ids``, those written by another turn than ``by`` (read only when a
        commit was refused)."""
        keys = {record_id: turn_record_key(source, record_id) for record_id in record_ids}
        found = {ItemKey.of(item): item for item in self._table.batch_get(list(keys.values()))}
        return frozenset(
            record_id for record_id, key in keys.items() if key in found and found[key].get(COVERED_BY) != by
        )

    def waiting_replies_to(self, user_id: str) -> list[WaitingReply]:
        """Every unfinished turn kept in ``user_id``'s partition, as forget-all would drop them."""
        waiting: list[WaitingReply] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._table.query_range(
                outbox_range(user_id), consistent=True, start_key=start_key
            )
            waiting += [_waiting_reply(item) for item in items]
            if start_key is None:
                return waiting

    def forget_turns_of(self, user_id: str, at: datetime) -> int:
        """``user_id`` asked at ``at`` to forget everything: mark it (before anything is deleted, so no
        turn can keep or capture what they said before), then drop every unfinished reply that
        answers them or quotes a memory about them. Returns the replies dropped."""
        mark_forgotten(self._table, user_id, at)
        dropped = 0
        start_key: Cursor | None = None
        while True:
            items, start_key = self._table.query_range(
                outbox_range(user_id), consistent=True, start_key=start_key
            )
            for item in items:
                key = ItemKey.of(item)
                if item.get("answers"):  # a pointer to a reply to someone else that quotes them
                    # deleted first: a forget-all dying before the record leaves nothing of theirs
                    self._record_withdrawn(self._table.delete(pointed_outbox(key, str(item["answers"]))), at)
                self._table.delete(key)
                dropped += 1
            if start_key is None:
                return dropped

    def _record_withdrawn(self, outbox: Item | None, at: datetime) -> None:
        """A reply to someone else, withdrawn once some of it was posted (its posts noted): the turn
        recorded done with what it posted, as a live attempt withdrawn midway ends, so that its retry
        does not answer again (past Discord's nonce window, or through a webhook, no nonce stops it).
        One posted not at all is only dropped: its retry answers afresh. The author's own retries are
        withdrawn at their read; a burst's covered messages keep their marks. Never over a record."""
        if outbox is None or not outbox.get("reply_ids"):
            return
        reply_ids = tuple(str(reply_id) for reply_id in outbox["reply_ids"])
        outcome = TurnOutcome(reply_ids=reply_ids, apologised=bool(outbox.get("apologised")))
        with suppress(ConditionFailed):
            self._table.put(
                _record_item(str(outbox["source"]), str(outbox["turn_id"]), outcome, at),
                condition="attribute_not_exists(pk)",
            )


RATE_WINDOW_SECONDS = 60


class RateLedger:
    """Turns per person per minute, counted with a conditional write: the count never passes
    ``limit + 1``, so the turn that goes over is told (once) and the ones after it are refused.

    A turn is counted once ever, against the minute its message was sent: the minute's item lists
    the turns it counted, in order, and is kept as long as a turn can come back (``RECORD_RETENTION``),
    so a redelivered, duplicated or redriven turn gets its first answer again, whenever it is tried."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def take(self, user_id: str, turn_id: str, sent_at: datetime, limit: int) -> RateTaken:
        """Count turn ``turn_id`` of ``user_id``, sent at ``sent_at``: its number within its minute,
        or None once past ``limit + 1``; a turn counted before gets the number it got then (``before``)."""
        minute = int(sent_at.timestamp()) // RATE_WINDOW_SECONDS
        key = rate_key(user_id, minute)
        expression = UpdateExpression()
        expression.add("turns", 1)
        expression.append("counted", [turn_id])
        expression.set("expires_at", minute * RATE_WINDOW_SECONDS + int(RECORD_RETENTION.total_seconds()))
        turns, counted = expression.name("turns"), expression.name("counted")
        try:
            item = self._table.update_with(
                key,
                expression,
                condition=(
                    f"(attribute_not_exists({turns}) OR {turns} <= {expression.value(limit)}) "
                    f"AND NOT contains({counted}, {expression.value(turn_id)})"
                ),
                return_new=True,
            )
        except ConditionFailed as exc:
            old = exc.old_item if exc.old_item is not None else self._table.get(key)
            counted_turns = [str(turn) for turn in (old or {}).get("counted", ())]
            if turn_id in counted_turns:
                return RateTaken(counted_turns.index(turn_id) + 1, before=True)
            return RateTaken(None)
        return RateTaken(int((item or {}).get("turns", 0)))


def _waiting_reply(item: Item) -> WaitingReply:
    expires = item.get("expires_at")
    common: dict[str, Any] = {
        "source": str(item.get("source", "")),
        "turn_id": str(item.get("turn_id", "")),
        "expires_at": datetime.fromtimestamp(int(expires), UTC) if expires is not None else None,
    }
    if item.get("answers"):
        return WaitingReply(**common, answers=str(item["answers"]))
    reply = item.get("reply")
    if reply is None and item.get("chunks"):  # the reply is kept once, as the chunks it is posted in
        reply = "\n\n".join(map(str, item["chunks"]))
    return WaitingReply(
        **common,
        reply=None if reply is None else str(reply),
        notices=tuple(json.loads(str(item.get("notices") or "[]"))),
        lines=crude_lines_from_items(json.loads(str(item.get("lines") or "[]"))),
    )


def _record_item(source: str, turn_id: str, outcome: TurnOutcome, now: datetime) -> Item:
    return {
        **turn_record_key(source, turn_id).as_item(),
        "reply_ids": list(outcome.reply_ids),
        "apologised": outcome.apologised,
        "completed_at": now.isoformat(),
        "expires_at": int((now + RECORD_RETENTION).timestamp()),
        **(trace_attributes(outcome.trace) if outcome.trace is not None else {}),
        **(shown_index(source, turn_id, outcome.trace, now) if outcome.trace is not None else {}),
    }
