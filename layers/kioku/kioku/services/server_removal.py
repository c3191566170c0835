"""A server that removes kioku has its memory deleted once ``SERVER_DATA_GRACE_DAYS`` have passed.

``GUILD_DELETE`` (not an outage) marks the server removed; a later ``GUILD_CREATE`` takes the mark
back. Once the grace has passed, the janitor deletes what the server kept: first the personal
memories said there (each through the memory store's own delete, so its owner's counter, book and
duplicate guard stay consistent), then the server's own partitions (its memories, short-term rows,
configuration and webhooks), then what only a sweep of the whole table finds: personal memories
said there before their index existed, and the server's turn records, notes and outboxes (which
would otherwise wait out their 16 days).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from kioku.domain.conditions import ServerReadded
from kioku.domain.forgetting import SpeakerForgotten
from kioku.domain.ltm.memory import Memory, MemoryNotFound, ScopeKind
from kioku.domain.server_removal import ErasedItems, ServerRemoval, SweptPage

MAX_ITEMS_PER_RUN: Final = 3000
"""Items one janitor run reads for deletion (within its five minutes); the next run goes on."""

logger = logging.getLogger(__name__)


class ServerRemovals(Protocol):
    """The marks of removed servers and the bulk deletion of their partitions (``ServerRemovals``
    in ``adapters/dynamodb``); ``erase_partitions`` raises ``ServerReadded`` when the mark changed."""

    def due(self, removed_before: datetime, *, limit: int = 100) -> list[ServerRemoval]: ...

    def personal_memories_said_in(self, guild_id: str, *, limit: int) -> Iterator[tuple[str, str]]:
        """(owner, memory id) of the personal memories said in the server."""
        ...

    def still_removed(self, removal: ServerRemoval) -> dict[str, Any]:
        """A check, for a transaction, that the mark still holds ``removal``."""
        ...

    def erase_partitions(self, removal: ServerRemoval, *, budget: int) -> ErasedItems: ...

    def finish(self, removal: ServerRemoval) -> bool: ...

    def sweep(self, removal: ServerRemoval, report: ErasedItems) -> SweptPage | None:
        """The next page of the sweep of the whole table (None: it is done)."""
        ...

    def swept_to(self, removal: ServerRemoval, next_from: dict[str, Any] | None) -> None: ...


class RemovedMemories(Protocol):
    """What the erasure asks of the memory store: raises ``MemoryNotFound`` when the memory
    changed, ``SpeakerForgotten`` when a check in ``also`` failed."""

    def find(
        self, kind: ScopeKind, owner_id: str, memory_id: str, *, expired_too: bool = False
    ) -> Memory | None: ...

    def delete(self, memory: Memory, *, also: Sequence[dict[str, Any]] = ()) -> None: ...


@dataclass(slots=True)
class ErasureReport:
    """What one janitor run did to removed servers: servers whose data is all gone, items deleted,
    items kept (changed since the removal), servers added back meanwhile."""

    servers_erased: int = 0
    deleted: int = 0
    kept: int = 0
    readded: int = 0


def erase_removed_servers(
    removals: ServerRemovals,
    memories: RemovedMemories,
    now: datetime,
    grace: timedelta,
    *,
    budget: int = MAX_ITEMS_PER_RUN,
) -> ErasureReport:
    """Delete the data of every server removed more than ``grace`` ago, at most ``budget`` items."""
    report = ErasureReport()
    for removal in removals.due(now - grace):
        if budget <= 0:
            break
        try:
            budget -= _erase(removal, removals, memories, report, budget)
        except ServerReadded:
            report.readded += 1
            logger.info("server %s was added back; its data is kept", removal.guild_id)
    return report


def _erase(
    removal: ServerRemoval,
    removals: ServerRemovals,
    memories: RemovedMemories,
    report: ErasureReport,
    budget: int,
) -> int:
    """Erase what ``removal``'s server kept, within ``budget``; returns the items read."""
    said_there = removals.personal_memories_said_in(removal.guild_id, limit=min(budget, 100))
    read = _erase_personal(removal, removals, memories, itertools.islice(said_there, budget), report)
    erased = removals.erase_partitions(removal, budget=budget - read)
    if erased.finished:
        erased.finished = _sweep(removal, removals, memories, erased, report)
    report.deleted += erased.deleted
    report.kept += erased.kept
    if erased.finished and removals.finish(removal):
        report.servers_erased += 1
        logger.info("server %s removed at %s: its data is deleted", removal.guild_id, removal.removed_at)
    return budget - erased.room


def _sweep(
    removal: ServerRemoval,
    removals: ServerRemovals,
    memories: RemovedMemories,
    erased: ErasedItems,
    report: ErasureReport,
) -> bool:
    """Go on with the sweep of the whole table while ``erased.room`` lasts; True once it is done."""
    while erased.room > 0:
        page = removals.sweep(removal, erased)
        if page is None:
            return True
        _erase_personal(removal, removals, memories, page.memories, report)
        removals.swept_to(removal, page.next_from)  # only once the page's memories are gone
        if page.next_from is None:
            return True
    return False


def _erase_personal(
    removal: ServerRemoval,
    removals: ServerRemovals,
    memories: RemovedMemories,
    said_there: Iterable[tuple[str, str]],
    report: ErasureReport,
) -> int:
    """Delete the personal memories ``said_there`` (owner and id) unless changed since the removal,
    each through the memory store's own delete; returns how many were read."""
    read = 0
    for owner_id, memory_id in said_there:
        read += 1
        memory = memories.find(ScopeKind.PERSONAL, owner_id, memory_id, expired_too=True)
        if memory is None:
            continue  # the index lags a delete
        if memory.updated_at >= removal.removed_at:
            report.kept += 1
            continue
        try:
            memories.delete(memory, also=[removals.still_removed(removal)])
        except SpeakerForgotten:
            raise ServerReadded(removal.guild_id) from None  # the mark's check is the only part added
        except MemoryNotFound:
            report.kept += 1  # changed since it was read
            continue
        report.deleted += 1
    return read
