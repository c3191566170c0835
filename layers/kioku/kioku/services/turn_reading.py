"""What a turn reads of Discord: the typing indicator, the channel (its privacy), the conversation as
it stood when the turn's message was sent, the names its mentions read as, and the dialogue the model
is shown. ``TurnService._read_discord`` and ``_read_memory`` call it; it keeps no state of a turn."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from kioku.config import Settings
from kioku.discord.models import Message
from kioku.discord.protocol import MessageType
from kioku.domain.attachment_text import AttachmentFiles, read_text_files
from kioku.domain.bursts import MAX_COVERED, later_messages
from kioku.domain.conditions import DiscordRefused
from kioku.domain.dialogue import Dialogue, read_dialogue, user_names
from kioku.domain.models import Participant
from kioku.domain.privacy import ChannelDescription, Place, PrivacyPolicy
from kioku.domain.text import MentionNames, mentioned_channels
from kioku.domain.turn_jobs import TurnJob, TurnSource
from kioku.services.turn_ports import GuildLookup, TurnDiscord

MAX_HISTORY_PAGE = 100
"""The most messages Discord answers in one request for a channel's history."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ChannelReader:
    settings: Settings
    discord: TurnDiscord
    directory: GuildLookup
    files: AttachmentFiles | None = None
    """Where text files are fetched from, to be read into their messages; None reads none."""

    def typing(self, channel_id: str) -> None:
        try:
            self.discord.trigger_typing(channel_id)
        except DiscordRefused as exc:
            logger.info("typing indicator failed: %s", exc)

    def describe_channel(self, job: TurnJob) -> ChannelDescription:
        """The channel's name, thread parent and privacy, asked of Discord on every guild turn: a
        channel can turn private at any moment. A guild turn whose channel cannot be described fails
        and is retried (without the parent, a thread of a private channel would pass for public)."""
        if job.guild_id is None:
            return ChannelDescription(job.channel_id, private=False)
        return self.directory.describe_channel(job.guild_id, self.discord.get_channel(job.channel_id))

    def dialogue(
        self, history: list[Message], bot_user_id: str, names: MentionNames, bot_name: str
    ) -> Dialogue:
        return read_dialogue(
            history,
            bot_user_id=bot_user_id,
            supports_vision=self.settings.LLM_SUPPORTS_VISION,
            limit=self.settings.DIALOGUE_HISTORY_LIMIT,
            names=names,
            max_images=self.settings.MAX_IMAGES_PER_REQUEST,
            bot_name=bot_name,
        )

    def mention_names(
        self,
        job: TurnJob,
        channel: ChannelDescription,
        history: list[Message],
        bot_user_id: str,
        bot_name: str,
        policy: PrivacyPolicy | None,
    ) -> MentionNames:
        """Names for the mentions in the turn's text: the people the history carries (the bot by its
        persona's name), the guild's roles (read for the channel's privacy already, so no extra
        request), this channel and, only when a message mentions another one, the guild's channels
        the turn may name under its server's privacy ``policy`` (one cached request; None: not read
        yet, none named)."""
        roles = (self.directory.guild_roles(job.guild_id) if job.guild_id else None) or ()
        channels = {channel.channel_id: channel.name} if channel.name else {}
        if job.guild_id and policy is not None and mentions_another_channel(job, channel, history):
            place = Place(job.guild_id, job.channel_id, channel.parent_channel_id)
            named = self.directory.channel_names(job.guild_id, place, policy)
            channels = {**named, **channels}
        return MentionNames(
            users={**user_names(history), bot_user_id: bot_name},
            roles={role.id: role.name for role in roles if role.name},
            channels=channels,
        )

    def history(self, job: TurnJob, now: datetime) -> list[Message]:
        """The conversation as it stood when the turn's message was sent, newest first as Discord
        returns it: a turn that waited in the queue must not answer what was said after it. In an
        ``always`` channel, the messages sent since too (up to the bot's next word): the turn may
        answer a burst (``domain/bursts.py``), and cuts what it does not answer."""
        limit = self.settings.DIALOGUE_HISTORY_LIMIT
        own = job.message if job.message is not None else _slash_message(job, now)
        if job.always and job.message is not None:
            later, earlier = self._with_later(job, limit)
            # files are read own message first, then those it may answer, then the earlier ones
            read = self._files_read([own, *later, *earlier])
            return [*reversed(read[1 : 1 + len(later)]), read[0], *read[1 + len(later) :]]
        if limit == 1:
            return self._files_read([own])
        try:
            earlier = self.discord.get_channel_messages(job.channel_id, limit - 1, before=job.turn_id)
        except DiscordRefused:
            if job.source is not TurnSource.SLASH_COMMAND:
                raise
            # /chat works where the bot may not read the history: answer the question alone.
            logger.warning("channel history unavailable for /chat %s", job.turn_id)
            earlier = []
        return self._files_read([own, *earlier])

    def _with_later(self, job: TurnJob, limit: int) -> tuple[list[Message], list[Message]]:
        """The channel's latest messages when they hold the turn's (one request, the common case:
        ``limit`` and room for ``MAX_COVERED`` sent since, so what came since takes no place of
        the earlier context), else the messages right after it and those before it (two more):
        those after it oldest first (at most ``limit - 1``: the dialogue shows every message the
        turn answers), those before it newest first (``limit - 1``)."""
        latest = self.discord.get_channel_messages(job.channel_id, min(limit + MAX_COVERED, MAX_HISTORY_PAGE))
        if any(message.id == job.turn_id for message in latest):
            earlier = [message for message in latest if int(message.id) < int(job.turn_id)][: limit - 1]
        else:
            latest = self.discord.get_channel_messages(job.channel_id, limit, after=job.turn_id)
            earlier = (
                self.discord.get_channel_messages(job.channel_id, limit - 1, before=job.turn_id)
                if limit > 1
                else []
            )
        later = later_messages(latest, job.turn_id, self.settings.DISCORD_APPLICATION_ID, most=limit - 1)
        return later, earlier

    def _files_read(self, history: list[Message]) -> list[Message]:
        """``history`` with its small text files read into their messages, the turn's own first
        (``attachment_text``); a history without one fetches nothing."""
        if self.files is None:
            return history
        budget, cdn = self.settings.MAX_ATTACHMENT_TEXT_CHARS, self.settings.DISCORD_CDN_BASE_URL
        return read_text_files(history, self.files, budget=budget, cdn_base=cdn)


def mentions_another_channel(job: TurnJob, channel: ChannelDescription, history: list[Message]) -> bool:
    texts = [job.content, *(message.content for message in history)]
    return bool(mentioned_channels(texts) - {channel.channel_id})


def author_of(job: TurnJob, participants: tuple[Participant, ...]) -> Participant:
    for participant in participants:
        if participant.user_id == job.author.id:
            return participant
    return Participant(
        user_id=job.author.id,
        username=job.author.username or job.author.id,
        global_name=job.author.global_name,
        nickname=job.member.nick if job.member else None,
        is_bot=job.author.bot,
    )


def bot_username(history: list[Message], settings: Settings) -> str:
    for message in history:
        if message.author.id == settings.DISCORD_APPLICATION_ID and message.author.username:
            return message.author.username
    return "kioku"


def _slash_message(job: TurnJob, now: datetime) -> Message:
    """The ``/chat`` text as the newest channel message, so the dialogue reads as usual."""
    return Message(
        id=job.turn_id,
        author=job.author,
        content=job.content,
        timestamp=now,
        type=MessageType.DEFAULT,
        channel_id=job.channel_id,
        member=job.member,
    )
