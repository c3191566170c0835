"""``/persona add|list|remove|nickname``: a server's alter personas, and what a persona calls a member.

An alter persona speaks through a webhook kioku creates in the channel (Manage Webhooks), with its
own name, avatar, personality, trigger words and short-term memory, and the long-term memories of its
lineage: its own, or another persona's (``memories_from``). ``add``, ``remove`` and ``nickname`` need
Manage Server; ``remove`` asks first, naming what goes with the persona.
"""

from __future__ import annotations

import zlib
from typing import Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType, Permission, permission_bits
from kioku.discord.responses import autocomplete, message, updated_message
from kioku.discord.ui import EMBED_COLOR_ERROR, EMBED_COLOR_INFO, Button, ButtonStyle, action_rows
from kioku.domain.ltm.wording import counted
from kioku.domain.models import Persona, ServerConfig, StaleConfiguration
from kioku.domain.persona_limits import MAX_PERSONA_NAME_CHARS, MAX_PERSONA_PROMPT_CHARS
from kioku.domain.personas import (
    MAX_AVATAR_URL_CHARS,
    MAX_NICKNAME_CHARS,
    whose_name,
    with_nickname,
    with_persona,
)
from kioku.domain.text import one_line_name, shorten
from kioku.services import personas
from kioku.services.commands.base import Handler
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import CustomId, digits, number, one_of
from kioku.services.commands.error_replies import Refusal, Refused
from kioku.services.commands.guild_admin import load_server_config, managed

ADD, LIST, REMOVE, NICKNAME = "add", "list", "remove", "nickname"
PERSONA_OPTION: Final = "persona"
CONFIRM, CANCEL = "confirm", "cancel"
REMOVE_BUTTON: Final = CustomId(
    "persona", REMOVE, one_of("choice", CONFIRM, CANCEL), digits("persona", 20), number("version", 12)
)
"""The persona to remove and the configuration version the confirmation counted from."""
NO_WEBHOOKS: Final = (
    "I lack the **Manage Webhooks** permission in this channel, so alter personas cannot speak here "
    "(the main persona still does). Give it to kioku's role to let them."
)


def persona_option(config: ServerConfig, value: Any, *, main_by_default: bool = True) -> Persona:
    """The persona a ``persona:`` option names (none: the main persona), or a refusal."""
    if value is None and main_by_default:
        return config.main_persona
    persona = config.persona_named(value) if isinstance(value, str) else None
    if persona is None:
        names = ", ".join(f"**{p.name}**" for p in config.personas)
        raise Refused(
            Refusal.NOT_UNDERSTOOD, f"There is no persona called **{value}** here. Personas: {names}."
        )
    return persona


@managed
def on_add(interaction: Interaction, context: CommandContext) -> dict:
    values = interaction.option_values()
    config = load_server_config(interaction, context)
    saved, persona = personas.add_persona(
        context.config_store,
        config,
        persona_id=interaction.id,
        name=str(values.get("name", "")),
        prompt=str(values.get("prompt", "")),
        avatar_url=_text_or_none(values.get("avatar_url")),
        memories_from=_text_or_none(values.get("memories_from")),
        max_personas=context.settings.MAX_PERSONAS_PER_SERVER,
    )
    embed = persona_card(saved, persona, f"Added: {persona.name}")
    embed["description"] = (
        f"Call {persona.name} by starting a message with the name (“{persona.name}, …”), by replying to "
        f"its messages, or with trigger words (`/server addressing persona:{persona.name}`)."
    )
    if not _can_manage_webhooks(interaction):
        embed["fields"].append({"name": "Not in this channel yet", "value": NO_WEBHOOKS, "inline": False})
    return message(embeds=[embed])


def on_list(interaction: Interaction, context: CommandContext) -> dict:
    if interaction.guild_id is None:
        raise Refused(Refusal.SERVER_ONLY, "Personas belong to a server: run this inside one.")
    config = load_server_config(interaction, context)
    lines = [_summary(config, persona) for persona in config.personas]
    embed: dict[str, Any] = {
        "title": "Personas in this server",
        "description": shorten("\n".join(lines), 4096),
        "color": EMBED_COLOR_INFO,
        "footer": {"text": f"{len(config.personas)} of {context.settings.MAX_PERSONAS_PER_SERVER} personas"},
    }
    if config.alters and not _can_manage_webhooks(interaction):
        embed["fields"] = [
            {"name": "Alter personas cannot speak here", "value": NO_WEBHOOKS, "inline": False}
        ]
    return message(embeds=[embed])


