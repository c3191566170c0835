"""Recall: the books a turn reads, in the BatchGetItem it makes, and the memories they show."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from kioku import clock
from kioku.adapters.dynamodb.config_store import user_profile_from_item
from kioku.adapters.dynamodb.keys import ItemKey, book_key, index_by_key, user_profile_key
from kioku.adapters.dynamodb.ltm_items import memories_from_book
from kioku.adapters.dynamodb.ltm_transactions import LtmTransactions
from kioku.adapters.dynamodb.table import Item
from kioku.adapters.dynamodb.turn_traces import TurnTraces
from kioku.domain.ltm.full_book import last_shown_by_memory
from kioku.domain.ltm.memory import (
    Memory,
    MemoryScope,
    RecallReach,
    allows_personal_memories,
    personal_lineages,
)
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.privacy import Place, PrivacyPolicy


class LtmReads(LtmTransactions):
    """What recall reads: every shard of the books a turn may be shown, with fixed keys."""

    def recall(
        self,
        guild_id: str | None,
        lineage: int,
        user_ids: Sequence[str],
        *,
        place: Place,
        policy: PrivacyPolicy,
        now: datetime | None = None,
    ) -> RecallSet:
        """One BatchGetItem of ``recall_keys``, read by ``recall_from_items``."""
        keys = self.recall_keys(guild_id, lineage, user_ids)
        items = index_by_key(self._guarded(self._table.batch_get, keys))
        return self.recall_from_items(items, guild_id, lineage, user_ids, place=place, policy=policy, now=now)

    def recall_keys(self, guild_id: str | None, lineage: int, user_ids: Sequence[str]) -> list[ItemKey]:
        """The items recall reads, all with fixed keys: every shard of the server's book of
        ``lineage``, and per person their profile (for the privacy level) and every shard of their
        books of ``lineage`` and of global memories."""
        keys = self.layout.keys(MemoryScope.server(guild_id, lineage)) if guild_id else []
        for user_id in user_ids:
            keys.append(user_profile_key(user_id))
            for held in personal_lineages(lineage):
                keys.extend(self.layout.keys(MemoryScope.personal(user_id, held)))
        return keys

    def recall_from_items(
        self,
        items_by_key: Mapping[ItemKey, Item],
        guild_id: str | None,
        lineage: int,
        user_ids: Sequence[str],
        *,
        place: Place,
        policy: PrivacyPolicy,
        now: datetime | None = None,
    ) -> RecallSet:
        """The memories in the items of ``recall_keys`` (by key, missing ones left out) that a
        turn at ``place`` may be shown (``RecallReach``) at ``now`` (by default the clock's: never
        an expired one), without the people whose privacy level forbids personal memories. A
        recalled memory's ``created_at`` is its ``updated_at``: books keep only what recall shows."""
        people = tuple(
            user_id
            for user_id in user_ids
            if allows_personal_memories(
                user_profile_from_item(items_by_key.get(user_profile_key(user_id)), user_id).privacy_level
            )
        )
        reach = RecallReach(place, policy, lineage, frozenset(people), now or clock.now())

        def read(scope: MemoryScope) -> tuple[Memory, ...]:
            shards = range(self.layout.shards(scope.kind))
            book = memories_from_book([items_by_key.get(book_key(scope, shard)) for shard in shards], scope)
            return tuple(memory for memory in book if reach.shows(memory))

        server = read(MemoryScope.server(guild_id, lineage)) if guild_id else ()
        personal = {
            user_id: tuple(
                memory
                for held in personal_lineages(lineage)
                for memory in read(MemoryScope.personal(user_id, held))
            )
            for user_id in people
        }
        return RecallSet(server=server, personal=personal)

    def last_shown(self, user_ids: Sequence[str]) -> dict[str, datetime]:
        """When each memory was last shown to a turn, from the use notes in the partitions of
        ``user_ids`` (one Query each; kept 16 days): read only by a save refused at the limit."""
        traces = TurnTraces(self._table)
        notes = (
            (note.at, note.memory_keys)
            for user_id in dict.fromkeys(user_ids)
            for note in self._guarded(traces.notes_of, user_id)
        )
        return last_shown_by_memory(notes)
