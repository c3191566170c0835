"""Text helpers shared by the memory tools: placeholders, macros, normalisation, shortening."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping

MEMORY_TOKENS = frozenset({"user", "bot"})
_PLACEHOLDER = re.compile(r"\{([^{}\s]{1,64})\}")
_WHITESPACE = re.compile(r"\s+")
USER_MENTION = re.compile(r"<@!?(\d{1,20})>")
"""A Discord user mention, ``<@id>`` or the legacy nickname form ``<@!id>``; group 1 is the id."""


def expand_macros(text: str, macros: Mapping[str, str]) -> str:
    """Replace each ``{name}`` whose name is in ``macros``; leave every other brace alone."""

    def replace(match: re.Match[str]) -> str:
        return macros.get(match.group(1), match.group(0))

    return _PLACEHOLDER.sub(replace, text)


def sanitize_unknown_placeholders(text: str, keep: Collection[str] = MEMORY_TOKENS) -> str:
    """Drop ``{tokens}`` other than ``keep`` (an LLM writing ``{obonya}`` for ``{user}``), tidy spaces."""
    cleaned = _PLACEHOLDER.sub(lambda m: m.group(0) if m.group(1) in keep else "", text)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip()


def normalize_for_comparison(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed: two texts a person would call the same compare equal."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def shorten(text: str, limit: int, ellipsis: str = "…") -> str:
    """``text`` cut to at most ``limit`` characters, on a word boundary when one is near."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit - len(ellipsis), 0)]
    space = cut.rfind(" ")
    if space >= limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + ellipsis
