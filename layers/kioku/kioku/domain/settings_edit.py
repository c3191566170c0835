"""Admin edits of a server's settings: checking what ``/server stm …`` and ``/capabilities`` submit.

Discord enforces option ranges and choices on its side, but nothing here trusts that: every value
is checked again, and a bad edit raises ``InvalidSettingsEdit`` before anything is changed.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from kioku.domain.models import Capabilities, Persona, RenderMode, StmCategory, StmConfig
from kioku.domain.persona_limits import MAX_PERSONA_NAME_CHARS, MAX_PERSONA_PROMPT_CHARS
from kioku.domain.stm.categories import slug_for_label
from kioku.domain.stm.update_tool import PROMPT_MACROS

PARAMETER_FIELDS: Final = {
    "refresh_cadence": "refresh_cadence",
    "render_mode": "render_mode",
    "crude_message_count": "crude_message_count",
    "nudge_depth": "nudge_injection_depth",
    "content_depth": "content_injection_depth",
}
"""``/server stm parameters`` option name → StmConfig field."""

INTEGER_RANGES: Final = {
    "refresh_cadence": (1, 50),
    "crude_message_count": (0, 50),
    "nudge_depth": (0, 50),
    "content_depth": (-1, 50),
}

CAPABILITY_FIELDS: Final = {
    "short_term_memory": "short_term_memory_enabled",
    "self_teaching": "self_teaching_enabled",
    "personal_memories": "personal_memories_enabled",
}
"""``/capabilities manage`` option name → Capabilities field."""

MAX_PROMPT_OVERRIDE_CHARS: Final = 2000
MAX_CATEGORY_LABEL_CHARS: Final = 50
MAX_CATEGORY_DESCRIPTION_CHARS: Final = 300
LABEL_SEPARATOR: Final = ":"
MAX_CATEGORY_LINE_CHARS: Final = (
    MAX_CATEGORY_LABEL_CHARS + len(LABEL_SEPARATOR) + 1 + MAX_CATEGORY_DESCRIPTION_CHARS
)
PROMPT_PLACEHOLDERS: Final = tuple(f"{{{name}}}" for name in PROMPT_MACROS)
"""What a prompt override may say, filled in when the text is used (``prompt_macros``)."""


class InvalidSettingsEdit(ValueError):
    """An edit that cannot be saved; the message is written for the admin who sent it."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(f"• {problem}" for problem in problems))
        self.problems = tuple(problems)


def apply_parameters(stm: StmConfig, values: Mapping[str, Any]) -> StmConfig:
    """``stm`` with the given ``/server stm parameters`` options applied."""
    problems: list[str] = []
    changes: dict[str, Any] = {}
    for name, value in values.items():
        field_name = PARAMETER_FIELDS.get(name)
        if field_name is None:
            problems.append(f"`{name}` is not a parameter I know.")
        elif name == "render_mode":
            modes = {mode.value for mode in RenderMode}
            if value not in modes:
                problems.append(f"`render_mode` must be one of {', '.join(sorted(modes))}.")
            else:
                changes[field_name] = RenderMode(value)
        else:
            low, high = INTEGER_RANGES[name]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                problems.append(f"`{name}` must be a whole number from {low} to {high}.")
            else:
                changes[field_name] = value
    if problems:
        raise InvalidSettingsEdit(problems)
    return replace(stm, **changes)


def apply_prompt_overrides(stm: StmConfig, tool_description: str, update_nudge: str) -> StmConfig:
    """``stm`` with both prompt overrides replaced; a blank text clears its override (our default)."""
    problems = [
        f"The {what} is {len(text.strip())} characters; the limit is {MAX_PROMPT_OVERRIDE_CHARS}."
        for what, text in (("tool description", tool_description), ("reminder text", update_nudge))
        if len(text.strip()) > MAX_PROMPT_OVERRIDE_CHARS
    ]
    if problems:
        raise InvalidSettingsEdit(problems)
    return replace(
        stm,
        tool_description_override=tool_description.strip() or None,
        update_nudge_override=update_nudge.strip() or None,
    )


def category_line(category: StmCategory) -> str:
    """How a category is shown in the edit form: ``Label: description``."""
    if not category.description:
        return category.label
    return f"{category.label}{LABEL_SEPARATOR} {category.description}"


def parse_categories(
    lines: Sequence[str], existing: Sequence[StmCategory], max_categories: int
) -> tuple[StmCategory, ...]:
    """Categories from ``Label: description`` lines, positions in line order; blank lines are skipped.

    A label the server already has keeps its slug, so memory written under it stays attached.
    No lines at all means single-summary mode.
    """
    filled = [(number, line.strip()) for number, line in enumerate(lines, start=1) if line.strip()]
    problems: list[str] = []
    if len(filled) > max_categories:
        problems.append(f"At most {max_categories} categories; you gave {len(filled)}.")
    parsed: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for number, line in filled:
        label, _, description = line.partition(LABEL_SEPARATOR)
        label, description = " ".join(label.split()), description.strip()
        if not label:
            problems.append(f"Category {number}: write a label before the `{LABEL_SEPARATOR}`.")
        elif not (key := _label_key(label)):
            problems.append(f"Category {number}: the label needs at least one letter or digit.")
        elif len(label) > MAX_CATEGORY_LABEL_CHARS:
            problems.append(
                f"Category {number}: the label is longer than {MAX_CATEGORY_LABEL_CHARS} characters."
            )
        elif key in seen:
            problems.append(f"Category {number}: “{label}” repeats category {seen[key]}.")
        else:
            seen[key] = number
        if len(description) > MAX_CATEGORY_DESCRIPTION_CHARS:
            problems.append(
                f"Category {number}: the description is longer than {MAX_CATEGORY_DESCRIPTION_CHARS} characters."
            )
        parsed.append((label, description))
    if problems:
        raise InvalidSettingsEdit(problems)
    return _with_slugs(parsed, existing)


