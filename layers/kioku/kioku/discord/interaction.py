"""The interaction Discord posts to the endpoint, validated once where it enters (the router).

``parse_interaction`` reads it with the standard library (a cold ``/chat`` imports no pydantic:
docs/operations.md's Cold starts) and takes exactly what the pydantic model it replaced took:
ids are snowflakes, the token 1 to 1,024 characters, names fit Discord's lengths, numbers and
booleans read as pydantic read them (``kioku.discord.lax``), anything else refused with
``MalformedInteraction`` naming the field (``tests/unit/test_interaction_parse.py`` holds it to that
model over random and mutated payloads). Its user and member are ``kioku.discord.models``' ``User``
and ``Member``, the same a message carries; the member's permissions are Discord's decimal string
(read as bits; an interaction always has them), its roles read as far as they go, never refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from kioku.discord.interactions import InteractionType
from kioku.discord.lax import NotLax, lax_bool, lax_int
from kioku.discord.models import MalformedMessage, Member, Message, User, parse_message
from kioku.discord.protocol import PERMISSIONS_PATTERN, ChannelType, InteractionContext, OptionType
from kioku.discord.snowflake import is_snowflake

MAX_NAME_CHARS: Final = 64
MAX_CHANNEL_NAME_CHARS: Final = 100
MAX_TOKEN_CHARS: Final = 1024
_PERMISSIONS: Final = re.compile(PERMISSIONS_PATTERN)
_T = TypeVar("_T")


class MalformedInteraction(ValueError):
    """A verified body that is no interaction kioku can read; ``reason`` names the field and what is
    wrong with it, never its value."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PartialChannel:
    """The channel an interaction names (no overwrites: its privacy is asked of the guild directory)."""

    id: str
    type: int | None = None
    name: str | None = None
    parent_id: str | None = None


@dataclass(frozen=True, slots=True)
class Interaction:
    """The parts of a Discord interaction kioku reads, validated; the rest is ignored."""

    id: str
    application_id: str
    type: InteractionType
    token: str
    data: dict[str, Any] = field(default_factory=dict)
    guild_id: str | None = None
    channel_id: str | None = None
    channel: PartialChannel | None = None
    member: Member | None = None
    """Its ``user`` always set, its ``permissions`` always read."""
    user: User | None = None
    locale: str | None = None
    app_permissions: str | None = None
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


def parse_interaction(data: Any) -> Interaction:
    """Read an interaction object (a verified body, JSON-decoded); raises ``MalformedInteraction``.
    What is not bounded here (the locale, which nothing reads, and the values of ``data``, which each
    command reads and bounds as it takes them) is bounded by the body's size (the endpoint's 256 KiB)."""
    if not isinstance(data, dict):
        raise MalformedInteraction("the interaction is not an object")
    return Interaction(
        id=_required_id(data, "id"),
        application_id=_required_id(data, "application_id"),
        type=_interaction_type(data.get("type")),
        token=_text(data.get("token"), "token", MAX_TOKEN_CHARS, min_chars=1),
        data=_data(data.get("data", {})),
        guild_id=_optional_id(data, "guild_id"),
        channel_id=_optional_id(data, "channel_id"),
        channel=_optional(data, "channel", _channel),
        member=_optional(data, "member", _member),
        user=_optional(data, "user", lambda value: _user(value, "user.")),
        locale=_optional(data, "locale", _locale),
        app_permissions=_optional(data, "app_permissions", _app_permissions),
        context=_optional(data, "context", lambda value: _integer(value, "context")),
    )


def _optional(data: dict[str, Any], key: str, read: Callable[[Any], _T]) -> _T | None:
    value = data.get(key)
    return None if value is None else read(value)


def _required_id(data: dict[str, Any], key: str, path: str = "") -> str:
    value = data.get(key)
    if not is_snowflake(value):
        raise MalformedInteraction(f"{path}{key} is not a snowflake id string")
    return value


