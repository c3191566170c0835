"""What one turn knows as its steps run (``TurnState``) and what it hands back (``TurnRecord``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kioku.adapters.dynamodb.turn_repository import TurnRead
from kioku.discord.models import Message
from kioku.domain.dialogue import Dialogue
from kioku.domain.ltm.recall import Recall
from kioku.domain.privacy import ChannelDescription
from kioku.domain.tools import ToolResult
from kioku.domain.turn import Outbox, TurnContext, TurnKey
from kioku.domain.turn_jobs import TurnJob
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.stm import ShortTermMemoryTurn
from kioku.services.turn_delivery import Delivery


@dataclass
class TurnRecord:
    """What a turn did: the model requests it sent (for the playground's /context) and what it posted."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    reply_ids: list[str] = field(default_factory=list)
    tool_results: list[tuple[str, ToolResult]] = field(default_factory=list)
    apologised: bool = False
    duplicate: bool = False
    rate_limited: bool = False
    unanswerable: bool = False
    """Discord refused the turn's channel for good (403/404): nothing could be posted."""
    resumed: bool = False
    """An earlier attempt had recorded the answer: this one delivered it without asking the model."""
    model_seconds: list[float] = field(default_factory=list)
    context_kinds: list[str] = field(default_factory=list)
    """What each message of the first request is; later rounds add the tool calls and results."""
    tool_calls_not_run: int = 0


@dataclass
class TurnState:
    """Everything one turn knows, filled in step by step; ``finished``: no further step runs."""

    job: TurnJob
    key: TurnKey
    now: datetime
    redelivered: bool
    time_left: Callable[[], float]
    delivery: Delivery
    record: TurnRecord = field(default_factory=TurnRecord)
    finished: bool = False
    capture: bool = True
    """False: the turn stores no lines (a rate notice, a channel refused for good)."""
    rate_notice: bool = False
    channel: ChannelDescription | None = None
    history: list[Message] = field(default_factory=list)
    turn: TurnContext | None = None
    dialogue: Dialogue | None = None
    dialogue_bot_name: str = ""
    guessed_lineage: int = 0
    subject_ids: list[str] = field(default_factory=list)
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

    @property
    def answered(self) -> bool:
        return self.outbox is not None and self.outbox.answered
