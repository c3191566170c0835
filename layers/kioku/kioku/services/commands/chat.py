"""``/chat message:… [persona:…]``: talk to kioku without the relay. Answers "thinking…" at once
(Discord allows three seconds), queues the turn, and the turn worker edits the answer in; with
``persona:``, an alter persona's turn, answered through the channel's webhook as a relayed message
to it is (the server's configuration read once, to refuse a persona it does not have)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kioku.discord.interaction import Interaction
from kioku.discord.interactions import ResponseType
from kioku.discord.models import Member
from kioku.discord.protocol import OptionType
from kioku.domain.persona_limits import MAX_PERSONA_NAME_CHARS
from kioku.services.commands.base import Command
from kioku.services.commands.context import CommandContext
from kioku.services.commands.error_replies import Refusal, Refused
from kioku.services.commands.guild_admin import load_server_config

if TYPE_CHECKING:
    from kioku.domain.turn_jobs import PersonaCue

MAX_CHAT_MESSAGE_LENGTH = 2000
PERSONA_OPTION: Final = "persona"


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
    persona = _persona_cue(interaction, context)
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
        persona=persona,
    )
    context.turn_queue.enqueue(job)
    return {"type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE}


def _persona_cue(interaction: Interaction, context: CommandContext) -> PersonaCue | None:
    """The alter persona ``persona:`` names (None: the main persona, named or not); one the server
    does not have (removed, or never added) is refused before anything is queued."""
    from kioku.domain.turn_jobs import PersonaCue

    value = interaction.option_values().get(PERSONA_OPTION)
    if value is None:
        return None
    if interaction.guild_id is None:
        raise Refused(Refusal.SERVER_ONLY, "Personas answer in servers only; leave `persona:` out here.")
    from kioku.services.commands.persona_roster import persona_option

    persona = persona_option(load_server_config(interaction, context), value)
    return PersonaCue(persona.persona_id, persona.lineage_id, persona.name) if persona.alter else None


def on_autocomplete(interaction: Interaction, context: CommandContext) -> dict:
    """``persona:`` typed: the server's personas, as every persona option offers them."""
    from kioku.services.commands.persona_roster import on_persona_autocomplete

    return on_persona_autocomplete(interaction, context)


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
        },
        {
            "type": OptionType.STRING,
            "name": PERSONA_OPTION,
            "description": "The persona who answers (default: the main one)",
            "max_length": MAX_PERSONA_NAME_CHARS,
            "autocomplete": True,
        },
    ],
    on_command=on_chat,
    # the roster (and the persona rules behind it) is loaded only when a persona is named or typed,
    # so a plain /chat stays a small import
    on_autocomplete=on_autocomplete,
)
