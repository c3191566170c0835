"""What one turn knows as its steps run (``TurnState``) and what it hands back (``TurnRecord``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import uuid4

from kioku.discord.models import Message
from kioku.domain.dialogue import Dialogue
from kioku.domain.forgetting import snowflake_time
from kioku.domain.ltm.recall import Recall
from kioku.domain.models import Persona
from kioku.domain.privacy import ChannelDescription
from kioku.domain.tools import ToolResult
from kioku.domain.turn import Claim, Outbox, TurnContext, TurnEnd, TurnKey
from kioku.domain.turn_jobs import TurnJob
from kioku.domain.turn_read import TurnRead
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.stm import ShortTermMemoryTurn
from kioku.services.turn_delivery import Responder


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


@dataclass
class TurnState:
    """What the turn's steps share, filled in step by step (how the turn ends is what they return)."""

    job: TurnJob
    key: TurnKey
    now: datetime
    time_left: Callable[[], float]
    guessed: Persona
    """The persona the turn speaks as, decided once: an alter persona as its job names it, else the
    main persona this container last saw on the turn's server. The name the history is first read
    with, the keys the turn's one read guesses; the configuration read corrects it."""
    record: TurnRecord = field(default_factory=TurnRecord)
    channel: ChannelDescription | None = None
    history: list[Message] = field(default_factory=list)
    """The conversation as the persona speaking hears it (``heard``: as Discord gave it)."""
    heard: list[Message] = field(default_factory=list)
    voiced_by: str | None = None
    """The id of the webhook whose posts under the persona's name were heard as its own."""
    turn: TurnContext | None = None
    dialogue: Dialogue | None = None
    read: TurnRead | None = None
    stm: ShortTermMemoryTurn | None = None
    recalled: Recall = field(default_factory=Recall)
    embeddings: TurnEmbeddings | None = None
    """The turn's embeddings (``EMBEDDINGS_MODEL``): each text embedded once, none after a failure."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    outbox: Outbox | None = None
    """What must still be posted and captured; ``outbox_kept``: it is in DynamoDB as it stands."""
    outbox_kept: bool = False
    notices_kept: int = 0
    """How many of this attempt's notices are kept in its outbox."""
    responder: Responder | None = None
    """Where an alter persona's answer goes (its channel webhook); None: as the bot."""
    claim: Claim = field(default_factory=lambda: Claim(None, 1, uuid4().hex))
    """This attempt, as its outbox names it when it holds it."""
    taking_from: str | None = None
    """The claim of an earlier attempt's outbox this one takes over (its first note replaces it)."""

    @property
    def answered(self) -> bool:
        return self.outbox is not None and self.outbox.answered


def key_of(job: TurnJob) -> TurnKey:
    """The turn's key: its record, its outbox, and the alter persona its outbox is kept for."""
    return TurnKey(
        job.source.value,
        job.record_id,
        job.author.id,
        snowflake_time(job.turn_id),
        (job.guild_id, job.persona.persona_id) if job.persona and job.guild_id else None,
    )
