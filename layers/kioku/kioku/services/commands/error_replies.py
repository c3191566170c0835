"""The one place an error becomes a command's answer: every handler raises, the router asks here.

A refusal is a request turned down on purpose, titled with why; the member can do something about it
(ask for the permission, go to the server, fix the option, run the command again) and nothing was
changed. Anything else is a failure on kioku's side, titled "Something went wrong": the member can
only try again, and it is logged.
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Final

from kioku.discord.responses import message
from kioku.discord.ui import EMBED_COLOR_ERROR, EMBED_COLOR_WARNING, InvalidModalSubmit, UnknownComponent

logger = logging.getLogger(__name__)

FAILURE_TITLE: Final = "Something went wrong"
STALE_SETTINGS: Final = (
    "The settings were changed meanwhile (someone else saved first), so nothing was saved. Please try again."
)
STALE_MEMORY: Final = "The memory changed while you were editing, so nothing was saved. Open the form again."
MEMORIES_UNREACHABLE: Final = (
    "I could not reach the memories just now, so nothing was changed. Please try again."
)
QUEUE_UNREACHABLE: Final = "I could not take that on just now. Please try again in a moment."
UNEXPECTED: Final = "That did not work because of a problem on my side. Please try again later."


class Refusal(StrEnum):
    """Why a request was turned down, as the title its answer carries."""

    NOT_ALLOWED = "Not allowed"
    SERVER_ONLY = "Only in a server"
    NOTHING_SAVED = "Nothing was saved"
    NOTHING_CHANGED = "Nothing was changed"
    NOT_UNDERSTOOD = "Not understood"


class Refused(Exception):
    """A handler turning a request down: ``reason`` titles the answer, ``text`` says what to do."""

    def __init__(self, reason: Refusal, text: str) -> None:
        super().__init__(text)
        self.reason = reason
        self.text = text


def reply_for(exc: Exception, command: str) -> dict:
    """The ephemeral answer to ``exc``, raised by the handler of ``command``."""
    refusal = _refusal(exc)
    if refusal is not None:
        return refusal_reply(*refusal)
    return failure_reply(_failure(exc, command))


def refusal_reply(reason: Refusal, text: str) -> dict:
    embed = {"title": reason.value, "description": text, "color": EMBED_COLOR_WARNING}
    return message(embeds=[embed])


def failure_reply(text: str) -> dict:
    embed = {"title": FAILURE_TITLE, "description": text, "color": EMBED_COLOR_ERROR}
    return message(embeds=[embed])


def _refusal(exc: Exception) -> tuple[Refusal, str] | None:
    # The domain's conditions are imported when something was raised, so that a command that raises
    # nothing (``/chat``) loads no memory rules.
    from kioku.domain.ltm.memory import MemoryNotFound
    from kioku.domain.models import PersonaLimitReached, StaleConfiguration
    from kioku.domain.settings_edit import InvalidSettingsEdit
    from kioku.domain.stm.capture import NewerMemoryExists

    if isinstance(exc, Refused):
        return exc.reason, exc.text
    if isinstance(exc, InvalidSettingsEdit | InvalidModalSubmit):
        return Refusal.NOTHING_SAVED, f"Nothing was saved:\n{exc}"
    if isinstance(exc, StaleConfiguration):
        return Refusal.NOTHING_SAVED, STALE_SETTINGS
    if isinstance(exc, PersonaLimitReached):
        return Refusal.NOTHING_SAVED, (
            f"This server already has {exc.limit} personas, as many as it may "
            "(`MAX_PERSONAS_PER_SERVER`). Remove one with `/persona remove` first."
        )
    if isinstance(exc, NewerMemoryExists):
        return Refusal.NOTHING_SAVED, STALE_MEMORY
    if isinstance(exc, MemoryNotFound | UnknownComponent):
        return Refusal.NOTHING_CHANGED, f"Nothing was changed: {exc}."
    return _memory_refusal(exc)


def _memory_refusal(exc: Exception) -> tuple[Refusal, str] | None:
    """A memory written by hand that the tools' rules refuse (its text, its duplicate guard, the
    privacy level of whom it is about)."""
    from kioku.domain.ltm.arguments import InvalidArguments
    from kioku.domain.ltm.memory import DuplicateMemory, TargetPrivacyRestricted

    if isinstance(exc, InvalidArguments):
        return (
            Refusal.NOTHING_CHANGED,
            f"Nothing was changed: {exc.message.replace('memory_content', 'the text')}.",
        )
    if isinstance(exc, DuplicateMemory):
        return Refusal.NOTHING_CHANGED, (f"Nothing was changed: memory #{exc.existing_id} already says this.")
    if isinstance(exc, TargetPrivacyRestricted):
        return Refusal.NOTHING_CHANGED, (
            "Nothing was changed: the privacy level of the person it is about keeps no personal memories."
        )
    return None


def _failure(exc: Exception, command: str) -> str:
    from kioku.domain.ltm.memory import MemoryStoreFailed
    from kioku.domain.turn_jobs import QueueUnavailable

    if isinstance(exc, MemoryStoreFailed):
        logger.warning("command %r could not reach the memories: %s", command, exc)
        return MEMORIES_UNREACHABLE
    if isinstance(exc, QueueUnavailable):
        logger.error("command %r could not queue its work: %s", command, exc, exc_info=exc)
        return QUEUE_UNREACHABLE
    logger.error("command %r failed", command, exc_info=exc)
    return UNEXPECTED
