"""A reply a turn has kept but not yet posted, as a person's export shows it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kioku.domain.stm.entries import CrudeMessage


@dataclass(frozen=True, slots=True)
class WaitingReply:
    """An unfinished turn kept for a person: a reply to them, with
    its notices and the lines it will capture; or (``answers`` set) only a pointer to a reply to
    someone else whose notices show a memory about them, whose words are not theirs to read."""

    source: str
    turn_id: str
    expires_at: datetime | None
    answers: str | None = None
    reply: str | None = None
    notices: tuple[dict[str, Any], ...] = ()
    lines: tuple[CrudeMessage, ...] = ()
