"""The ``update_short_term_memory`` LLM tool: when it is offered, its schema, and its arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kioku.domain.models import StmCategory
from kioku.domain.stm.categories import active_categories, category_labels_text
from kioku.domain.stm.entries import StmLimits
from kioku.domain.text import expand_macros, one_line_name, sanitize_unknown_placeholders, shorten

if TYPE_CHECKING:  # only annotations: the settings editors and the relay's personas need no turn
    from kioku.domain.turn import TurnContext

TOOL_NAME: Final = "update_short_term_memory"
SUMMARY_FIELD: Final = "summary"

DEFAULT_SUMMARY_DESCRIPTION: Final = (
    "Write your short-term memory of this channel: a running summary of the conversation happening "
    "here now. You will see it again on your next turns here, and briefly in this server's other "
    "channels, so you can pick up where things left off. Each call replaces the previous summary, so "
    "write the whole current picture, not only what changed: who is taking part, what they are "
    "discussing or doing, decisions made, questions still open, anything you promised, and the mood. "
    "Name people rather than saying 'he' or 'they'. Stay factual and compact: at most "
    "{max_summary_length} characters. This is for the conversation at hand; facts someone wants you "
    "to keep for good belong in long-term memory, not here. Call it at most once per turn, and still "
    "write your reply to the channel as usual."
)

DEFAULT_CATEGORY_DESCRIPTION: Final = (
    "Write your short-term memory of this channel, organised in these sections: {category_labels}. "
    "You will see it again on your next turns here, and briefly in this server's other channels, so "
    "you can pick up where things left off. Each call replaces every section, so give each field its "
    "complete current content, not only what changed, and an empty string when nothing belongs there "
    "yet. Name people rather than saying 'he' or 'they'. Stay factual and compact: at most "
    "{max_summary_length} characters per section. This is for the conversation at hand; facts someone "
    "wants you to keep for good belong in long-term memory, not here. Call it at most once per turn, "
    "and still write your reply to the channel as usual."
)

SUMMARY_PARAMETER_DESCRIPTION: Final = (
    "The complete, up-to-date summary of the recent conversation in this channel. It replaces the "
    "previous summary. Plain sentences or short bullet points, at most {max_summary_length} characters."
)

CATEGORY_PARAMETER_SUFFIX: Final = (
    " The section's complete current content (replaces the previous one); an empty string if nothing "
    "belongs here yet. At most {max_summary_length} characters."
)

REFUSALS: Final = {
    "capability": "short-term memory management is turned off on this server",
    "tools": "the current model cannot use tools",
    "once": "it was already used this turn; the memory has been saved, do not call it again",
}


class InvalidStmUpdate(ValueError):
    """The model's arguments cannot be saved; the message is written for the model to read."""


@dataclass(frozen=True, slots=True)
class StmUpdate:
    """A validated write: exactly one of ``summary`` and ``categories`` is set."""

    summary: str | None = None
    categories: Mapping[str, str] | None = None
    shortened: tuple[str, ...] = ()


def unavailable_reason(turn: TurnContext) -> str | None:
    """Why the tool is not offered this turn, or None when it is. The nudge follows the same gate
    (and steps aside too when the user asks for long-term memory; the tool stays offered)."""
    if not turn.config.capabilities.short_term_memory_enabled:
        return REFUSALS["capability"]
    # seed 000's novelai gate too: a model that takes no tools is LLM_SUPPORTS_TOOLS=false
    if not turn.llm_has_tools:
        return REFUSALS["tools"]
    return None


def refusal_message(reason: str) -> str:
    return f"{TOOL_NAME} is not available: {reason}. Nothing was saved."


PROMPT_MACROS: Final = (
    "short_term_memory_tool",
    "bot",
    "bot_name",
    "user",
    "user_name",
    "max_summary_length",
    "category_labels",
)
"""The ``{macros}`` filled in in prompt texts and their overrides, as ``prompt_macros`` fills them
(``/help stm`` lists them from here)."""


def prompt_macros(turn: TurnContext, limits: StmLimits) -> dict[str, str]:
    """Macros for our prompt texts and their per-server overrides (tool description, nudge)."""
    categories = active_categories(turn.config.categories, limits.max_categories)
    bot, user = one_line_name(turn.bot_name), one_line_name(turn.user.display_name)
    values = (
        TOOL_NAME,
        bot,
        bot,
        user,
        user,
        str(limits.max_summary_length),
        category_labels_text(categories),
    )
    return dict(zip(PROMPT_MACROS, values, strict=True))


