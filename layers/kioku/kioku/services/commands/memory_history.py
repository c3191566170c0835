"""``/personal memories edit|history``, and how an edit and a history are shown (the server's
``/server memories edit|history`` show them too, from ``server_memories``).

Who may edit or read what is ``services.memory_edits``'s; every answer is ephemeral.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import THREAD_TYPES, OptionType
from kioku.discord.responses import message
from kioku.discord.ui import EMBED_COLOR_INFO, relative_time
from kioku.domain.ltm.arguments import MAX_EXPIRY_DAYS, MIN_EXPIRY_DAYS, expiry_days
from kioku.domain.ltm.memory import MAX_MEMORY_VERSIONS, ExpiryChange, Memory, ScopeKind
from kioku.domain.ltm.wording import counted, for_people, until_text
from kioku.domain.privacy import Place, PrivacyPolicy
from kioku.domain.text import shorten
from kioku.services import memory_edits
from kioku.services.commands.context import CommandContext
from kioku.services.commands.error_replies import Refusal, Refused

EDIT, HISTORY = "edit", "history"
MEMORY_ID_OPTION, CONTENT_OPTION = "memory_id", "content"
EXPIRES_OPTION, CLEAR_EXPIRY_OPTION = "expires_in_days", "clear_expiry"
MAX_MEMORY_ID: Final = 10**12
MAX_VERSION_CHARS: Final = 450
"""What a history shows of each text: the current one and ten earlier ones stay under Discord's
6,000 characters of embeds per message."""
BAD_MEMORY_ID: Final = "`memory_id` is the number shown as #12345 in `/personal memories list`."
NOTHING_TO_EDIT: Final = (
    "Give the memory's new `content`, a new `expires_in_days`, or `clear_expiry:True` (or both a "
    "text and one of them)."
)
TWO_EXPIRIES: Final = "Give either `expires_in_days` or `clear_expiry:True`, not both."

Render = Callable[[str], str]


def edited_embed(memory: Memory, render: Render) -> dict[str, Any]:
    """The answer to an edit: the new text, and that the old one is kept."""
    return {
        "title": f"Edited memory #{memory.memory_id}",
        "description": shorten(render(memory.content), MAX_VERSION_CHARS * 2),
        "color": EMBED_COLOR_INFO,
        "footer": {
            "text": f"The text it replaced is kept in its history ({_changed(memory)}). "
            + (f"Until {_day(memory.expires_at)}." if memory.expires_at else "It does not expire.")
        },
    }


def history_embed(memory: Memory, render: Render) -> dict[str, Any]:
    """A memory's current text and the texts it said before, newest first."""
    fields = [
        {
            "name": f"Now · since {relative_time(memory.updated_at)} · by {_who(memory.author_id)}"
            + until_text(memory.expires_at),
            "value": shorten(render(memory.content), MAX_VERSION_CHARS),
        }
    ]
    for version in reversed(memory.history):
        fields.append(
            {
                "name": f"From {relative_time(version.since)} until {relative_time(version.until)} · "
                f"by {_who(version.author_id)}, changed by {_who(version.changed_by)}"
                + until_text(version.expires_at),
                "value": shorten(render(version.content), MAX_VERSION_CHARS),
            }
        )
    if not memory.changes:
        description = "Never changed since it was saved."
    else:
        description = _changed(memory).capitalize() + "."
        if memory.changes > len(memory.history):
            description += f" Only the last {MAX_MEMORY_VERSIONS} earlier texts are kept."
    return {
        "title": f"History of memory #{memory.memory_id}",
        "description": description,
        "color": EMBED_COLOR_INFO,
        "fields": fields,
    }


def _changed(memory: Memory) -> str:
    return f"changed {counted(memory.changes, 'time', 'times')}"


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def _who(user_id: str) -> str:
    return f"<@{user_id}>" if user_id else "someone who asked to be forgotten"


def memory_id_of(interaction: Interaction) -> str:
    raw = interaction.option_values().get(MEMORY_ID_OPTION)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 < raw < MAX_MEMORY_ID:
        raise Refused(Refusal.NOT_UNDERSTOOD, BAD_MEMORY_ID)
    return str(raw)


def content_of(interaction: Interaction) -> str | None:
    """The edit's new text; None when it changes only the expiry."""
    raw = interaction.option_values().get(CONTENT_OPTION)
    if raw is not None and not isinstance(raw, str):
        raise Refused(Refusal.NOT_UNDERSTOOD, "`content` is the memory's new text.")
    return raw


