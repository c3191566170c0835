"""The unified cadence nudge: one reminder for both "no short-term memory yet" and "it is stale"."""

from __future__ import annotations

from typing import Final

from kioku.domain.models import ContextItem, ContextTag
from kioku.domain.stm.categories import active_categories
from kioku.domain.stm.entries import StmEntry, StmLimits
from kioku.domain.stm.update_tool import prompt_macros, render_prompt, unavailable_reason
from kioku.domain.turn import TurnContext

SUMMARY_NUDGE: Final = (
    "[Short-term memory reminder] Your short-term memory of this channel is missing or out of date: "
    "the conversation has moved on since it was last written. Along with your reply this turn, call "
    "{short_term_memory_tool} with a fresh summary of what is going on here: who is involved, what is "
    "being discussed or planned, and what is still open. It replaces the old summary, so write the "
    "whole picture. Reply to the conversation as you normally would; do not mention this reminder or "
    "your memory in the reply."
)

CATEGORY_NUDGE: Final = (
    "[Short-term memory reminder] Your short-term memory of this channel is missing or out of date: "
    "the conversation has moved on since it was last written. Along with your reply this turn, call "
    "{short_term_memory_tool} and fill in each section ({category_labels}) with what is true now. It "
    "replaces every section, so give each its complete content, or an empty string when nothing "
    "belongs there. Reply to the conversation as you normally would; do not mention this reminder or "
    "your memory in the reply."
)


def nudge_due(turn: TurnContext, current: StmEntry | None) -> bool:
    """Due when the tool is offered and the bot has taken part in ``refresh_cadence`` turns since
    the last write; a channel with no row counts as 0 turns. Seed 000: a user asking for long-term
    memory suppresses the hint only (it would compete with the long-term save); the tool stays."""
    turns = current.turns_since_refresh if current is not None else 0
    return (
        unavailable_reason(turn) is None
        and not turn.explicit_ltm_intent
        and turns >= turn.config.stm.refresh_cadence
    )


def build_nudge(turn: TurnContext, limits: StmLimits) -> ContextItem:
    """The nudge item: the server's override when set, else our text for the current mode."""
    categories = active_categories(turn.config.categories, limits.max_categories)
    macros = prompt_macros(turn, limits)
    override = turn.config.stm.update_nudge_override
    text = render_prompt(override, macros) if override else ""
    if not text:
        text = render_prompt(CATEGORY_NUDGE if categories else SUMMARY_NUDGE, macros)
    return ContextItem(role="user", tag=ContextTag.KNOWLEDGE_SHORT_TERM_MEMORY, content=text)
