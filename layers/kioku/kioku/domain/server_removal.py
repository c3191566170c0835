"""A server kioku was removed from, as its removal mark holds it (see ``services/server_removal.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class ServerRemoval:
    """Kioku removed from ``guild_id`` at ``removed_at`` (as the mark holds it)."""

    guild_id: str
    removed_at: datetime


@dataclass(slots=True)
class ErasedItems:
    """What one pass over a server's own partitions did: items deleted, kept (changed since the
    removal), and whether every partition was read to its end."""

    room: int
    """Items this run may still read."""
    deleted: int = 0
    kept: int = 0
    finished: bool = True


@dataclass(frozen=True, slots=True)
class SweptPage:
    """One page of the sweep: the personal memories said in the server that it found (for the memory
    store's own delete), and where the next page starts (None: the sweep is done)."""

    memories: list[tuple[str, str]]
    next_from: dict[str, Any] | None
