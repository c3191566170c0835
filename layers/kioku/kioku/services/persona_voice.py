"""How an alter persona speaks: through the webhook kioku creates in the channel (a thread: its
parent's, posting into the thread), with the persona's name and avatar.

The webhook is kept in DynamoDB (``WebhookStore``), read with the turn's first BatchGetItem, and in
this container's memory: a turn that finds it makes no request for it. The first turn of a channel
creates it (one Discord request, ``POST /channels/{id}/webhooks``); a webhook someone deleted is
created anew. Without Manage Webhooks, Discord refuses: ``WebhooksForbidden``, which the turn
answers, as the bot, with a message saying so. Tokens are never logged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Final

from kioku.config import Settings
from kioku.discord.models import Message
from kioku.discord.protocol import JsonErrorCode
from kioku.domain.conditions import DiscordRefused
from kioku.domain.dialogue import participants_from_messages
from kioku.domain.models import Persona
from kioku.domain.personas import ChannelWebhook, is_own_webhook_post, voiced_history
from kioku.domain.privacy import ChannelDescription
from kioku.domain.turn import Outbox
from kioku.domain.turn_jobs import TurnJob
from kioku.domain.turn_read import TurnRead
from kioku.services.stm import PersonaGuesses
from kioku.services.turn_delivery import VoiceLost
from kioku.services.turn_ports import DeliveryDiscord, WebhookKeeper
from kioku.services.turn_state import Voiced

logger = logging.getLogger(__name__)

WEBHOOK_NAME: Final = "kioku personas"
HTTP_FORBIDDEN: Final = 403
HTTP_NOT_FOUND: Final = 404
NO_WEBHOOK_PERMISSION: Final = (
    "I can't speak as **{name}** in this channel: kioku needs the **Manage Webhooks** permission here "
    "to post as its personas. A server manager can grant it to kioku's role."
)

CHAT_ANSWERED_BY: Final = "**{name}** answers below."
"""A ``/chat persona:`` answer's deferred response: the persona speaks through the channel's webhook,
which an interaction response cannot post as."""

CHAT_PERSONA_REMOVED: Final = "**{name}** was removed from this server before answering."


class WebhooksForbidden(VoiceLost):
    """Discord refused kioku a webhook in the channel: it lacks Manage Webhooks there."""


@dataclass
class PersonaWebhooks:
    """The channel webhooks of this container: what the store holds, cached, created when missing."""

    discord: DeliveryDiscord
    store: WebhookKeeper
    _known: dict[str, ChannelWebhook] = field(default_factory=dict)

    def webhook(self, guild_id: str, channel_id: str, stored: ChannelWebhook | None) -> ChannelWebhook:
        """The channel's webhook: known here, or ``stored`` (read with the turn), or created now."""
        known = self._known.get(channel_id) or stored
        if known is None:
            known = self._create(guild_id, channel_id, replacing=None)
        self._known[channel_id] = known
        return known

    def known(self, channel_id: str) -> ChannelWebhook | None:
        """The channel's webhook as this container last used it, if it did (no request)."""
        return self._known.get(channel_id)

    def replace(self, guild_id: str, channel_id: str, dead: ChannelWebhook) -> ChannelWebhook:
        """A new webhook for one Discord no longer knows (deleted by someone in the server)."""
        self._known.pop(channel_id, None)
        created = self._create(guild_id, channel_id, replacing=dead)
        self._known[channel_id] = created
        return created

    def _create(self, guild_id: str, channel_id: str, *, replacing: ChannelWebhook | None) -> ChannelWebhook:
        try:
            created = self.discord.create_webhook(channel_id, WEBHOOK_NAME)
        except DiscordRefused as exc:
            if exc.status == HTTP_FORBIDDEN:
                raise WebhooksForbidden(str(exc)) from exc
            raise
        webhook = ChannelWebhook(str(created.get("id", "")), str(created.get("token", "")))
        if not webhook.webhook_id or not webhook.token:
            raise DiscordRefused(200, None, "the created webhook had no id or token")
        logger.info("created the persona webhook of channel %s", channel_id)
        return self.store.keep(guild_id, channel_id, webhook, replacing=replacing)


