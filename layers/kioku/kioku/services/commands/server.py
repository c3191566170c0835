"""``/server …``: a manager's settings. ``stm``: short-term memory parameters, prompt texts,
categories; ``privacy`` (``server_privacy``) and ``memories`` (``server_memories``) live beside.

The two edit commands answer with a form (a modal). Its custom_id carries the configuration
version the form was filled from, so a submit never overwrites a change saved in the meantime.
Buttons (``server:memories:…``) are checked like the commands: Manage Server, on every click.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Final

from kioku.config import Settings
from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType
from kioku.discord.responses import autocomplete, message
from kioku.discord.ui import (
    EMBED_COLOR_INFO,
    MAX_MODAL_INPUTS,
    InvalidModalSubmit,
    TextInput,
    TextInputStyle,
    modal,
    submitted_values,
)
from kioku.domain.models import ANCHORED_TOP_DEPTH, RenderMode, ServerConfig, StmConfig
from kioku.domain.settings_edit import (
    INTEGER_RANGES,
    MAX_CATEGORY_LINE_CHARS,
    MAX_PROMPT_OVERRIDE_CHARS,
    PROMPT_PLACEHOLDERS,
    apply_parameters,
    apply_prompt_overrides,
    category_line,
    parse_categories,
)
from kioku.services.commands import persona_roster, server_addressing, server_memories, server_privacy
from kioku.services.commands.base import Command, Handler
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import CustomId, number
from kioku.services.commands.guild_admin import MANAGE_SERVER, check_manager, load_server_config, managed

NAME: Final = "server"
GROUP: Final = "stm"
PARAMETERS: Final = "parameters"
PROMPT_EDIT: Final = "prompt-edit"
CATEGORIES_EDIT: Final = "categories-edit"
TOOL_DESCRIPTION_INPUT: Final = "tool_description"
UPDATE_NUDGE_INPUT: Final = "update_nudge"
CATEGORY_INPUT_PREFIX: Final = "category_"
CONFIGURATION_VERSION: Final = number("version", 12)
"""The configuration version a form was filled from: a submit saves only onto that version."""
PROMPT_FORM: Final = CustomId(NAME, PROMPT_EDIT, CONFIGURATION_VERSION)
CATEGORIES_FORM: Final = CustomId(NAME, CATEGORIES_EDIT, CONFIGURATION_VERSION)

PARAMETER_DESCRIPTIONS: Final = {
    "refresh_cadence": "Turns between reminders to refresh the summary (default 5)",
    "crude_message_count": "Raw messages shown per other channel (default from the environment)",
    "nudge_depth": "Dialogue turns from the bottom where the reminder goes (default 2)",
    "content_depth": "Turns from the bottom for the memory block; -1 keeps it near the top (default)",
}


def show_or_set_parameters(interaction: Interaction, context: CommandContext) -> dict:
    config = load_server_config(interaction, context)
    values = interaction.option_values()
    if not values:
        return message(
            embeds=[parameters_embed(config.stm, "Short-term memory parameters", context.settings)]
        )
    saved = context.config_store.save_server_config(replace(config, stm=apply_parameters(config.stm, values)))
    return message(
        embeds=[parameters_embed(saved.stm, "Saved: short-term memory parameters", context.settings)]
    )


def open_prompt_form(interaction: Interaction, context: CommandContext) -> dict:
    config = load_server_config(interaction, context)
    return modal(
        PROMPT_FORM.encode(config.version),
        "Short-term memory prompts",
        [
            TextInput(
                TOOL_DESCRIPTION_INPUT,
                "Tool description (blank: our default)",
                value=config.stm.tool_description_override or "",
                placeholder="How the model should write its short-term memory",
                max_length=MAX_PROMPT_OVERRIDE_CHARS,
            ),
            TextInput(
                UPDATE_NUDGE_INPUT,
                "Reminder text (blank: our default)",
                value=config.stm.update_nudge_override or "",
                placeholder="What the model is told when its memory is due for a refresh",
                max_length=MAX_PROMPT_OVERRIDE_CHARS,
            ),
        ],
    )


def save_prompts(interaction: Interaction, context: CommandContext, config: ServerConfig) -> dict:
    values = submitted_values(interaction.data)
    if TOOL_DESCRIPTION_INPUT not in values or UPDATE_NUDGE_INPUT not in values:
        raise InvalidModalSubmit("the form came back without its fields")
    stm = apply_prompt_overrides(config.stm, values[TOOL_DESCRIPTION_INPUT], values[UPDATE_NUDGE_INPUT])
    saved = context.config_store.save_server_config(replace(config, stm=stm))
    return message(embeds=[prompts_embed(saved.stm)])


def open_categories_form(interaction: Interaction, context: CommandContext) -> dict:
    config = load_server_config(interaction, context)
    lines = [category_line(category) for category in config.categories]
    rows = [
        TextInput(
            f"{CATEGORY_INPUT_PREFIX}{number}",
            f"Category {number}",
            style=TextInputStyle.SHORT,
            value=lines[number - 1] if number <= len(lines) else "",
            placeholder="Label: description (e.g. Plans: what people mean to do next)",
            max_length=MAX_CATEGORY_LINE_CHARS,
        )
        for number in range(1, _category_capacity(context.settings) + 1)
    ]
    return modal(CATEGORIES_FORM.encode(config.version), "Short-term memory categories", rows)


def save_categories(interaction: Interaction, context: CommandContext, config: ServerConfig) -> dict:
    values = submitted_values(interaction.data)
    expected = [
        f"{CATEGORY_INPUT_PREFIX}{number}" for number in range(1, _category_capacity(context.settings) + 1)
    ]
    if sorted(values) != sorted(expected):
        raise InvalidModalSubmit("the form came back without its fields")
    lines = [values[key] for key in expected]
    categories = parse_categories(lines, config.categories, _category_capacity(context.settings))
    saved = context.config_store.save_server_config(replace(config, categories=categories))
    return message(embeds=[categories_embed(saved)])


SUBCOMMANDS: Final[dict[tuple[str, ...], Handler]] = {
    (GROUP, PARAMETERS): show_or_set_parameters,
    (GROUP, PROMPT_EDIT): open_prompt_form,
    (GROUP, CATEGORIES_EDIT): open_categories_form,
    **server_privacy.HANDLERS,
    **server_memories.HANDLERS,
    **server_addressing.HANDLERS,
}


def saved_if_current(
    save: Callable[[Interaction, CommandContext, ServerConfig], dict],
) -> Callable[..., dict]:
    """A form's handler: ``save`` runs only for a manager, and only if the configuration is still the
    version the form was filled from."""

    @managed
    def submit(interaction: Interaction, context: CommandContext, version: int) -> dict:
        from kioku.domain.models import StaleConfiguration

        config = load_server_config(interaction, context)
        if config.version != version:
            raise StaleConfiguration(config)
        return save(interaction, context, config)

    return submit


def parameters_embed(stm: StmConfig, title: str, settings: Settings) -> dict:
    default_crude = settings.SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT
    crude = f"{default_crude} (default)" if stm.crude_message_count is None else str(stm.crude_message_count)
    content = (
        f"{ANCHORED_TOP_DEPTH} (near the top)"
        if stm.content_injection_depth == ANCHORED_TOP_DEPTH
        else str(stm.content_injection_depth)
    )
    fields = (
        ("refresh_cadence", f"{stm.refresh_cadence} turns"),
        ("render_mode", stm.render_mode.value),
        ("crude_message_count", crude),
        ("nudge_depth", str(stm.nudge_injection_depth)),
        ("content_depth", content),
    )
    return {
        "title": title,
        "color": EMBED_COLOR_INFO,
        "fields": [{"name": name, "value": value, "inline": True} for name, value in fields],
    }


def prompts_embed(stm: StmConfig) -> dict:
    def state(override: str | None) -> str:
        return f"custom ({len(override)} characters)" if override else "our default"

    placeholders = ", ".join(f"`{placeholder}`" for placeholder in PROMPT_PLACEHOLDERS)
    return {
        "title": "Saved: short-term memory prompts",
        "description": f"{placeholders} are filled in when the text is used; any other `{{placeholder}}` loses its braces.",
        "color": EMBED_COLOR_INFO,
        "fields": [
            {"name": "Tool description", "value": state(stm.tool_description_override), "inline": True},
            {"name": "Reminder text", "value": state(stm.update_nudge_override), "inline": True},
        ],
    }


def categories_embed(config: ServerConfig) -> dict:
    if not config.categories:
        description = "No categories: I keep one running summary per channel."
    else:
        description = "\n".join(
            f"{category.position + 1}. **{category.label}** (`{category.slug}`)"
            + (f": {category.description}" if category.description else "")
            for category in config.categories
        )
    return {
        "title": "Saved: short-term memory categories",
        "description": description,
        "color": EMBED_COLOR_INFO,
    }


def _category_capacity(settings: Settings) -> int:
    return min(settings.STM_MAX_CATEGORIES, MAX_MODAL_INPUTS)


def _integer_option(name: str) -> dict:
    low, high = INTEGER_RANGES[name]
    return {
        "type": OptionType.INTEGER,
        "name": name,
        "description": PARAMETER_DESCRIPTIONS[name],
        "min_value": low,
        "max_value": high,
    }


def on_autocomplete(interaction: Interaction, context: CommandContext) -> dict:
    """``persona:`` of /server addressing, ``memory_id:`` of /server memories."""
    choices = persona_roster.persona_choices(interaction, context)
    return autocomplete(choices or server_memories.memory_choices(interaction, context))


COMMAND = Command(
    name=NAME,
    description="Server settings for kioku",
    options=[
        {
            "type": OptionType.SUB_COMMAND_GROUP,
            "name": GROUP,
            "description": "Short-term memory settings",
            "options": [
                {
                    "type": OptionType.SUB_COMMAND,
                    "name": PARAMETERS,
                    "description": "Show or change cadence, render mode and placement",
                    "options": [
                        _integer_option("refresh_cadence"),
                        {
                            "type": OptionType.STRING,
                            "name": "render_mode",
                            "description": "How other channels' memory is shown",
                            "choices": [{"name": mode.value, "value": mode.value} for mode in RenderMode],
                        },
                        _integer_option("crude_message_count"),
                        _integer_option("nudge_depth"),
                        _integer_option("content_depth"),
                    ],
                },
                {
                    "type": OptionType.SUB_COMMAND,
                    "name": PROMPT_EDIT,
                    "description": "Edit the memory tool description and the refresh reminder",
                },
                {
                    "type": OptionType.SUB_COMMAND,
                    "name": CATEGORIES_EDIT,
                    "description": "Define the sections of short-term memory",
                },
            ],
        },
        server_privacy.OPTIONS,
        server_memories.OPTIONS,
        server_addressing.OPTIONS,
    ],
    on_autocomplete=on_autocomplete,
    subcommands=SUBCOMMANDS,
    guard=check_manager,
    # every click on a /server answer is checked like the commands: Manage Server, each time
    buttons={kind: managed(handler) for kind, handler in server_memories.BUTTONS.items()},
    forms={PROMPT_FORM: saved_if_current(save_prompts), CATEGORIES_FORM: saved_if_current(save_categories)},
    dm_permission=False,
    default_member_permissions=MANAGE_SERVER,
)
