"""A turn's burst: which of the messages sent after its own it answers too (``domain/bursts.py``
decides), each counted against its author's rate first, as its own turn would be.

What the turn read of the channel holds the later messages (an ``always`` channel's turn reads the
latest ones, ``ChannelReader.history``); its one read carries their records (``later_records``), so
a message already answered is not answered again. A message the rate refuses ends the run: its own
job gets the one notice, and the messages after it are their own turns' (silenced past the notice).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kioku.config import Settings
from kioku.discord.models import Message
from kioku.domain.bursts import covered_run
from kioku.domain.conditions import StoreFailed
from kioku.domain.forgetting import snowflake_time
from kioku.domain.turn_jobs import TurnJob
from kioku.domain.turn_read import TurnRead
from kioku.services.turn_ports import TurnRates

logger = logging.getLogger(__name__)


def later_of(job: TurnJob, history: Sequence[Message]) -> list[Message]:
    """The messages of ``history`` sent after the turn's, oldest first (only an ``always``
    channel's turn reads any)."""
    if not job.always:
        return []
    return sorted((m for m in history if int(m.id) > int(job.turn_id)), key=lambda m: int(m.id))


def later_records(job: TurnJob, later: Sequence[Message]) -> list[str]:
    """The record ids the turns of ``later`` would have, spoken by the turn's persona."""
    return [job.record_id_for(message.id) for message in later if message.author.id == job.author.id]


def covered(
    settings: Settings, rates: TurnRates | None, job: TurnJob, later: Sequence[Message], read: TurnRead
) -> tuple[Message, ...]:
    """The later messages the turn answers too, oldest first: none when it resumes an answer an
    earlier attempt kept (that answer says what it covers), or outside a server. Those an earlier
    attempt marked covered, when its answer was withdrawn since (a forget-all of someone it quoted),
    and no others: that answer may be posted already (this one's posts find it by their nonces), and
    their own jobs end as done."""
    if not later or job.guild_id is None or (read.outbox is not None and read.outbox.answered):
        return ()
    marked = tuple(m for m in later if job.record_id_for(m.id) in read.later_marked)
    if marked:  # counted against the rate when marked; the channel may have left ``always`` since
        return marked
    persona_id = job.persona.persona_id if job.persona else None
    config = read.memory.config.speaking_as(None) or read.memory.config  # as stored: main persona first
    answered = {m.id for m in later if job.record_id_for(m.id) in read.later_done}
    run = covered_run(
        later,
        guild_id=job.guild_id,
        channel_id=job.channel_id,
        author_id=job.author.id,
        persona_id=persona_id,
        config=config,
        bot_user_id=settings.DISCORD_APPLICATION_ID,
        answered=answered,
    )
    return _within_rate(settings, rates, job, run)


def _within_rate(
    settings: Settings, rates: TurnRates | None, job: TurnJob, run: tuple[Message, ...]
) -> tuple[Message, ...]:
    """The leading part of ``run`` its author's rate lets through; each message is counted once
    ever (its own job, delivered later, gets the same number back)."""
    if rates is None:
        return run
    limit = settings.TURN_RATE_LIMIT_PER_MINUTE
    for index, message in enumerate(run):
        try:
            taken = rates.take(job.author.id, message.id, snowflake_time(message.id), limit)
        except StoreFailed:
            logger.warning("turn %s covers no more: the rate could not be counted", job.turn_id)
            return run[:index]
        if taken.number is None or taken.number > limit:
            return run[:index]
    return run
