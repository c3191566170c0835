"""What a turn writes to its short-term memory row: the row's identity (enough to create it, and the
channel's privacy as the turn saw it) and the capture its commit makes. The turn builds them
(``services/stm.py``); ``adapters/dynamodb/stm_writes.py`` writes them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kioku.domain.forgetting import Said
from kioku.domain.stm.entries import CrudeMessage, StmAddress, StmEntry, StmLimits


@dataclass(frozen=True, slots=True)
class StmRowIdentity:
    """Everything a write needs to create the row if it is missing, and the channel's privacy as
    Discord described it at ``described_at`` (a capture re-stamps the row unless it was described later)."""

    address: StmAddress
    lineage_id: int
    parent_channel_id: str | None = None
    channel_name: str | None = None
    private: bool = True
    private_thread: bool = False
    described_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TurnCapture:
    """What a turn's commit writes to its short-term memory row: ``lines`` merged into ``read`` (the
    row as the turn loaded it), refused if ``said``'s speaker asked to forget everything since; with
    ``keep_lines`` False (a speaker with full privacy) the turn is only counted."""

    identity: StmRowIdentity
    read: StmEntry | None
    lines: tuple[CrudeMessage, ...]
    speaker_id: str
    now: datetime
    limits: StmLimits
    said: Said | None = None
    keep_lines: bool = True
