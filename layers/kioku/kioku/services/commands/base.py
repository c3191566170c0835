"""The shape of a command and of the interaction it is given."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kioku.discord.interactions import InteractionType
from kioku.discord.protocol import (
    PERMISSIONS_PATTERN,
    ChannelType,
    CommandType,
    IntegrationType,
    InteractionContext,
    OptionType,
)
from kioku.discord.snowflake import SNOWFLAKE_PATTERN
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import CustomId


class User(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=SNOWFLAKE_PATTERN)
    username: str = Field(default="", max_length=64)
    global_name: str | None = Field(default=None, max_length=64)
    bot: bool = False


class Member(BaseModel):
    model_config = ConfigDict(extra="ignore")
    user: User
    nick: str | None = Field(default=None, max_length=64)
    permissions: str = Field(default="0", pattern=PERMISSIONS_PATTERN)


class PartialChannel(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=SNOWFLAKE_PATTERN)
    type: int | None = None
    name: str | None = Field(default=None, max_length=100)
    parent_id: str | None = Field(default=None, pattern=SNOWFLAKE_PATTERN)


class Interaction(BaseModel):
    """The parts of a Discord interaction kioku reads, validated; the rest is ignored."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=SNOWFLAKE_PATTERN)
    application_id: str = Field(pattern=SNOWFLAKE_PATTERN)
    type: InteractionType
    token: str = Field(min_length=1, max_length=1024)
    data: dict[str, Any] = Field(default_factory=dict)
    guild_id: str | None = Field(default=None, pattern=SNOWFLAKE_PATTERN)
    channel_id: str | None = Field(default=None, pattern=SNOWFLAKE_PATTERN)
    channel: PartialChannel | None = None
    member: Member | None = None
    user: User | None = None
    locale: str | None = None
    context: int | None = None
    """Where it was invoked: 0 a server, 1 the bot's DM, 2 another private channel (a group DM)."""

    @property
    def in_bot_dm(self) -> bool:
        """A DM with the bot itself (not a group DM, not someone else's DM through a user install)."""
        if self.guild_id is not None:
            return False
        if self.context is not None:
            return self.context == InteractionContext.BOT_DM
        return self.channel is not None and self.channel.type == ChannelType.DM

    @property
    def invoker(self) -> User | None:
        return self.member.user if self.member else self.user

    @property
    def command_name(self) -> str:
        return str(self.data.get("name", ""))

    @property
    def custom_id(self) -> str:
        return str(self.data.get("custom_id", ""))

    def subcommand_path(self) -> tuple[str, ...]:
        """``("stm",)`` for ``/help stm``; ``("stm", "view")`` for ``/persona stm view``."""
        return self._walk()[0]

    def option_values(self) -> dict[str, Any]:
        """The leaf options of the invoked (sub)command, by name; malformed entries are skipped."""
        return {str(o.get("name")): o.get("value") for o in self._walk()[1]}

    def _walk(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        path: list[str] = []
        options = _dicts(self.data.get("options"))
        while options and options[0].get("type") in (OptionType.SUB_COMMAND, OptionType.SUB_COMMAND_GROUP):
            path.append(str(options[0].get("name", "")))
            options = _dicts(options[0].get("options"))
        return tuple(path), options


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


Handler = Callable[[Interaction, CommandContext], dict]
"""A handler answers an interaction with what its container hands it."""
CustomIdHandler = Callable[..., dict]
"""A button's or a form's handler: the interaction, the context, then the fields its id carried."""


@dataclass(frozen=True)
class Command:
    """A top-level slash command: its Discord definition and its handlers.

    ``buttons`` and ``forms`` are the ids its answers carry (``custom_ids``), each with the handler
    a click or a submit of it is routed to, so each command owns its whole interaction surface.
    """

    name: str
    description: str
    options: list[dict[str, Any]] = field(default_factory=list)
    on_command: Handler | None = None
    on_autocomplete: Handler | None = None
    buttons: Mapping[CustomId, CustomIdHandler] = field(default_factory=dict)
    forms: Mapping[CustomId, CustomIdHandler] = field(default_factory=dict)
    dm_permission: bool = True
    default_member_permissions: str | None = None

    def __post_init__(self) -> None:
        strays = [kind for kind in [*self.buttons, *self.forms] if kind.command != self.name]
        if strays:
            raise ValueError(f"/{self.name} answers with ids of another command: {strays}")

    def definition(self) -> dict[str, Any]:
        """The command as Discord's bulk-overwrite endpoint takes it."""
        body: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "type": CommandType.CHAT_INPUT,
            "options": self.options,
            "dm_permission": self.dm_permission,
        }
        if self.default_member_permissions is not None:
            body["default_member_permissions"] = self.default_member_permissions
        # Installed to servers only, and usable only in a server or the bot's own DM: never in a group
        # DM, where what the bot recalls for one person would be shown to everyone there.
        body["integration_types"] = [IntegrationType.GUILD_INSTALL]
        body["contexts"] = [InteractionContext.GUILD] + (
            [InteractionContext.BOT_DM] if self.dm_permission else []
        )
        return body
