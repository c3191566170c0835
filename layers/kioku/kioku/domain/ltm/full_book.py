"""A full book: when a scope holds its limit, the memories a save's refusal names so the model can
merge one into another or delete one, least recently used first (from the use notes the turns keep,
``why.ShownNote``, kept 16 days)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from kioku.domain.ltm.memory import GLOBAL_LINEAGE, MemoryScope, ScopeKind
from kioku.domain.ltm.recall import Recalled
from kioku.domain.why import memory_key_text

LEAST_USED_ON_LIMIT: Final = 5
TEXT_START_CHARS: Final = 80
NOT_SHOWN_LATELY: Final = "not in the last 16 days"


@dataclass(frozen=True, slots=True)
class LeastUsed:
    recalled: Recalled
    last_shown: datetime | None

    def as_answer(self) -> dict[str, str]:
        text = self.recalled.text
        start = text if len(text) <= TEXT_START_CHARS else text[: TEXT_START_CHARS - 1] + "…"
        shown = self.last_shown.date().isoformat() if self.last_shown else NOT_SHOWN_LATELY
        return {"memory_id": self.recalled.memory.memory_id, "memory": start, "last_shown": shown}


def counted_in(scope: MemoryScope, recalled: Recalled) -> bool:
    """Whether ``recalled`` counts toward ``scope``'s limit: its own lineage's, and for a person
    their global ones (which count in every lineage)."""
    held = recalled.memory.scope
    if (held.kind, held.owner_id) != (scope.kind, scope.owner_id):
        return False
    lineages = {scope.lineage, GLOBAL_LINEAGE} if scope.kind is ScopeKind.PERSONAL else {scope.lineage}
    return held.lineage in lineages


def least_used(
    candidates: Iterable[Recalled], last_shown: Mapping[str, datetime], count: int = LEAST_USED_ON_LIMIT
) -> list[LeastUsed]:
    """``candidates`` least recently used first: those not shown lately (the oldest written first),
    then by when they were last shown."""
    used = [
        LeastUsed(
            c,
            last_shown.get(memory_key_text(c.memory.scope.kind, c.memory.scope.owner_id, c.memory.memory_id)),
        )
        for c in candidates
    ]
    used.sort(key=lambda u: (u.last_shown is not None, u.last_shown or u.recalled.memory.updated_at))
    return used[:count]


def last_shown_by_memory(notes: Iterable[tuple[datetime, Iterable[str]]]) -> dict[str, datetime]:
    """The latest time each memory (by ``memory_key_text``) was shown, from notes of (when, which)."""
    latest: dict[str, datetime] = {}
    for at, keys in notes:
        for key in keys:
            if key not in latest or latest[key] < at:
                latest[key] = at
    return latest