def expiry_of(interaction: Interaction, now: datetime) -> ExpiryChange | None:
    """The edit's new expiry (``expires_in_days`` from ``now``, or none with ``clear_expiry:True``);
    None when it keeps the one it has."""
    values = interaction.option_values()
    days, clears = values.get(EXPIRES_OPTION), values.get(CLEAR_EXPIRY_OPTION)
    if clears is not None and not isinstance(clears, bool):
        raise Refused(Refusal.NOT_UNDERSTOOD, "`clear_expiry` is True or False.")
    if days is not None and clears:
        raise Refused(Refusal.NOT_UNDERSTOOD, TWO_EXPIRIES)
    if clears:
        return ExpiryChange(None)
    checked = expiry_days(days)
    return ExpiryChange.in_days(now, checked) if checked is not None else None


def edit_of(interaction: Interaction, now: datetime) -> tuple[str | None, ExpiryChange | None]:
    """What an edit asks for: a new text, a new expiry, or both; neither is refused."""
    text, expiry = content_of(interaction), expiry_of(interaction, now)
    if text is None and expiry is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, NOTHING_TO_EDIT)
    return text, expiry


def for_viewer(memory: Memory, user_id: str, bot_name: str) -> Render:
    """A text of ``memory`` as ``user_id`` reads it: "you" when it is about them."""
    about_you = memory.about == user_id
    return lambda text: for_people(text, about_you=about_you, name="someone", bot=bot_name)


# -- /personal memories edit|history ---------------------------------------------------------------


def personal_edit(interaction: Interaction, context: CommandContext) -> dict:
    invoker = interaction.invoker
    if invoker is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, "I could not tell who is asking.")
    memory_id = memory_id_of(interaction)
    text, expiry = edit_of(interaction, context.clock())
    place, policy = _where(interaction, context)
    memory = memory_edits.editable_by_person(invoker.id, memory_id, place, policy, context.ltm_store)
    if memory.scope.kind is ScopeKind.PERSONAL:
        policy = PrivacyPolicy(memory.origin.guild_id)
    edited = memory_edits.edit(
        memory,
        text,
        editor_id=invoker.id,
        editor_name=invoker.global_name or invoker.username or "someone",
        now=context.clock(),
        max_length=context.settings.MAX_MEMORY_LENGTH,
        store=context.ltm_store,
        policy=policy,
        expiry=expiry,
    )
    return message(embeds=[edited_embed(edited, for_viewer(edited, invoker.id, "I"))])


def personal_history(interaction: Interaction, context: CommandContext) -> dict:
    invoker = interaction.invoker
    if invoker is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, "I could not tell who is asking.")
    place, policy = _where(interaction, context)
    memory = memory_edits.history_for_person(
        invoker.id, memory_id_of(interaction), place, policy, context.ltm_store
    )
    return message(embeds=[history_embed(memory, for_viewer(memory, invoker.id, "I"))])


def _where(interaction: Interaction, context: CommandContext) -> tuple[Place, PrivacyPolicy]:
    """Where the command runs, and its server's privacy rules (a DM's: none)."""
    channel = interaction.channel
    parent = channel.parent_id if channel is not None and channel.type in THREAD_TYPES else None
    place = Place(interaction.guild_id, interaction.channel_id or "", parent)
    if interaction.guild_id is None:
        return place, PrivacyPolicy(None)
    return place, context.config_store.get_server_config(interaction.guild_id).privacy


PERSONAL_HANDLERS: Final = {EDIT: personal_edit, HISTORY: personal_history}

_MEMORY_ID: Final = {
    "type": OptionType.INTEGER,
    "name": MEMORY_ID_OPTION,
    "description": "The memory's number, as shown as #12345 in the list",
    "required": True,
    "min_value": 1,
    "autocomplete": True,
}
_CONTENT: Final = {
    "type": OptionType.STRING,
    "name": CONTENT_OPTION,
    "description": "The memory's new text (the old one is kept in its history)",
    "min_length": 1,
}
_EXPIRES: Final = {
    "type": OptionType.INTEGER,
    "name": EXPIRES_OPTION,
    "description": f"Forget it this many days from now ({MIN_EXPIRY_DAYS}-{MAX_EXPIRY_DAYS})",
    "min_value": MIN_EXPIRY_DAYS,
    "max_value": MAX_EXPIRY_DAYS,
}
_CLEAR_EXPIRY: Final = {
    "type": OptionType.BOOLEAN,
    "name": CLEAR_EXPIRY_OPTION,
    "description": "True: it no longer expires",
}


def options(edit_description: str, history_description: str) -> list[dict[str, Any]]:
    """The ``edit`` and ``history`` subcommands, as a ``memories`` group registers them."""
    return [
        {
            "type": OptionType.SUB_COMMAND,
            "name": EDIT,
            "description": edit_description,
            "options": [_MEMORY_ID, _CONTENT, _EXPIRES, _CLEAR_EXPIRY],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": HISTORY,
            "description": history_description,
            "options": [_MEMORY_ID],
        },
    ]
