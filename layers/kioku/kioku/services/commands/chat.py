"""``/chat message:…``: talk to kioku without the relay. Answers "thinking…" at once (Discord
allows three seconds), queues the turn, and the turn worker edits the answer in."""

from __future__ import annotations

import logging

from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import OptionType
from kioku.services import warm
from kioku.services.commands.base import Command, Interaction
from kioku.services.commands.discord import Refusal, error_message, refusal_message

logger = logging.getLogger(__name__)

MAX_CHAT_MESSAGE_LENGTH = 2000


def on_chat(interaction: Interaction) -> dict:
    from kioku.adapters.turn_queue import QueueUnavailable
    from kioku.discord.models import parse_member, parse_user
    from kioku.domain.turn_jobs import TurnJob, TurnSource

    text = str(interaction.option_values().get("message") or "").strip()
    invoker = interaction.invoker
    if not text or invoker is None or interaction.channel_id is None:
        return refusal_message(Refusal.NOT_UNDERSTOOD, "Tell me something: `/chat message:hello`.")
    if interaction.guild_id is None and not interaction.in_bot_dm:
        return refusal_message(
            Refusal.NOT_ALLOWED,
            "I only talk in servers and in my own DMs, where what I remember stays with you.",
        )
    if len(text) > MAX_CHAT_MESSAGE_LENGTH:
        return refusal_message(
            Refusal.NOT_UNDERSTOOD,
            f"That is longer than {MAX_CHAT_MESSAGE_LENGTH} characters; please shorten it.",
        )
    job = TurnJob(
        source=TurnSource.SLASH_COMMAND,
        turn_id=interaction.id,
        channel_id=interaction.channel_id,
        guild_id=interaction.guild_id,
        author=parse_user(invoker.model_dump()),
        member=parse_member(interaction.member.model_dump(exclude={"user"})) if interaction.member else None,
        content=text,
        interaction_token=interaction.token,
        application_id=interaction.application_id,
    )
    try:
        warm.turn_queue().enqueue(job)
    except QueueUnavailable:
        logger.exception("could not queue /chat interaction %s", interaction.id)
        return error_message("I could not take that message right now. Please try again in a moment.")
    return {"type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE}


COMMAND = Command(
    name="chat",
    description="Talk to kioku",
    options=[
        {
            "type": OptionType.STRING,
            "name": "message",
            "description": "What you want to say",
            "required": True,
            "max_length": MAX_CHAT_MESSAGE_LENGTH,
        }
    ],
    on_command=on_chat,
)
