"""The ``/persona`` command: ``view`` and ``edit`` (``persona_profile``), ``add``, ``list``,
``remove`` and ``nickname`` (``persona_roster``), and here ``/persona stm view`` and ``/persona stm
edit [persona:]``: the short-term memory this channel injects for a persona (the main one by default).

Both resolve exactly the row a turn of that persona here reads: the server-shared row (server, channel, persona) in
a guild, the user's own row (user, channel, persona) in a DM. ``view`` is open to every member;
``edit`` needs Manage Server in a guild (checked on the command and again on the modal submit) and
answers a modal prefilled with the live text: one summary input, or one input per category.

A hand edit saves through the tool's own write (``StmStore.write_memory``) but leaves the refresh
counter alone (the cadence measures whether the bot keeps up), and the last writer wins: an edit
overwrites a summary the bot refreshed while the form was open (the editor saw the text they replaced).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import THREAD_TYPES, ChannelType, OptionType
from kioku.discord.responses import message
from kioku.discord.ui import (
    EMBED_COLOR_INFO,
    MAX_MODAL_INPUTS,
    TextInput,
    modal,
    relative_time,
    submitted_values,
)
from kioku.domain.models import Persona, ServerConfig, StmCategory
from kioku.domain.persona_limits import MAX_PERSONA_NAME_CHARS
from kioku.domain.stm.categories import active_categories
from kioku.domain.stm.entries import (
    StmAddress,
    StmEntry,
    StmLimits,
    live_categories,
    live_crude,
    live_summary,
)
from kioku.domain.text import expand_macros, sanitize_unknown_placeholders, shorten
from kioku.services.commands import persona_roster
from kioku.services.commands.base import Command, Handler
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import CustomId, hexadecimal
from kioku.services.commands.error_replies import Refusal, Refused
from kioku.services.commands.guild_admin import manages_server
from kioku.services.commands.persona_profile import (
    ALTER_PERSONA_FORM,
    PERSONA_FORM,
    on_alter_persona_form,
    on_persona_edit,
    on_persona_form,
    on_persona_view,
)
from kioku.services.commands.persona_roster import PERSONA_OPTION, persona_option, persona_tag

STM_EDIT_FORM: Final = CustomId(
    "persona", "stm-edit", hexadecimal("persona", 8), hexadecimal("written_at", (1, 16))
)
"""The persona and the time the text the form shows was written: a submit saves only onto them."""
SUMMARY_INPUT: Final = "summary"
MAX_EMBED_DESCRIPTION_CHARS: Final = 4096
EMPTY_SECTION: Final = "*(empty)*"
NO_MEMORY_YET: Final = "No short-term memory here yet."

STALE_FORM = "{what} changed while you were editing, so nothing was saved. Run `/persona stm edit` again."


@dataclass(frozen=True, slots=True)
class _Here:
    """The row this channel injects, and what decides how it is shown and written."""

    address: StmAddress
    persona: Persona
    config: ServerConfig
    categories: tuple[StmCategory, ...]
    entry: StmEntry | None


def _here(
    interaction: Interaction, context: CommandContext, limits: StmLimits, tag: str | None = None
) -> _Here:
    """The row of the persona the ``persona:`` option names (the main one by default), or, for a
    submitted form, of the persona its ``tag`` marks (``_persona_tag``)."""
    invoker = interaction.invoker
    if invoker is None or interaction.channel_id is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, "I cannot tell which channel this is.")
    guild_id = interaction.guild_id
    config = context.config_store.get_server_config(guild_id) if guild_id else ServerConfig()
    if tag is not None:
        persona = next((p for p in config.personas if persona_tag(p) == tag), None)
        if persona is None:
            raise Refused(Refusal.NOTHING_SAVED, STALE_FORM.format(what="The persona"))
    else:
        persona = persona_option(config, interaction.option_values().get(PERSONA_OPTION))
    address = StmAddress.of(guild_id, invoker.id, interaction.channel_id, persona.persona_id)
    entry = context.stm_store.get(address)
    if entry is not None and entry.lineage_id != persona.lineage_id:
        entry = None  # a row of an earlier persona lineage is not injected, so it is not "here"
    categories = active_categories(config.categories, limits.max_categories)
    return _Here(address, persona, config, categories, entry)


# -- /persona stm view -------------------------------------------------------------------------------


def memory_embed(here: _Here, now: datetime, limits: StmLimits, title: str | None = None) -> dict[str, Any]:
    """The injected memory of ``here`` as an embed: the live summary or category sections, or what
    expired, then how many raw messages are held, the refresh counter and the last update."""
    entry = here.entry
    embed: dict[str, Any] = {
        "title": title or f"{here.persona.name}'s short-term memory here",
        "color": EMBED_COLOR_INFO,
    }
    scope = "your direct messages" if here.address.is_dm else "this channel, shared by everyone in it"
    if entry is None:
        embed["description"] = f"{NO_MEMORY_YET}\n-# Scope: {scope}."
        return embed
    embed["description"] = shorten(
        f"{_memory_text(entry, here.categories)}\n\n-# Scope: {scope}.",
        MAX_EMBED_DESCRIPTION_CHARS,
    )
    cadence = here.config.stm.refresh_cadence
    embed["fields"] = [
        {"name": "Mode", "value": _mode(here.categories), "inline": True},
        {
            "name": "Recent messages held",
            "value": f"{len(live_crude(entry, now, limits))} of {limits.max_messages_per_channel}",
            "inline": True,
        },
        {
            "name": "Turns since refresh",
            "value": f"{entry.turns_since_refresh} (reminder at {cadence})",
            "inline": True,
        },
        {"name": "Last updated", "value": relative_time(entry.last_updated), "inline": True},
    ]
    return embed


def _memory_text(entry: StmEntry, categories: Sequence[StmCategory]) -> str:
    """What the turn's memory block holds (the same choice of summary or sections): summaries last
    until the janitor removes the row."""
    summary = live_summary(entry)
    sections = live_categories(entry)
    if sections and (categories or not summary):
        return "\n\n".join(
            f"**{label}**\n{sections.get(slug) or EMPTY_SECTION}"
            for slug, label in _section_order(sections, categories, entry.category_labels)
        )
    if summary:
        return f"**Summary**\n{summary}"
    return "*No summary written yet.*"


def _section_order(
    texts: Mapping[str, str], categories: Sequence[StmCategory], stored: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Configured categories in position order (empty ones too), then other sections the row holds."""
    label_of: dict[str, str] = {}
    for slug, label in [(c.slug, c.label) for c in categories] + list(stored):
        label_of.setdefault(slug, label)
    slugs = dict.fromkeys(
        [c.slug for c in categories]
        + [slug for slug in label_of if slug in texts]
        + sorted(slug for slug in texts if slug not in label_of)
    )
    return [(slug, label_of.get(slug, slug.replace("_", " ").title())) for slug in slugs]