def _optional_id(data: dict[str, Any], key: str, path: str = "") -> str | None:
    return None if data.get(key) is None else _required_id(data, key, path)


def _integer(value: Any, name: str) -> int:
    try:
        return lax_int(value)
    except NotLax:
        raise MalformedInteraction(f"{name} is not an integer") from None


def _interaction_type(value: Any) -> InteractionType:
    try:
        return InteractionType(lax_int(value))
    except ValueError:  # NotLax too
        raise MalformedInteraction("type is not an interaction type") from None


def _text(value: Any, name: str, max_chars: int, *, min_chars: int = 0) -> str:
    """A string of ``min_chars`` to ``max_chars`` characters. A length-checked string must be valid
    Unicode (no lone surrogate, which JSON's ``\\ud800`` can write): pydantic checked it as UTF-8."""
    if not isinstance(value, str):
        raise MalformedInteraction(f"{name} is not a string")
    if not min_chars <= len(value) <= max_chars:
        raise MalformedInteraction(f"{name} is not {min_chars} to {max_chars} characters long")
    try:
        value.encode()
    except UnicodeEncodeError:
        raise MalformedInteraction(f"{name} is not valid Unicode") from None
    return value


def _data(value: Any) -> dict[str, Any]:
    """The command's data: an object, read later field by field by the command that takes it."""
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise MalformedInteraction("data is not an object")
    return dict(value)


def _channel(value: Any) -> PartialChannel:
    if not isinstance(value, dict):
        raise MalformedInteraction("channel is not an object")
    return PartialChannel(
        id=_required_id(value, "id", "channel."),
        type=_optional(value, "type", lambda kind: _integer(kind, "channel.type")),
        name=_optional(value, "name", lambda name: _text(name, "channel.name", MAX_CHANNEL_NAME_CHARS)),
        parent_id=_optional_id(value, "parent_id", "channel."),
    )


def _user(value: Any, path: str) -> User:
    """An interaction's user: a snowflake id, names that fit Discord's lengths (their characters, as
    a message's, unchecked), ``bot`` a boolean."""
    if not isinstance(value, dict):
        raise MalformedInteraction(f"{path.rstrip('.')} is not an object")
    username = _name(value.get("username", ""), f"{path}username")  # present, null is refused
    try:
        bot = lax_bool(value.get("bot", False))
    except NotLax:
        raise MalformedInteraction(f"{path}bot is not a boolean") from None
    return User(
        id=_required_id(value, "id", path),
        username=username,
        global_name=_optional(value, "global_name", lambda name: _name(name, f"{path}global_name")),
        bot=bot,
    )


def _name(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise MalformedInteraction(f"{name} is not a string")
    if len(value) > MAX_NAME_CHARS:
        raise MalformedInteraction(f"{name} is longer than {MAX_NAME_CHARS} characters")
    return value


def _member(value: Any) -> Member:
    """The invoker's member: its user required, its permissions a decimal string ("0" when absent),
    its roles the snowflakes of a list (anything else about them is no reason to refuse)."""
    if not isinstance(value, dict):
        raise MalformedInteraction("member is not an object")
    permissions = value.get("permissions", "0")
    if not isinstance(permissions, str) or not _PERMISSIONS.fullmatch(permissions):
        raise MalformedInteraction("member.permissions is not a decimal string")
    roles = value.get("roles")
    user = value.get("user")
    if user is None:
        raise MalformedInteraction("member has no user")
    return Member(
        nick=_optional(value, "nick", lambda nick: _name(nick, "member.nick")),
        roles=tuple(role for role in roles if is_snowflake(role)) if isinstance(roles, list) else (),
        permissions=int(permissions),
        user=_user(user, "member.user."),
    )


def _locale(value: Any) -> str:
    if not isinstance(value, str):
        raise MalformedInteraction("locale is not a string")
    return value


def _app_permissions(value: Any) -> str:
    if not isinstance(value, str) or not _PERMISSIONS.fullmatch(value):
        raise MalformedInteraction("app_permissions is not a decimal string")
    return value
