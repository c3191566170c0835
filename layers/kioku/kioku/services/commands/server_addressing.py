"""``/server addressing``: the words that call the bot in this server (or, with ``persona:``, one
alter persona), whether it answers other bots, and the ``always`` channels (``channel:`` and
``mode:``), where every member's message is a turn of ``persona:`` (default: the main one). With
no option to change it shows the current ones.
RelayFunction reads both for every message that neither mentions the bot nor replies to it
(``kioku.domain.addressing.decide_turn``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType
from kioku.discord.responses import message
from kioku.discord.snowflake import is_snowflake
from kioku.discord.ui import EMBED_COLOR_INFO, MAX_EMBED_FIELD_VALUE_CHARS
from kioku.domain.models import Persona, ServerConfig
from kioku.domain.persona_limits import MAX_PERSONA_NAME_CHARS
from kioku.domain.personas import with_persona
from kioku.domain.settings_edit import (
    MAX_TRIGGER_WORD_CHARS,
    MAX_TRIGGER_WORDS,
    InvalidSettingsEdit,
    parse_trigger_words,
)
from kioku.services.commands.base import Handler
from kioku.services.commands.context import CommandContext
from kioku.services.commands.guild_admin import load_server_config
from kioku.services.commands.server_privacy import TEXT_CHANNEL_TYPES

SUBCOMMAND: Final = "addressing"
TRIGGER_WORDS_OPTION: Final = "trigger_words"
ANSWER_OTHER_BOTS_OPTION: Final = "answer_other_bots"
PERSONA_OPTION: Final = "persona"
CHANNEL_OPTION: Final = "channel"
MODE_OPTION: Final = "mode"
ALWAYS, ADDRESSED = "always", "addressed"
MAX_ALWAYS_CHANNELS: Final = 25
MAX_TRIGGER_WORDS_TEXT: Final = MAX_TRIGGER_WORDS * (MAX_TRIGGER_WORD_CHARS + 2)


def show_or_set(interaction: Interaction, context: CommandContext) -> dict:
    from kioku.services.commands.persona_roster import persona_option

    values = interaction.option_values()
    config = load_server_config(interaction, context)
    persona = persona_option(config, values.get(PERSONA_OPTION))
    if CHANNEL_OPTION in values or MODE_OPTION in values:
        return _set_channel_mode(values, config, persona, context)
    if TRIGGER_WORDS_OPTION not in values and ANSWER_OTHER_BOTS_OPTION not in values:
        return message(embeds=[addressing_embed(config, "How members call kioku", persona)])
    changes: dict = {}
    if TRIGGER_WORDS_OPTION in values:
        text = values[TRIGGER_WORDS_OPTION]
        if not isinstance(text, str) or len(text) > MAX_TRIGGER_WORDS_TEXT:
            raise InvalidSettingsEdit(
                [f"trigger_words is a comma-separated list of at most {MAX_TRIGGER_WORDS}"]
            )
        words = parse_trigger_words(text)
        if persona.alter:
            config = with_persona(config, replace(persona, trigger_words=words))
        else:
            changes["trigger_words"] = words
    if ANSWER_OTHER_BOTS_OPTION in values:
        answer = values[ANSWER_OTHER_BOTS_OPTION]
        if not isinstance(answer, bool):
            raise InvalidSettingsEdit(["answer_other_bots must be true or false"])
        changes["answer_other_bots"] = answer
    saved = context.config_store.save_server_config(replace(config, **changes))
    shown = saved.persona_by_id(persona.persona_id) or saved.main_persona
    return message(embeds=[addressing_embed(saved, "Saved: how members call kioku", shown)])


def _set_channel_mode(values: dict, config: ServerConfig, persona: Persona, context: CommandContext) -> dict:
    """``channel:`` with ``mode:always`` answers every member's message there as ``persona``;
    ``mode:addressed`` sets it back to answering only when called."""
    channel_id, mode = values.get(CHANNEL_OPTION), values.get(MODE_OPTION)
    if not is_snowflake(channel_id) or mode not in (ALWAYS, ADDRESSED):
        raise InvalidSettingsEdit(["choose a channel and a mode (always or addressed) together"])
    if len(values.keys() - {CHANNEL_OPTION, MODE_OPTION, PERSONA_OPTION}) > 0:
        raise InvalidSettingsEdit(["set a channel's mode on its own, without trigger words or bots"])
    channels = dict(config.always_channels)
    if mode == ADDRESSED:
        channels.pop(channel_id, None)
    elif channel_id not in channels and len(channels) >= MAX_ALWAYS_CHANNELS:
        raise InvalidSettingsEdit(
            [f"this server already has {MAX_ALWAYS_CHANNELS} always channels; set some back to addressed"]
        )
    else:
        channels[channel_id] = persona.persona_id if persona.alter else ""
    saved = context.config_store.save_server_config(replace(config, always_channels=channels))
    title = f"Saved: <#{channel_id}> answers {'every message' if mode == ALWAYS else 'when called'}"
    return message(embeds=[addressing_embed(saved, title)])


def addressing_embed(config: ServerConfig, title: str, persona: Persona | None = None) -> dict:
    if persona is not None and persona.alter:
        return _alter_embed(config, title, persona)
    words = ", ".join(f"`{word}`" for word in config.trigger_words) or "None"
    bots = (
        "**Yes**: messages of other bots and webhooks that address kioku are answered."
        if config.answer_other_bots
        else "**No**: other bots and webhooks are never answered."
    )
    return {
        "title": title,
        "description": "A mention of kioku (or of its role) and a reply to one of its messages always call "
        "it; in a server, so does a message containing a trigger word. In DMs every message does.",
        "color": EMBED_COLOR_INFO,
        "fields": [
            {"name": "Trigger words", "value": words, "inline": False},
            {"name": "Answers other bots", "value": bots, "inline": False},
            {"name": "Always channels", "value": always_channels_text(config), "inline": False},
        ],
    }


def always_channels_text(config: ServerConfig) -> str:
    """Each ``always`` channel with the persona answering there, within an embed field's 1,024
    characters (the rest counted, never a mention cut in two)."""
    if not config.always_channels:
        return "None: kioku answers only when called"
    channels = sorted(config.always_channels.items())
    lines: list[str] = []
    for shown, (channel_id, persona_id) in enumerate(channels):
        persona = config.persona_by_id(persona_id or None) or config.main_persona
        line = f"<#{channel_id}>: every member's message, answered by **{persona.name}**"
        more = f"…and {len(channels) - shown - 1} more" if shown < len(channels) - 1 else ""
        if len("\n".join([*lines, line, more])) > MAX_EMBED_FIELD_VALUE_CHARS:
            lines.append(f"…and {len(channels) - shown} more")
            break
        lines.append(line)
    return "\n".join(lines)


def _alter_embed(config: ServerConfig, title: str, persona: Persona) -> dict:
    words = ", ".join(f"`{word}`" for word in persona.trigger_words) or "None"
    return {
        "title": f"{title}: {persona.name}",
        "description": f"A message opening with “{persona.name}”, a reply to one of its messages, or a "
        "message containing one of its trigger words calls it; several personas called at once each "
        "answer, in the order named.",
        "color": EMBED_COLOR_INFO,
        "fields": [
            {"name": "Trigger words", "value": words, "inline": False},
            {
                "name": "Answers other bots",
                "value": "**Yes**" if config.answer_other_bots else "**No**",
                "inline": False,
            },
        ],
    }


HANDLERS: Final[dict[tuple[str, ...], Handler]] = {(SUBCOMMAND,): show_or_set}

OPTIONS: Final = {
    "type": OptionType.SUB_COMMAND,
    "name": SUBCOMMAND,
    "description": "Show or set what calls kioku: trigger words, other bots, always channels",
    "options": [
        {
            "type": OptionType.STRING,
            "name": PERSONA_OPTION,
            "description": "The persona whose trigger words these are (default: the main one)",
            "max_length": MAX_PERSONA_NAME_CHARS,
            "autocomplete": True,
        },
        {
            "type": OptionType.STRING,
            "name": TRIGGER_WORDS_OPTION,
            "description": f"Comma-separated, at most {MAX_TRIGGER_WORDS} (e.g. kioku, hey bot); a single comma clears them",
            "max_length": MAX_TRIGGER_WORDS_TEXT,
        },
        {
            "type": OptionType.BOOLEAN,
            "name": ANSWER_OTHER_BOTS_OPTION,
            "description": "Answer messages of other bots and webhooks that address kioku",
        },
        {
            "type": OptionType.CHANNEL,
            "name": CHANNEL_OPTION,
            "description": "A channel whose mode to set (with mode:)",
            "channel_types": list(TEXT_CHANNEL_TYPES),
        },
        {
            "type": OptionType.STRING,
            "name": MODE_OPTION,
            "description": "always: answer every member's message there (as persona:); addressed: only when called",
            "choices": [{"name": mode, "value": mode} for mode in (ALWAYS, ADDRESSED)],
        },
    ],
}
