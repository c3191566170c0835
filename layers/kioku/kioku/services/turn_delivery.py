"""Posting a turn's outbox: its chunks in order, then its memory notices, each exactly once.

A post is made idempotent twice over: it carries a nonce derived from the turn (Discord returns the
message already created with it, within its window), and a redelivered turn first reads the
channel after its message and counts as posted what the bot already said there, in order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final, Protocol

from kioku.discord.models import Message
from kioku.domain.conditions import DiscordRefused
from kioku.domain.turn import Outbox
from kioku.domain.turn_jobs import TurnJob
from kioku.services.turn_ports import DeliveryDiscord

logger = logging.getLogger(__name__)

MAX_MESSAGES_AFTER: Final = 100  # one page of the channel after a redelivered turn's message
MAX_ADOPTION_PAGES: Final = 10
"""How many pages past the turn's message its own posts are looked for (1,000 messages: a busy
channel's traffic over the turn's three attempts of up to 720 s each); docs/operations.md."""
NOTIFICATION_NONCE_MARK: Final = "n"
PERMANENT_REFUSALS: Final = frozenset({400, 403, 404})


class Responder(Protocol):
    """Where a turn's answer goes; ``adoptable_from``: the first chunk the channel's history shows;
    ``replies``: whether that chunk replies to the turn's message (a webhook's cannot)."""

    @property
    def adoptable_from(self) -> int: ...

    @property
    def replies(self) -> bool: ...

    def post(self, index: int, chunk: str) -> str: ...

    def notify(self, index: int, embed: dict[str, Any]) -> str:
        """Post a memory notice; its id."""
        ...

    def is_own(self, message: Message) -> bool:
        """Whether ``message`` is one this responder posts as (how a redelivery finds its posts)."""
        ...

    @property
    def webhook_ids(self) -> tuple[str, ...]:
        """The channel webhooks this responder posts through (none: as the bot)."""
        ...


class VoiceLost(Exception):
    """The responder can post no more, and no retry would change that (a persona's webhook refused
    for good): the turn says so as the bot instead."""


@dataclass(frozen=True)
class _AsTheBot:
    """Notices posted as the bot user, in the turn's channel."""

    discord: DeliveryDiscord
    job: TurnJob
    bot_user_id: str

    def notify(self, index: int, embed: dict[str, Any]) -> str:
        posted = self.discord.create_message(
            self.job.channel_id,
            "",
            embeds=[embed],
            nonce=f"{self.job.turn_id}{NOTIFICATION_NONCE_MARK}{index}",
        )
        return str(posted.get("id", ""))

    def is_own(self, message: Message) -> bool:
        return message.author.id == self.bot_user_id

    @property
    def webhook_ids(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class ChannelReply(_AsTheBot):
    """A relayed message: the first chunk replies to it, every chunk is a channel message."""

    adoptable_from: int = 0
    replies: bool = True
    answering: str | None = None
    """The message the first chunk replies to when not the turn's own (a burst's newest)."""

    def post(self, index: int, chunk: str) -> str:
        reply_to = (self.answering or self.job.turn_id) if index == 0 else None
        posted = self.discord.create_message(
            self.job.channel_id, chunk, reply_to=reply_to, nonce=f"{self.job.turn_id}-{index}"
        )
        return str(posted.get("id", ""))


@dataclass(frozen=True)
class InteractionWebhook(_AsTheBot):
    """A ``/chat``: the first chunk is the deferred response (an edit: idempotent by nature), the
    rest are channel messages."""

    adoptable_from: int = 1
    replies: bool = True

    def post(self, index: int, chunk: str) -> str:
        if index == 0:
            posted = self.discord.edit_original_response(
                str(self.job.application_id), str(self.job.interaction_token), chunk
            )
        else:
            posted = self.discord.create_message(
                self.job.channel_id, chunk, nonce=f"{self.job.turn_id}-{index}"
            )
        return str(posted.get("id", ""))


def responder_for(
    job: TurnJob, discord: DeliveryDiscord, bot_user_id: str, reply_to: str | None = None
) -> Responder:
    """How the bot answers ``job``; a relayed message's reply goes to ``reply_to`` when given."""
    if job.source.answers_an_interaction:
        return InteractionWebhook(discord, job, bot_user_id)
    return ChannelReply(discord, job, bot_user_id, answering=reply_to)


class DeliveryWithdrawn(Exception):
    """The outbox was deleted (forget-all) before a post: nothing more of it is posted; ``outbox``
    says what was."""

    def __init__(self, outbox: Outbox) -> None:
        super().__init__("the turn's outbox was withdrawn before all of it was posted")
        self.outbox = outbox


class DeliveryVoiceLost(Exception):
    """The responder lost its voice mid-delivery (``VoiceLost``): ``outbox`` says what was posted."""

    def __init__(self, outbox: Outbox, cause: VoiceLost) -> None:
        super().__init__(str(cause))
        self.outbox = outbox
        self.cause = cause


class DeliveryInterrupted(Exception):
    """Discord refused a post that a retry can still make: ``outbox`` says what was posted."""

    def __init__(self, outbox: Outbox, cause: DiscordRefused) -> None:
        super().__init__(str(cause))
        self.outbox = outbox
        self.cause = cause


@dataclass
class Delivery:
    discord: DeliveryDiscord
    job: TurnJob
    responder: Responder

    def adopt(self, outbox: Outbox) -> Outbox:
        """``outbox`` with the posts the channel already holds counted as posted: an earlier
        attempt made them and died (or lost Discord's answer) before it could say so. Only the
        turn's own count: its first chunk is the bot's reply to the turn's message (another turn's
        identical "Got it!" is not), and each later post the bot's next message after the one
        before it, matching what it would post."""
        missing_chunks = len(outbox.reply_ids) < len(outbox.chunks)
        missing_notices = len(outbox.notice_ids) < len(outbox.notices)
        if not (missing_chunks or missing_notices):
            return outbox
        own = [message for message in self._messages_after_turn() if self.responder.is_own(message)]
        reply_ids, notice_ids = list(outbox.reply_ids), list(outbox.notice_ids)
        last = _last_posted(reply_ids)
        if len(reply_ids) >= self.responder.adoptable_from:
            while len(reply_ids) < len(outbox.chunks):
                if not reply_ids:
                    firsts = (
                        m
                        for m in own
                        if _replies_to(m, outbox.reply_to or self.job.turn_id) or not self.responder.replies
                    )
                    found = next(firsts, None)
                else:
                    found = _next_after(own, last)
                if found is None or found.content != outbox.chunks[len(reply_ids)]:
                    break
                reply_ids.append(found.id)
                last = found.id
        if len(reply_ids) == len(outbox.chunks):
            last = _last_posted([*reply_ids, *notice_ids])
            while len(notice_ids) < len(outbox.notices) and last is not None:
                found = _next_after(own, last)
                if found is None or not _shows(found, outbox.notices[len(notice_ids)]):
                    break
                notice_ids.append(found.id)
                last = found.id
        return replace(outbox, reply_ids=tuple(reply_ids), notice_ids=tuple(notice_ids))

    def _messages_after_turn(self) -> list[Message]:
        """The channel's messages after the turn's, oldest first, page by page up to
        ``MAX_ADOPTION_PAGES``: a busy channel holds more than one page between a turn and its posts."""
        messages: list[Message] = []
        after = self.job.turn_id
        for _ in range(MAX_ADOPTION_PAGES):
            page = sorted(
                self.discord.get_channel_messages(self.job.channel_id, MAX_MESSAGES_AFTER, after=after),
                key=lambda message: int(message.id),
            )
            messages += page
            if len(page) < MAX_MESSAGES_AFTER:
                break
            after = page[-1].id
        return messages

    def post(
        self, outbox: Outbox, still_kept: Callable[[Outbox], bool] | None = None, *, just_kept: bool = False
    ) -> Outbox:
        """Post what ``outbox`` has not posted, chunks first; the outbox with every id. A refusal
        raises ``DeliveryInterrupted`` (a notice Discord refuses for good is given up, logged), a
        responder that lost its voice ``DeliveryVoiceLost``. ``still_kept`` is handed what is posted
        so far before each post but a first one ``just_kept`` (the keep itself was the check: a plain
        turn pays no request for it), to note it; once it says no, ``DeliveryWithdrawn``."""
        reply_ids, notice_ids = list(outbox.reply_ids), list(outbox.notice_ids)
        checked = not just_kept

        def so_far() -> Outbox:
            through = tuple(dict.fromkeys((*outbox.webhook_ids, *self.responder.webhook_ids)))
            return replace(
                outbox, reply_ids=tuple(reply_ids), notice_ids=tuple(notice_ids), webhook_ids=through
            )

        def withdrawn() -> bool:
            nonlocal checked
            asked, checked = checked, True
            return asked and still_kept is not None and not still_kept(so_far())

        try:
            for index in range(len(reply_ids), len(outbox.chunks)):
                if withdrawn():
                    raise DeliveryWithdrawn(so_far())
                reply_ids.append(self.responder.post(index, outbox.chunks[index]))
            for index in range(len(notice_ids), len(outbox.notices)):
                if withdrawn():
                    raise DeliveryWithdrawn(so_far())
                notice_ids.append(self._notify(index, outbox.notices[index]))
        except DiscordRefused as exc:
            raise DeliveryInterrupted(so_far(), exc) from exc
        except VoiceLost as exc:
            raise DeliveryVoiceLost(so_far(), exc) from exc
        return so_far()

    def _notify(self, index: int, embed: dict[str, Any]) -> str:
        try:
            return self.responder.notify(index, embed)
        except DiscordRefused as exc:
            if exc.status not in PERMANENT_REFUSALS:
                raise
            logger.warning("memory notification refused for good, not retried: %s", exc)
            return ""


def _replies_to(message: Message, turn_id: str) -> bool:
    return message.reference is not None and message.reference.message_id == turn_id


def _last_posted(ids: list[str]) -> str | None:
    """The newest id the turn knows it posted (a post given up for good has none)."""
    return next((post for post in reversed(ids) if post.isdigit()), None)


def _next_after(own: list[Message], after: str | None) -> Message | None:
    """The bot's first message after ``after`` (oldest first in ``own``)."""
    if after is None:
        return None
    return next((message for message in own if int(message.id) > int(after)), None)


def _shows(message: Message, embed: dict[str, Any]) -> bool:
    """Whether ``message`` is the notice ``embed`` (Discord adds fields of its own to embeds)."""
    if not message.embeds:
        return False
    shown = message.embeds[0]
    return all(
        getattr(shown, field) == embed.get(field) for field in ("title", "description") if field in embed
    )
