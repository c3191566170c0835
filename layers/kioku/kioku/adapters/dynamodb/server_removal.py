"""A server kioku was removed from: its removal mark (``keys.server_removal_key``), put by a
``GUILD_DELETE`` and taken back by a later ``GUILD_CREATE``, and the janitor's deletion of what the
server kept once the grace has passed.

The mark is found through the ``JanitorAge`` index (partition ``REMOVALS``, sorted by when the server
was removed), so the janitor reads only the servers due. Every delete it makes is a transaction
whose first part checks that the mark still holds the same removal time: a server added back (the
mark deleted) or removed again (a new mark) stops it, and nothing it deleted was deleted wrongly.
An item changed after the removal (a row or memory written since) is kept. The mark goes last, so a
janitor stopped midway finds the server due again on its next run and goes on where it stopped.

What no key finds is swept: a scan of the whole table, page by page within each run's budget, whose
place is kept on the mark (``swept_from``) after each page is dealt with. It finds the personal
memories said there before ``SAIDIN#`` existed, and the server's turns: their records (with their
attempts and reply pointers), the notes in people's partitions, and outboxes left behind (with their
pointers), which would otherwise stay until their 16-day TTL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kioku.adapters.dynamodb.errors import ConditionFailed, TransactionCancelled
from kioku.adapters.dynamodb.keys import (
    DONE,
    GUILD_STM_PARTITION,
    JANITOR_INDEX,
    JANITOR_PK,
    JANITOR_SK,
    MEMORY_PREFIX,
    OUTBOX_PREFIX,
    REMOVALS_PARTITION,
    SERVER_MEMORY_PARTITION,
    SHOWN_NOTE_PREFIX,
    THREAD_PARENT_INDEX,
    THREAD_PARENT_PK,
    TURN_PARTITION,
    USER_PARTITION,
    ItemKey,
    KeyRange,
    attempts_key,
    guild_row_range,
    lines_note_key,
    outbox_key,
    personal_memory_of,
    removed_server,
    reply_key,
    said_in_partition,
    server_memory_range,
    server_note_key,
    server_range,
    server_removal_key,
    turn_of_record,
)
from kioku.adapters.dynamodb.stm_items import iso
from kioku.adapters.dynamodb.table import Cursor, Item, KiokuTable, UpdateExpression, from_wire
from kioku.adapters.dynamodb.turn_traces import WHY, trace_from_item
from kioku.clock import parse_time
from kioku.domain.conditions import ServerReadded
from kioku.domain.ltm.memory import NO_AUTHOR
from kioku.domain.server_removal import ErasedItems, ServerRemoval, SweptPage

BATCH: Final = 99
"""Deletes in one transaction: DynamoDB takes 100 parts, and the first checks the mark."""
_NAMES: Final = {"#removed_at": "removed_at"}
SWEPT_FROM: Final = "swept_from"
"""On the mark: where the sweep of the whole table goes on (the key it stopped after, as JSON)."""
SWEPT: Final = "swept"
SWEEP_PAGE_ITEMS: Final = 500
"""Items one page of the sweep reads (a scan page stops at 1 MB anyway)."""
_SWEEP_FILTER: Final = (
    "(begins_with(#pk, :user) AND begins_with(#sk, :memory) AND begins_with(#origin, :origin)"
    " AND attribute_not_exists(#said_in))"
    " OR (begins_with(#pk, :turn) AND #sk = :done AND contains(#why, :guild))"
    " OR (begins_with(#sk, :shown) AND #guild = :guild)"
    " OR (begins_with(#sk, :outbox) AND contains(#trace.#why, :guild))"
)


class ServerRemovals:
    """The marks of removed servers, and the bulk deletion of their partitions."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def schedule(self, guild_id: str, removed_at: datetime) -> bool:
        """Mark ``guild_id`` removed at ``removed_at``, unless it is marked already (a redelivered
        ``GUILD_DELETE`` keeps the first time, so the grace is never stretched). True if marked now."""
        expression = UpdateExpression()
        for attribute, value in (
            ("removed_at", iso(removed_at)),
            (JANITOR_PK, REMOVALS_PARTITION),
            (JANITOR_SK, iso(removed_at)),
        ):
            expression.set(attribute, value)
        try:
            self._table.update_with(
                server_removal_key(guild_id), expression, condition="attribute_not_exists(pk)"
            )
        except ConditionFailed:
            return False
        return True

    def cancel(self, guild_id: str, listed_at: datetime) -> bool:
        """Take the mark back: the bot is in the server as of ``listed_at`` (its ``GUILD_CREATE``). A
        removal noted after that (a late list) stays. True if a mark was taken back."""
        try:
            self._table.delete(
                server_removal_key(guild_id),
                condition="#removed_at < :listed_at",
                names=_NAMES,
                values={":listed_at": iso(listed_at)},
            )
        except ConditionFailed:
            return False
        return True

    def due(self, removed_before: datetime, *, limit: int = 100) -> list[ServerRemoval]:
        """The servers removed before ``removed_before``, longest ago first."""
        keys, _ = self._table.query(
            "#pk = :removals AND #sk < :before",
            names={"#pk": JANITOR_PK, "#sk": JANITOR_SK},
            values={":removals": REMOVALS_PARTITION, ":before": iso(removed_before)},
            index=JANITOR_INDEX,
            limit=limit,
        )
        return [ServerRemoval(removed_server(ItemKey.of(key)), parse_time(key[JANITOR_SK])) for key in keys]

    def still_removed(self, removal: ServerRemoval) -> dict[str, Any]:
        """The transaction part every delete of ``removal`` carries."""
        return self._table.op_check(
            server_removal_key(removal.guild_id),
            "#removed_at = :removed_at",
            names=_NAMES,
            values={":removed_at": iso(removal.removed_at)},
        )

    def personal_memories_said_in(self, guild_id: str, *, limit: int) -> Iterator[tuple[str, str]]:
        """The owner and id of each personal memory said in ``guild_id``, page after page (the sparse
        ``ThreadParent`` partition ``keys.said_in_partition``)."""
        start_key: Cursor | None = None
        while True:
            keys, start_key = self._table.query(
                "#pk = :pk",
                names={"#pk": THREAD_PARENT_PK},
                values={":pk": said_in_partition(guild_id)},
                index=THREAD_PARENT_INDEX,
                limit=limit,
                start_key=start_key,
            )
            yield from (personal_memory_of(ItemKey.of(key)) for key in keys)
            if start_key is None:
                return

    def erase_partitions(self, removal: ServerRemoval, *, budget: int) -> ErasedItems:
        """Delete at most ``budget`` items of the server's own partitions: its long-term memory (each
        memory with its note in its author's and subject's partition), its channels' short-term rows
        (each with its note in the partition of everyone whose lines it holds), then its
        configuration and webhooks. Raises ``ServerReadded`` when the mark changed."""
        report = ErasedItems(room=budget)
        for key_range, changed in (
            (server_memory_range(removal.guild_id), "updated_at"),
            (guild_row_range(removal.guild_id), "last_updated"),
            (server_range(removal.guild_id), "updated_at"),
        ):
            if not self._erase_range(removal, key_range, changed, report):
                report.finished = False
                return report
        return report

    def sweep(self, removal: ServerRemoval, report: ErasedItems) -> SweptPage | None:
        """The next page of the sweep (at most ``report.room`` items read), with the server's turn
        items on it deleted; None when the sweep is done. Raises ``ServerReadded`` when the mark changed."""
        mark = self._table.get(server_removal_key(removal.guild_id))
        if mark is None or mark.get("removed_at") != iso(removal.removed_at):
            raise ServerReadded(removal.guild_id)
        if mark.get(SWEPT):
            return None
        limit = min(SWEEP_PAGE_ITEMS, report.room)
        items, next_from = self._table.scan(
            _SWEEP_FILTER,
            names={
                "#pk": "pk",
                "#sk": "sk",
                "#origin": "origin",
                "#said_in": THREAD_PARENT_PK,
                "#why": WHY,
                "#guild": "guild_id",
                "#trace": "trace",
            },
            values={
                ":user": USER_PARTITION,
                ":memory": MEMORY_PREFIX,
                ":origin": f"{removal.guild_id}/",
                ":turn": TURN_PARTITION,
                ":done": DONE,
                ":guild": removal.guild_id,
                ":shown": SHOWN_NOTE_PREFIX,
                ":outbox": OUTBOX_PREFIX,
            },
            limit=limit,
            start_key=json.loads(str(mark[SWEPT_FROM])) if SWEPT_FROM in mark else None,
        )
        report.room -= limit
        memories = [personal_memory_of(ItemKey.of(item)) for item in items if _is_memory(item)]
        doomed = [d for d in (_turn_item(item, removal.guild_id) for item in items) if d is not None]
        for batch in _batches(doomed):
            self._delete(removal, batch, report)
        return SweptPage(memories, next_from)

    def swept_to(self, removal: ServerRemoval, next_from: Cursor | None) -> None:
        """Keep on the mark where the sweep goes on (None: it is done)."""
        expression = UpdateExpression()
        if next_from is None:
            expression.set(SWEPT, True)
            expression.remove(SWEPT_FROM)
        else:
            expression.set(SWEPT_FROM, json.dumps(next_from))
        try:
            self._table.update_with(
                server_removal_key(removal.guild_id),
                expression,
                condition=f"{expression.name('removed_at')} = {expression.value(iso(removal.removed_at))}",
            )
        except ConditionFailed:
            raise ServerReadded(removal.guild_id) from None

    def finish(self, removal: ServerRemoval) -> bool:
        """Delete the mark once all is deleted; False when it changed meanwhile."""
        try:
            self._table.delete(
                server_removal_key(removal.guild_id),
                condition="#removed_at = :removed_at",
                names=_NAMES,
                values={":removed_at": iso(removal.removed_at)},
            )
        except ConditionFailed:
            return False
        return True

    def _erase_range(
        self, removal: ServerRemoval, key_range: KeyRange, changed: str, report: ErasedItems
    ) -> bool:
        """Delete the items of ``key_range`` page by page while the budget lasts; True at its end."""
        mark = server_removal_key(removal.guild_id)
        since = iso(removal.removed_at)
        start_key: Cursor | None = None
        while report.room > 0:
            items, start_key = self._table.query_range(
                key_range,
                consistent=True,
                limit=min(BATCH, report.room),
                start_key=start_key,
                attributes=("pk", "sk", changed, "author_id", "subject_id", "crude"),
            )
            report.room -= len(items)
            doomed: list[_Doomed] = []
            for item in items:
                if ItemKey.of(item) == mark:
                    continue
                if str(item.get(changed, "")) >= since:
                    report.kept += 1  # written after the removal
                    continue
                doomed.append(_Doomed(ItemKey.of(item), _notes_naming(item, removal.guild_id), changed))
            for batch in _batches(doomed):
                self._delete(removal, batch, report)
            if start_key is None:
                return True
        return False

    def _delete(self, removal: ServerRemoval, batch: list[_Doomed], report: ErasedItems) -> None:
        """Delete ``batch`` in one transaction with the mark's check, each item unless changed since;
        when some changed, they are kept and the rest deleted in a second try."""
        for _ in range(2):
            if not batch:
                return
            parts = [self.still_removed(removal)]
            notes: set[ItemKey] = set()
            for doomed in batch:
                parts.append(
                    self._table.op_delete(doomed.key)
                    if doomed.changed is None
                    else self._table.op_delete(
                        doomed.key,
                        condition="attribute_not_exists(#changed) OR #changed < :since",
                        names={"#changed": doomed.changed},
                        values={":since": iso(removal.removed_at)},
                    )
                )
                parts += [self._table.op_delete(note) for note in doomed.notes if note not in notes]
                notes.update(doomed.notes)
            try:
                self._table.transact_write(parts)
            except TransactionCancelled as exc:
                if exc.reasons and exc.reasons[0].condition_failed:
                    raise ServerReadded(removal.guild_id) from exc
                failed = {
                    ItemKey.of(_key_of(parts[n])) for n, r in enumerate(exc.reasons) if r.condition_failed
                }
                if not failed:
                    raise
                report.kept += sum(doomed.key in failed for doomed in batch)
                batch = [doomed for doomed in batch if doomed.key not in failed]
                continue
            report.deleted += len(batch)
            return
        report.finished = not batch  # items changing under the janitor: the next run goes on