@dataclass
class PersonaReply:
    """A relayed message answered by an alter persona: every chunk, and its notices, through the
    channel's webhook under the persona's name (a webhook cannot reply to a message)."""

    webhooks: PersonaWebhooks
    job: TurnJob
    persona: Persona
    webhook_channel_id: str
    """The channel the webhook belongs to: the turn's, or a thread's parent."""
    stored: ChannelWebhook | None = None
    adoptable_from: int = 0
    replies: bool = False
    earlier_webhook_ids: tuple[str, ...] = ()
    """The webhooks the turn's earlier attempts posted through (kept in its outbox)."""
    _through: list[str] = field(default_factory=list)

    def post(self, index: int, chunk: str) -> str:
        if index == 0 and self.job.source.answers_an_interaction:
            # a /chat: its "thinking…" (the bot's) says who answers, an edit a retry can repeat
            self.discord.edit_original_response(
                str(self.job.application_id),
                str(self.job.interaction_token),
                CHAT_ANSWERED_BY.format(name=self.persona.name),
            )
        return self._execute(chunk, None)

    def notify(self, index: int, embed: dict[str, Any]) -> str:
        return self._execute("", [embed])

    def is_own(self, message: Any) -> bool:
        """A message this persona posted through a webhook of the turn's: the channel's webhook kioku
        keeps, or one an attempt of the turn posted through before it was replaced (another webhook
        posting under its name is someone else: a retry must not count it as its own post)."""
        return any(
            is_own_webhook_post(message, self.persona, webhook_id)
            for webhook_id in (*self.earlier_webhook_ids, *self.webhook_ids)
        )

    @property
    def webhook_ids(self) -> tuple[str, ...]:
        """The webhooks this reply posted (or tried to post) through, and the one it posts through now."""
        current = self.webhooks.known(self.webhook_channel_id) or self.stored
        return tuple(dict.fromkeys((*self._through, *([current.webhook_id] if current else []))))

    def _execute(self, content: str, embeds: list[dict[str, Any]] | None) -> str:
        guild_id = self.job.guild_id or ""
        webhook = self.webhooks.webhook(guild_id, self.webhook_channel_id, self.stored)
        thread_id = self.job.channel_id if self.job.channel_id != self.webhook_channel_id else None
        try:
            self._through.append(webhook.webhook_id)
            posted = self._send(webhook, content, embeds, thread_id)
        except DiscordRefused as exc:
            if exc.status != HTTP_NOT_FOUND or exc.code != JsonErrorCode.UNKNOWN_WEBHOOK:
                raise
            logger.warning(
                "the persona webhook of channel %s is gone; creating another", self.webhook_channel_id
            )
            self.stored = None
            webhook = self.webhooks.replace(guild_id, self.webhook_channel_id, webhook)
            self._through.append(webhook.webhook_id)
            posted = self._send(webhook, content, embeds, thread_id)
        return str(posted.get("id", ""))

    def _send(
        self,
        webhook: ChannelWebhook,
        content: str,
        embeds: list[dict[str, Any]] | None,
        thread_id: str | None,
    ) -> dict[str, Any]:
        return self.discord.execute_webhook(
            webhook.webhook_id,
            webhook.token,
            content,
            username=self.persona.name,
            avatar_url=self.persona.avatar_url,
            embeds=embeds,
            thread_id=thread_id,
        )

    @property
    def discord(self) -> DeliveryDiscord:
        return self.webhooks.discord


def no_webhook_notice(name: str, notices: tuple[dict[str, Any], ...] = ()) -> Outbox:
    """What the bot posts instead of the persona ``name`` without Manage Webhooks: the notice, and
    the memory notices the persona still owed; nothing captured."""
    notice = NO_WEBHOOK_PERMISSION.format(name=name)
    return Outbox(reply=notice, chunks=(notice,), notices=notices, capture=False, as_bot=True)