def _mode(categories: Sequence[StmCategory]) -> str:
    if not categories:
        return "Single summary"
    return "Categories: " + ", ".join(category.label for category in categories)


def on_view(interaction: Interaction, context: CommandContext) -> dict:
    limits = StmLimits.from_settings(context.settings)
    here = _here(interaction, context, limits)
    return message(embeds=[memory_embed(here, context.clock(), limits)])


# -- /persona stm edit -------------------------------------------------------------------------------


def _check_editor(interaction: Interaction) -> None:
    """Refuse an invoker who may not edit here. In a DM the row is the user's own."""
    if interaction.guild_id is None:
        if interaction.user is None:
            raise Refused(Refusal.NOT_ALLOWED, "I cannot tell who you are.")
    elif not manages_server(interaction):
        raise Refused(
            Refusal.NOT_ALLOWED,
            "Editing this channel's short-term memory needs the **Manage Server** permission.",
        )


def _written_at(here: _Here) -> datetime | None:
    """When the text the form shows was written (None: never), so a save can insist it still is."""
    if here.entry is None:
        return None
    return here.entry.categories_updated_at if here.categories else here.entry.summary_updated_at


def _stamp(moment: datetime | None) -> str:
    return "0" if moment is None else f"{int(moment.timestamp() * 1_000_000):x}"


def _edited_inputs(here: _Here) -> tuple[str, ...]:
    if not here.categories:
        return (SUMMARY_INPUT,)
    return tuple(category.slug for category in here.categories[:MAX_MODAL_INPUTS])


def on_edit(interaction: Interaction, context: CommandContext) -> dict:
    _check_editor(interaction)
    limits = StmLimits.from_settings(context.settings)
    here = _here(interaction, context, limits)
    entry = here.entry
    if not here.categories:
        summary = live_summary(entry) if entry else None
        inputs = [
            TextInput(
                custom_id=SUMMARY_INPUT,
                label="Summary",
                value=summary or "",
                max_length=limits.max_summary_length,
                placeholder="The running summary of the conversation here. Empty clears it.",
            )
        ]
    else:
        texts = live_categories(entry) if entry else {}
        inputs = [
            TextInput(
                custom_id=category.slug,
                label=category.label,
                value=texts.get(category.slug, ""),
                max_length=limits.max_summary_length,
                placeholder=category.description or None,
            )
            for category in here.categories[:MAX_MODAL_INPUTS]
        ]
    return modal(
        STM_EDIT_FORM.encode(persona_tag(here.persona), _stamp(_written_at(here))),
        f"{here.persona.name}: short-term memory",
        inputs,
    )


