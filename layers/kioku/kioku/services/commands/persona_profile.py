"""``/persona view`` and ``/persona edit``: a persona's name and personality in this server (without
``persona:``, the main persona's). The edit form's custom_id carries the configuration version it
was filled from (and, for an alter persona, which one), so a submit never overwrites a change saved
meanwhile. The name is the speaker label and ``{bot}`` in the prompts; the personality replaces the
default opening of the system prompt."""

from __future__ import annotations

from typing import Final

from kioku.discord.interaction import Interaction
from kioku.discord.responses import message
from kioku.discord.ui import (
    EMBED_COLOR_INFO,
    InvalidModalSubmit,
    TextInput,
    TextInputStyle,
    modal,
    submitted_values,
)
from kioku.domain.models import Persona, ServerConfig
from kioku.domain.persona_limits import MAX_PERSONA_NAME_CHARS, MAX_PERSONA_PROMPT_CHARS
from kioku.domain.personas import alter_name_problems, with_persona
from kioku.domain.settings_edit import InvalidSettingsEdit, apply_persona
from kioku.domain.text import shorten
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import CustomId, hexadecimal, number
from kioku.services.commands.guild_admin import load_server_config, managed
from kioku.services.commands.persona_roster import (
    PERSONA_OPTION,
    persona_card,
    persona_option,
    persona_tag,
)

MAX_EMBED_DESCRIPTION_CHARS: Final = 4096

# -- /persona view and /persona edit: the name and the personality -----------------------------------

PERSONA_FORM: Final = CustomId("persona", "edit", number("version", 12))
ALTER_PERSONA_FORM: Final = CustomId(
    "persona", "edit-alter", hexadecimal("persona", 8), number("version", 12)
)
"""An alter persona's form: which persona (``_persona_tag``) and the configuration version it showed."""
NAME_INPUT: Final = "name"
PROMPT_INPUT: Final = "prompt"
DEFAULT_PERSONALITY_SHOWN: Final = (
    "*The default personality:* a friendly, thoughtful member of this community who remembers what "
    "people say. `/persona edit` gives me another (the name is `{bot}` in it)."
)


def on_persona_view(interaction: Interaction, context: CommandContext) -> dict:
    config = (
        context.config_store.get_server_config(interaction.guild_id)
        if interaction.guild_id
        else ServerConfig()
    )
    persona = persona_option(config, interaction.option_values().get(PERSONA_OPTION))
    if persona.alter:
        embed = persona_embed(persona, f"{persona.name}, {_where(interaction)}")
        embed["fields"] += persona_card(config, persona, "")["fields"]
        return message(embeds=[embed])
    return message(embeds=[persona_embed(persona, f"Who I am {_where(interaction)}")])


@managed
def on_persona_edit(interaction: Interaction, context: CommandContext) -> dict:
    config = load_server_config(interaction, context)
    persona = persona_option(config, interaction.option_values().get(PERSONA_OPTION))
    form = (
        ALTER_PERSONA_FORM.encode(persona_tag(persona), config.version)
        if persona.alter
        else PERSONA_FORM.encode(config.version)
    )
    return modal(
        form,
        f"The persona {persona.name}" if persona.alter else "The persona",
        [
            TextInput(
                NAME_INPUT,
                "Name",
                value=persona.name,
                style=TextInputStyle.SHORT,
                max_length=MAX_PERSONA_NAME_CHARS,
                required=True,
            ),
            TextInput(
                PROMPT_INPUT,
                "Personality (blank: the default one)",
                value=persona.system_prompt,
                max_length=MAX_PERSONA_PROMPT_CHARS,
                placeholder="You are {bot}, … ({bot}: the name, {user}: who is talking)",
            ),
        ],
    )


@managed
def on_persona_form(interaction: Interaction, context: CommandContext, version: int) -> dict:
    """The submitted form of the main persona."""
    return _save_persona_form(interaction, context, version, None)


@managed
def on_alter_persona_form(interaction: Interaction, context: CommandContext, tag: str, version: int) -> dict:
    """The submitted form of the alter persona ``tag`` marks."""
    return _save_persona_form(interaction, context, version, tag)


def _save_persona_form(
    interaction: Interaction, context: CommandContext, version: int, tag: str | None
) -> dict:
    """The submitted persona form, saved only if the configuration is still the version it showed."""
    from kioku.domain.models import StaleConfiguration

    values = submitted_values(interaction.data)
    if set(values) != {NAME_INPUT, PROMPT_INPUT}:
        raise InvalidModalSubmit("the form came back without its fields")
    config = load_server_config(interaction, context)
    if config.version != version:
        raise StaleConfiguration(config)
    edited = (
        config.main_persona
        if tag is None
        else next((p for p in config.alters if persona_tag(p) == tag), None)
    )
    if edited is None:
        raise StaleConfiguration(config)  # removed meanwhile
    persona = apply_persona(edited, values[NAME_INPUT], values[PROMPT_INPUT])
    if persona.alter and (problems := alter_name_problems(persona.name)):
        raise InvalidSettingsEdit(problems)
    namesake = config.persona_named(persona.name)
    if namesake is not None and namesake.persona_id != persona.persona_id:
        raise InvalidSettingsEdit([f"there is already a persona called **{persona.name}**"])
    saved = context.config_store.save_server_config(with_persona(config, persona))
    shown = saved.persona_by_id(persona.persona_id) or persona
    return message(
        embeds=[persona_embed(shown, f"Saved: {shown.name}" if shown.alter else "Saved: the persona")]
    )


def persona_embed(persona: Persona, title: str) -> dict:
    # the default's text lives with the turn code, which this function does not load
    personality = persona.system_prompt or DEFAULT_PERSONALITY_SHOWN
    return {
        "title": title,
        "color": EMBED_COLOR_INFO,
        "fields": [{"name": "Name", "value": persona.name, "inline": False}],
        "description": shorten(personality, MAX_EMBED_DESCRIPTION_CHARS),
    }


def _where(interaction: Interaction) -> str:
    return "in this server" if interaction.guild_id else "in direct messages"