def value_macros(turn: TurnContext, limits: StmLimits) -> dict[str, str]:
    """Macros expanded inside saved values. ``{bot}`` stays a token, resolved when shown. So does
    ``{user}`` in a DM, whose row is that user's; a guild row is shared and read in later turns
    where ``{user}`` would mean whoever speaks then, so there it is written down as the speaker."""
    macros = {k: v for k, v in prompt_macros(turn, limits).items() if k not in {"user", "bot"}}
    if not turn.is_dm:
        macros["user"] = turn.user.display_name
    return macros


def render_prompt(text: str, macros: Mapping[str, str]) -> str:
    """Macro expansion, then unknown ``{placeholders}`` dropped: the rule for every prompt override."""
    return sanitize_unknown_placeholders(expand_macros(text, macros), keep=())


def tool_definition(turn: TurnContext, limits: StmLimits) -> dict[str, Any] | None:
    """The OpenAI function tool for this turn, or None when the tool is not offered."""
    if unavailable_reason(turn) is not None:
        return None
    macros = prompt_macros(turn, limits)
    categories = active_categories(turn.config.categories, limits.max_categories)
    default = DEFAULT_CATEGORY_DESCRIPTION if categories else DEFAULT_SUMMARY_DESCRIPTION
    override = turn.config.stm.tool_description_override
    description = render_prompt(override, macros) if override else ""
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": description or render_prompt(default, macros),
            "parameters": _parameters(categories, macros),
        },
    }


def _parameters(categories: Sequence[StmCategory], macros: Mapping[str, str]) -> dict[str, Any]:
    if not categories:
        properties = {
            SUMMARY_FIELD: {
                "type": "string",
                "description": render_prompt(SUMMARY_PARAMETER_DESCRIPTION, macros),
            }
        }
    else:
        properties = {
            category.slug: {
                "type": "string",
                "description": render_prompt(
                    (category.description.strip() or f"What belongs under “{category.label}”.")
                    + CATEGORY_PARAMETER_SUFFIX,
                    macros,
                ),
            }
            for category in categories
        }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def parse_update(
    arguments: dict[str, Any] | None,
    categories: Sequence[StmCategory],
    limits: StmLimits,
    macros: Mapping[str, str],
) -> StmUpdate:
    """Validate and clean the tool's arguments; raises ``InvalidStmUpdate`` for anything unusable."""
    if arguments is None:
        raise InvalidStmUpdate("the arguments must be a JSON object")
    if not categories:
        return _parse_summary(arguments, limits, macros)
    return _parse_categories(arguments, categories, limits, macros)


def _parse_summary(arguments: dict[str, Any], limits: StmLimits, macros: Mapping[str, str]) -> StmUpdate:
    _reject_unknown(arguments, [SUMMARY_FIELD])
    if SUMMARY_FIELD not in arguments:
        raise InvalidStmUpdate(f"'{SUMMARY_FIELD}' is required")
    summary, cut = _clean(SUMMARY_FIELD, arguments[SUMMARY_FIELD], limits, macros)
    if not summary:
        raise InvalidStmUpdate(f"'{SUMMARY_FIELD}' is empty; write the summary of the conversation")
    return StmUpdate(summary=summary, shortened=(SUMMARY_FIELD,) if cut else ())


def _parse_categories(
    arguments: dict[str, Any],
    categories: Sequence[StmCategory],
    limits: StmLimits,
    macros: Mapping[str, str],
) -> StmUpdate:
    slugs = [category.slug for category in categories]
    _reject_unknown(arguments, slugs)
    missing = [slug for slug in slugs if slug not in arguments]
    if missing:
        raise InvalidStmUpdate(
            "every section is required (use an empty string for one with nothing in it); missing: "
            + ", ".join(f"'{slug}'" for slug in missing)
        )
    texts: dict[str, str] = {}
    shortened: list[str] = []
    for slug in slugs:
        text, cut = _clean(slug, arguments[slug], limits, macros)
        texts[slug] = text
        if cut:
            shortened.append(slug)
    if not any(texts.values()):
        raise InvalidStmUpdate("every section is empty; write at least one")
    return StmUpdate(categories=texts, shortened=tuple(shortened))


def _reject_unknown(arguments: Mapping[str, Any], allowed: Sequence[str]) -> None:
    unknown = [name for name in arguments if name not in allowed]
    if unknown:
        raise InvalidStmUpdate(
            "unknown argument(s) "
            + ", ".join(f"'{shorten(str(name), 40)}'" for name in unknown)
            + "; this tool takes "
            + ", ".join(f"'{name}'" for name in allowed)
        )


def _clean(name: str, value: Any, limits: StmLimits, macros: Mapping[str, str]) -> tuple[str, bool]:
    if not isinstance(value, str):
        raise InvalidStmUpdate(f"'{name}' must be a string")
    text = sanitize_unknown_placeholders(expand_macros(value.strip(), macros))
    cut = shorten(text, limits.max_summary_length)
    return cut, cut != text
