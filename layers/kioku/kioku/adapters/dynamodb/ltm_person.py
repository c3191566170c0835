"""A person's long-term memory data for forget-all and the export: the server memories that name them
(through their ``SERVERLTM#`` notes), the personal memories they saved about others (through their
``SAVEDABOUT#`` notes), and a memory kept without its author.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Final

from kioku.adapters.dynamodb.keys import (
    ItemKey,
    author_note_key,
    author_note_range,
    noted_owner,
    noted_server,
    removed_note_key,
    removed_note_range,
    server_note_key,
    server_note_range,
)
from kioku.adapters.dynamodb.ltm_transactions import LtmTransactions, guard_state
from kioku.adapters.dynamodb.table import Cursor
from kioku.clock import parse_time
from kioku.domain.ltm.memory import NO_AUTHOR, Memory, ScopeKind

REMOVED_NOTE_RETENTION: Final = timedelta(days=30)
"""How long a server's managers are told that the person a memory was about removed it."""


class LtmPersonData(LtmTransactions):
    """What forget-all and the export read and write of a person."""

    def note_removed_by_subject(self, memory: Memory, at: datetime) -> None:
        """Count, for the server's managers, that the person a memory was about removed one: when,
        never which memory nor who (a random key: the id would tell them whose it was)."""
        self._guarded(
            self._table.put,
            {
                **removed_note_key(memory.scope.owner_id, uuid.uuid4().hex).as_item(),
                "removed_at": at.isoformat(),
                "expires_at": int((at + REMOVED_NOTE_RETENTION).timestamp()),
            },
        )

    def removed_by_subjects(self, guild_id: str, now: datetime) -> int:
        """How many server memories their subjects removed in the last 30 days (the notes' time to
        live lags: the expired ones are not counted)."""
        items = self._guarded(self._table.query_range_all, removed_note_range(guild_id))
        since = now - REMOVED_NOTE_RETENTION
        return sum(parse_time(str(item["removed_at"])) > since for item in items)

    def server_memories_naming(self, user_id: str, *, expired_too: bool = False) -> dict[str, list[Memory]]:
        """By server, every server memory (pending ones too) saved by ``user_id`` or about them, in the
        servers their notes name (one query of their notes, one of each such server's partition);
        the expired ones only with ``expired_too`` (``memories_of``)."""
        found: dict[str, list[Memory]] = {}
        for guild_id in self._noted_servers(user_id):
            found[guild_id] = [
                memory
                for memory in self.memories_of(ScopeKind.SERVER, guild_id, expired_too=expired_too)
                if memory.about == user_id or memory.written_by(user_id)
            ]
        return found

    def drop_server_note(self, user_id: str, guild_id: str) -> None:
        """Forget that memories of ``guild_id`` name ``user_id`` (once none does)."""
        self._guarded(self._table.delete, server_note_key(user_id, guild_id))

    def personal_memories_saved_by(
        self, user_id: str, *, expired_too: bool = False
    ) -> dict[str, list[Memory]]:
        """By person, every personal memory about someone else that ``user_id`` saved, found through
        their notes (one query of them, one of each noted person's partition); the expired ones
        only with ``expired_too``."""
        found: dict[str, list[Memory]] = {}
        start_key: Cursor | None = None
        while True:
            items, start_key = self._guarded(
                self._table.query_range, author_note_range(user_id), consistent=True, start_key=start_key
            )
            for item in items:
                owner = noted_owner(ItemKey.of(item))
                found[owner] = [
                    memory
                    for memory in self.memories_of(ScopeKind.PERSONAL, owner, expired_too=expired_too)
                    if memory.written_by(user_id)
                ]
            if start_key is None:
                return found

    def drop_author_note(self, user_id: str, owner_id: str) -> None:
        """Forget that ``user_id`` saved personal memories about ``owner_id`` (once none is theirs)."""
        self._guarded(self._table.delete, author_note_key(user_id, owner_id))

    def forget_author(self, memory: Memory, person: str | None = None) -> Memory:
        """``memory`` kept without the link to who saved it (given ``person``, only if they did) and
        without its history (which names who wrote and changed its earlier texts); raises
        ``MemoryNotFound`` when it changed since it was read. A guard whose key names the author (a
        personal memory someone else saved: ``duplicate_domain``) is given back, the memory left
        unguarded, so no key keeps their id."""
        unlinked = person is None or memory.author_id == person
        anonymous = replace(memory, author_id=NO_AUTHOR if unlinked else memory.author_id, history=())
        released = (
            self._release_guard(memory) if anonymous.duplicate_domain != memory.duplicate_domain else {}
        )
        update = f"SET #author_id = {':no_author' if unlinked else ':read_author'}"
        names = ["#author_id", "#fingerprint", "#history"]
        condition = "#fingerprint = :read_fingerprint AND #author_id = :read_author"
        values: dict[str, Any] = {":read_author": memory.author_id}
        if unlinked:
            values[":no_author"] = NO_AUTHOR
        if released:
            anonymous = replace(anonymous, holds_guard=False)
            update += ", #unguarded = :true"
            condition += f" AND {guard_state(memory)}"
            names.append("#unguarded")
            values[":true"] = True
        return self._rewrite(
            memory,
            anonymous,
            update + " REMOVE #history",
            condition=condition,
            names=names,
            values=values,
            refused=f"memory #{memory.memory_id} changed or was deleted",
            also=list(released.values()),
        )

    def _noted_servers(self, user_id: str) -> list[str]:
        servers: list[str] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._guarded(
                self._table.query_range, server_note_range(user_id), consistent=True, start_key=start_key
            )
            servers += [noted_server(ItemKey.of(item)) for item in items]
            if start_key is None:
                return servers
