"""``/personal stm``: each user's own memory settings, in guilds and DMs alike.

``cross_server`` opts in to (or out of) cross-server folding: our recent DM conversation recalled
when you talk to me in a server. ``privacy`` sets how much of you I keep. With no option given, the
current settings are shown. Saves are conditional on the profile's version, so two changes made at
once never silently undo each other.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final, NoReturn

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType
from kioku.discord.responses import autocomplete, message
from kioku.discord.ui import EMBED_COLOR_INFO
from kioku.domain.models import PrivacyLevel, UserProfile
from kioku.services.commands import personal_memories
from kioku.services.commands.base import Command
from kioku.services.commands.context import CommandContext
from kioku.services.commands.error_replies import Refusal, Refused

CROSS_SERVER_OPTION: Final = "cross_server"
PRIVACY_OPTION: Final = "privacy"

PRIVACY_EXPLAINED: Final = {
    PrivacyLevel.NONE: (
        "I may save personal long-term memories about you, and your messages to me go into the "
        "channel's short-term memory."
    ),
    PrivacyLevel.PARTIAL: (
        "No personal long-term memories about you are saved or recalled (server-wide memories may "
        "still mention you); your messages to me still go into short-term memory."
    ),
    PrivacyLevel.FULL: (
        "No personal long-term memories about you, and your messages to me are not stored in "
        "short-term memory. A channel's summary is written from the whole conversation there, so "
        "it may still reflect what you said in it."
    ),
}
PRIVACY_CHOICE_NAMES: Final = {
    PrivacyLevel.NONE: "none: I may remember things about you",
    PrivacyLevel.PARTIAL: "partial: no personal long-term memories",
    PrivacyLevel.FULL: "full: no personal memories, your messages stay out of short-term memory",
}


def settings_embed(profile: UserProfile, title: str) -> dict[str, Any]:
    cross_server = (
        "**On**: our recent DM conversation can be recalled when you talk to me in a server, "
        "where others in the channel may see what I make of it."
        if profile.cross_server_opt_in
        else "**Off**: what we say in DMs stays in DMs."
    )
    return {
        "title": title,
        "color": EMBED_COLOR_INFO,
        "fields": [
            {"name": "Cross-server memory", "value": cross_server, "inline": False},
            {
                "name": "Privacy level",
                "value": f"**{profile.privacy_level.value}**: {PRIVACY_EXPLAINED[profile.privacy_level]}",
                "inline": False,
            },
        ],
    }


def _requested_change(options: dict[str, Any]) -> dict[str, Any]:
    """The profile fields to change; refused when the options cannot be used."""
    unknown = set(options) - {CROSS_SERVER_OPTION, PRIVACY_OPTION}
    if unknown:
        _refuse("I do not know the option " + ", ".join(sorted(f"`{name}`" for name in unknown)) + ".")
    change: dict[str, Any] = {}
    if CROSS_SERVER_OPTION in options:
        if not isinstance(options[CROSS_SERVER_OPTION], bool):
            _refuse("`cross_server` must be true or false.")
        change["cross_server_opt_in"] = options[CROSS_SERVER_OPTION]
    if PRIVACY_OPTION in options:
        try:
            change["privacy_level"] = PrivacyLevel(options[PRIVACY_OPTION])
        except ValueError:
            _refuse("`privacy` must be one of none, partial or full.")
    return change


def _refuse(problem: str) -> NoReturn:
    raise Refused(Refusal.NOTHING_CHANGED, f"{problem} Nothing was changed.")


def known_invoker(interaction: Interaction) -> None:
    """Every subcommand is about the one asking: refused when the interaction does not say who."""
    if interaction.invoker is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, COMMAND.hint())


def on_stm(interaction: Interaction, context: CommandContext) -> dict:
    invoker = interaction.invoker
    if invoker is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, COMMAND.hint())
    change = _requested_change(interaction.option_values())
    store = context.config_store
    profile = store.get_user_profile(invoker.id)
    wanted = replace(profile, **change)
    if wanted == profile:
        title = "Your memory settings" if not change else "Your memory settings (already so)"
        return message(embeds=[settings_embed(profile, title)])
    saved = store.save_user_profile(wanted)
    return message(embeds=[settings_embed(saved, "Your memory settings, saved")])


def on_autocomplete(interaction: Interaction, context: CommandContext) -> dict:
    """``memory_id:`` of /personal memories: the memories about the one typing."""
    return autocomplete(personal_memories.memory_choices(interaction, context))


COMMAND = Command(
    name="personal",
    description="Your own settings",
    options=[
        {
            "type": OptionType.SUB_COMMAND,
            "name": "stm",
            "description": "Your memory settings; with no option, shows them",
            "options": [
                {
                    "type": OptionType.BOOLEAN,
                    "name": CROSS_SERVER_OPTION,
                    "description": "Recall our recent DM conversation when you talk to me in a server",
                },
                {
                    "type": OptionType.STRING,
                    "name": PRIVACY_OPTION,
                    "description": (
                        "partial/full: no personal long-term memories; "
                        "full also keeps your messages out of short-term memory"
                    ),
                    "choices": [
                        {"name": PRIVACY_CHOICE_NAMES[level], "value": level.value} for level in PrivacyLevel
                    ],
                },
            ],
        },
        personal_memories.OPTIONS,
    ],
    subcommands={("stm",): on_stm, **personal_memories.SUBCOMMANDS},
    guard=known_invoker,
    on_autocomplete=on_autocomplete,
    buttons=personal_memories.BUTTONS,
    dm_permission=True,
)
