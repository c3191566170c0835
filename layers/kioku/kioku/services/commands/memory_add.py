"""Memories people write by hand: ``/personal memories add``, ``/server memories add`` and the
``Remember this`` message command.

What the interaction itself tells is checked here, and refused at once (nothing queued): the text
(empty, attachment-only, too long, only placeholders), ``expires_in_days``, the persona, the
permission, a message from a channel the asker cannot see. The rest needs the store and Discord
(the channel's privacy), so the answer is deferred and the worker saves it through the model's own
save path (``kioku.services.hand_memories``), then edits the answer with the memory's id.
"""

from __future__ import annotations

from typing import Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.interactions import ResponseType
from kioku.discord.models import Message
from kioku.discord.protocol import CommandType, MessageFlag, OptionType, Permission, permission_bits
from kioku.domain.ltm.arguments import InvalidArguments, clean_content
from kioku.domain.ltm.memory import GLOBAL_LINEAGE
from kioku.domain.models import ServerConfig
from kioku.domain.turn_jobs import MemoryRequest, TurnJob, TurnSource
from kioku.services.commands.base import Command
from kioku.services.commands.context import CommandContext
from kioku.services.commands.error_replies import Refusal, Refused
from kioku.services.commands.guild_admin import check_manager, load_server_config, manages_server
from kioku.services.commands.persona_roster import PERSONA_OPTION, persona_option
from kioku.services.commands.registry import REMEMBER_THIS

ADD: Final = "add"
CONTENT_OPTION: Final = "content"
ALL_PERSONAS_OPTION: Final = "all_personas"
EXPIRES_OPTION: Final = "expires_in_days"
MIN_DAYS, MAX_DAYS = 1, 3650

EMPTY: Final = "There is nothing to remember: write the fact in `content`."
ATTACHMENT_ONLY: Final = "That message holds only attachments: I remember words, not files."
EMPTY_MESSAGE: Final = "That message has no text to remember."
TOO_LONG: Final = "That is {length} characters; a memory holds at most {limit}. Keep one short fact."
BAD_DAYS: Final = f"`{EXPIRES_OPTION}` is a number of days from {MIN_DAYS} to {MAX_DAYS}."
PERSONAL_OFF: Final = "Personal memories are turned off on this server (`/capabilities`): nothing was saved."
UNSEEN: Final = "That message is in a channel you cannot see, so I cannot remember it for you."
NO_SERVER_HERE: Final = (
    "Someone else's message becomes a memory of the server it was said in; a direct message has no "
    "server. Nothing was saved."
)
NOT_A_MESSAGE: Final = "Use it from a message's Apps menu."


def add_personal(interaction: Interaction, context: CommandContext) -> dict:
    """A memory about the asker, by them: the main persona's, or every persona's (lineage 0)."""
    values = interaction.option_values()
    content = _content(values.get(CONTENT_OPTION), context, EMPTY)
    days = _days(values.get(EXPIRES_OPTION))
    config = _config(interaction, context)
    if not config.capabilities.personal_memories_enabled:
        raise Refused(Refusal.NOTHING_SAVED, PERSONAL_OFF)
    lineage = GLOBAL_LINEAGE if values.get(ALL_PERSONAS_OPTION) is True else config.main_persona.lineage_id
    return _queue(interaction, context, content, MemoryRequest(True, lineage, days))


def add_server(interaction: Interaction, context: CommandContext) -> dict:
    """A server memory of a persona's lineage (the main one's by default), said in this channel."""
    check_manager(interaction)
    values = interaction.option_values()
    content = _content(values.get(CONTENT_OPTION), context, EMPTY)
    days = _days(values.get(EXPIRES_OPTION))
    persona = persona_option(load_server_config(interaction, context), values.get(PERSONA_OPTION))
    request = MemoryRequest(False, persona.lineage_id, days, manages_server=True)
    return _queue(interaction, context, content, request)


def remember_this(interaction: Interaction, context: CommandContext) -> dict:
    """One's own message: a personal memory about oneself. Someone else's: a server memory said in
    that message's channel, by the asker (pending where members' memories wait for review); never a
    personal memory about someone else."""
    said = _target_message(interaction)
    invoker = interaction.invoker
    if invoker is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, NOT_A_MESSAGE)
    if interaction.guild_id is None and not interaction.in_bot_dm:
        raise Refused(Refusal.NOT_ALLOWED, NO_SERVER_HERE)
    if interaction.guild_id is not None:
        permissions = permission_bits(interaction.member.permissions) if interaction.member else None
        if not (permissions or 0) & (Permission.VIEW_CHANNEL | Permission.ADMINISTRATOR):
            raise Refused(Refusal.NOT_ALLOWED, UNSEEN)
    if said.content.strip() == "" and said.attachments:
        raise Refused(Refusal.NOTHING_SAVED, ATTACHMENT_ONLY)
    content = _content(said.content, context, EMPTY_MESSAGE)
    config = _config(interaction, context)
    lineage = config.main_persona.lineage_id
    if said.author.id == invoker.id:
        if not config.capabilities.personal_memories_enabled:
            raise Refused(Refusal.NOTHING_SAVED, PERSONAL_OFF)
        return _queue(interaction, context, content, MemoryRequest(True, lineage, message_id=said.id))
    if interaction.guild_id is None:
        raise Refused(Refusal.NOTHING_SAVED, NO_SERVER_HERE)
    request = MemoryRequest(False, lineage, manages_server=manages_server(interaction), message_id=said.id)
    return _queue(interaction, context, content, request)


