"""Text helpers shared by the memory tools: placeholders, macros, normalisation, shortening."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Final

MEMORY_TOKENS = frozenset({"user", "bot"})
_PLACEHOLDER = re.compile(r"\{([^{}\s]{1,64})\}")
_WHITESPACE = re.compile(r"\s+")
USER_MENTION = re.compile(r"<@!?(\d{1,20})>")
"""A Discord user mention, ``<@id>`` or the legacy nickname form ``<@!id>``; group 1 is the id."""
_ANY_MENTION = re.compile(r"<(@!?|@&|#)(\d{1,20})>")

START_OF_MESSAGE: Final = "<som>"
END_OF_MESSAGE: Final = "<eom>"
MAX_LABEL_CHARS: Final = 64


MARKER_OPENERS: Final = "<\u226e\ufe64\uff1c"
"""Every character whose NFKD begins with ``<`` (``≮`` is ``<`` with a mark a reader drops);
a unit test computes the set again."""
MARKER_CLOSERS: Final = ">\u226f\ufe65\uff1e"
_OPENERS = re.escape(MARKER_OPENERS)
_CLOSERS = re.escape(MARKER_CLOSERS)
# No length cap: any number of invisible characters may hide inside a marker. Each scan stops at the
# next opener, so the whole text is still read once.
_MARKER_CANDIDATE = re.compile(f"[{_OPENERS}][^{_OPENERS}{_CLOSERS}\n]+[{_CLOSERS}]")
_MARKER_NAMES: Final = {"<som>": "(som)", "<eom>": "(eom)"}
_INVISIBLE_CATEGORIES: Final = frozenset({"Cf", "Mn", "Me", "Zs", "Zl", "Zp", "Cc"})
_BLANK_LETTERS: Final = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and symbols that render as nothing (Hangul fillers, the blank Braille pattern)."""


def marker_shape(text: str) -> str:
    """``text`` as a reader sees it: compatibility forms folded, case folded, and zero-width,
    combining and space characters gone."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    return "".join(
        c for c in folded if unicodedata.category(c) not in _INVISIBLE_CATEGORIES and c not in _BLANK_LETTERS
    )


def neutralise_markers(text: str) -> str:
    """``text`` with everything that reads as ``<som>`` or ``<eom>`` (any case, full-width, with
    zero-width characters or spaces inside) written as ``(som)``/``(eom)``: nobody can close a
    message early and forge what follows."""

    def replace(match: re.Match[str]) -> str:
        return _MARKER_NAMES.get(marker_shape(match.group(0)), match.group(0))

    return _MARKER_CANDIDATE.sub(replace, text)


def one_line_name(name: str) -> str:
    """A name fit for a header: one line, no brackets or pipes that could forge header fields."""
    cleaned = _WHITESPACE.sub(" ", neutralise_markers(name)).strip()
    return cleaned.replace("[", "(").replace("]", ")").replace("|", "/")[:MAX_LABEL_CHARS]


def person_label(display_name: str, username: str | None = None) -> str:
    """``Display Name (username)`` when the two differ, as the dialogue headers write people."""
    display, user = one_line_name(display_name), one_line_name(username or "")
    if user and display and user != display:
        return f"{display} ({user})"
    return display or user or "unknown"


@dataclass(frozen=True, slots=True)
class MentionNames:
    """The names a turn knows for the ids Discord writes into message text."""

    users: Mapping[str, str] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)
    channels: Mapping[str, str] = field(default_factory=dict)

    def with_users(self, users: Mapping[str, str]) -> MentionNames:
        return MentionNames({**users, **self.users}, self.roles, self.channels)


def readable_mentions(text: str, names: MentionNames) -> str:
    """``text`` with ``<@id>``, ``<@!id>``, ``<@&role>`` and ``<#channel>`` written as the names a
    person sees in Discord (``@Ally``, ``@Moderators``, ``#general``); an id the turn cannot name
    reads as ``@unknown-user``, ``@unknown-role`` or ``#unknown-channel``."""

    def replace(match: re.Match[str]) -> str:
        kind, target = match.groups()
        if kind == "#":
            return f"#{one_line_name(names.channels.get(target) or 'unknown-channel')}"
        if kind == "@&":
            return f"@{one_line_name(names.roles.get(target) or 'unknown-role')}"
        return f"@{one_line_name(names.users.get(target) or 'unknown-user')}"

    return _ANY_MENTION.sub(replace, text)


def expand_macros(text: str, macros: Mapping[str, str]) -> str:
    """Replace each ``{name}`` whose name is in ``macros``; leave every other brace alone."""

    def replace(match: re.Match[str]) -> str:
        return macros.get(match.group(1), match.group(0))

    return _PLACEHOLDER.sub(replace, text)


def sanitize_unknown_placeholders(text: str, keep: Collection[str] = MEMORY_TOKENS) -> str:
    """Unwrap ``{tokens}`` other than ``keep``, as seed 003's original does: only the braces go
    (``{Bob} plays chess`` is ``Bob plays chess``), so a model that braced a name loses no word."""
    cleaned = _PLACEHOLDER.sub(lambda m: m.group(0) if m.group(1) in keep else m.group(1), text)
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
