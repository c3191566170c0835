"""Memories that expire (``Memory.expires_at``): released when a save finds its scope full, and
deleted by the janitor, found through the ``JanitorAge`` index (``keys.expiry_shard``: sorted by
expiry, so a run reads only those due).

An expired memory is deleted as the owner's delete would be (its counter, guard, book entry, in one
transaction), with what it keeps beside it (``keys.memory_trail_range``: its earlier texts), and only
while it is the memory read with that expiry: an edit that changed it since keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from kioku.adapters.dynamodb.errors import TransactionCancelled
from kioku.adapters.dynamodb.keys import (
    AGE_SHARDS,
    JANITOR_INDEX,
    JANITOR_PK,
    JANITOR_SK,
    ItemKey,
    expiry_shard_partition,
    memory_trail_range,
)
from kioku.adapters.dynamodb.ltm_items import epoch, iso_time, memory_from_item
from kioku.adapters.dynamodb.ltm_transactions import LtmTransactions
from kioku.domain.ltm.memory import GLOBAL_LINEAGE, Memory, MemoryNotFound, MemoryScope, ScopeKind

EXPIRED_PER_RUN: Final = 500
"""The most expired memories one janitor run deletes; the rest wait for the next run (they are
already shown nowhere and counted nowhere)."""
_TRAIL_LIMIT: Final = 90
"""A memory's trail deleted in its own transaction, within DynamoDB's 100 parts."""


@dataclass
class ExpiryReport:
    found: int = 0
    deleted: int = 0
    kept: int = 0


class LtmExpiry(LtmTransactions):
    """Deletes expired memories: a full scope's, before its save is refused, and the janitor's."""

    def release_expired(self, scope: MemoryScope, now: datetime) -> int:
        """Delete the memories counted in ``scope``'s limit that expired by ``now`` (for a person,
        their global ones too, which count in every lineage); how many went."""
        lineages: set[int] | None = (
            {scope.lineage, GLOBAL_LINEAGE} if scope.kind is ScopeKind.PERSONAL else {scope.lineage}
        )
        if scope.kind is ScopeKind.PERSONAL and scope.lineage == GLOBAL_LINEAGE:
            lineages = None  # a global memory must fit every lineage: any expired one frees room
        expired = (
            memory
            for memory in self.memories_of(scope.kind, scope.owner_id, expired_too=True)
            if memory.expired(now) and (lineages is None or memory.scope.lineage in lineages)
        )
        return self._delete_all(expired, now).deleted

    def purge_expired(self, now: datetime, *, at_most: int = EXPIRED_PER_RUN) -> ExpiryReport:
        """The janitor's part: delete up to ``at_most`` memories that expired by ``now``."""
        report = ExpiryReport()
        for shard in range(AGE_SHARDS):
            start_key = None
            while report.found < at_most:
                keys, start_key = self._guarded(
                    self._table.query,
                    "#pk = :shard AND #sk <= :now",
                    names={"#pk": JANITOR_PK, "#sk": JANITOR_SK},
                    values={":shard": expiry_shard_partition(shard), ":now": iso_time(now)},
                    index=JANITOR_INDEX,
                    limit=min(100, at_most - report.found),
                    start_key=start_key,
                )
                memories = []
                for key in keys:
                    report.found += 1
                    item = self._guarded(self._table.get, ItemKey.of(key))
                    if item is not None:
                        memories.append(memory_from_item(item))
                    else:
                        report.kept += 1
                done = self._delete_all(memories, now)
                report.deleted += done.deleted
                report.kept += done.kept
                if start_key is None:
                    break
        return report

    def _delete_all(self, memories: Iterable[Memory], now: datetime) -> ExpiryReport:
        report = ExpiryReport()
        for memory in memories:
            report.found += 1
            try:
                self._delete_expired(memory, now)
                report.deleted += 1
            except MemoryNotFound:
                report.kept += 1  # changed since it was read (an edit gave it another expiry, or none)
        return report

    def _delete_expired(self, memory: Memory, now: datetime) -> None:
        if not memory.expired(now) or memory.expires_at is None:
            raise MemoryNotFound(f"memory #{memory.memory_id} has not expired")
        scope = memory.scope
        trail = [
            ItemKey.of(item)
            for item in self._guarded(
                self._table.query_range_all, memory_trail_range(scope.kind, scope.owner_id, memory.memory_id)
            )
        ]
        operations = self._remove_operations(memory, pending_only=False, expires=epoch(memory.expires_at))
        operations += [self._table.op_delete(key) for key in trail[:_TRAIL_LIMIT]]
        try:
            self._transact_retrying(operations)
        except TransactionCancelled as exc:
            raise MemoryNotFound(f"memory #{memory.memory_id} changed or was deleted") from exc
