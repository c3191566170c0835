"""Discord's protocol numbers, each named once (developer docs, API v10); the standard library only.

Only what kioku sends, reads or decides on is named. Unknown values Discord may add (a new message
or channel type) stay plain ints where they are read: compare them with these, never convert. The
interaction and response types are ``kioku.discord.interactions``': a PING imports only them.
"""

from __future__ import annotations

import re
from enum import IntEnum, IntFlag, StrEnum
from typing import Final


class CommandType(IntEnum):
    CHAT_INPUT = 1
    MESSAGE = 3
    """A message's context menu ("Apps" on a message): no description, no options."""


class OptionType(IntEnum):
    """An application command option's type."""

    SUB_COMMAND = 1
    SUB_COMMAND_GROUP = 2
    STRING = 3
    INTEGER = 4
    BOOLEAN = 5
    USER = 6
    CHANNEL = 7


class InteractionContext(IntEnum):
    """Where a command may be used (and was): a server, the bot's DM, another private channel."""

    GUILD = 0
    BOT_DM = 1
    PRIVATE_CHANNEL = 2


class IntegrationType(IntEnum):
    GUILD_INSTALL = 0


class MessageType(IntEnum):
    """The message types kioku answers; every other type (joins, pins, thread notices) it does not."""

    DEFAULT = 0
    REPLY = 19


class MessageReferenceType(IntEnum):
    DEFAULT = 0
    """A reply."""
    FORWARD = 1
    """A forward: it quotes a message without talking to its author."""


class MessageFlag(IntFlag):
    EPHEMERAL = 1 << 6
    LOADING = 1 << 7
    """An interaction's deferred response, still "thinking…"."""


class ComponentType(IntEnum):
    ACTION_ROW = 1
    BUTTON = 2
    TEXT_INPUT = 4


class ButtonStyle(IntEnum):
    PRIMARY = 1
    SECONDARY = 2
    SUCCESS = 3
    DANGER = 4


class TextInputStyle(IntEnum):
    SHORT = 1
    PARAGRAPH = 2


class ChannelType(IntEnum):
    GUILD_TEXT = 0
    DM = 1
    GUILD_VOICE = 2
    GROUP_DM = 3
    GUILD_CATEGORY = 4
    GUILD_ANNOUNCEMENT = 5
    ANNOUNCEMENT_THREAD = 10
    PUBLIC_THREAD = 11
    PRIVATE_THREAD = 12
    GUILD_STAGE_VOICE = 13
    GUILD_FORUM = 15
    GUILD_MEDIA = 16


THREAD_TYPES: Final = frozenset(
    {ChannelType.ANNOUNCEMENT_THREAD, ChannelType.PUBLIC_THREAD, ChannelType.PRIVATE_THREAD}
)


class OverwriteType(IntEnum):
    """Whom a channel's permission overwrite is for."""

    ROLE = 0
    MEMBER = 1


class Permission(IntFlag):
    ADMINISTRATOR = 1 << 3
    MANAGE_GUILD = 1 << 5
    ADD_REACTIONS = 1 << 6
    VIEW_CHANNEL = 1 << 10
    SEND_MESSAGES = 1 << 11
    EMBED_LINKS = 1 << 14
    READ_MESSAGE_HISTORY = 1 << 16
    MANAGE_WEBHOOKS = 1 << 29
    SEND_MESSAGES_IN_THREADS = 1 << 38


PERMISSIONS_PATTERN: Final = "^[0-9]{1,40}$"
"""Permissions as Discord writes them: a decimal string of up to 40 ASCII digits."""
_PERMISSIONS: Final = re.compile(PERMISSIONS_PATTERN[1:-1])


def permission_bits(value: object) -> int | None:
    """The bits of a permissions value (a decimal string, or an int); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and _PERMISSIONS.fullmatch(value):
        return int(value)
    return None


class ApplicationFlag(IntFlag):
    GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 18
    GATEWAY_MESSAGE_CONTENT = 1 << 19


class GatewayEvent(StrEnum):
    """The gateway dispatches the relay reads or forwards."""

    READY = "READY"
    GUILD_CREATE = "GUILD_CREATE"
    GUILD_DELETE = "GUILD_DELETE"
    GUILD_ROLE_CREATE = "GUILD_ROLE_CREATE"
    GUILD_ROLE_UPDATE = "GUILD_ROLE_UPDATE"
    MESSAGE_CREATE = "MESSAGE_CREATE"
    CHANNEL_UPDATE = "CHANNEL_UPDATE"
    CHANNEL_DELETE = "CHANNEL_DELETE"
    THREAD_UPDATE = "THREAD_UPDATE"
    THREAD_DELETE = "THREAD_DELETE"


class JsonErrorCode(IntEnum):
    """The ``code`` of a refusal's JSON body."""

    UNKNOWN_CHANNEL = 10003
    UNKNOWN_MEMBER = 10007
    UNKNOWN_USER = 10013
    UNKNOWN_WEBHOOK = 10015
    CANNOT_SEND_EMPTY_MESSAGE = 50006
    INVALID_FORM_BODY = 50035
