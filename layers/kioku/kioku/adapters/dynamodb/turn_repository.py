"""A turn's own items: its single read and its commit, and between them its outbox; the repository
composes both, with the short-term memory store (the row, the configuration and the profile) and
the long-term memory store (the books recall reads).

The record that the turn is done is the ledger's (``TurnLedger``); the outbox waits in its author's
partition and, as a pointer (``answers`` = the author), in the partition of each person whose
memory its notices show (``keys.outbox_key``).

The outbox is a transactional outbox: once the turn's answer exists, what must still happen (the
chunks to post, the memory notices, the raw lines to capture) is put here before the first post,
and the commit deletes it in the transaction that captures the turn and records it as done. A
container killed between any two effects leaves the outbox for the redelivery, which posts what is
missing (Discord's nonce and the channel's history make a post idempotent) and commits, without
asking the model again. Notices of tools that ran before the answer was known are kept too (an
outbox with no answer yet), so a memory saved by an attempt that died is still announced.

It lives in its author's partition so that forgetting a person can drop their planned replies with
one Query; a person whose memory its notices show gets a pointer to it in theirs, so their
forget-all drops it too. It is kept only while none of them has forgotten everything since the
message was sent (a condition of the put's own transaction). The record, the outbox and the
author's forget-all mark ride in the turn's first BatchGetItem, next to its memory: no request of
their own.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace
from datetime import datetime
from typing import Any, Final, TypeVar

from kioku.adapters.dynamodb.config_store import PERSONA_IDS
from kioku.adapters.dynamodb.errors import (
    AlsoRefused,
    CancellationReason,
    ConditionFailed,
    StoreError,
    TransactionCancelled,
)
from kioku.adapters.dynamodb.forgetting import forgotten_at_from_item, op_not_forgotten_since
from kioku.adapters.dynamodb.keys import (
    ItemKey,
    forgotten_key,
    outbox_key,
    server_config_key,
    turn_record_key,
)
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore, crude_lines_from_items, crude_lines_to_items
from kioku.adapters.dynamodb.table import Item, KiokuTable, UpdateExpression
from kioku.adapters.dynamodb.turn_ledger import COVERED_BY, RECORD_RETENTION, TurnLedger, outcome_from_item
from kioku.adapters.dynamodb.turn_traces import commit_parts, trace_attributes, trace_from_item
from kioku.adapters.dynamodb.webhook_store import WebhookStore, webhook_from_item
from kioku.domain.forgetting import SpeakerForgotten
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.privacy import Place, PrivacyPolicy
from kioku.domain.stm.capture import TurnCapture
from kioku.domain.turn import (
    CoveredElsewhere,
    Outbox,
    PersonaRemoved,
    TurnAlreadyRecorded,
    TurnClaimed,
    TurnCommitFailed,
    TurnKey,
    TurnOutcome,
)
from kioku.domain.turn_jobs import record_id_of
from kioku.domain.turn_read import TurnMemoryQuery, TurnRead

OUTBOX_PART: Final = "outbox"
NOT_DONE_PART: Final = "not done"
PERSONA_PART: Final = "persona still there"
COVERED_PART: Final = "covered"
ANSWERED: Final = "answered"
CLAIM: Final = "claim"
KEEP_ATTEMPTS: Final = 5
KEEP_BACKOFF_SECONDS: Final = 0.01
_T = TypeVar("_T")


def _outbox_key(key: TurnKey, person_id: str | None = None) -> ItemKey:
    return outbox_key(person_id or key.author_id, key.source, key.turn_id)


class TurnRepository:
    def __init__(self, table: KiokuTable, stm: StmStore, memories: DynamoMemoryStore) -> None:
        self._table = table
        self._ledger = TurnLedger(table)
        self._stm = stm
        self._memories = memories

    def read(
        self,
        key: TurnKey,
        memory: TurnMemoryQuery,
        *,
        recall_lineage: int,
        recall_people: Sequence[str] = (),
        webhook_of: tuple[str, str] | None = None,
        later: Sequence[str] = (),
    ) -> TurnRead:
        """Read the turn in one BatchGetItem (``StmStore.load_turn``): its ``memory``, its record and
        its outbox, its author's forget-all mark, and the memory books recall reads in the persona
        lineage ``recall_lineage`` (a guess: see ``recall``) for the server and ``recall_people``, the
        persona webhook of ``webhook_of`` (guild, channel) when given, and the records of ``later``
        turns and their outboxes (a burst's, by record id)."""
        done_at, outbox_at, forgotten_at = (
            turn_record_key(key.source, key.turn_id),
            _outbox_key(key),
            forgotten_key(key.author_id),
        )
        people = tuple(recall_people)
        books = self._memories.recall_keys(memory.guild_id, recall_lineage, people)
        hook_at = WebhookStore.key(*webhook_of) if webhook_of else None
        later_at = {record_id: turn_record_key(key.source, record_id) for record_id in later}
        later_outboxes = {record_id: _outbox_key(replace(key, turn_id=record_id)) for record_id in later}
        extra = [
            done_at,
            outbox_at,
            forgotten_at,
            *books,
            *([hook_at] if hook_at else []),
            *later_at.values(),
            *later_outboxes.values(),
        ]
        loaded = self._stm.load_turn(memory, extra_keys=extra)
        found = loaded.extra
        later_found = {rid: (found.get(later_at[rid]), found.get(later_outboxes[rid])) for rid in later}
        taken = frozenset(
            rid for rid, (record, outbox) in later_found.items() if _taken(record, outbox, key.turn_id)
        )
        return TurnRead(
            memory=loaded,
            done=outcome_from_item(found.get(done_at)),
            outbox=_outbox_from_item(found.get(outbox_at)),
            author_forgotten_at=forgotten_at_from_item(found.get(forgotten_at)),
            query=memory,
            recall_lineage=recall_lineage,
            recall_people=people,
            webhook=webhook_from_item(found.get(hook_at)) if hook_at else None,
            later_done=taken,
            # recorded, yet not taken: this turn's own marks, left by an attempt that kept its answer
            later_marked=frozenset(
                rid for rid, (record, _) in later_found.items() if record and rid not in taken
            ),
        )

    def done(self, key: TurnKey) -> TurnOutcome | None:
        """The turn's record, if it is done (one GetItem: ``read`` carries it in its BatchGetItem)."""
        return outcome_from_item(self._table.get(turn_record_key(key.source, key.turn_id)))

    def recall(
        self,
        read: TurnRead,
        lineage: int,
        *,
        place: Place,
        policy: PrivacyPolicy,
        now: datetime | None = None,
    ) -> RecallSet:
        """The memories the turn at ``place`` may be shown with a persona of ``lineage`` at ``now``
        (none expired): from the books its read fetched when that is the lineage it guessed, else
        with one BatchGetItem more."""
        guild_id, people = read.query.guild_id, read.recall_people
        if lineage == read.recall_lineage:
            found = read.memory.extra
            return self._memories.recall_from_items(
                found, guild_id, lineage, people, place=place, policy=policy, now=now
            )
        return self._memories.recall(guild_id, lineage, people, place=place, policy=policy, now=now)

    def keep(self, key: TurnKey, outbox: Outbox, now: datetime, taking_from: str | None = None) -> bool:
        """Put the outbox (overwriting this turn's earlier one): before the effect it must survive.
        False, nothing kept, if its author or someone its notices quote asked to forget everything
        since the message was sent. An outbox with a claim (its answer, or its notices only) is a
        claim on the turn: kept only while no other attempt holds the outbox (``TurnClaimed``; but
        ``taking_from``, the claim it takes over) and the turn is not done (``TurnAlreadyRecorded``:
        a twin committed before this keep)."""
        parts = self._keep_parts(key, outbox, now, claimed=outbox.claim is not None, taking_from=taking_from)
        for attempt in range(KEEP_ATTEMPTS):
            try:
                self._table.transact_write(parts.values())
                return True
            except TransactionCancelled as exc:
                reasons = dict(zip(parts, exc.reasons, strict=False))
                if any(
                    reason.condition_failed for name, reason in reasons.items() if name.endswith("forgotten")
                ):
                    return False
                _raise_if_taken(reasons)
                # a race with another write of these items (a forget-all's, a twin worker's): the keep
                # is retried here, not the whole turn with its model calls
                if not exc.conflicted or attempt == KEEP_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0, KEEP_BACKOFF_SECONDS * 2**attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def record_posted(self, key: TurnKey, outbox: Outbox, taking_from: str | None = None) -> bool:
        """Note what the outbox has posted (and through which webhooks) before its next post, while
        it is still kept and still this attempt's (``outbox.claim``; ``taking_from``: the claim it
        takes over). False: forget-all deleted it, nothing more may be posted; ``TurnClaimed``:
        another attempt took it over. Where a plain turn read its outbox back, at the same cost."""
        update = UpdateExpression()
        update.set("reply_ids", list(outbox.reply_ids))
        update.set("notice_ids", list(outbox.notice_ids))
        update.set("webhook_ids", list(outbox.webhook_ids))
        condition = "attribute_exists(pk)"
        if outbox.claim is not None:
            update.set(CLAIM, outbox.claim)
            name = update.name(CLAIM)
            held = [outbox.claim, *([taking_from] if taking_from else [])]
            either = " OR ".join(f"{name} = {update.value(claim)}" for claim in held)
            condition += f" AND (attribute_not_exists({name}) OR {either})"
        try:
            self._table.update_with(_outbox_key(key), update, condition=condition)
        except ConditionFailed as exc:
            if exc.old_item is None:
                return False
            raise TurnClaimed(str(exc.old_item.get(CLAIM))) from exc
        return True

    def wait_for(self, key: TurnKey, claim: str, waiter: str) -> None:
        """Mark the outbox as waited for: the attempt ``waiter`` gives the turn back until ``claim``'s
        invocation is surely over, and its message's next receive may take the outbox over. Kept
        only if ``claim`` still holds it and nobody waits for it already."""
        # taken over, done, or already waited for by another: each comes back to look again
        with suppress(ConditionFailed):
            self._table.update(
                _outbox_key(key),
                "SET waited_for = :claim, waited_by = :waiter",
                condition="#claim = :claim AND (attribute_not_exists(waited_for) OR waited_for <> :claim)",
                names={"#claim": CLAIM},
                values={":claim": claim, ":waiter": waiter},
            )

    def write_announced(
        self,
        key: TurnKey,
        outbox: Outbox,
        now: datetime,
        write: Callable[[Sequence[dict[str, Any]]], _T],
        taking_from: str | None = None,
    ) -> tuple[_T, bool]:
        """Make a tool's change to a memory (``write``: ``DynamoMemoryStore.delete`` or
        ``replace_content``, given the parts to add to its transaction) and keep ``outbox``, with the
        notice the change owes, in the same transaction: a retry of an attempt that died right after
        finds the notice, where its own change would find nothing to do (the memory deleted, or
        saying the new text already). An outbox with a claim is kept as ``keep`` keeps it: the
        change is not made when another attempt holds the turn (``TurnClaimed``), it is done
        (``TurnAlreadyRecorded``) or its persona was removed (``PersonaRemoved``). Raises as ``write``; what it returned, and False when the change
        is made but nothing kept (someone the outbox answers or quotes forgot everything since)."""
        claimed = outbox.claim is not None
        parts = self._keep_parts(key, outbox, now, claimed=claimed, taking_from=taking_from)
        try:
            return write(list(parts.values())), True
        except SpeakerForgotten as exc:
            if not exc.by_notice:
                raise  # the change itself is refused: its author or subject forgot everything since
            if isinstance(exc, AlsoRefused):
                names = list(parts)
                _raise_if_taken({names[n]: reason for n, reason in exc.refused.items()})
            return write(()), False

    def _keep_parts(
        self,
        key: TurnKey,
        outbox: Outbox,
        now: datetime,
        *,
        claimed: bool = False,
        taking_from: str | None = None,
    ) -> dict[str, dict[str, Any]]:
        """The outbox, the pointers of the people its notices quote, and forget-all's checks;
        ``claimed``: the outbox's claim (no other attempt's outbox held, the turn not done) too."""
        item = _outbox_item(key, outbox, now)
        put = self._table.op_put(item)
        if claimed:
            # an outbox of notices only is a claim too: a twin's must not replace one being posted
            held = {":claim": outbox.claim, **({":taking": taking_from} if taking_from else {})}
            put = self._table.op_put(
                item,
                condition="(attribute_not_exists(#answered) AND attribute_not_exists(#claim)) OR "
                + " OR ".join(f"#claim = {value}" for value in held),
                names={"#answered": ANSWERED, "#claim": CLAIM},
                values=held,
            )
        parts = {
            OUTBOX_PART: put,
            "author_not_forgotten": op_not_forgotten_since(self._table, key.author_id, key.sent_at),
        }
        if claimed:
            parts[NOT_DONE_PART] = self._table.op_check(
                turn_record_key(key.source, key.turn_id), "attribute_not_exists(pk)"
            )
        if claimed and key.persona is not None:
            parts[PERSONA_PART] = self._persona_check(*key.persona)
        persona_id = key.persona[1] if key.persona else None
        for record_id in (record_id_of(message_id, persona_id) for message_id in outbox.covers):
            # before anything is posted: a covered message's own job ends as done, even if this
            # turn is dead-lettered mid-delivery; never one another turn answers or is answering
            parts[f"{COVERED_PART} {record_id}"] = self._ledger.op_covered(
                key.source, record_id, key.turn_id, (), now
            )
            parts[f"{COVERED_PART} {record_id} outbox"] = self._ledger.op_no_outbox(
                key.author_id, key.source, record_id
            )
        for person in dict.fromkeys(person for person in outbox.quoted if person != key.author_id):
            pointer = {
                **_outbox_key(key, person).as_item(),
                "answers": key.author_id,
                "expires_at": item["expires_at"],
            }
            parts[f"pointer {person}"] = self._table.op_put(pointer)
            parts[f"quoted {person} not forgotten"] = op_not_forgotten_since(self._table, person, key.sent_at)
        return parts

    def _persona_check(self, guild_id: str, persona_id: str) -> dict[str, Any]:
        """The server still has the alter persona: a persona removed since the turn's read says
        nothing more, and keeps no row (a configuration saved before persona_ids is not checked)."""
        return self._table.op_check(
            server_config_key(guild_id),
            "attribute_not_exists(#ids) OR contains(#ids, :persona)",
            names={"#ids": PERSONA_IDS},
            values={":persona": persona_id},
        )

    def drop(self, key: TurnKey, outbox: Outbox) -> None:
        """Delete the turn's outbox and its pointers (an attempt that lost the turn to another)."""
        people = dict.fromkeys(person for person in outbox.quoted if person != key.author_id)
        self._table.transact_write(
            self._table.op_delete(_outbox_key(key, person)) for person in (None, *people)
        )

    def commit(self, key: TurnKey, outcome: TurnOutcome, now: datetime, capture: TurnCapture | None) -> None:
        """Record the turn as done and drop its outbox in one transaction with ``capture``, what the
        turn writes to its short-term memory row (None: it stores nothing). Nothing is written if
        another attempt recorded the turn (``TurnAlreadyRecorded``) or if the speaker asked to forget
        everything since (``SpeakerForgotten``); a capture that cannot be written raises
        ``TurnCommitFailed``: the outbox stays, and the redelivery commits. An alter persona's turn
        whose persona was removed since is recorded without its capture."""
        try:
            self._commit(key, outcome, now, capture)
        except TurnAlreadyRecorded:
            elsewhere = self._ledger.covered_elsewhere(key.source, outcome.covered, key.turn_id)
            if elsewhere:  # an outbox kept before covered records were marked: theirs stay theirs
                covered = tuple(record_id for record_id in outcome.covered if record_id not in elsewhere)
                self.commit(key, replace(outcome, covered=covered), now, capture)
                return
            # or a person the trace names forgot everything since (a turn retried for days): commit
            # without their part, else it would outlive their forget-all (a rare read, never a plain turn's)
            trace = outcome.trace
            forgot = [p for p in trace.people() if self._forgot_since(p, key.sent_at)] if trace else []
            if not trace or not forgot:
                if capture is None or key.persona is None or self.done(key) is not None:
                    raise
                # not a twin's record: the persona was removed since the keep; no row of its comes back
                self._commit(key, outcome, now, None)
                return
            for person in forgot:
                trace = trace.without(person)
            self._commit(key, replace(outcome, trace=trace), now, capture)

    def _forgot_since(self, user_id: str, sent_at: datetime) -> bool:
        forgotten_at = forgotten_at_from_item(self._table.get(forgotten_key(user_id)))
        return forgotten_at is not None and forgotten_at >= sent_at

    def _commit(self, key: TurnKey, outcome: TurnOutcome, now: datetime, capture: TurnCapture | None) -> None:
        done = [
            self._ledger.op_record(key.source, key.turn_id, outcome, now),
            self._table.op_delete(_outbox_key(key)),
            # a burst's later turns, answered by this one: their jobs, delivered next, find them done
            *(
                self._ledger.op_covered(key.source, record_id, key.turn_id, outcome.reply_ids, now)
                for record_id in outcome.covered
            ),
        ]
        if outcome.trace is not None:  # "Why this answer?": ids and places, in the same transaction
            expires_at = int((now + RECORD_RETENTION).timestamp())
            # the speaker's forget-all check is the capture's own when it keeps their lines
            checked = frozenset(
                {capture.said.user_id} if capture and capture.keep_lines and capture.said else ()
            )
            done += commit_parts(
                self._table, key, outcome.trace, outcome.reply_ids, expires_at, checked=checked
            )
        if capture is not None and key.persona is not None:
            done.append(self._persona_check(*key.persona))
        if capture is None:
            try:
                self._table.transact_write(done)
            except TransactionCancelled as exc:
                if any(reason.condition_failed for reason in exc.reasons):
                    raise TurnAlreadyRecorded("another attempt already recorded this turn") from exc
                raise
            return
        try:
            self._stm.capture_turn(capture, also=done)
        except StoreError as exc:
            raise TurnCommitFailed("the turn's capture could not be written") from exc


def _outbox_item(key: TurnKey, outbox: Outbox, now: datetime) -> Item:
    item: Item = {
        **_outbox_key(key).as_item(),
        "author_id": key.author_id,
        "turn_id": key.turn_id,
        "source": key.source,
        # the reply once, as the chunks it is posted in (a reply of LLM_MAX_TOKENS in a wide script
        # did not fit an item's 400 KB as reply, chunks and an escaped line): what is posted is all
        # a redelivery needs, each line cut as the capture would cut it
        "chunks": list(outbox.chunks),
        # embeds and lines as JSON: no Decimals back, and lines keep their exact text and times
        "notices": json.dumps(list(outbox.notices), ensure_ascii=False),
        "lines": json.dumps(
            crude_lines_to_items(tuple(line.bounded() for line in outbox.lines)), ensure_ascii=False
        ),
        "reply_ids": list(outbox.reply_ids),
        "notice_ids": list(outbox.notice_ids),
        "apologised": outbox.apologised,
        "capture": outbox.capture,
        "quoted": list(outbox.quoted),
        "expires_at": int((now + RECORD_RETENTION).timestamp()),
    }
    if outbox.reply is not None:
        item[ANSWERED] = True
    if outbox.claim is not None:
        item[CLAIM] = outbox.claim
    if outbox.webhook_ids:
        item["webhook_ids"] = list(outbox.webhook_ids)
    if outbox.as_bot:
        item["as_bot"] = True
    if outbox.trace is not None:  # a redelivery commits what the model was shown, not asked again
        item["trace"] = trace_attributes(outbox.trace)
    if outbox.covers:
        item["covers"] = list(outbox.covers)
    return item


def _outbox_from_item(item: Item | None) -> Outbox | None:
    if item is None:
        return None
    chunks = tuple(str(chunk) for chunk in item.get("chunks", ()))
    reply = item.get("reply")  # an outbox kept before the reply went as its chunks only
    if reply is None and item.get(ANSWERED):
        reply = "\n\n".join(chunks)
    return Outbox(
        reply=None if reply is None else str(reply),
        chunks=chunks,
        notices=tuple(json.loads(str(item.get("notices") or "[]"))),
        lines=crude_lines_from_items(json.loads(str(item.get("lines") or "[]"))),
        reply_ids=tuple(str(reply_id) for reply_id in item.get("reply_ids", ())),
        notice_ids=tuple(str(notice_id) for notice_id in item.get("notice_ids", ())),
        apologised=bool(item.get("apologised")),
        capture=bool(item.get("capture", True)),
        quoted=tuple(str(person) for person in item.get("quoted", ())),
        trace=trace_from_item(item.get("trace")),
        webhook_ids=tuple(str(webhook_id) for webhook_id in item.get("webhook_ids", ())),
        as_bot=bool(item.get("as_bot")),
        claim=_optional_str(item.get(CLAIM)),
        waited_for=_optional_str(item.get("waited_for")),
        waited_by=_optional_str(item.get("waited_by")),
        covers=tuple(str(message_id) for message_id in item.get("covers", ())),
    )


def _taken(record: Item | None, outbox: Item | None, turn_id: str) -> bool:
    """Whether a later turn is answered, or being answered, by another than turn ``turn_id``: it has
    a record (not this turn's own mark, left by an attempt of it that kept its answer) or an outbox
    of its own (an attempt of its own under way: covering it would answer it twice)."""
    return outbox is not None or (record is not None and record.get(COVERED_BY) != turn_id)


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _raise_if_taken(reasons: dict[str, CancellationReason]) -> None:
    """A claimed keep refused because the turn is done, its persona removed, or another attempt's
    answer is kept."""
    done, outbox, persona = reasons.get(NOT_DONE_PART), reasons.get(OUTBOX_PART), reasons.get(PERSONA_PART)
    if done is not None and done.condition_failed:
        raise TurnAlreadyRecorded("another attempt recorded this turn before this one kept its answer")
    if any(name.startswith(COVERED_PART) and reason.condition_failed for name, reason in reasons.items()):
        raise CoveredElsewhere("a message the answer covers was answered by another turn since")
    if persona is not None and persona.condition_failed:
        raise PersonaRemoved("the persona the turn speaks as was removed since its read")
    if outbox is not None and outbox.condition_failed:
        held = (outbox.old_item or {}).get(CLAIM)
        raise TurnClaimed(str(held))
