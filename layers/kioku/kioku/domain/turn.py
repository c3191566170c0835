"""Who and where a turn is: what every context stage and every tool is given."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from kioku.domain.forgetting import Said
from kioku.domain.models import Participant, ServerConfig, UserProfile
from kioku.domain.privacy import Origin, Place
from kioku.domain.stm.entries import CrudeMessage
from kioku.domain.text import MentionNames
from kioku.domain.trace import TurnTrace


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """The bot as Discord knows it; the persona name comes from the server configuration."""

    user_id: str
    username: str
    global_name: str | None = None
    nickname: str | None = None

    def names(self, persona_name: str) -> tuple[str, ...]:
        candidates = (persona_name, self.nickname, self.global_name, self.username)
        return tuple(dict.fromkeys(name for name in candidates if name))


@dataclass(frozen=True, slots=True)
class TurnContext:
    guild_id: str | None
    channel_id: str
    user: Participant
    bot: BotIdentity
    config: ServerConfig
    profile: UserProfile
    now: datetime
    parent_channel_id: str | None = None
    participants: tuple[Participant, ...] = field(default_factory=tuple)
    llm_has_tools: bool = True
    explicit_ltm_intent: bool = False
    channel_private: bool = True
    """Discord's privacy of this channel (see ``kioku.domain.privacy``); unknown is private."""
    private_thread: bool = False
    author_ids: frozenset[str] = frozenset()
    """Who wrote in the dialogue the model is shown: the people taking part, not those merely named."""
    mention_names: MentionNames = field(default_factory=MentionNames)
    """What ``<@id>``, ``<@&role>`` and ``<#channel>`` read as in this turn's dialogue and memory."""
    sent_at: datetime | None = None
    """When the turn's message was sent (its snowflake's time); what is kept of it is dropped if the
    speaker asked to forget everything since. None: not known (nothing is checked)."""
    turn_id: str | None = None
    """The turn's message (or interaction) id: what its writes are stamped with, so that a retry
    of the turn knows them as its own."""

    @property
    def is_dm(self) -> bool:
        return self.guild_id is None

    @property
    def place(self) -> Place:
        return Place(self.guild_id, self.channel_id, self.parent_channel_id)

    @property
    def origin(self) -> Origin:
        """What this turn writes is stamped with this."""
        if self.guild_id is None:
            return Origin.direct_message(self.channel_id)
        return Origin(
            guild_id=self.guild_id,
            channel_id=self.channel_id,
            parent_channel_id=self.parent_channel_id,
            private=self.channel_private,
            private_thread=self.private_thread,
        )

    @property
    def said(self) -> Said | None:
        """The speaker and when they sent the message: what every write of it is checked against."""
        return Said(self.user.user_id, self.sent_at) if self.sent_at is not None else None

    @property
    def bot_name(self) -> str:
        return self.config.persona.name


class TurnEnd(Enum):
    """How a turn ends: its last step commits every end but the two that record nothing."""

    DELIVERED = "delivered"
    """Its outbox (the answer, an apology, a rate notice) is posted: recorded done, captured unless
    the outbox says not (a rate notice)."""
    ALREADY_DONE = "already done"
    """An earlier attempt recorded it: nothing is written."""
    SILENCED = "silenced"
    """Past its author's rate notice: nothing posted, nothing recorded (a redrive is weighed again)."""
    UNANSWERABLE = "unanswerable"
    """Discord refused its channel for good (403/404): recorded done, nothing posted or captured."""
    WITHDRAWN = "withdrawn"
    """Forget-all withdrew what it would post or capture (before or while posting): recorded done with
    what it posted, nothing captured."""
    PERSONA_REMOVED = "persona removed"
    """The alter persona it was to speak as was removed since it was queued, or since its read (its
    outbox's keep refused): recorded done, nothing more posted, nothing captured."""

    @property
    def recorded(self) -> bool:
        return self not in (TurnEnd.ALREADY_DONE, TurnEnd.SILENCED)


class TurnAlreadyRecorded(Exception):
    """Another attempt recorded this turn as done: nothing of this attempt's commit was written."""


class PersonaRemoved(Exception):
    """The alter persona the turn speaks as was removed after the turn read it: nothing of the turn
    is kept, and nothing is posted in its voice."""


class TurnClaimed(Exception):
    """Another attempt holds the turn's outbox and may still be posting it: this one posts nothing
    and gives the turn back, to look again once that attempt's invocation is surely over."""

    def __init__(self, claim: str) -> None:
        super().__init__(f"the turn's outbox is claimed by attempt {claim}")
        self.claim = claim


