"""Who and where a turn is: what every context stage and every tool is given."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kioku.domain.models import Participant, ServerConfig, UserProfile


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """The bot as Discord knows it; the persona name comes from the server configuration."""

    user_id: str
    username: str
    global_name: str | None = None
    nickname: str | None = None

    def names(self, persona_name: str) -> tuple[str, ...]:
        candidates = (persona_name, self.nickname, self.global_name, self.username)
        return tuple(dict.fromkeys(name for name in candidates if name))


@dataclass(frozen=True, slots=True)
class TurnContext:
    server_id: str | None
    channel_id: str
    user: Participant
    bot: BotIdentity
    config: ServerConfig
    profile: UserProfile
    now: datetime
    parent_channel_id: str | None = None
    participants: tuple[Participant, ...] = field(default_factory=tuple)
    llm_provider: str = "openai"
    llm_has_tools: bool = True
    explicit_ltm_intent: bool = False

    @property
    def is_dm(self) -> bool:
        return self.server_id is None

    @property
    def bot_name(self) -> str:
        return self.config.persona.name
