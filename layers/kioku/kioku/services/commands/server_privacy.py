"""``/server privacy …``: a manager's overrides of Discord's channel privacy, and seed 000's bypass.

Without an override a channel is as private as Discord makes it (see ``kioku.domain.privacy``);
``private`` keeps a channel's memory in that channel and its threads even when everyone can read
it, ``public`` lets it be recalled across the server. Every save is conditional on the configuration
version it was read at, so two managers never silently undo each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType
from kioku.discord.responses import message
from kioku.discord.snowflake import is_snowflake
from kioku.discord.ui import EMBED_COLOR_INFO
from kioku.domain.privacy import MAX_PRIVACY_OVERRIDES, PrivacyMode
from kioku.domain.settings_edit import InvalidSettingsEdit
from kioku.services.commands.base import Handler
from kioku.services.commands.context import CommandContext
from kioku.services.commands.guild_admin import load_server_config

GROUP: Final = "privacy"
CHANNEL: Final = "channel"
BYPASS: Final = "bypass"
VIEW: Final = "view"
MODE_OPTION: Final = "mode"
ENABLED_OPTION: Final = "enabled"
TEXT_CHANNEL_TYPES: Final = (0, 2, 5, 10, 11, 13, 15, 16)
"""Channels people talk in: text, voice and stage chat, announcement, public threads, forum and media
channels. Not private threads: they are private whatever an override says."""

MODE_MEANING: Final = {
    PrivacyMode.AUTO: "follows Discord: private when @everyone cannot view it",
    PrivacyMode.PRIVATE: "private: its memory stays in it and its threads",
    PrivacyMode.PUBLIC: "public: its memory may be recalled anywhere in this server",
}


def set_channel_mode(interaction: Interaction, context: CommandContext) -> dict:
    options = interaction.option_values()
    channel_id = options.get(CHANNEL)
    if not is_snowflake(channel_id):
        raise InvalidSettingsEdit(["choose a channel of this server"])
    try:
        mode = PrivacyMode(str(options.get(MODE_OPTION)))
    except ValueError:
        raise InvalidSettingsEdit(["mode must be auto, private or public"]) from None
    config = load_server_config(interaction, context)
    overrides = dict(config.channel_privacy)
    if mode is PrivacyMode.AUTO:
        overrides.pop(channel_id, None)
    else:
        if channel_id not in overrides and len(overrides) >= MAX_PRIVACY_OVERRIDES:
            raise InvalidSettingsEdit(
                [
                    f"this server already has {MAX_PRIVACY_OVERRIDES} channel overrides; set some back to auto first"
                ]
            )
        overrides[channel_id] = mode
    saved = context.config_store.save_server_config(replace(config, channel_privacy=overrides))
    return message(
        embeds=[
            privacy_embed(
                saved.channel_privacy,
                saved.stm_privacy_bypass,
                f"Saved: <#{channel_id}> {MODE_MEANING[mode]}",
            )
        ]
    )


def set_bypass(interaction: Interaction, context: CommandContext) -> dict:
    enabled = interaction.option_values().get(ENABLED_OPTION)
    if not isinstance(enabled, bool):
        raise InvalidSettingsEdit(["enabled must be true or false"])
    config = load_server_config(interaction, context)
    saved = context.config_store.save_server_config(replace(config, stm_privacy_bypass=enabled))
    title = "Saved: the privacy bypass is " + ("**on**" if enabled else "**off**")
    return message(embeds=[privacy_embed(saved.channel_privacy, saved.stm_privacy_bypass, title)])


def view(interaction: Interaction, context: CommandContext) -> dict:
    config = load_server_config(interaction, context)
    return message(
        embeds=[privacy_embed(config.channel_privacy, config.stm_privacy_bypass, "Channel privacy")]
    )


def privacy_embed(overrides: Mapping[str, PrivacyMode], bypass: bool, title: str) -> dict:
    lines = [f"<#{channel_id}>: {MODE_MEANING[mode]}" for channel_id, mode in sorted(overrides.items())]
    shown, hidden = lines[:20], len(lines) - 20
    if hidden > 0:
        shown.append(f"… and {hidden} more")
    bypass_text = (
        "**On**: memory of private channels may be recalled in any channel of this server."
        if bypass
        else "**Off**: memory of a private channel stays in that channel and its threads."
    )
    return {
        "title": title,
        "description": "Channels without an override follow Discord: a channel is private when "
        "@everyone cannot view it, a private thread is private, and other threads follow their channel.",
        "color": EMBED_COLOR_INFO,
        "fields": [
            {"name": "Overrides", "value": "\n".join(shown) or "None", "inline": False},
            {"name": "Bypass", "value": bypass_text, "inline": False},
        ],
    }


HANDLERS: Final[dict[tuple[str, ...], Handler]] = {
    (GROUP, CHANNEL): set_channel_mode,
    (GROUP, BYPASS): set_bypass,
    (GROUP, VIEW): view,
}

OPTIONS: Final = {
    "type": OptionType.SUB_COMMAND_GROUP,
    "name": GROUP,
    "description": "Which channels' memory may be recalled elsewhere",
    "options": [
        {
            "type": OptionType.SUB_COMMAND,
            "name": CHANNEL,
            "description": "Override a channel's privacy (auto follows Discord's permissions)",
            "options": [
                {
                    "type": OptionType.CHANNEL,
                    "name": CHANNEL,
                    "description": "The channel",
                    "required": True,
                    "channel_types": list(TEXT_CHANNEL_TYPES),
                },
                {
                    "type": OptionType.STRING,
                    "name": MODE_OPTION,
                    "description": "auto, private or public",
                    "required": True,
                    "choices": [{"name": mode.value, "value": mode.value} for mode in PrivacyMode],
                },
            ],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": BYPASS,
            "description": "Let private channels' memory be recalled anywhere in this server",
            "options": [
                {
                    "type": OptionType.BOOLEAN,
                    "name": ENABLED_OPTION,
                    "description": "On or off",
                    "required": True,
                }
            ],
        },
        {"type": OptionType.SUB_COMMAND, "name": VIEW, "description": "Show the overrides and the bypass"},
    ],
}
