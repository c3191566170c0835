"""``/capabilities manage``: turn kioku's self-managed features on or off for a server.

Turning short-term memory off stops the bot's automatic updates and reminders; stored memory
stays and keeps being shown.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType
from kioku.discord.responses import message
from kioku.discord.ui import EMBED_COLOR_INFO
from kioku.domain.models import Capabilities
from kioku.domain.settings_edit import CAPABILITY_FIELDS, apply_capabilities
from kioku.services.commands.base import Command
from kioku.services.commands.context import CommandContext
from kioku.services.commands.guild_admin import MANAGE_SERVER, check_manager, load_server_config

MANAGE: Final = "manage"
CAPABILITY_DESCRIPTIONS: Final = {
    "short_term_memory": "Let me keep and refresh short-term memory myself (stored memory stays visible)",
    "self_teaching": "Let me save long-term server memories on my own",
    "personal_memories": "Let me keep personal memories about members",
}


def on_manage(interaction: Interaction, context: CommandContext) -> dict:
    config = load_server_config(interaction, context)
    values = interaction.option_values()
    if not values:
        return message(embeds=[capabilities_embed(config.capabilities, "Capabilities")])
    capabilities = apply_capabilities(config.capabilities, values)
    saved = context.config_store.save_server_config(replace(config, capabilities=capabilities))
    return message(embeds=[capabilities_embed(saved.capabilities, "Saved: capabilities")])


def capabilities_embed(capabilities: Capabilities, title: str) -> dict:
    return {
        "title": title,
        "color": EMBED_COLOR_INFO,
        "fields": [
            {"name": option, "value": "on" if getattr(capabilities, field_name) else "off", "inline": True}
            for option, field_name in CAPABILITY_FIELDS.items()
        ],
    }


COMMAND = Command(
    name="capabilities",
    description="What kioku may do on its own in this server",
    options=[
        {
            "type": OptionType.SUB_COMMAND,
            "name": MANAGE,
            "description": "Show or switch capabilities",
            "options": [
                {"type": OptionType.BOOLEAN, "name": option, "description": description}
                for option, description in CAPABILITY_DESCRIPTIONS.items()
            ],
        }
    ],
    subcommands={(MANAGE,): on_manage},
    guard=check_manager,
    dm_permission=False,
    default_member_permissions=MANAGE_SERVER,
)
