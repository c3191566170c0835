"""What a turn's model was shown, as ids and places (never texts): the ``TurnTrace`` a turn keeps with
its completion record ("Why this answer?"), and the memories and rows it names. A leaf of the domain:
the turn (``domain/turn.py``), the tools' results (``domain/tools.py``) and the rule that reads a
trace (``domain/why.py``) all import it, and it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Final

from kioku.domain.ltm.memory import Memory, ScopeKind
from kioku.domain.privacy import Place
from kioku.domain.stm.entries import StmAddress

MAX_PEOPLE_NOTED: Final = 20
"""People whose memories' use a turn notes in their own partition (``/personal memories list``):
the turn's commit is one transaction, which holds at most 100 items (each person noted takes two:
the note and their forget-all check). Entries about anyone beyond are only counted."""


class MemoryUse(StrEnum):
    """What a turn did with a long-term memory."""

    RECALLED = "recalled"
    SAVED = "saved"
    UPDATED = "updated"
    DELETED = "deleted"
    FOUND = "found"


@dataclass(frozen=True, slots=True)
class UsedMemory:
    """A long-term memory a turn used, by id: ``about`` whom it is about (a personal memory's owner,
    a server memory's subject, or None)."""

    kind: ScopeKind
    owner_id: str
    memory_id: str
    use: MemoryUse
    about: str | None = None

    @classmethod
    def of(cls, memory: Memory, use: MemoryUse) -> UsedMemory:
        return cls(memory.scope.kind, memory.scope.owner_id, memory.memory_id, use, memory.about)

    @property
    def key(self) -> tuple[ScopeKind, str, str]:
        return self.kind, self.owner_id, self.memory_id


@dataclass(frozen=True, slots=True)
class UsedRow:
    """A short-term memory row a turn was shown: its address, how old it was then, and what of it
    (``current``: the row of the turn's own channel)."""

    address: StmAddress
    last_updated: datetime | None = None
    current: bool = False
    summary: bool = False
    categories: bool = False

    @property
    def person(self) -> str | None:
        """The person a DM row belongs to; None for a server's row."""
        return self.address.user_id


@dataclass(frozen=True, slots=True)
class TurnTrace:
    """What one turn's model was shown, as ids and places."""

    guild_id: str | None
    channel_id: str
    lineage: int
    at: datetime
    persona_id: str | None = None
    """The persona that spoke (None: the main persona): its name is read from the server's
    configuration at the time of the question."""
    parent_channel_id: str | None = None
    channel_name: str | None = None
    channel_private: bool = True
    private_thread: bool = False
    memories: tuple[UsedMemory, ...] = ()
    rows: tuple[UsedRow, ...] = ()
    left_out: int = 0
    unnoted: int = 0
    """Entries about people beyond ``MAX_PEOPLE_NOTED``: only counted, so that nothing of them is
    kept that their forget-all could not find."""

    @property
    def place(self) -> Place:
        return Place(self.guild_id, self.channel_id, self.parent_channel_id)

    def people(self) -> tuple[str, ...]:
        """Whose memories (or DM rows) the trace names, at most ``MAX_PEOPLE_NOTED``, first used first."""
        named = [m.about for m in self.memories] + [r.person for r in self.rows]
        return tuple(dict.fromkeys(person for person in named if person))[:MAX_PEOPLE_NOTED]

    def capped(self) -> TurnTrace:
        """Without the entries about people beyond ``MAX_PEOPLE_NOTED`` (each person noted gets a note
        their forget-all finds; the others would stay behind in the shared part): counted instead."""
        noted = set(self.people())
        memories = tuple(m for m in self.memories if m.about is None or m.about in noted)
        rows = tuple(r for r in self.rows if r.person is None or r.person in noted)
        dropped = len(self.memories) - len(memories) + len(self.rows) - len(rows)
        if not dropped:
            return self
        return replace(self, memories=memories, rows=rows, unnoted=self.unnoted + dropped)

    def of_person(self, person_id: str) -> TurnTrace:
        """Only ``person_id``'s entries: what their forget-all removes from the record."""
        return replace(
            self,
            memories=tuple(m for m in self.memories if m.about == person_id),
            rows=tuple(r for r in self.rows if r.person == person_id),
        )

    def without(self, person_id: str) -> TurnTrace:
        return replace(
            self,
            memories=tuple(m for m in self.memories if m.about != person_id),
            rows=tuple(r for r in self.rows if r.person != person_id),
        )
