"""The recall books' layout (``BookLayout``: a shard's capacity, a scope's shards, the shard a new
memory goes to) and a duplicate guard's holder (``GuardHolder``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kioku.adapters.dynamodb.keys import ItemKey, book_key
from kioku.domain.ltm.memory import Memory, MemoryScope, SaidFact, ScopeKind, refuses_as_duplicate
from kioku.domain.ltm.vectors import VECTOR_BYTES
from kioku.domain.privacy import PrivacyPolicy

BOOK_ITEM_BYTES: Final = 380_000
"""What a book shard may take, under DynamoDB's 400 KB item limit."""
BOOK_ENTRY_OVERHEAD_BYTES: Final = 200 + 4 + VECTOR_BYTES
"""An entry besides its content: its name, time, author, origin and subject (at most ~170 bytes),
and its embedding (``v``: 256 bytes)."""
_MAX_UTF8_BYTES: Final = 4


@dataclass(frozen=True, slots=True)
class GuardHolder:
    """The memory a guard names, and that memory (None when it is gone, or does not hold this guard)."""

    memory_id: str
    memory: Memory | None

    def refuses(self, scope: MemoryScope, new: SaidFact, policy: PrivacyPolicy, now: datetime) -> bool:
        """Whether the holder makes the new memory needless: never once it expired (by ``now``)."""
        held = self.memory
        return (
            held is not None
            and not held.expired(now)
            and refuses_as_duplicate(scope, held.said(), new, policy)
        )


@dataclass(frozen=True, slots=True)
class BookLayout:
    """How many entries a book shard takes and how many shards a scope has, from the settings: a
    shard holds ``capacity`` entries of ``max_length`` 4-byte characters, and a scope's shards hold
    its whole limit. With the defaults (100 memories of up to 1,000 characters): 90 entries, 2 shards."""

    server_limit: int = 100
    personal_limit: int = 100
    max_length: int = 1000

    @classmethod
    def from_settings(cls, settings: Any) -> BookLayout:
        return cls(settings.MAX_SERVER_MEMORIES, settings.MAX_PERSONAL_MEMORIES, settings.MAX_MEMORY_LENGTH)

    @property
    def capacity(self) -> int:
        return max(1, BOOK_ITEM_BYTES // (_MAX_UTF8_BYTES * self.max_length + BOOK_ENTRY_OVERHEAD_BYTES))

    def shards(self, kind: ScopeKind) -> int:
        limit = self.server_limit if kind is ScopeKind.SERVER else self.personal_limit
        return math.ceil(limit / self.capacity)

    def keys(self, scope: MemoryScope) -> list[ItemKey]:
        return [book_key(scope, shard) for shard in range(self.shards(scope.kind))]


def shard_with_room(memory_id: str, shards: int, full: set[int]) -> int | None:
    """The shard a new memory goes to: its id's, else the next one not found full by this save."""
    first = int(memory_id) % shards if memory_id.isdigit() else 0
    return next(
        (shard for step in range(shards) if (shard := (first + step) % shards) not in full),
        None,
    )