@managed
def on_remove(interaction: Interaction, context: CommandContext) -> dict:
    config = load_server_config(interaction, context)
    persona = persona_option(config, interaction.option_values().get(PERSONA_OPTION), main_by_default=False)
    if not persona.alter:
        raise Refused(
            Refusal.NOTHING_CHANGED, "The main persona cannot be removed; `/persona edit` changes it."
        )
    footprint = personas.footprint(config, persona, context.stm_store, context.ltm_store)
    embed = {
        "title": f"Remove {persona.name}?",
        "color": EMBED_COLOR_ERROR,
        "description": _footprint_text(persona, footprint, will=True),
    }
    buttons = action_rows(
        [
            [
                Button(
                    REMOVE_BUTTON.encode(CONFIRM, persona.persona_id, config.version),
                    f"Remove {persona.name}",
                    style=ButtonStyle.DANGER,
                ),
                Button(REMOVE_BUTTON.encode(CANCEL, persona.persona_id, config.version), "Cancel"),
            ]
        ]
    )
    return message(embeds=[embed], components=buttons)


@managed
def on_remove_button(
    interaction: Interaction, context: CommandContext, choice: str, persona_id: str, version: int
) -> dict:
    if choice == CANCEL:
        return updated_message(embeds=[{"title": "Nothing was removed.", "color": EMBED_COLOR_INFO}])
    config = load_server_config(interaction, context)
    persona = config.persona_by_id(persona_id)
    if persona is None or not persona.alter:
        raise Refused(Refusal.NOTHING_CHANGED, "That persona is not here any more.")
    if config.version != version:
        # what the confirmation counted may have changed (another persona now shares the lineage)
        raise StaleConfiguration(config)
    footprint = personas.remove_persona(
        context.config_store, config, persona, context.stm_store, context.ltm_store, context.webhook_store
    )
    return updated_message(
        embeds=[
            {
                "title": f"Removed: {persona.name}",
                "description": _footprint_text(persona, footprint, will=False),
                "color": EMBED_COLOR_INFO,
            }
        ]
    )


@managed
def on_nickname(interaction: Interaction, context: CommandContext) -> dict:
    values = interaction.option_values()
    config = load_server_config(interaction, context)
    persona = persona_option(config, values.get(PERSONA_OPTION), main_by_default=False)
    member = values.get("member")
    if not isinstance(member, str):
        raise Refused(Refusal.NOT_UNDERSTOOD, "Name the member with `member:`.")
    nickname = _text_or_none(values.get("nickname"))
    if nickname is not None:
        _refuse_someone_elses_name(interaction, context, member, nickname)
    called = with_nickname(persona, member, nickname)
    context.config_store.save_server_config(with_persona(config, called))
    said = (
        f"{persona.name} now calls <@{member}> **{called.nickname_of(member)}**."
        if nickname
        else (f"{persona.name} calls <@{member}> by their own name again.")
    )
    return message(embeds=[{"title": "Saved: a nickname", "description": said, "color": EMBED_COLOR_INFO}])


def _refuse_someone_elses_name(
    interaction: Interaction, context: CommandContext, member: str, nickname: str
) -> None:
    """A nickname that is another member's name would have a persona save what they say about
    themself about ``member``: refused, naming whose it is, among the people the interaction tells
    of (who runs it) and those kioku keeps lines of in this server."""
    known = context.stm_store.speakers(interaction.guild_id or "")
    invoker = interaction.invoker
    if invoker is not None:
        nick = interaction.member.nick if interaction.member else None
        names = (invoker.username, invoker.global_name, nick)
        known.setdefault(invoker.id, set()).update(name for name in names if name)
    owner = whose_name(nickname, member, known)
    if owner is not None:
        raise Refused(
            Refusal.NOTHING_SAVED,
            f"**{one_line_name(nickname)}** is <@{owner}>'s name: what they say about themself would be "
            f"saved about <@{member}>. Choose another nickname.",
        )


def persona_card(config: ServerConfig, persona: Persona, title: str) -> dict[str, Any]:
    fields = [
        {
            "name": "Speaks",
            "value": "through a channel webhook" if persona.alter else "as the bot",
            "inline": True,
        },
        {"name": "Long-term memories", "value": _lineage_text(config, persona), "inline": True},
        {"name": "Trigger words", "value": _words(config, persona), "inline": False},
    ]
    embed: dict[str, Any] = {"title": title, "color": EMBED_COLOR_INFO, "fields": fields}
    if persona.avatar_url:
        embed["thumbnail"] = {"url": persona.avatar_url}
    return embed


def _summary(config: ServerConfig, persona: Persona) -> str:
    kind = "alter persona" if persona.alter else "main persona"
    return f"**{persona.name}** ({kind}) · trigger words: {_words(config, persona)} · memories: {_lineage_text(config, persona)}"


def _words(config: ServerConfig, persona: Persona) -> str:
    words = persona.trigger_words if persona.alter else config.trigger_words
    return ", ".join(f"`{word}`" for word in words) or "none"


def _lineage_text(config: ServerConfig, persona: Persona) -> str:
    sharers = config.lineage_sharers(persona)
    if not sharers:
        return "its own"
    return "shared with " + ", ".join(f"**{p.name}**" for p in sharers)


