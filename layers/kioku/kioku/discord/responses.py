"""Answers to an interaction, as Discord takes them: a message, a message rewritten in place, the
choices of an autocomplete. They never ping anyone (``NO_MENTIONS``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import MessageFlag

NO_MENTIONS: Final[dict[str, list[str]]] = {"parse": []}
MAX_AUTOCOMPLETE_CHOICES: Final = 25


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
        data["flags"] = MessageFlag.EPHEMERAL
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


def autocomplete(choices: list[dict]) -> dict:
    return {
        "type": ResponseType.APPLICATION_COMMAND_AUTOCOMPLETE_RESULT,
        "data": {"choices": choices[:MAX_AUTOCOMPLETE_CHOICES]},
    }