def apply_capabilities(capabilities: Capabilities, values: Mapping[str, Any]) -> Capabilities:
    """``capabilities`` with the given ``/capabilities manage`` toggles applied."""
    problems: list[str] = []
    changes: dict[str, bool] = {}
    for name, value in values.items():
        field_name = CAPABILITY_FIELDS.get(name)
        if field_name is None:
            problems.append(f"`{name}` is not a capability I know.")
        elif not isinstance(value, bool):
            problems.append(f"`{name}` must be true or false.")
        else:
            changes[field_name] = value
    if problems:
        raise InvalidSettingsEdit(problems)
    return replace(capabilities, **changes)


def _label_key(label: str) -> str:
    """Labels that differ only in case, width, spacing or punctuation would read as the same section."""
    folded = unicodedata.normalize("NFKC", label).casefold()
    return "".join(character for character in folded if character.isalnum())


def _with_slugs(
    parsed: Sequence[tuple[str, str]], existing: Sequence[StmCategory]
) -> tuple[StmCategory, ...]:
    kept_slugs = {_label_key(category.label): category.slug for category in existing}
    taken = set(kept_slugs.values())
    categories = []
    for position, (label, description) in enumerate(parsed):
        slug = kept_slugs.get(_label_key(label)) or slug_for_label(label, taken)
        taken.add(slug)
        categories.append(StmCategory(slug=slug, label=label, description=description, position=position))
    return tuple(categories)


MAX_TRIGGER_WORDS: Final = 10
MAX_TRIGGER_WORD_CHARS: Final = 32
MIN_TRIGGER_WORD_CHARS: Final = 2
TRIGGER_WORD_SEPARATOR: Final = ","


def parse_trigger_words(text: str) -> tuple[str, ...]:
    """``/server addressing trigger_words:`` as stored: comma-separated words or phrases, trimmed,
    without repeats (case- and width-insensitive, as the relay matches them). Blank clears them."""
    words: list[str] = []
    seen: set[str] = set()
    problems = []
    for raw in text.split(TRIGGER_WORD_SEPARATOR):
        word = " ".join(raw.split())
        key = unicodedata.normalize("NFKC", word).casefold()
        if not word or key in seen:
            continue
        if not MIN_TRIGGER_WORD_CHARS <= len(word) <= MAX_TRIGGER_WORD_CHARS:
            problems.append(
                f"“{word[:MAX_TRIGGER_WORD_CHARS]}” must be {MIN_TRIGGER_WORD_CHARS} to "
                f"{MAX_TRIGGER_WORD_CHARS} characters"
            )
        elif not any(character.isalnum() for character in word):
            problems.append(f"“{word}” needs a letter or a digit")
        elif "<" in word or "@" in word:
            problems.append(f"“{word}” looks like a mention; mentions of the bot always call it")
        seen.add(key)
        words.append(word)
    if len(words) > MAX_TRIGGER_WORDS:
        problems.append(f"at most {MAX_TRIGGER_WORDS} trigger words, not {len(words)}")
    if problems:
        raise InvalidSettingsEdit(problems)
    return tuple(words)


PERSONA_NAME_FORBIDDEN: Final = frozenset("[]|<>@`#:")
"""What the dialogue's speaker headers (``[Name | UserID:…]``) and Discord's markup give a meaning to."""


def apply_persona(persona: Persona, name: str, prompt: str) -> Persona:
    """The persona with a new name and personality (blank: the default one), or why not."""
    name = " ".join(name.split())
    prompt = prompt.strip()
    problems = []
    if not 1 <= len(name) <= MAX_PERSONA_NAME_CHARS:
        problems.append(f"the name must be 1 to {MAX_PERSONA_NAME_CHARS} characters")
    elif forbidden := sorted(set(name) & PERSONA_NAME_FORBIDDEN):
        problems.append("the name cannot contain " + " ".join(f"`{c}`" for c in forbidden))
    elif not any(character.isalnum() for character in name):
        problems.append("the name needs a letter or a digit")
    if len(prompt) > MAX_PERSONA_PROMPT_CHARS:
        problems.append(f"the personality is {len(prompt)} characters; at most {MAX_PERSONA_PROMPT_CHARS}")
    if problems:
        raise InvalidSettingsEdit(problems)
    return replace(persona, name=name, system_prompt=prompt)
