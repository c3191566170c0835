"""A turn's own items: its single read and its commit, and between them its outbox.

    pk = TURN#{source}#{turn_id}   sk = DONE                     (TurnLedger: the completion record)
    pk = USER#{author_id}          sk = OUTBOX#{source}#{turn_id}
    pk = USER#{quoted_id}          sk = OUTBOX#{source}#{turn_id}  (answers = author_id: a pointer)

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
message was sent (a condition of the put's own transaction). Both items ride in the turn's first BatchGetItem, next to its memory: no request of
their own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from kioku.adapters.dynamodb.errors import StoreError, TransactionCancelled
from kioku.adapters.dynamodb.forgetting import op_not_forgotten_since
from kioku.adapters.dynamodb.stm_store import (
    SpeakerForgotten,
    TurnAlreadyRecorded,
    TurnMemoryLoad,
    crude_lines_from_items,
    crude_lines_to_items,
)
from kioku.adapters.dynamodb.table import Item, Key, KiokuTable
from kioku.adapters.dynamodb.turn_ledger import (
    RECORD_RETENTION,
    TurnLedger,
    TurnOutcome,
    outcome_from_item,
    turn_record_key,
)
from kioku.adapters.dynamodb.turn_ledger import outbox_key as _ledger_outbox_key
from kioku.domain.stm.entries import CrudeMessage

DONE_PART: Final = "done"
OUTBOX_PART: Final = "outbox"
SPEAKER_FORGOTTEN: Final = "speaker forgotten since"

Operation = dict[str, Any]


@dataclass(frozen=True, slots=True)
class TurnKey:
    source: str
    turn_id: str
    author_id: str
    sent_at: datetime
    """When the turn's message was sent (its snowflake's time): what a forget-all is measured against."""


def outbox_key(key: TurnKey, person_id: str | None = None) -> Key:
    return _ledger_outbox_key(person_id or key.author_id, key.source, key.turn_id)


@dataclass(frozen=True, slots=True)
class Outbox:
    """What a turn must still do. ``reply`` None: the answer is not known yet, only ``notices`` of
    tools that already ran. ``capture`` False: the turn posts but stores no lines (a rate notice)."""

    reply: str | None = None
    chunks: tuple[str, ...] = ()
    notices: tuple[dict[str, Any], ...] = ()
    lines: tuple[CrudeMessage, ...] = ()
    reply_ids: tuple[str, ...] = ()
    notice_ids: tuple[str, ...] = ()
    apologised: bool = False
    capture: bool = True
    quoted: tuple[str, ...] = ()
    """The people whose personal memories the notices show (see ``TurnRepository.keep``)."""

    @property
    def answered(self) -> bool:
        return self.reply is not None


@dataclass(frozen=True, slots=True)
class TurnRead:
    """The turn's one read: its memory, whether it is done, its outbox, and every item read (for the
    stores whose keys rode along: recall's books, ``extra_keys``)."""

    memory: TurnMemoryLoad
    done: TurnOutcome | None
    outbox: Outbox | None
    items: Mapping[tuple[str, str], Item] = field(default_factory=dict)

    def item(self, key: Key) -> Item | None:
        return self.items.get((key["pk"], key["sk"]))


@dataclass(frozen=True, slots=True)
class Committed:
    """``committed``: this attempt's transaction wrote the turn. Else ``refused`` names the parts
    whose condition failed (``done``: another attempt had recorded the turn)."""

    committed: bool
    refused: tuple[str, ...] = ()


class TurnCommitFailed(StoreError):
    """The commit could not be written: the outbox stays, and the redelivery commits."""