@dataclass(frozen=True, slots=True)
class Claim:
    """Which attempt holds a turn's outbox: its SQS message and receive count (None: not from SQS;
    such a run says only whether it is a redelivery) and a token of its own (twins handed the same
    receive tell apart by it)."""

    message_id: str | None
    receive: int
    token: str

    def __str__(self) -> str:
        return f"{self.message_id or '-'}#{self.receive}#{self.token}"

    @classmethod
    def parse(cls, text: str) -> Claim | None:
        message_id, _, rest = text.partition("#")
        receive, _, token = rest.partition("#")
        if not receive.isdigit() or not token:
            return None
        return cls(None if message_id == "-" else message_id, int(receive), token)

    def follows(self, earlier: str | None) -> bool:
        """Whether ``earlier`` (a claim, as text) is over for sure: SQS handed its message again,
        which it does only once that receive's invocation ended (its visibility outlasts it)."""
        held = Claim.parse(earlier) if earlier else None
        return held is not None and held.message_id == self.message_id and held.receive < self.receive


@dataclass(frozen=True, slots=True)
class RateTaken:
    """A turn counted against its author's minute: its ``number`` there (None: past the limit's
    notice), and whether an earlier take counted it (``before``: a turn that covered it, a redrive)."""

    number: int | None
    before: bool = False


class CoveredElsewhere(Exception):
    """A later message this turn's answer covers (a burst's) was answered, or is being answered, by
    another turn since this one read it (a dead-letter redrive breaks the channel's order): nothing
    is kept or posted, and the retry reads again and answers without it."""


class TurnCommitFailed(Exception):
    """The turn's commit could not be written: its outbox stays, and the redelivery commits."""


class LlmUnavailable(RuntimeError):
    """The model could not answer: retries exhausted, a refused request, or an unreadable response."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class TurnKey:
    source: str
    turn_id: str
    author_id: str
    sent_at: datetime
    """When the turn's message was sent (its snowflake's time): what a forget-all is measured against."""
    persona: tuple[str, str] | None = None
    """The server and the alter persona the turn speaks as (None: the main persona): its outbox is
    kept only while the server still has that persona."""


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """What a turn that is done posted (its reply's messages), and whether it apologised."""

    reply_ids: tuple[str, ...] = ()
    apologised: bool = False
    trace: TurnTrace | None = None
    """What the turn's model was shown, kept with the record ("Why this answer?"); None: nothing."""
    covered: tuple[str, ...] = ()
    """The record ids of the later turns it answered too (a burst, ``domain/bursts.py``): recorded
    done in the same commit."""


@dataclass(frozen=True, slots=True)
class Outbox:
    """What a turn must still do. ``reply`` None: the answer is not known yet, only ``notices`` of
    tools that already ran. ``capture`` False: the turn posts but stores no lines (a rate notice)."""

    reply: str | None = None
    chunks: tuple[str, ...] = ()
    notices: tuple[dict[str, Any], ...] = ()
    lines: tuple[CrudeMessage, ...] = ()
    reply_ids: tuple[str, ...] = ()
    notice_ids: tuple[str, ...] = ()
    apologised: bool = False
    capture: bool = True
    quoted: tuple[str, ...] = ()
    """The people whose personal memories the notices show (their forget-all drops the outbox: see the turn repository)."""
    trace: TurnTrace | None = None
    """What the model was shown for this answer, committed with the turn's record."""
    webhook_ids: tuple[str, ...] = ()
    """The channel webhooks an alter persona's turn posted through (a redelivery counts their posts
    as its own, through a webhook replaced since too)."""
    as_bot: bool = False
    """Posted as the bot, not the persona (it could not speak as the persona: no Manage Webhooks)."""
    claim: str | None = None
    """The attempt that holds the outbox (``Claim``); None: kept by a release before claims."""
    waited_for: str | None = None
    """A claim another attempt gave the turn back for, to wait that claim's invocation out."""
    waited_by: str | None = None
    """The claim of the attempt that waited (its message's next receive may take the outbox over)."""
    covers: tuple[str, ...] = ()
    """The later messages (a burst, oldest first) the answer answers too: it replies to the newest,
    and the commit records their turns done. Kept with the answer, so a redelivery commits the same."""

    @property
    def reply_to(self) -> str | None:
        """The message the answer replies to when it is not the turn's own: the newest it covers."""
        return self.covers[-1] if self.covers else None

    @property
    def answered(self) -> bool:
        return self.reply is not None

    def held_from(self, mine: Claim) -> bool:
        """Whether another attempt may still be posting this outbox, so ``mine`` must not: it holds
        it and neither SQS handed ``mine``'s message again since it did (``Claim.follows``), nor
        did an attempt wait its invocation out (``waited_by``) whose message ``mine`` is the next
        receive of. Wall clocks are never compared: workers' clocks may be hours apart."""
        if self.claim is None or self.claim == str(mine) or mine.follows(self.claim):
            return False
        return not (self.waited_for == self.claim and mine.follows(self.waited_by))
