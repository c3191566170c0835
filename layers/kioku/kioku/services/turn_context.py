"""A turn's ``TurnContext``, built once, when the turn's configuration is read (``TurnService``'s
``_read_memory``): who and where the turn is, the persona it speaks as and how that persona hears the
conversation (the channel's webhook as stored decides which messages are its own), and what mentions
read as (the persona's name as configured heads the bot's messages)."""

from __future__ import annotations

from kioku.config import Settings
from kioku.discord.models import Message
from kioku.domain.dialogue import Dialogue
from kioku.domain.stm.intent import has_explicit_long_term_intent
from kioku.domain.turn import TurnContext
from kioku.domain.turn_read import TurnRead
from kioku.services.persona_voice import TurnVoice
from kioku.services.turn_reading import ChannelReader, author_of, mentions_another_channel
from kioku.services.turn_state import Heard, TurnAttempt


def context_of(
    settings: Settings,
    reader: ChannelReader,
    voice: TurnVoice,
    attempt: TurnAttempt,
    heard: Heard,
    read: TurnRead,
    covered: tuple[Message, ...] = (),
) -> tuple[TurnContext, Dialogue]:
    """The turn's context and the dialogue it is shown; what was heard by guesses (the webhook this
    container knew, the persona's name it last saw) is read again when a guess was wrong.
    ``covered``: the later messages it answers too (their words count as the speaker's)."""
    job, config = attempt.job, read.memory.config
    stored_webhook_id = read.webhook.webhook_id if read.webhook else None
    voiced, names, dialogue = heard.voiced, heard.names, heard.dialogue
    revoice = job.persona is not None and stored_webhook_id != voiced.by
    if revoice:
        voiced = voice.heard_by(attempt.guessed, job, heard.messages, stored_webhook_id, heard.bot.user_id)
    if (
        revoice
        or config.persona.name != attempt.guessed.name
        or mentions_another_channel(job, heard.channel, voiced.history)
    ):
        bot_id, bot_name = heard.bot.user_id, config.persona.name
        names = reader.mention_names(job, heard.channel, voiced.history, bot_id, bot_name, config.privacy)
        dialogue = reader.dialogue(voiced.history, bot_id, names, bot_name)
    turn = TurnContext(
        guild_id=job.guild_id,
        channel_id=job.channel_id,
        user=author_of(job, heard.voiced.participants),
        bot=heard.bot,
        config=config,
        profile=read.memory.profile,
        now=attempt.now,
        parent_channel_id=heard.channel.parent_channel_id,
        participants=voiced.participants,
        llm_has_tools=settings.LLM_SUPPORTS_TOOLS,
        explicit_ltm_intent=any(
            has_explicit_long_term_intent(text) for text in (job.content, *(m.content for m in covered))
        ),
        channel_private=heard.channel.private,
        private_thread=heard.channel.private_thread,
        author_ids=frozenset(dialogue.author_ids),
        mention_names=names,
        sent_at=attempt.key.sent_at,
        turn_id=job.turn_id,
    )
    return turn, dialogue