def webhook_channel(job: TurnJob, channel: ChannelDescription | None) -> str:
    """The channel whose webhook an alter persona posts through: a thread's parent's."""
    return (channel.parent_channel_id if channel else None) or job.channel_id


@dataclass(frozen=True, slots=True)
class TurnVoice:
    """Whom a turn speaks as and how it hears and posts: the main persona as the bot, an alter
    persona through its channel's webhook (``TurnService``'s steps ask it; it returns what it
    found and writes nothing of the turn's)."""

    settings: Settings
    personas: PersonaGuesses
    webhooks: PersonaWebhooks | None

    def speaking(self, job: TurnJob) -> Persona:
        """The persona the turn speaks as: the alter persona its job names, else the main persona this
        container last saw on the server (a guess the turn's read checks)."""
        cue = job.persona
        if cue is None:
            return self.personas.guess(job.guild_id)
        return Persona(persona_id=cue.persona_id, lineage_id=cue.lineage_id, name=cue.name, alter=True)

    def say_removed(self, job: TurnJob, discord: DeliveryDiscord) -> None:
        """A ``/chat`` of a persona removed while it waited: its deferred response says so (an edit,
        which a retry may repeat); a relayed message's turn ends in silence."""
        if job.persona is None or not job.source.answers_an_interaction:
            return
        notice = CHAT_PERSONA_REMOVED.format(name=job.persona.name)
        try:
            discord.edit_original_response(str(job.application_id), str(job.interaction_token), notice)
        except DiscordRefused as exc:
            logger.warning("turn %s: could not say its persona was removed: %s", job.turn_id, exc)

    def known_webhook_id(self, guessed: Persona, job: TurnJob, channel: ChannelDescription) -> str | None:
        """The id of the webhook an alter persona posts through, as this container knows it (its
        own messages are the ones posted through it); the turn's read says for sure."""
        if not guessed.alter or self.webhooks is None:
            return None
        known = self.webhooks.known(webhook_channel(job, channel))
        return known.webhook_id if known else None

    def heard_by(
        self,
        guessed: Persona,
        job: TurnJob,
        messages: list[Message],
        voiced_by: str | None,
        bot_user_id: str,
    ) -> Voiced:
        """``messages`` as the persona speaking hears them (``voiced_history``), and who takes part."""
        alter = guessed if guessed.alter else None
        main_name = self.personas.guess(job.guild_id).name
        history = voiced_history(messages, self.settings.DISCORD_APPLICATION_ID, alter, main_name, voiced_by)
        return Voiced(history, tuple(participants_from_messages(history, bot_user_id)), voiced_by)

    def speak_as_persona(
        self, job: TurnJob, channel: ChannelDescription, read: TurnRead
    ) -> PersonaReply | Outbox | None:
        """How an alter persona answers: through the channel's webhook, created now if the channel
        has none; without Manage Webhooks, the bot's notice saying so (an outbox: posted once,
        nothing captured); None: as the bot (an earlier attempt lost the webhook)."""
        persona = read.memory.config.persona
        if self.webhooks is None:
            raise RuntimeError("an alter persona's turn needs the persona webhooks")
        channel_id = webhook_channel(job, channel)
        earlier = read.outbox.webhook_ids if read.outbox else ()
        reply = PersonaReply(
            self.webhooks, job, persona, channel_id, read.webhook, earlier_webhook_ids=earlier
        )
        if read.outbox is not None and read.outbox.as_bot:
            return None  # an earlier attempt lost the webhook: the rest goes as the bot
        if read.outbox is None or not read.outbox.answered:
            try:
                reply.stored = self.webhooks.webhook(job.guild_id or "", channel_id, read.webhook)
            except WebhooksForbidden:
                logger.warning("turn %s: no Manage Webhooks in channel %s", job.turn_id, channel_id)
                return no_webhook_notice(persona.name)
        return reply
