"""When something was said, and whether its speaker has since asked to forget everything.

A message's "sent" time is read from its snowflake id (the message id of a relayed message, the
interaction id of ``/chat``), never from a field a client could set. ``/personal memories
forget-all`` leaves a "forgotten at" mark on the person; what they said before it must never be
stored again, however late a queued or retried turn gets to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

DISCORD_EPOCH: Final = datetime(2015, 1, 1, tzinfo=UTC)
TIMESTAMP_SHIFT: Final = 22
"""A snowflake's low 22 bits are worker, process and sequence; the rest is milliseconds since 2015."""


@dataclass(frozen=True, slots=True)
class Said:
    """Who said the words a write would store, and when (their message's snowflake time)."""

    user_id: str
    at: datetime


def snowflake_time(snowflake: str | int) -> datetime:
    """When the snowflake ``snowflake`` was made (to the millisecond). Raises ``ValueError`` for an
    id that is not a snowflake."""
    value = int(snowflake)
    if value < 0:
        raise ValueError("a snowflake is not negative")
    return DISCORD_EPOCH + timedelta(milliseconds=value >> TIMESTAMP_SHIFT)


def first_snowflake_at(moment: datetime) -> int:
    """The smallest snowflake made at ``moment`` (what stand-ins give the messages they make)."""
    milliseconds = (moment - DISCORD_EPOCH) // timedelta(milliseconds=1)
    return max(0, milliseconds) << TIMESTAMP_SHIFT


def forgotten_since(forgotten_at: datetime | None, sent_at: datetime) -> bool:
    """Whether a person who said something at ``sent_at`` asked to forget everything afterwards (or in
    the same instant: the snowflake's millisecond cannot tell which came first, so it is forgotten)."""
    return forgotten_at is not None and forgotten_at >= sent_at


class SpeakerForgotten(Exception):
    """Someone asked to forget everything after the words were said (the speaker, or the person a
    memory is about): nothing of it was written. ``by_notice``: what refused was the check of an
    outbox kept in the same transaction (someone its notices answer or quote), not the write's own:
    the write alone may still be made."""

    def __init__(self, message: str, *, by_notice: bool = False) -> None:
        super().__init__(message)
        self.by_notice = by_notice
