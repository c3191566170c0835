"""The domain's shared vocabulary: server configuration, user profile, context items.

Frozen dataclasses rather than pydantic models: the domain is imported on hot paths and
must stay cheap to import and to copy.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from kioku.domain.privacy import PrivacyMode, PrivacyPolicy


class PrivacyLevel(StrEnum):
    NONE = "none"
    PARTIAL = "partial"
    FULL = "full"


class MemoryModeration(StrEnum):
    """``open`` (seed 003): every member's turn saves server memories; ``approval``: a non-manager's
    wait for a manager's review."""

    OPEN = "open"
    APPROVAL = "approval"


class RenderMode(StrEnum):
    CRUDE_SUMMARY = "crude_summary"
    SUPERSEDE = "supersede"


DEFAULT_REFRESH_CADENCE = 5
DEFAULT_NUDGE_INJECTION_DEPTH = 2
ANCHORED_TOP_DEPTH = -1


MAIN_PERSONA_ID = "kioku"


@dataclass(frozen=True, slots=True)
class Persona:
    """Who kioku speaks as. The main persona speaks as the bot user; an ``alter`` persona through a
    channel webhook, with its own name and ``avatar_url``. ``lineage_id`` names the long-term
    memories it reads and writes: its own, or another persona's it was created to share.
    ``trigger_words`` call an alter persona (the main persona's are the server's);
    ``nicknames``: (member id, what this persona calls them)."""

    persona_id: str = MAIN_PERSONA_ID
    lineage_id: int = 1
    name: str = "Kioku"
    system_prompt: str = ""
    alter: bool = False
    avatar_url: str | None = None
    trigger_words: tuple[str, ...] = ()
    nicknames: tuple[tuple[str, str], ...] = ()

    def nickname_of(self, user_id: str) -> str | None:
        return dict(self.nicknames).get(user_id)


@dataclass(frozen=True, slots=True)
class Capabilities:
    short_term_memory_enabled: bool = True
    self_teaching_enabled: bool = True
    personal_memories_enabled: bool = True


@dataclass(frozen=True, slots=True)
class StmCategory:
    slug: str
    label: str
    description: str
    position: int


@dataclass(frozen=True, slots=True)
class StmConfig:
    """Per-server STM parameters; None for crude_message_count means the environment default."""

    render_mode: RenderMode = RenderMode.CRUDE_SUMMARY
    refresh_cadence: int = DEFAULT_REFRESH_CADENCE
    crude_message_count: int | None = None
    nudge_injection_depth: int = DEFAULT_NUDGE_INJECTION_DEPTH
    content_injection_depth: int = ANCHORED_TOP_DEPTH
    tool_description_override: str | None = None
    update_nudge_override: str | None = None


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything a turn needs to know about a server, read in one request.

    A server with no stored row, and every DM, gets these defaults.
    """

    guild_id: str | None = None
    persona: Persona = field(default_factory=Persona)
    capabilities: Capabilities = field(default_factory=Capabilities)
    channel_privacy: Mapping[str, PrivacyMode] = field(default_factory=dict)
    stm_privacy_bypass: bool = False
    stm: StmConfig = field(default_factory=StmConfig)
    categories: tuple[StmCategory, ...] = ()
    trigger_words: tuple[str, ...] = ()
    answer_other_bots: bool = False
    memory_moderation: MemoryModeration = MemoryModeration.OPEN
    always_channels: Mapping[str, str] = field(default_factory=dict)
    """The channels where every member's message is a turn (``/server addressing mode:always``),
    each with the id of the persona answering there by default ("": the main one)."""
    alters: tuple[Persona, ...] = ()
    """The other personas: in a stored configuration, the alter personas; in a turn's (after
    ``speaking_as`` an alter one), every persona but the one speaking, the main one included."""
    version: int = 0

    @property
    def personas(self) -> tuple[Persona, ...]:
        """Every persona, the one ``persona`` names first."""
        return (self.persona, *self.alters)

    @property
    def main_persona(self) -> Persona:
        return next((p for p in self.personas if not p.alter), self.persona)

    def persona_by_id(self, persona_id: str | None) -> Persona | None:
        """The persona with that id; None (no id) is the main persona."""
        if persona_id is None:
            return self.main_persona
        return next((p for p in self.personas if p.persona_id == persona_id), None)

    def persona_named(self, name: str) -> Persona | None:
        """The persona called ``name`` (case- and width-insensitive)."""
        wanted = _fold(name)
        return next((p for p in self.personas if _fold(p.name) == wanted), None)

    def speaking_as(self, persona_id: str | None) -> ServerConfig | None:
        """This configuration as a turn of that persona reads it: ``persona`` is the one speaking,
        ``alters`` the others. None if there is no such persona (it was removed)."""
        persona = self.persona_by_id(persona_id)
        if persona is None:
            return None
        others = tuple(p for p in self.personas if p.persona_id != persona.persona_id)
        return replace(self, persona=persona, alters=others)

    def lineage_sharers(self, persona: Persona) -> tuple[Persona, ...]:
        """The other personas that read ``persona``'s long-term memories."""
        return tuple(
            p
            for p in self.personas
            if p.lineage_id == persona.lineage_id and p.persona_id != persona.persona_id
        )

    @property
    def privacy(self) -> PrivacyPolicy:
        """The channel overrides and the bypass, as the privacy rules take them."""
        return PrivacyPolicy(self.guild_id, self.channel_privacy, self.stm_privacy_bypass)


@dataclass(frozen=True, slots=True)
class UserProfile:
    user_id: str
    privacy_level: PrivacyLevel = PrivacyLevel.NONE
    cross_server_opt_in: bool = False
    version: int = 0


class ContextTag(StrEnum):
    """What a context item is, so later stages can find and place it."""

    SYSTEM_PROMPT = "SYSTEM_PROMPT"
    KNOWLEDGE_LONG_TERM_MEMORY = "KNOWLEDGE_LONG_TERM_MEMORY"
    KNOWLEDGE_SHORT_TERM_MEMORY = "KNOWLEDGE_SHORT_TERM_MEMORY"
    TOOL_HINT = "TOOL_HINT"
    DIALOGUE_SAMPLE = "DIALOGUE_SAMPLE"
    DIALOGUE_HISTORY = "DIALOGUE_HISTORY"


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One message of the model request before it is serialised.

    ``content`` is a string or a list of OpenAI content parts (text and image_url).
    """

    role: str
    tag: ContextTag
    content: str | list[dict[str, Any]]
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name:
            message["name"] = self.name
        return message


@dataclass(frozen=True, slots=True)
class Participant:
    """Someone seen in the conversation, with every name people may call them by."""

    user_id: str
    username: str
    global_name: str | None = None
    nickname: str | None = None
    is_bot: bool = False
    is_bridge: bool = False

    @property
    def display_name(self) -> str:
        return self.nickname or self.global_name or self.username

    def known_names(self) -> tuple[str, ...]:
        names = (self.display_name, self.nickname, self.global_name, self.username)
        return tuple(dict.fromkeys(name for name in names if name))


def _fold(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


class PersonaLimitReached(Exception):
    """The server already has ``limit`` personas (``MAX_PERSONAS_PER_SERVER``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the server already has {limit} personas")
        self.limit = limit


class StaleConfiguration(Exception):
    """Someone else saved the configuration since it was read; ``current`` is what is stored now."""

    def __init__(self, current: ServerConfig | UserProfile | None) -> None:
        super().__init__("the configuration changed since it was read")
        self.current = current