class TurnRepository:
    def __init__(self, table: KiokuTable) -> None:
        self._table = table
        self._ledger = TurnLedger(table)

    def read(
        self,
        key: TurnKey,
        load_memory: Callable[[Sequence[Key]], TurnMemoryLoad],
        *,
        extra_keys: Sequence[Key] = (),
    ) -> TurnRead:
        """Read the turn with its memory: ``load_memory`` runs the one BatchGetItem, given the keys
        that must ride in it (this turn's record and outbox, then ``extra_keys``)."""
        done_at, outbox_at = turn_record_key(key.source, key.turn_id), outbox_key(key)
        memory = load_memory([done_at, outbox_at, *extra_keys])
        items = memory.extra
        return TurnRead(
            memory=memory,
            done=outcome_from_item(items.get((done_at["pk"], done_at["sk"]))),
            outbox=_outbox_from_item(items.get((outbox_at["pk"], outbox_at["sk"]))),
            items=items,
        )

    def keep(self, key: TurnKey, outbox: Outbox, now: datetime) -> bool:
        """Put the outbox (overwriting this turn's earlier one): before the effect it must survive.
        False, nothing kept, if its author or someone its notices quote asked to forget everything
        since the message was sent."""
        item = _outbox_item(key, outbox, now)
        parts = {
            OUTBOX_PART: self._table.op_put(item),
            "author_not_forgotten": op_not_forgotten_since(self._table, key.author_id, key.sent_at),
        }
        for person in dict.fromkeys(person for person in outbox.quoted if person != key.author_id):
            pointer = {**outbox_key(key, person), "answers": key.author_id, "expires_at": item["expires_at"]}
            parts[f"pointer {person}"] = self._table.op_put(pointer)
            parts[f"quoted {person} not forgotten"] = op_not_forgotten_since(self._table, person, key.sent_at)
        try:
            self._table.transact_write(parts.values())
        except TransactionCancelled as exc:
            reasons = dict(zip(parts, exc.reasons, strict=False))
            if any(reason.condition_failed for name, reason in reasons.items() if name.endswith("forgotten")):
                return False
            raise
        return True

    def commit(
        self,
        key: TurnKey,
        outcome: TurnOutcome,
        now: datetime,
        capture: Callable[[Sequence[Operation]], bool] | None,
        *,
        parts: Mapping[str, Operation] | None = None,
    ) -> Committed:
        """Record the turn as done and drop its outbox in one transaction with ``capture`` (which
        writes the short-term memory row with the operations it is given; None: the turn stores
        nothing) and the named ``parts`` of other stores (e.g. a condition on the author)."""
        named: dict[str, Operation] = {
            DONE_PART: self._ledger.op_record(key.source, key.turn_id, outcome, now),
            OUTBOX_PART: self._table.op_delete(outbox_key(key)),
            **(parts or {}),
        }
        operations = list(named.values())
        try:
            if capture is None:
                self._table.transact_write(operations)
            elif not capture(operations):
                raise TurnCommitFailed("the turn's capture could not be written")
        except SpeakerForgotten:
            return Committed(False, (SPEAKER_FORGOTTEN,))
        except TurnAlreadyRecorded as exc:
            names = list(named)
            return Committed(False, tuple(names[index] for index in exc.failed if index < len(names)))
        except StoreError as exc:
            refused = _refused_parts(exc, list(named))
            if refused:
                return Committed(False, refused)
            raise
        return Committed(True)


def _refused_parts(exc: StoreError, names: list[str]) -> tuple[str, ...]:
    reasons = getattr(exc, "reasons", None) or []
    return tuple(name for name, reason in zip(names, reasons, strict=False) if reason.condition_failed)


def _outbox_item(key: TurnKey, outbox: Outbox, now: datetime) -> Item:
    item: Item = {
        **outbox_key(key),
        "author_id": key.author_id,
        "turn_id": key.turn_id,
        "source": key.source,
        "chunks": list(outbox.chunks),
        # embeds and lines as JSON: no Decimals back, and lines keep their exact text and times
        "notices": json.dumps(list(outbox.notices)),
        "lines": json.dumps(crude_lines_to_items(outbox.lines)),
        "reply_ids": list(outbox.reply_ids),
        "notice_ids": list(outbox.notice_ids),
        "apologised": outbox.apologised,
        "capture": outbox.capture,
        "quoted": list(outbox.quoted),
        "expires_at": int((now + RECORD_RETENTION).timestamp()),
    }
    if outbox.reply is not None:
        item["reply"] = outbox.reply
    return item


def _outbox_from_item(item: Item | None) -> Outbox | None:
    if item is None:
        return None
    reply = item.get("reply")
    return Outbox(
        reply=None if reply is None else str(reply),
        chunks=tuple(str(chunk) for chunk in item.get("chunks", ())),
        notices=tuple(json.loads(str(item.get("notices") or "[]"))),
        lines=crude_lines_from_items(json.loads(str(item.get("lines") or "[]"))),
        reply_ids=tuple(str(reply_id) for reply_id in item.get("reply_ids", ())),
        notice_ids=tuple(str(notice_id) for notice_id in item.get("notice_ids", ())),
        apologised=bool(item.get("apologised")),
        capture=bool(item.get("capture", True)),
        quoted=tuple(str(person) for person in item.get("quoted", ())),
    )