@dataclass(frozen=True, slots=True)
class _Doomed:
    """An item to delete, and the notes elsewhere that name it."""

    key: ItemKey
    notes: tuple[ItemKey, ...]
    changed: str | None
    """The attribute saying when the item was last written (kept if after the removal); None: none."""

    @property
    def parts(self) -> int:
        return 1 + len(self.notes)


def _notes_naming(item: dict[str, Any], guild_id: str) -> tuple[ItemKey, ...]:
    """The notes in people's partitions that point to ``item``: a server memory's, in its author's
    and subject's (``keys.server_note_key``); a short-term row's, in the partition of each person
    whose raw lines it holds (``keys.lines_note_key``)."""
    key = ItemKey.of(item)
    if key.pk.startswith(SERVER_MEMORY_PARTITION) and key.sk.startswith(MEMORY_PREFIX):
        people = {str(item[name]) for name in ("author_id", "subject_id") if item.get(name)}
        return tuple(server_note_key(person, guild_id) for person in sorted(people - {NO_AUTHOR}))
    if key.pk.startswith(GUILD_STM_PARTITION):
        speakers = {str(line.get("user_id")) for line in item.get("crude") or () if line.get("user_id")}
        return tuple(lines_note_key(person, key) for person in sorted(speakers))
    return ()


