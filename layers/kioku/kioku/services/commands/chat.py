"""``/chat message:…``: talk to kioku without the relay. Answers "thinking…" at once (Discord
allows three seconds), queues the turn, and the turn worker edits the answer in."""

from __future__ import annotations

from kioku.discord.interaction import Interaction
from kioku.discord.interactions import ResponseType
from kioku.discord.models import Member
from kioku.discord.protocol import OptionType
from kioku.services.commands.base import Command
from kioku.services.commands.context import CommandContext
from kioku.services.commands.error_replies import Refusal, Refused

MAX_CHAT_MESSAGE_LENGTH = 2000


def on_chat(interaction: Interaction, context: CommandContext) -> dict:
    from kioku.domain.turn_jobs import TurnJob, TurnSource

    text = str(interaction.option_values().get("message") or "").strip()
    invoker = interaction.invoker
    if not text or invoker is None or interaction.channel_id is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, "Tell me something: `/chat message:hello`.")
    if interaction.guild_id is None and not interaction.in_bot_dm:
        raise Refused(
            Refusal.NOT_ALLOWED,
            "I only talk in servers and in my own DMs, where what I remember stays with you.",
        )
    if len(text) > MAX_CHAT_MESSAGE_LENGTH:
        raise Refused(
            Refusal.NOT_UNDERSTOOD,
            f"That is longer than {MAX_CHAT_MESSAGE_LENGTH} characters; please shorten it.",
        )
    job = TurnJob(
        source=TurnSource.SLASH_COMMAND,
        turn_id=interaction.id,
        channel_id=interaction.channel_id,
        guild_id=interaction.guild_id,
        author=invoker,
        member=_for_the_turn(interaction.member),
        content=text,
        interaction_token=interaction.token,
        application_id=interaction.application_id,
    )
    context.turn_queue.enqueue(job)
    return {"type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE}


def _for_the_turn(member: Member | None) -> Member | None:
    """What the turn reads of the member: its nick and its permissions (its roles only stand in for
    permissions a message does not carry, and an interaction's always does)."""
    return None if member is None else Member(nick=member.nick, permissions=member.permissions)


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
