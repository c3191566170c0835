"""Discord interaction protocol numbers and response builders (names, never bare literals)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import IntEnum
from typing import Any, Final


class InteractionType(IntEnum):
    PING = 1
    APPLICATION_COMMAND = 2
    MESSAGE_COMPONENT = 3
    APPLICATION_COMMAND_AUTOCOMPLETE = 4
    MODAL_SUBMIT = 5


class ResponseType(IntEnum):
    PONG = 1
    CHANNEL_MESSAGE_WITH_SOURCE = 4
    DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE = 5
    DEFERRED_UPDATE_MESSAGE = 6
    UPDATE_MESSAGE = 7
    APPLICATION_COMMAND_AUTOCOMPLETE_RESULT = 8
    MODAL = 9


class OptionType(IntEnum):
    SUB_COMMAND = 1
    SUB_COMMAND_GROUP = 2
    STRING = 3
    INTEGER = 4
    BOOLEAN = 5
    USER = 6
    CHANNEL = 7


class CommandType(IntEnum):
    CHAT_INPUT = 1


class InteractionContext(IntEnum):
    GUILD = 0
    BOT_DM = 1
    PRIVATE_CHANNEL = 2


INTEGRATION_GUILD_INSTALL: Final = 0
DM_CHANNEL_TYPE: Final = 1


class Permission(IntEnum):
    ADMINISTRATOR = 1 << 3
    MANAGE_GUILD = 1 << 5


EPHEMERAL_FLAG: Final = 1 << 6
MESSAGE_FLAG_LOADING: Final = 1 << 7  # an interaction response still "thinking…"
EMBED_COLOR_INFO: Final = 0x5865F2
EMBED_COLOR_ERROR: Final = 0xED4245
EMBED_COLOR_REFUSAL: Final = 0xFEE75C
NO_MENTIONS: Final = {"parse": []}


def message(
    content: str | None = None,
    *,
    embeds: list[dict] | None = None,
    components: list[dict] | None = None,
    ephemeral: bool = True,
) -> dict:
    data: dict[str, Any] = {"allowed_mentions": NO_MENTIONS}
    if content:
        data["content"] = content
    if embeds:
        data["embeds"] = embeds
    if components:
        data["components"] = components
    if ephemeral:
        data["flags"] = EPHEMERAL_FLAG
    return {"type": ResponseType.CHANNEL_MESSAGE_WITH_SOURCE, "data": data}


def updated_message(
    content: str = "", *, embeds: Sequence[dict] = (), components: Sequence[dict] = ()
) -> dict:
    """UPDATE_MESSAGE: the message whose component was clicked, rewritten in place (an ephemeral one
    stays ephemeral); what is left out is cleared, so stale buttons never survive an update."""
    data = {
        "content": content,
        "embeds": list(embeds),
        "components": list(components),
        "allowed_mentions": NO_MENTIONS,
    }
    return {"type": ResponseType.UPDATE_MESSAGE, "data": data}


def relative_time(moment: datetime | None) -> str:
    """Discord's timestamp markup ("3 days ago", in each reader's language); "never" for None."""
    return f"<t:{int(moment.timestamp())}:R>" if moment else "never"


def autocomplete(choices: list[dict]) -> dict:
    return {"type": ResponseType.APPLICATION_COMMAND_AUTOCOMPLETE_RESULT, "data": {"choices": choices[:25]}}
