"""How much a memory is used: the lists' orders, least used first (when a turn was last shown it)
and the mark of a memory unused for ``UNUSED_AFTER``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from kioku.domain.ltm.memory import Memory
from kioku.domain.why import memory_key_text

UNUSED_AFTER: Final = timedelta(days=90)
UNUSED_MARK: Final = "unused 90+ days"


class ListOrder(StrEnum):
    RECENT = "recent"
    """Newest first."""
    LEAST_USED = "least_used"
    """Never shown first (the oldest first), then the longest since a turn was shown it."""


def last_used(memory: Memory, noted: Mapping[str, datetime]) -> datetime | None:
    """When a turn was last shown ``memory``: the later of what the janitor folded into it and what
    ``noted`` (the use notes, by ``memory_key_text``, when the caller read them) says."""
    note = noted.get(memory_key_text(memory.scope.kind, memory.scope.owner_id, memory.memory_id))
    times = [at for at in (memory.last_shown, note) if at is not None]
    return max(times, default=None)


def in_order(
    memories: Sequence[Memory], order: ListOrder | None, noted: Mapping[str, datetime] | None = None
) -> list[Memory]:
    """``memories`` (oldest first) in ``order``; None keeps them as they are."""
    if order is ListOrder.RECENT:
        return sorted(memories, key=lambda m: m.created_at, reverse=True)
    if order is ListOrder.LEAST_USED:

        def use(memory: Memory) -> tuple[bool, datetime]:
            last = last_used(memory, noted or {})
            return last is not None, last or memory.created_at

        return sorted(memories, key=use)
    return list(memories)


def unused_long(memory: Memory, now: datetime, noted: Mapping[str, datetime] | None = None) -> bool:
    """Whether no turn was shown ``memory`` for ``UNUSED_AFTER`` (or ever, and it is older)."""
    return now - (last_used(memory, noted or {}) or memory.created_at) >= UNUSED_AFTER
