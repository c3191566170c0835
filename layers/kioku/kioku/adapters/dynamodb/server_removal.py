"""A server kioku was removed from: its removal mark (``keys.server_removal_key``), put by a
``GUILD_DELETE`` and taken back by a later ``GUILD_CREATE``, and the janitor's deletion of what the
server kept once the grace has passed.

The mark is found through the ``JanitorAge`` index (partition ``REMOVALS``, sorted by when the server
was removed), so the janitor reads only the servers due. Every delete it makes is a transaction
whose first part checks that the mark still holds the same removal time: a server added back (the
mark deleted) or removed again (a new mark) stops it, and nothing it deleted was deleted wrongly.
An item changed after the removal (a row or memory written since) is kept. The mark goes last, so a
janitor stopped midway finds the server due again on its next run and goes on where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kioku.adapters.dynamodb.errors import ConditionFailed, TransactionCancelled
from kioku.adapters.dynamodb.keys import (
    GUILD_STM_PARTITION,
    JANITOR_INDEX,
    JANITOR_PK,
    JANITOR_SK,
    MEMORY_PREFIX,
    REMOVALS_PARTITION,
    SERVER_MEMORY_PARTITION,
    THREAD_PARENT_INDEX,
    THREAD_PARENT_PK,
    ItemKey,
    KeyRange,
    guild_row_range,
    lines_note_key,
    personal_memory_of,
    removed_server,
    said_in_partition,
    server_memory_range,
    server_note_key,
    server_range,
    server_removal_key,
)
from kioku.adapters.dynamodb.stm_items import iso
from kioku.adapters.dynamodb.table import Cursor, KiokuTable, UpdateExpression, from_wire
from kioku.clock import parse_time
from kioku.domain.conditions import ServerReadded
from kioku.domain.ltm.memory import NO_AUTHOR
from kioku.domain.server_removal import ErasedItems, ServerRemoval

BATCH: Final = 99
"""Deletes in one transaction: DynamoDB takes 100 parts, and the first checks the mark."""
_NAMES: Final = {"#removed_at": "removed_at"}


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
            batch: list[_Doomed] = []
            for item in items:
                if ItemKey.of(item) == mark:
                    continue
                if str(item.get(changed, "")) >= since:
                    report.kept += 1  # written after the removal
                    continue
                doomed = _Doomed(ItemKey.of(item), _notes_naming(item, removal.guild_id))
                if sum(d.parts for d in batch) + doomed.parts > BATCH:
                    self._delete(removal, batch, changed, report)
                    batch = []
                batch.append(doomed)
            self._delete(removal, batch, changed, report)
            if start_key is None:
                return True
        return False

    def _delete(
        self, removal: ServerRemoval, batch: list[_Doomed], changed: str, report: ErasedItems
    ) -> None:
        """Delete ``batch`` in one transaction with the mark's check, each item unless changed since;
        when some changed, they are kept and the rest deleted in a second try."""
        for _ in range(2):
            if not batch:
                return
            parts = [self.still_removed(removal)]
            notes: set[ItemKey] = set()
            for doomed in batch:
                parts.append(
                    self._table.op_delete(
                        doomed.key,
                        condition="attribute_not_exists(#changed) OR #changed < :since",
                        names={"#changed": changed},
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


def _key_of(part: dict[str, Any]) -> dict[str, Any]:
    """The key of a transaction part (wire form), as an item."""
    (spec,) = part.values()
    return from_wire(spec["Key"]) or {}
