"""How commands look when they answer: the embed colours, refusals and failures, and times.

Discord's protocol (its numbers, the shape of an interaction response) is ``kioku.discord``'s.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Final

from kioku.discord.responses import message

EMBED_COLOR_INFO: Final = 0x5865F2
EMBED_COLOR_ERROR: Final = 0xED4245
EMBED_COLOR_REFUSAL: Final = 0xFEE75C


class Refusal(StrEnum):
    """Why a request was turned down, as the title its answer carries: the member can do something
    about each (ask for the permission, go to the server, fix the option), unlike an error."""

    NOT_ALLOWED = "Not allowed"
    SERVER_ONLY = "Only in a server"
    NOTHING_SAVED = "Nothing was saved"
    NOTHING_CHANGED = "Nothing was changed"
    NOT_UNDERSTOOD = "Not understood"


def error_message(text: str) -> dict:
    """Something failed on kioku's side (storage, a bug): the member can only try again."""
    embed = {"title": "Something went wrong", "description": text, "color": EMBED_COLOR_ERROR}
    return message(embeds=[embed])


def refusal_message(reason: Refusal, text: str) -> dict:
    """A request turned down on purpose, titled with why; nothing was changed."""
    embed = {"title": reason.value, "description": text, "color": EMBED_COLOR_REFUSAL}
    return message(embeds=[embed])


def relative_time(moment: datetime | None) -> str:
    """Discord's timestamp markup ("3 days ago", in each reader's language); "never" for None."""
    return f"<t:{int(moment.timestamp())}:R>" if moment else "never"
