"""Builders for short-term memory tests: turns, configs and rows with readable defaults."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from kioku.domain.models import (
    Capabilities,
    Participant,
    ServerConfig,
    StmCategory,
    StmConfig,
    UserProfile,
)
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmEntry, StmLimits
from kioku.domain.turn import BotIdentity, TurnContext

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SERVER = "900"
CHANNEL = "100"
USER = "7"
BOT = "1"
LIMITS = StmLimits()
ALICE = Participant(user_id=USER, username="alice", global_name="Alice")
BOT_IDENTITY = BotIdentity(user_id=BOT, username="kioku")

CATEGORIES = (
    StmCategory(slug="plans", label="Plans", description="What people intend to do next.", position=2),
    StmCategory(slug="mood", label="Mood", description="How the room feels.", position=1),
)


def config(**stm: object) -> ServerConfig:
    """A server config; keyword arguments go to its StmConfig unless they name a ServerConfig field."""
    server_fields = {k: v for k, v in stm.items() if k in ServerConfig.__dataclass_fields__}
    stm_fields = {k: v for k, v in stm.items() if k not in server_fields}
    return replace(ServerConfig(guild_id=SERVER, stm=StmConfig(**stm_fields)), **server_fields)


def turn(
    server_config: ServerConfig | None = None,
    *,
    guild_id: str | None = SERVER,
    channel_id: str = CHANNEL,
    parent_channel_id: str | None = None,
    opted_in: bool = False,
    stm_enabled: bool = True,
    **overrides: object,
) -> TurnContext:
    base = server_config or config()
    if not stm_enabled:
        base = replace(base, capabilities=Capabilities(short_term_memory_enabled=False))
    if guild_id is None:
        base = replace(base, guild_id=None)
    return TurnContext(
        guild_id=guild_id,
        channel_id=channel_id,
        parent_channel_id=parent_channel_id,
        user=ALICE,
        bot=BOT_IDENTITY,
        config=base,
        profile=UserProfile(user_id=USER, cross_server_opt_in=opted_in),
        now=NOW,
        participants=(ALICE,),
        **overrides,
    )


def message(text: str, *, age: timedelta = timedelta(minutes=1), role: str = "user", message_id=None):
    speaker = "Kioku" if role == "assistant" else "Alice"
    return CrudeMessage(
        speaker=speaker,
        user_id=BOT if role == "assistant" else USER,
        role=CrudeRole(role),
        text=text,
        ts=NOW - age,
        message_id=message_id,
    )


def row(
    channel_id: str,
    *,
    age: timedelta = timedelta(minutes=5),
    summary: str | None = None,
    categories: dict[str, str] | None = None,
    crude: tuple[CrudeMessage, ...] = (),
    guild_id: str | None = SERVER,
    user_id: str | None = None,
    lineage_id: int = 1,
    persona_id: str = "kioku",
    parent_channel_id: str | None = None,
    channel_name: str | None = None,
    turns: int = 0,
    content_age: timedelta | None = None,
    private: bool | None = False,
    private_thread: bool = False,
) -> StmEntry:
    written = NOW - (content_age if content_age is not None else age)
    return StmEntry(
        address=StmAddress(channel_id=channel_id, persona_id=persona_id, guild_id=guild_id, user_id=user_id),
        lineage_id=lineage_id,
        last_updated=NOW - age,
        parent_channel_id=parent_channel_id,
        channel_name=channel_name,
        summary=summary,
        summary_updated_at=written if summary else None,
        categories=categories or {},
        categories_updated_at=written if categories else None,
        crude=crude,
        turns_since_refresh=turns,
        private=private,
        private_thread=private_thread,
    )