def on_edit_form(interaction: Interaction, context: CommandContext, tag: str, seen_stamp: str) -> dict:
    """Save the edit form: the same row, the same persona, the same fields, or nothing is saved."""
    from kioku.domain.stm.capture import StmRowIdentity
    from kioku.domain.stm.update_tool import StmUpdate

    _check_editor(interaction)
    submitted = submitted_values(interaction.data)
    limits = StmLimits.from_settings(context.settings)
    here = _here(interaction, context, limits, tag)
    if seen_stamp != _stamp(_written_at(here)):
        raise Refused(Refusal.NOTHING_SAVED, STALE_FORM.format(what="The memory"))
    if set(submitted) != set(_edited_inputs(here)):
        raise Refused(Refusal.NOTHING_SAVED, STALE_FORM.format(what="The memory's categories"))

    now = context.clock()
    macros = _value_macros(interaction)
    if not here.categories:
        update = StmUpdate(summary=_clean(submitted[SUMMARY_INPUT], limits, macros))
    else:
        # Categories beyond the form's five inputs keep their text: the write replaces every section.
        texts = dict(live_categories(here.entry)) if here.entry else {}
        texts.update({slug: _clean(value, limits, macros) for slug, value in submitted.items()})
        update = StmUpdate(categories=texts)
    entry, channel = here.entry, interaction.channel
    thread = channel is not None and channel.type in THREAD_TYPES
    identity = StmRowIdentity(
        address=here.address,
        lineage_id=here.persona.lineage_id,
        # a new row is stamped private until a turn describes it; it must know its thread parent
        # (a category is not one), and a private thread must never follow its parent's overrides
        parent_channel_id=entry.parent_channel_id
        if entry
        else (channel.parent_id if channel and thread else None),
        channel_name=entry.channel_name if entry else (channel.name if channel else None),
        private_thread=entry.private_thread
        if entry
        else (channel is not None and channel.type == ChannelType.PRIVATE_THREAD),
    )
    context.stm_store.write_memory(
        identity, update, here.categories, now, limits.retention, reset_counter=False
    )
    saved = _Here(
        here.address, here.persona, here.config, here.categories, context.stm_store.get(here.address)
    )
    return message(embeds=[memory_embed(saved, now, limits, title="Short-term memory saved")])


def _value_macros(interaction: Interaction) -> dict[str, str]:
    """As for the tool's values: ``{bot}`` stays a token; so does ``{user}`` in a DM (the row is the
    user's), while a guild row is shared, so there ``{user}`` is written down as the editor's name."""
    member = interaction.member
    if interaction.guild_id is None or member is None or member.user is None:
        return {}
    return {"user": member.nick or member.user.global_name or member.user.username}


def _clean(text: str, limits: StmLimits, macros: Mapping[str, str]) -> str:
    """Trimmed, macros expanded, unknown ``{placeholders}`` removed, cut to the summary length."""
    return shorten(
        sanitize_unknown_placeholders(expand_macros(text.strip(), macros)), limits.max_summary_length
    )


# -- the command -------------------------------------------------------------------------------------

_SUBCOMMANDS: Final[dict[tuple[str, ...], Handler]] = {
    ("view",): on_persona_view,
    ("edit",): on_persona_edit,
    ("stm", "view"): on_view,
    ("stm", "edit"): on_edit,
    **persona_roster.HANDLERS,
}


_PERSONA: Final = {
    "type": OptionType.STRING,
    "name": PERSONA_OPTION,
    "description": "Which persona (default: the main one)",
    "max_length": MAX_PERSONA_NAME_CHARS,
    "autocomplete": True,
}

COMMAND = Command(
    name="persona",
    description="Who kioku is in this server, and its memory of this channel",
    options=[
        {
            "type": OptionType.SUB_COMMAND_GROUP,
            "name": "stm",
            "description": "Short-term memory of this channel",
            "options": [
                {
                    "type": OptionType.SUB_COMMAND,
                    "name": "view",
                    "description": "Show the short-term memory of this channel",
                    "options": [_PERSONA],
                },
                {
                    "type": OptionType.SUB_COMMAND,
                    "name": "edit",
                    "description": "Rewrite the short-term memory of this channel (Manage Server)",
                    "options": [_PERSONA],
                },
            ],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": "view",
            "description": "Show the persona's name and personality",
            "options": [_PERSONA],
        },
        {
            "type": OptionType.SUB_COMMAND,
            "name": "edit",
            "description": "Change the persona's name and personality (Manage Server)",
            "options": [_PERSONA],
        },
        *persona_roster.OPTIONS,
    ],
    subcommands=_SUBCOMMANDS,
    on_autocomplete=persona_roster.on_persona_autocomplete,
    buttons=persona_roster.BUTTONS,
    forms={
        PERSONA_FORM: on_persona_form,
        ALTER_PERSONA_FORM: on_alter_persona_form,
        STM_EDIT_FORM: on_edit_form,
    },
    # No default_member_permissions: Discord applies it to the whole /persona command, which would
    # hide `view` from members; `edit` checks Manage Server itself, on the command and on the submit.
    dm_permission=True,
)
