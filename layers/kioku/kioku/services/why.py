""" "Why this answer?": a reply's trace, read for a viewer with what a turn of theirs at their place
could be shown now (the same recall and short-term rules, read afresh, never the stored record's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from kioku.domain.ltm.memory import Memory, ScopeKind
from kioku.domain.ltm.ports import MemoryStore
from kioku.domain.models import ServerConfig, UserProfile
from kioku.domain.privacy import Place
from kioku.domain.stm.entries import StmAddress, StmEntry
from kioku.domain.why import Explanation, Seen, TurnTrace, explain

REMOVED_PERSONA: Final = "a persona since removed"
"""What ``{bot}`` reads as when the persona that spoke was removed since."""
NO_LINEAGE: Final = -1
"""A lineage no memory has: what is recalled for a persona the server no longer has."""


class ReplyTraces(Protocol):
    """What each turn was shown, kept per reply message (``TurnTraces``)."""

    def of_reply(self, message_id: str) -> TurnTrace | None: ...


class Configs(Protocol):
    """A server's configuration and a person's profile (``ConfigStore``)."""

    def get_server_config(self, guild_id: str) -> ServerConfig: ...

    def get_user_profile(self, user_id: str) -> UserProfile: ...


class RecalledMemories(MemoryStore, Protocol):
    """What a turn would recall now, and a scope's memories (``MemoryStore``)."""

    def memories_of(self, kind: ScopeKind, owner_id: str) -> list[Memory]: ...


class ShortTermRows(Protocol):
    """A short-term memory row by its address (``StmStore``)."""

    def get(self, address: StmAddress) -> StmEntry | None: ...


@dataclass(frozen=True, slots=True)
class Answered:
    """A reply's trace and what of it the viewer may see."""

    trace: TurnTrace
    explanation: Explanation
    persona_name: str


def why_this_answer(
    message_id: str,
    viewer_id: str,
    place: Place,
    *,
    traces: ReplyTraces,
    config_store: Configs,
    ltm_store: RecalledMemories,
    stm_store: ShortTermRows,
) -> Answered | None:
    """The trace of the reply holding ``message_id`` as ``viewer_id`` at ``place`` may see it now;
    None when no trace of it is kept here (not a kioku reply, expired, or a reply in another place)."""
    trace = traces.of_reply(message_id)
    if trace is None or trace.guild_id != place.guild_id or trace.channel_id != place.channel_id:
        return None
    config = config_store.get_server_config(place.guild_id) if place.guild_id else ServerConfig()
    profile = config_store.get_user_profile(viewer_id)
    # the persona that answered (an alter persona's reply too, by the id its trace keeps: two personas
    # may share a lineage), while the server still has it: a turn of the viewer with that persona
    # would recall its lineage; a persona removed since, none
    persona = config.persona_by_id(trace.persona_id)
    lineage = trace.lineage if persona is not None else NO_LINEAGE
    # whom a turn of the viewer here recalls personal memories of: the viewer, if personal memories are on
    people = [viewer_id] if config.capabilities.personal_memories_enabled else []
    recalled = ltm_store.recall(place.guild_id, lineage, people, place=place, policy=config.privacy)
    visible = {
        (memory.scope.kind, memory.scope.owner_id, memory.memory_id): memory
        for memory in (*recalled.server, *(m for own in recalled.personal.values() for m in own))
    }
    unseen = [m for m in trace.memories if m.key not in visible]
    existing: set[tuple[ScopeKind, str, str]] = set()
    if any(m.kind is ScopeKind.SERVER for m in unseen) and place.guild_id:
        existing |= {
            (ScopeKind.SERVER, m.scope.owner_id, m.memory_id)
            for m in ltm_store.memories_of(ScopeKind.SERVER, place.guild_id)
        }
    if any(m.kind is ScopeKind.PERSONAL and m.owner_id == viewer_id for m in unseen):
        existing |= {
            (ScopeKind.PERSONAL, viewer_id, m.memory_id)
            for m in ltm_store.memories_of(ScopeKind.PERSONAL, viewer_id)
        }
    rows = {}
    for used in trace.rows:
        if used.person is None or used.person == viewer_id:  # another person's DM row is only counted
            entry = stm_store.get(used.address)
            if entry is not None:
                rows[used.address] = entry
    seen = Seen(
        viewer_id=viewer_id,
        place=place,
        policy=config.privacy,
        cross_server_opt_in=profile.cross_server_opt_in,
        visible=visible,
        existing=frozenset(existing),
        rows=rows,
    )
    return Answered(trace, explain(trace, seen), persona.name if persona else REMOVED_PERSONA)
