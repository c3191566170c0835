"""``/server addressing``: the words that call the bot in this server (or, with ``persona:``, one
alter persona), and whether it answers other bots. With neither option it shows the current ones.
RelayFunction reads both for every message that neither mentions the bot nor replies to it
(``kioku.domain.addressing.decide_turn``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType
from kioku.discord.responses import message
from kioku.discord.ui import EMBED_COLOR_INFO
from kioku.domain.models import Persona, ServerConfig
from kioku.domain.personas import with_persona
from kioku.domain.settings_edit import (
    MAX_PERSONA_NAME_CHARS,
    MAX_TRIGGER_WORD_CHARS,
    MAX_TRIGGER_WORDS,
    InvalidSettingsEdit,
    parse_trigger_words,
)
from kioku.services.commands.context import CommandContext
from kioku.services.commands.guild_admin import load_server_config

SUBCOMMAND: Final = "addressing"
TRIGGER_WORDS_OPTION: Final = "trigger_words"
ANSWER_OTHER_BOTS_OPTION: Final = "answer_other_bots"
PERSONA_OPTION: Final = "persona"
MAX_TRIGGER_WORDS_TEXT: Final = MAX_TRIGGER_WORDS * (MAX_TRIGGER_WORD_CHARS + 2)


def show_or_set(interaction: Interaction, context: CommandContext) -> dict:
    from kioku.services.commands.persona_roster import persona_option

    values = interaction.option_values()
    config = load_server_config(interaction, context)
    persona = persona_option(config, values.get(PERSONA_OPTION))
    if TRIGGER_WORDS_OPTION not in values and ANSWER_OTHER_BOTS_OPTION not in values:
        return message(embeds=[addressing_embed(config, "How members call kioku", persona)])
    changes = {}
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
        ],
    }


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


HANDLERS: Final = {(SUBCOMMAND,): show_or_set}

OPTIONS: Final = {
    "type": OptionType.SUB_COMMAND,
    "name": SUBCOMMAND,
    "description": "Show or set the words that call kioku, and whether it answers other bots",
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
    ],
}