def _target_message(interaction: Interaction) -> Message:
    """The message the command was used on, as Discord resolved it; only one of this channel: the
    asker sees the channel they use the command in, and no other is taken on their word."""
    said = interaction.target_message()
    if said is None or not interaction.channel_id:
        raise Refused(Refusal.NOT_UNDERSTOOD, NOT_A_MESSAGE)
    if (
        said.id != interaction.data.get("target_id")
        or (said.channel_id or interaction.channel_id) != interaction.channel_id
    ):
        raise Refused(Refusal.NOT_ALLOWED, UNSEEN)
    return said


def _content(raw: Any, context: CommandContext, empty: str) -> str:
    """The text as the create tool takes it: trimmed, at most ``MAX_MEMORY_LENGTH``, no stray placeholders."""
    text = raw.strip() if isinstance(raw, str) else ""
    if not text:
        raise Refused(Refusal.NOTHING_SAVED, empty)
    limit = context.settings.MAX_MEMORY_LENGTH
    if len(text) > limit:
        raise Refused(Refusal.NOTHING_SAVED, TOO_LONG.format(length=len(text), limit=limit))
    try:
        return clean_content(text)
    except InvalidArguments:
        raise Refused(Refusal.NOTHING_SAVED, empty) from None


def _days(raw: Any) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or not MIN_DAYS <= raw <= MAX_DAYS:
        raise Refused(Refusal.NOT_UNDERSTOOD, BAD_DAYS)
    return raw


def _config(interaction: Interaction, context: CommandContext) -> ServerConfig:
    return load_server_config(interaction, context) if interaction.guild_id else ServerConfig()


def _queue(interaction: Interaction, context: CommandContext, content: str, request: MemoryRequest) -> dict:
    return queue_for_worker(interaction, context, TurnSource.MEMORY, content, request)


def queue_for_worker(
    interaction: Interaction,
    context: CommandContext,
    source: TurnSource,
    content: str = "",
    memory: MemoryRequest | None = None,
) -> dict:
    """Queue what the worker finishes for this interaction, and answer "thinking…", seen only by
    the asker: the worker edits that answer."""
    invoker = interaction.invoker
    if invoker is None or interaction.channel_id is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, "I could not tell who is asking.")
    job = TurnJob(
        source=source,
        turn_id=interaction.id,
        channel_id=interaction.channel_id,
        guild_id=interaction.guild_id,
        author=invoker,
        member=interaction.member if memory else None,
        content=content,
        interaction_token=interaction.token,
        application_id=interaction.application_id,
        memory=memory,
    )
    context.turn_queue.enqueue(job)
    return {
        "type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE,
        "data": {"flags": MessageFlag.EPHEMERAL},
    }


def _expires_option() -> dict[str, Any]:
    return {
        "type": OptionType.INTEGER,
        "name": EXPIRES_OPTION,
        "description": f"Forget it after this many days ({MIN_DAYS}-{MAX_DAYS}); none: keep it",
        "min_value": MIN_DAYS,
        "max_value": MAX_DAYS,
    }


def _content_option(description: str) -> dict[str, Any]:
    return {
        "type": OptionType.STRING,
        "name": CONTENT_OPTION,
        "description": description,
        "required": True,
    }


PERSONAL_ADD_OPTION: Final = {
    "type": OptionType.SUB_COMMAND,
    "name": ADD,
    "description": "Write a memory about yourself",
    "options": [
        _content_option("The fact about you to remember"),
        {
            "type": OptionType.BOOLEAN,
            "name": ALL_PERSONAS_OPTION,
            "description": "Remembered by every persona (and counted in each one's limit)",
        },
        _expires_option(),
    ],
}
SERVER_ADD_OPTION: Final = {
    "type": OptionType.SUB_COMMAND,
    "name": ADD,
    "description": "Write a server memory, said in this channel",
    "options": [
        _content_option("The fact to remember for the server"),
        {
            "type": OptionType.STRING,
            "name": PERSONA_OPTION,
            "description": "Whose memory it is (default: the main persona)",
            "autocomplete": True,
        },
        _expires_option(),
    ],
}

REMEMBER_COMMAND: Final = Command(
    name=REMEMBER_THIS, description="", on_command=remember_this, kind=CommandType.MESSAGE
)