def _batches(doomed: list[_Doomed]) -> Iterator[list[_Doomed]]:
    """``doomed`` in transactions of at most ``BATCH`` parts, each item with its notes."""
    batch: list[_Doomed] = []
    for one in doomed:
        if batch and sum(d.parts for d in batch) + one.parts > BATCH:
            yield batch
            batch = []
        batch.append(one)
    if batch:
        yield batch


def _is_memory(item: Item) -> bool:
    return str(item["pk"]).startswith(USER_PARTITION) and str(item["sk"]).startswith(MEMORY_PREFIX)


def _turn_item(item: Item, guild_id: str) -> _Doomed | None:
    """A swept item that belongs to a turn in ``guild_id``, with the items that go with it: a
    record's attempts and reply pointers, an outbox's pointers in the partitions of those it quotes."""
    key = ItemKey.of(item)
    if key.sk == DONE:
        trace = trace_from_item(item)
        if trace is None or trace.guild_id != guild_id:
            return None
        source, turn_id = turn_of_record(key)
        replies = tuple(reply_key(str(message_id)) for message_id in item.get("reply_ids") or ())
        return _Doomed(key, (attempts_key(source, turn_id), *replies), "completed_at")
    if key.sk.startswith(SHOWN_NOTE_PREFIX):
        return _Doomed(key, (), "at") if item.get("guild_id") == guild_id else None
    if key.sk.startswith(OUTBOX_PREFIX):
        trace = trace_from_item(item.get("trace"))
        if trace is None or trace.guild_id != guild_id:
            return None
        source, turn_id, author = str(item["source"]), str(item["turn_id"]), str(item.get("author_id"))
        people = dict.fromkeys(str(person) for person in item.get("quoted") or () if person != author)
        return _Doomed(key, tuple(outbox_key(person, source, turn_id) for person in people), None)
    return None


def _key_of(part: dict[str, Any]) -> dict[str, Any]:
    """The key of a transaction part (wire form), as an item."""
    (spec,) = part.values()
    return from_wire(spec["Key"]) or {}
