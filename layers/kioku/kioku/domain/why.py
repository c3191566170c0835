""" "Why this answer?": what a turn's model was shown, kept as ids and places (never texts), and the
rule that decides, at the time of the question, what of it a viewer may be told.

A turn keeps a ``TurnTrace`` with its completion record: the long-term memories it was shown and
those its tools saved, rewrote, deleted or found (by id and whose), the short-term rows it was shown
(by address, with their age), and how many memories the budget left out. ``explain`` reads it for a
viewer against what a turn of that viewer at their place could be shown now (``Seen``: the same
recall and short-term rules a turn uses, read afresh), so nothing stored decides what is shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from kioku.domain.ltm.memory import Memory, ScopeKind
from kioku.domain.ltm.recall import Recall
from kioku.domain.privacy import Origin, Place, PrivacyPolicy, may_name_channel
from kioku.domain.stm.entries import StmAddress, StmEntry, live_categories, live_summary, may_recall_row
from kioku.domain.tools import ToolResult
from kioku.domain.trace import MAX_PEOPLE_NOTED, MemoryUse, TurnTrace, UsedMemory, UsedRow
from kioku.domain.turn import TurnContext

# The trace's types live in the leaf ``domain/trace.py`` (no import circle with the turn and the
# tools); they are named here too, for the code that reads a trace through this module.
__all__ = [
    "MAX_PEOPLE_NOTED",
    "Explanation",
    "MemoryLine",
    "MemoryUse",
    "RowLine",
    "Seen",
    "ShownNote",
    "TurnTrace",
    "UsedMemory",
    "UsedRow",
    "Visibility",
    "explain",
    "memory_key_text",
    "trace_of",
]


def trace_of(
    turn: TurnContext,
    *,
    channel_name: str | None,
    recalled: Recall,
    rows: Sequence[StmEntry],
    tool_results: Iterable[ToolResult],
) -> TurnTrace:
    """The trace of ``turn``: the memories its recall showed (``recalled.shown``), the short-term
    ``rows`` its context held (``StmContext.shown``; its own channel's is the current one), and the
    memories its tools touched."""
    shown = [UsedMemory.of(recalled.candidates[i].memory, MemoryUse.RECALLED) for i in recalled.shown]
    touched = [used for result in tool_results for used in result.touched]
    return TurnTrace(
        guild_id=turn.guild_id,
        channel_id=turn.channel_id,
        parent_channel_id=turn.parent_channel_id,
        channel_name=channel_name,
        channel_private=turn.channel_private and not turn.is_dm,
        private_thread=turn.private_thread,
        lineage=turn.config.persona.lineage_id,
        persona_id=turn.config.persona.persona_id,
        at=turn.now,
        memories=tuple(dict.fromkeys([*shown, *touched])),
        rows=tuple(
            UsedRow(
                row.address,
                row.last_updated,
                current=row.channel_id == turn.channel_id,
                summary=bool(live_summary(row)),
                categories=bool(live_categories(row)),
            )
            for row in rows
        ),
        left_out=recalled.left_out,
    ).capped()


@dataclass(frozen=True, slots=True)
class ShownNote:
    """A turn noted in a person's partition as shown memories about them: which (``memory_keys``,
    ``memory_key_text``), when and where."""

    source: str
    turn_id: str
    at: datetime
    guild_id: str | None
    channel_id: str
    parent_channel_id: str | None
    channel_private: bool
    """Discord's privacy of the turn's channel then; the server's overrides are read when asked."""
    memory_keys: tuple[str, ...]
    private_thread: bool = False

    def known_to(self, place: Place, policy: PrivacyPolicy) -> bool:
        """Whether the person whose note it is, asking at ``place``, may be told of this turn (that it
        ran, when, where): in their DM, or where memory of its channel could be shown to a turn of
        theirs at ``place`` now (``policy``: its server's settings now; the bypass aside): a channel
        public now, or the one they ask from. Else it would tell them of activity in a channel they
        may not see."""
        if self.guild_id is None:
            return True
        origin = Origin(
            self.guild_id, self.channel_id, self.parent_channel_id, self.channel_private, self.private_thread
        )
        at = place if place.guild_id == self.guild_id else Place(self.guild_id, "", None)
        return may_name_channel(origin, at, policy)


