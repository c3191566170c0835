"""A server's personas as use cases: adding one within ``MAX_PERSONAS_PER_SERVER``, what removing one
takes with it, and removing it.

A removed persona takes its short-term rows in the server and, when no other persona shares its
lineage, the server's long-term memories of that lineage; the server's last alter persona takes the
channel webhooks they spoke through (their tokens are credentials nothing needs any more). Personal memories kept in its lineage stay
with their people (``/personal memories`` lists, exports and forgets them as before); nothing reads
that lineage again, as lineage ids are never reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kioku.domain.ltm.memory import Memory, MemoryNotFound, ScopeKind
from kioku.domain.models import Persona, ServerConfig
from kioku.domain.personas import new_persona, with_persona, without_persona
from kioku.domain.stm.entries import StmEntry


class PersonaConfigs(Protocol):
    """Server configurations (``ConfigStore``), each save conditional on the version read: raises
    ``StaleConfiguration``, or ``PersonaLimitReached`` past the limit."""

    def save_server_config(self, config: ServerConfig) -> ServerConfig: ...

    def save_with_persona_limit(self, config: ServerConfig, max_personas: int) -> ServerConfig: ...


class PersonaRows(Protocol):
    """A persona's short-term rows in a server (``StmStore``)."""

    def persona_rows(self, guild_id: str, persona_id: str) -> list[StmEntry]: ...

    def delete_persona_rows(self, guild_id: str, persona_id: str) -> int: ...


class LineageMemories(Protocol):
    """A server's long-term memories (``MemoryStore``'s reads and its delete)."""

    def memories_of(self, kind: ScopeKind, owner_id: str, *, expired_too: bool = False) -> list[Memory]: ...

    def delete(self, memory: Memory) -> None:
        """Raises ``MemoryNotFound`` when the memory changed or went."""
        ...


class ServerWebhooks(Protocol):
    """The persona webhooks a server keeps (``WebhookStore``)."""

    def forget_server(self, guild_id: str) -> int: ...


@dataclass(frozen=True, slots=True)
class Footprint:
    """What removing a persona takes with it."""

    stm_rows: int
    memories: int
    """The server's long-term memories of its lineage that go (none while another persona shares it)."""
    sharers: tuple[Persona, ...]


def add_persona(
    configs: PersonaConfigs,
    config: ServerConfig,
    *,
    persona_id: str,
    name: str,
    prompt: str,
    avatar_url: str | None,
    memories_from: str | None,
    max_personas: int,
) -> tuple[ServerConfig, Persona]:
    """Save a new alter persona onto ``config`` (the version read), within the limit."""
    persona = new_persona(
        config,
        persona_id=persona_id,
        name=name,
        prompt=prompt,
        avatar_url=avatar_url,
        memories_from=memories_from,
    )
    saved = configs.save_with_persona_limit(with_persona(config, persona), max_personas)
    return saved, persona


def footprint(config: ServerConfig, persona: Persona, stm: PersonaRows, ltm: LineageMemories) -> Footprint:
    sharers = config.lineage_sharers(persona)
    rows = len(stm.persona_rows(config.guild_id or "", persona.persona_id))
    memories = 0 if sharers else len(_lineage_memories(config, persona, ltm))
    return Footprint(rows, memories, sharers)


def remove_persona(
    configs: PersonaConfigs,
    config: ServerConfig,
    persona: Persona,
    stm: PersonaRows,
    ltm: LineageMemories,
    webhooks: ServerWebhooks,
) -> Footprint:
    """Remove ``persona`` from ``config`` (conditional on the version read: a turn that reads the
    configuration after it no longer speaks as it), then delete what it kept in this server."""
    saved = configs.save_server_config(without_persona(config, persona))
    guild_id = config.guild_id or ""
    if not saved.alters:
        webhooks.forget_server(guild_id)
    sharers = config.lineage_sharers(persona)
    rows = stm.delete_persona_rows(guild_id, persona.persona_id)
    deleted = 0
    if not sharers:
        for memory in _lineage_memories(config, persona, ltm):
            try:
                ltm.delete(memory)
            except MemoryNotFound:
                continue  # changed or gone meanwhile
            deleted += 1
    return Footprint(rows, deleted, sharers)


def _lineage_memories(config: ServerConfig, persona: Persona, ltm: LineageMemories) -> list[Memory]:
    memories = ltm.memories_of(ScopeKind.SERVER, config.guild_id or "", expired_too=True)  # all of them go
    return [memory for memory in memories if memory.scope.lineage == persona.lineage_id]
