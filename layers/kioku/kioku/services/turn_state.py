"""The values a turn's steps hand each other (``TurnAttempt`` → ``Heard`` → ``Loaded``) and what it
hands back (``TurnRecord``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kioku.discord.models import Message
from kioku.domain.dialogue import Dialogue
from kioku.domain.forgetting import snowflake_time
from kioku.domain.models import Participant, Persona
from kioku.domain.privacy import ChannelDescription
from kioku.domain.text import MentionNames
from kioku.domain.tools import ToolResult
from kioku.domain.turn import BotIdentity, Claim, TurnContext, TurnEnd, TurnKey
from kioku.domain.turn_jobs import TurnJob
from kioku.domain.turn_read import TurnRead
from kioku.services.stm import ShortTermMemoryTurn


@dataclass
class TurnRecord:
    """What a turn did: the model requests it sent (for the playground's /context) and what it posted."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    reply_ids: list[str] = field(default_factory=list)
    tool_results: list[tuple[str, ToolResult]] = field(default_factory=list)
    apologised: bool = False
    rate_limited: bool = False
    resumed: bool = False
    """An earlier attempt had recorded the answer: this one delivered it without asking the model."""
    model_seconds: list[float] = field(default_factory=list)
    context_kinds: list[str] = field(default_factory=list)
    """What each message of the first request is; later rounds add the tool calls and results."""
    tool_calls_not_run: int = 0
    end: TurnEnd | None = None
    """How the turn ended (None: it raised, for the queue to retry it)."""
    persona: str = ""
    """The name of the persona that spoke (once the configuration was read)."""
    lineage: int | None = None
    """Its lineage: whose long-term memories the turn read and wrote."""

    @property
    def duplicate(self) -> bool:
        """An earlier attempt had recorded the turn as done: this one did nothing."""
        return self.end is TurnEnd.ALREADY_DONE

    @property
    def unanswerable(self) -> bool:
        """Discord refused the turn's channel for good (403/404): nothing could be posted."""
        return self.end is TurnEnd.UNANSWERABLE


@dataclass(frozen=True, slots=True)
class TurnAttempt:
    """What is fixed for one attempt at a turn before its first step: the job, its key, the clock,
    the persona it speaks as, its claim; and the record it hands back (``record``: each step notes in
    it what the caller sees; no step reads another's notes from it)."""

    job: TurnJob
    key: TurnKey
    now: datetime
    time_left: Callable[[], float]
    guessed: Persona
    """The persona the turn speaks as, decided once: an alter persona as its job names it, else the
    main persona this container last saw on the turn's server. The name the history is first read
    with, the keys the turn's one read guesses; the configuration read corrects it."""
    claim: Claim
    """This attempt, as its outbox names it when it holds it."""
    record: TurnRecord = field(default_factory=TurnRecord)


def key_of(job: TurnJob) -> TurnKey:
    """The turn's key: its record, its outbox, and the alter persona its outbox is kept for."""
    return TurnKey(
        job.source.value,
        job.record_id,
        job.author.id,
        snowflake_time(job.turn_id),
        (job.guild_id, job.persona.persona_id) if job.persona and job.guild_id else None,
    )


@dataclass(frozen=True, slots=True)
class Voiced:
    """The conversation as the persona speaking hears it (``voiced_history``), who takes part in it,
    and the webhook whose posts under the persona's name were heard as its own (``by``)."""

    history: list[Message]
    participants: tuple[Participant, ...]
    by: str | None = None


@dataclass(frozen=True, slots=True)
class Heard:
    """What the turn read of Discord (``TurnService._read_discord``): the channel, the conversation
    as Discord gave it (``messages``) and as the persona speaking hears it (``voiced``), and the bot
    it speaks as."""

    channel: ChannelDescription
    messages: list[Message]
    voiced: Voiced
    bot: BotIdentity
    names: MentionNames
    """What mentions read as, by the persona's guessed name, no other channel named yet."""
    dialogue: Dialogue
    """The dialogue by those names (who wrote in it decides whose memories the read fetches)."""


@dataclass(frozen=True, slots=True)
class Loaded:
    """The turn once its memory is read (``TurnService._read_memory``): its one read, the context
    every later step and tool is given (built once, with the server's configuration), the
    dialogue the model is shown and the turn's short-term memory."""

    read: TurnRead
    turn: TurnContext
    channel: ChannelDescription
    dialogue: Dialogue
    stm: ShortTermMemoryTurn
    covered: tuple[Message, ...] = ()
    """The later messages it answers too, oldest first (a burst: ``turn_bursts``)."""
