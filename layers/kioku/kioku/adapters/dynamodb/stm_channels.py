"""Stored short-term memory kept in step with Discord's channels: a channel changed or gone (the
relay's ``CHANNEL_UPDATE``/``THREAD_UPDATE``/``*_DELETE``), and a guild's whole channel list
(``GUILD_CREATE``) reconciled with its rows. A channel's rows are one key-range query; its threads'
rows, once a turn described them, are found through the sparse ``ThreadParent`` index."""

from __future__ import annotations

from datetime import datetime

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.keys import (
    RECENCY_PK,
    THREAD_PARENT_INDEX,
    THREAD_PARENT_PK,
    channel_row_range,
    guild_row_range,
    recency_partition,
    stm_row_key,
    thread_parent_partition,
)
from kioku.adapters.dynamodb.stm_items import (
    MAX_CHANNEL_NAME_CHARS,
    STAMP_ATTRIBUTES,
    entries_from_items,
    iso,
)
from kioku.adapters.dynamodb.table import Cursor, KiokuTable, UpdateExpression
from kioku.domain.privacy import ChannelDescription
from kioku.domain.stm.entries import CrudeRole, StmEntry


class StmChannelRows:
    """The rows of a guild's channels and threads, as Discord changes them."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def restamp_channel(
        self, guild_id: str, channel_id: str, *, private: bool | None, name: str | None, now: datetime
    ) -> int:
        """A channel changed: its rows (every persona) take its new privacy, and so do the rows of its
        threads that a turn has described as its threads (a private thread keeps its own; a row never
        described stays private); with ``private`` None only the name changes. Each write is
        conditional on the row still existing and bumps its version, so a capture that looked at the
        channel before this cannot stamp the old privacy back; a privacy change is written only to rows
        no turn or event described after ``now`` (when the event was seen), so a late event cannot
        stamp an older privacy over a newer look. Returns the rows changed."""
        changed = 0
        for entry in [*self._own_rows(guild_id, channel_id), *self._thread_rows(guild_id, channel_id)]:
            own = entry.channel_id == channel_id
            expression = UpdateExpression()
            if own and name and name[:MAX_CHANNEL_NAME_CHARS] != entry.channel_name:
                expression.set("channel_name", name[:MAX_CHANNEL_NAME_CHARS])
            follows = own or not (entry.private_thread or entry.described_at is None)
            condition = "attribute_exists(pk)"
            if private is not None and follows and entry.private is not private:
                expression.set("private", private)
                expression.set("described_at", iso(now))
                expression.set(
                    RECENCY_PK, recency_partition(entry.address, entry.lineage_id, private=private)
                )
                expression.add("version", 1)
                described = expression.name("described_at")
                condition += (
                    f" AND (attribute_not_exists({described}) OR {described} < {expression.value(iso(now))})"
                )
            if not expression.has_changes():
                continue
            try:
                self._table.update_with(
                    stm_row_key(entry.address),
                    expression,
                    condition=condition,
                )
                changed += 1
            except ConditionFailed:
                continue
        return changed

    def delete_channel(self, guild_id: str, channel_id: str) -> int:
        """A channel or thread is gone: delete its rows and its threads' rows. Returns how many."""
        rows = [*self._own_rows(guild_id, channel_id), *self._thread_rows(guild_id, channel_id)]
        for entry in rows:
            self._table.delete(stm_row_key(entry.address))
        return len(rows)

    # -- a persona removed

    def persona_rows(self, guild_id: str, persona_id: str) -> list[StmEntry]:
        """Every channel's and thread's row of ``guild_id`` that ``persona_id`` keeps (identity only)."""
        items = self._table.query_range_all(guild_row_range(guild_id))
        return [entry for entry in entries_from_items(items) if entry.address.persona_id == persona_id]

    def speakers(self, guild_id: str) -> dict[str, set[str]]:
        """The people whose lines kioku keeps in ``guild_id``, each with the names they spoke under."""
        names: dict[str, set[str]] = {}
        for entry in entries_from_items(self._table.query_range_all(guild_row_range(guild_id))):
            for line in entry.crude:
                if line.role is CrudeRole.USER and line.user_id:
                    names.setdefault(line.user_id, set()).add(line.speaker)
        return names

    def delete_persona_rows(self, guild_id: str, persona_id: str) -> int:
        """Delete the rows ``persona_id`` keeps in ``guild_id``; returns how many."""
        rows = self.persona_rows(guild_id, persona_id)
        for entry in rows:
            self._table.delete(stm_row_key(entry.address))
        return len(rows)

    # -- a guild's whole channel list (GUILD_CREATE)

    def guild_rows(self, guild_id: str, *, max_rows: int) -> tuple[list[StmEntry], bool]:
        """Every channel's and thread's row of ``guild_id`` (every persona), only their identity and
        privacy stamp: pages of one key-range Query on the server's partition, at most ``max_rows``
        rows; True when that was all of them."""
        rows: list[StmEntry] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._table.query_range(
                guild_row_range(guild_id),
                limit=max_rows - len(rows),
                start_key=start_key,
                attributes=STAMP_ATTRIBUTES,
            )
            rows.extend(entries_from_items(items))
            if start_key is None:
                return rows, True
            if len(rows) >= max_rows:
                return rows, False

    def restamp_described(self, entry: StmEntry, description: ChannelDescription, at: datetime) -> bool:
        """Stamp ``entry``'s row with ``description``, Discord's look at its channel at ``at``, unless a
        turn or event described it later (so a late list never stamps an older privacy back); bumps
        the version as any re-stamp does. True if the row changed."""
        expression = UpdateExpression()
        name = (description.name or "")[:MAX_CHANNEL_NAME_CHARS]
        if name and name != entry.channel_name:
            expression.set("channel_name", name)
        parent = description.parent_channel_id
        if (
            entry.private is not description.private
            or entry.private_thread != description.private_thread
            or parent != entry.parent_channel_id
        ):
            expression.set("private", description.private)
            expression.set("private_thread", description.private_thread)
            expression.set("described_at", iso(at))
            expression.set(
                RECENCY_PK, recency_partition(entry.address, entry.lineage_id, private=description.private)
            )
            expression.add("version", 1)
            if parent:
                expression.set("parent_channel_id", parent)
                expression.set(
                    THREAD_PARENT_PK, thread_parent_partition(entry.address.guild_id or "", parent)
                )
            else:
                expression.remove("parent_channel_id")
                expression.remove(THREAD_PARENT_PK)
        if not expression.has_changes():
            return False
        described = expression.name("described_at")
        try:
            self._table.update_with(
                stm_row_key(entry.address),
                expression,
                condition=(
                    f"attribute_exists(pk) AND (attribute_not_exists({described}) "
                    f"OR {described} < {expression.value(iso(at))})"
                ),
            )
        except ConditionFailed:
            return False
        return True

    def delete_described_before(self, entry: StmEntry, at: datetime) -> bool:
        """Delete ``entry``'s row unless a turn described its channel after ``at`` (it exists, then)."""
        try:
            self._table.delete(
                stm_row_key(entry.address),
                condition="attribute_not_exists(#described) OR #described < :at",
                names={"#described": "described_at"},
                values={":at": iso(at)},
            )
        except ConditionFailed:
            return False
        return True

    def _own_rows(self, guild_id: str, channel_id: str) -> list[StmEntry]:
        """The rows of ``channel_id``, one per persona: a key-range query."""
        items = self._table.query_range_all(channel_row_range(guild_id, channel_id))
        return entries_from_items(items)

    def _thread_rows(self, guild_id: str, channel_id: str) -> list[StmEntry]:
        """The rows of the channel's threads, through the sparse ``ThreadParent`` index (its projection
        holds what a re-stamp needs)."""
        rows: list[StmEntry] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._table.query(
                "#pk = :pk",
                names={"#pk": THREAD_PARENT_PK},
                values={":pk": thread_parent_partition(guild_id, channel_id)},
                index=THREAD_PARENT_INDEX,
                start_key=start_key,
            )
            rows.extend(entries_from_items(items))
            if start_key is None:
                return rows