def memory_key_text(kind: ScopeKind, owner_id: str, memory_id: str) -> str:
    """A memory as one string, as the notes list it."""
    return f"{'s' if kind is ScopeKind.SERVER else 'p'}#{owner_id}#{memory_id}"


# -- what a viewer is told ----------------------------------------------------------------------------


class Visibility(StrEnum):
    SHOWN = "shown"
    UNSEEN = "unseen"
    """It exists, but a turn of the viewer at their place could not be shown it now."""
    FORGOTTEN = "forgotten"
    GONE = "gone"
    """A short-term row no longer kept (its channel deleted, or idle past the retention)."""


@dataclass(frozen=True, slots=True)
class Seen:
    """What a turn of ``viewer_id`` at ``place`` could be shown now, read at the question's time:
    ``visible`` the memories its recall holds (``MemoryStore.recall`` for the viewer alone),
    ``existing`` the keys of the memories that still exist among those the viewer may be told of
    (the server's, their own), ``rows`` the short-term rows the trace names, as stored now."""

    viewer_id: str
    place: Place
    policy: PrivacyPolicy
    cross_server_opt_in: bool = False
    visible: Mapping[tuple[ScopeKind, str, str], Memory] = field(default_factory=dict)
    existing: frozenset[tuple[ScopeKind, str, str]] = frozenset()
    rows: Mapping[StmAddress, StmEntry] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemoryLine:
    use: MemoryUse
    memory_id: str
    visibility: Visibility
    memory: Memory | None = None
    """The memory as stored now, only when ``visibility`` is ``SHOWN``."""
    changed_since: bool = False
    """Whether its text was changed since the turn (only told with ``SHOWN``: elsewhere it would tell
    of activity where the viewer may not look)."""


@dataclass(frozen=True, slots=True)
class RowLine:
    used: UsedRow
    visibility: Visibility
    entry: StmEntry | None = None
    """The row as stored now, only when ``visibility`` is ``SHOWN``."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """What ``explain`` lets a viewer see of a trace: another person's personal memories only
    counted, their DM row not even that (only its owner is told of it)."""

    memories: tuple[MemoryLine, ...] = ()
    others_memories: int = 0
    rows: tuple[RowLine, ...] = ()
    left_out: int = 0
    unnoted: int = 0


def explain(trace: TurnTrace, seen: Seen) -> Explanation:
    """``trace`` as ``seen.viewer_id`` may be told it: a memory's text only when a turn of theirs at
    their place could be shown it now; another person's personal memory only counted; a memory that
    no longer exists "forgotten"; a row by name only where a turn there could be shown it now."""
    memories: list[MemoryLine] = []
    others_memories = 0
    for used in trace.memories:
        if used.kind is ScopeKind.PERSONAL and used.owner_id != seen.viewer_id:
            others_memories += 1
            continue
        memory = seen.visible.get(used.key)
        if memory is not None:
            changed = memory.updated_at > trace.at
            memories.append(MemoryLine(used.use, used.memory_id, Visibility.SHOWN, memory, changed))
        elif used.key in seen.existing:
            memories.append(MemoryLine(used.use, used.memory_id, Visibility.UNSEEN))
        else:
            memories.append(MemoryLine(used.use, used.memory_id, Visibility.FORGOTTEN))
    rows: list[RowLine] = []
    for row in trace.rows:
        if row.person is not None and row.person != seen.viewer_id:
            # the speaker's DM row, folded in by their cross-server opt-in: not even counted, which
            # would tell the viewer they opted in and talk with kioku in DMs
            continue
        entry = seen.rows.get(row.address)
        if entry is None:
            rows.append(RowLine(row, Visibility.GONE))
        elif may_recall_row(
            entry,
            seen.place,
            seen.policy,
            user_id=seen.viewer_id,
            cross_server_opt_in=seen.cross_server_opt_in,
        ):
            rows.append(RowLine(row, Visibility.SHOWN, entry))
        else:
            rows.append(RowLine(row, Visibility.UNSEEN))
    return Explanation(
        memories=tuple(memories),
        others_memories=others_memories,
        rows=tuple(rows),
        left_out=trace.left_out,
        unnoted=trace.unnoted,
    )
