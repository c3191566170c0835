"""What a turn writes to its short-term memory row: the row's identity (enough to create it, and the
channel's privacy as the turn saw it), the turn's lines and the capture its commit makes. The turn
builds them (``services/stm.py``); ``adapters/dynamodb/stm_writes.py`` writes them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from kioku.discord.models import Message
from kioku.discord.snowflake import is_snowflake
from kioku.domain.forgetting import Said, snowflake_time
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmEntry, StmLimits
from kioku.domain.text import person_label, readable_mentions
from kioku.domain.turn import TurnContext
from kioku.domain.turn_jobs import TurnJob


class NewerMemoryExists(Exception):
    """Another turn saved this channel's memory after ours was written; ours was not stored."""


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


def turn_lines(
    job: TurnJob, turn: TurnContext, reply: str, now: datetime, covered: Sequence[Message] = ()
) -> list[CrudeMessage]:
    """The message (and the later ones it answers too, ``covered``: the same speaker's) and its
    answer as short-term lines, on Discord's clock where it gave one (the messages' times here, the
    reply's first post when it is captured: ``with_reply_id``), so a worker's clock off from
    Discord's neither puts the answer first nor ages the lines."""
    speaker = person_label(turn.user.display_name, turn.user.username)
    first = (job.message.timestamp if job.message else None) or now
    said = [
        CrudeMessage(
            speaker=speaker,
            user_id=turn.user.user_id,
            role=CrudeRole.USER,
            text=readable_mentions(content, turn.mention_names),
            ts=ts,
            message_id=message_id,
        )
        for message_id, content, ts in (
            (job.turn_id, job.content, first),
            *((m.id, m.content, m.timestamp or now) for m in covered),
        )
    ]
    answered = CrudeMessage(
        speaker=turn.bot_name,
        user_id=turn.bot.user_id,
        role=CrudeRole.ASSISTANT,
        text=reply,
        ts=max(now, *(line.ts for line in said)),
        message_id=f"{job.turn_id}-reply",
    )
    return [*said, answered]


def with_reply_id(lines: tuple[CrudeMessage, ...], reply_ids: tuple[str, ...]) -> list[CrudeMessage]:
    """The turn's lines with the answer's line under the id of its first posted message, at the
    time Discord posted it."""
    if not reply_ids or not is_snowflake(reply_ids[0]):
        return list(lines)
    posted_at = snowflake_time(reply_ids[0])
    return [
        replace(line, message_id=reply_ids[0], ts=posted_at) if line.role is CrudeRole.ASSISTANT else line
        for line in lines
    ]