def _footprint_text(persona: Persona, footprint: personas.Footprint, *, will: bool) -> str:
    rows = counted(footprint.stm_rows, "short-term memory row", "short-term memory rows")

    def go(count: int) -> str:
        return ("goes" if count == 1 else "go") if will else "went"

    if footprint.sharers:
        shared = ", ".join(f"**{p.name}**" for p in footprint.sharers)
        memories = f"Its long-term memories stay: {shared} shares them."
    else:
        memories = (
            f"{counted(footprint.memories, 'server long-term memory', 'server long-term memories')} "
            f"of its lineage {go(footprint.memories)} with it (no other persona shares them)."
        )
    lead = (
        f"{persona.name}'s {rows} in this server {go(footprint.stm_rows)} with it."
        if will
        else f"{rows} deleted."
    )
    tail = " It cannot be undone." if will else ""
    return f"{lead} {memories}{tail}"


def persona_tag(persona: Persona) -> str:
    """A short, fixed-length mark of the persona the form was opened for (custom_ids hold 100 chars)."""
    return f"{zlib.crc32(f'{persona.persona_id}#{persona.lineage_id}'.encode()):08x}"


def _can_manage_webhooks(interaction: Interaction) -> bool:
    bits = permission_bits(interaction.app_permissions)
    if bits is None:
        return True  # not told: assume it can, the turn says so if not
    return bool(bits & (Permission.MANAGE_WEBHOOKS | Permission.ADMINISTRATOR))


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


HANDLERS: Final[dict[tuple[str, ...], Handler]] = {
    (ADD,): on_add,
    (LIST,): on_list,
    (REMOVE,): on_remove,
    (NICKNAME,): on_nickname,
}
BUTTONS: Final = {REMOVE_BUTTON: on_remove_button}


def _persona_name_option(description: str, *, required: bool) -> dict[str, Any]:
    return {
        "type": OptionType.STRING,
        "name": PERSONA_OPTION,
        "description": description,
        "required": required,
        "max_length": MAX_PERSONA_NAME_CHARS,
        "autocomplete": True,
    }


PERSONA_NAME_OPTIONS: Final = frozenset({PERSONA_OPTION, "memories_from"})


def persona_choices(interaction: Interaction, context: CommandContext) -> list[dict[str, str]]:
    """The server's personas whose names hold what is typed (those starting with it first), as the
    choices of a ``persona:`` or ``memories_from:`` being typed; none in a DM or for another option."""
    focused = interaction.focused_option()
    if focused is None or focused[0] not in PERSONA_NAME_OPTIONS or interaction.guild_id is None:
        return []
    typed = " ".join(focused[1].casefold().split())
    names = [p.name for p in load_server_config(interaction, context).personas]
    matching = [name for name in names if typed in name.casefold()]
    matching.sort(key=lambda name: not name.casefold().startswith(typed))
    return [{"name": name, "value": name} for name in matching]


def on_persona_autocomplete(interaction: Interaction, context: CommandContext) -> dict:
    return autocomplete(persona_choices(interaction, context))


OPTIONS: Final = [
    {
        "type": OptionType.SUB_COMMAND,
        "name": ADD,
        "description": "Add an alter persona, speaking through a channel webhook (Manage Server)",
        "options": [
            {
                "type": OptionType.STRING,
                "name": "name",
                "description": "What it is called",
                "required": True,
                "max_length": MAX_PERSONA_NAME_CHARS,
            },
            {
                "type": OptionType.STRING,
                "name": "prompt",
                "description": "Its personality ({bot}: its name)",
                "required": True,
                "max_length": MAX_PERSONA_PROMPT_CHARS,
            },
            {
                "type": OptionType.STRING,
                "name": "avatar_url",
                "description": "An https:// image for its avatar",
                "max_length": MAX_AVATAR_URL_CHARS,
            },
            {
                "type": OptionType.STRING,
                "name": "memories_from",
                "description": "Share this persona's long-term memories",
                "max_length": MAX_PERSONA_NAME_CHARS,
                "autocomplete": True,
            },
        ],
    },
    {"type": OptionType.SUB_COMMAND, "name": LIST, "description": "The server's personas"},
    {
        "type": OptionType.SUB_COMMAND,
        "name": REMOVE,
        "description": "Remove an alter persona and what it keeps (Manage Server; asks first)",
        "options": [_persona_name_option("The persona to remove", required=True)],
    },
    {
        "type": OptionType.SUB_COMMAND,
        "name": NICKNAME,
        "description": "What a persona calls a member (Manage Server)",
        "options": [
            _persona_name_option("The persona", required=True),
            {"type": OptionType.USER, "name": "member", "description": "The member", "required": True},
            {
                "type": OptionType.STRING,
                "name": "nickname",
                "description": "What it calls them",
                "required": True,
                "max_length": MAX_NICKNAME_CHARS,
            },
        ],
    },
]
