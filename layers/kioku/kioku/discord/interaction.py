"""The interaction Discord posts to the endpoint, validated once where it enters (the router).

Its user and member are ``kioku.discord.models``' ``User`` and ``Member``, the same a message
carries, held to what an interaction must be: ids are snowflakes, names fit Discord's lengths, the
member's permissions are Discord's decimal string (read as bits; an interaction always has them).
Anything else about the member (its roles) is read as far as it goes, never refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from kioku.discord.interactions import InteractionType
from kioku.discord.models import MalformedMessage, Member, Message, User, parse_message
from kioku.discord.protocol import PERMISSIONS_PATTERN, ChannelType, InteractionContext, OptionType
from kioku.discord.snowflake import SNOWFLAKE_PATTERN, is_snowflake

MAX_NAME_CHARS: Final = 64


def _checked_user(user: User) -> User:
    if not is_snowflake(user.id):
        raise ValueError("the user's id is not a snowflake id string")
    if len(user.username) > MAX_NAME_CHARS or len(user.global_name or "") > MAX_NAME_CHARS:
        raise ValueError(f"the user's names are longer than {MAX_NAME_CHARS} characters")
    return user


def _member_fields(value: Any) -> Any:
    """A member object's permissions as bits (a decimal string, "0" when absent) and its roles as far
    as they read; what is not an object is left for the model to refuse."""
    if not isinstance(value, Mapping):
        return value
    permissions = value.get("permissions", "0")
    if not isinstance(permissions, str) or not re.fullmatch(PERMISSIONS_PATTERN, permissions):
        raise ValueError("the member's permissions are not a decimal string")
    roles = value.get("roles")
    return {
        **value,
        "permissions": int(permissions),
        "roles": [role for role in roles if is_snowflake(role)] if isinstance(roles, list) else [],
    }


def _checked_member(member: Member) -> Member:
    if member.user is None:
        raise ValueError("the member has no user")
    _checked_user(member.user)
    if len(member.nick or "") > MAX_NAME_CHARS:
        raise ValueError(f"the member's nick is longer than {MAX_NAME_CHARS} characters")
    return member


InteractionUser = Annotated[User, AfterValidator(_checked_user)]
InteractionMember = Annotated[Member, BeforeValidator(_member_fields), AfterValidator(_checked_member)]


class PartialChannel(BaseModel):
    """The channel an interaction names (no overwrites: its privacy is asked of the guild directory)."""

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
    member: InteractionMember | None = None
    user: InteractionUser | None = None
    locale: str | None = None
    app_permissions: str | None = Field(default=None, pattern=PERMISSIONS_PATTERN)
    """The bot's permissions in the interaction's channel, as Discord computed them."""
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

    def target_message(self) -> Message | None:
        """The message a message command was used on, as Discord resolved it into the interaction;
        None when it is absent or does not read as a message."""
        target = self.data.get("target_id")
        resolved = self.data.get("resolved")
        messages = resolved.get("messages") if isinstance(resolved, dict) else None
        raw = messages.get(target) if isinstance(messages, dict) and isinstance(target, str) else None
        if raw is None:
            return None
        try:
            return parse_message(raw, strict=False)
        except MalformedMessage:
            return None

    def subcommand_path(self) -> tuple[str, ...]:
        """``("stm",)`` for ``/help stm``; ``("stm", "view")`` for ``/persona stm view``."""
        return self._walk()[0]

    def option_values(self) -> dict[str, Any]:
        """The leaf options of the invoked (sub)command, by name; malformed entries are skipped."""
        return {str(o.get("name")): o.get("value") for o in self._walk()[1]}

    def focused_option(self) -> tuple[str, str] | None:
        """In an autocomplete, the option being typed and what is typed so far."""
        for option in self._walk()[1]:
            if option.get("focused") is True:
                return str(option.get("name")), str(option.get("value") or "")
        return None

    def _walk(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        path: list[str] = []
        options = _dicts(self.data.get("options"))
        while options and options[0].get("type") in (OptionType.SUB_COMMAND, OptionType.SUB_COMMAND_GROUP):
            path.append(str(options[0].get("name", "")))
            options = _dicts(options[0].get("options"))
        return tuple(path), options


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
