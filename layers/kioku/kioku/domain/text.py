"""Text helpers shared by the memory tools: placeholders, macros, normalisation, shortening."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from kioku.discord.snowflake import SNOWFLAKE_DIGITS
from kioku.domain.lookalikes import reads_as_written, replace_lookalikes, symbol_reading

MEMORY_TOKENS = frozenset({"user", "bot"})
_PLACEHOLDER = re.compile(r"\{([^{}\s]{1,64})\}")
_WHITESPACE = re.compile(r"\s+")
USER_MENTION = re.compile(f"<@!?({SNOWFLAKE_DIGITS})>")
"""A Discord user mention, ``<@id>`` or the legacy nickname form ``<@!id>``; group 1 is the id."""
_ANY_MENTION = re.compile(f"<(@!?|@&|#)({SNOWFLAKE_DIGITS})>")
_CHANNEL_MENTION = re.compile(f"<#({SNOWFLAKE_DIGITS})>")

START_OF_MESSAGE: Final = "<som>"
END_OF_MESSAGE: Final = "<eom>"
MAX_LABEL_CHARS: Final = 64


_MARKER_NAMES: Final = {START_OF_MESSAGE: "(som)", END_OF_MESSAGE: "(eom)"}
_HEADER_FIELDS: Final = {"[": "(", "]": ")", "l": "/"}
"""What a header's brackets and pipes are written as in names, by their reading: ``|``'s skeleton is ``l``."""
_ASCII_HEADER_FIELDS: Final = str.maketrans("[]|", "()/")


def neutralise_markers(text: str) -> str:
    """``text`` with everything that reads as ``<som>`` or ``<eom>`` written as ``(som)``/``(eom)``:
    look-alike letters and brackets from Unicode's confusables (Cyrillic ``е``, Greek ``ο``, small
    capitals, ``‹ 〈 ⟨ ❮``, and ``⋖ ɯ`` by eye), full-width forms, HTML entities (``&lt;eom&gt;``),
    any case, and zero-width, combining or space characters inside. Nobody can close a message early
    and forge what follows; the rest of the text stays as written."""
    if "<" not in text and "&" not in text and reads_as_written(text):  # nothing can read as a marker
        return text
    return replace_lookalikes(text, _MARKER_NAMES)


class Shape(StrEnum):
    """Where a string from outside stands in what the model reads (``outside``)."""

    WORDS = "words"
    """Between ``<som>`` and ``<eom>``: what someone wrote, as written but for the markers."""
    LINE = "line"
    """A name or a field in one of our lines (a header, a heading, a placeholder): one line, and no
    bracket or pipe, nor a look-alike of one, that could close it or forge a header's fields."""
    NOTES = "notes"
    """Outside the markers, lines kept: a summary, a category, a memory's text, an excerpt; no
    bracket or pipe either, so none of its lines reads as a header."""


def outside(text: str, shape: Shape = Shape.WORDS) -> str:
    """The one neutraliser every string from outside (a person's name, message text, an embed's or
    an attachment's fields, a summary, a memory's text) passes on its way into the model's
    messages, after every expansion (``{user}``, mentions): no marker, and outside the markers no
    header, survives it (docs/privacy.md, "What reaches the model as someone's words")."""
    text = neutralise_markers(text)
    if shape is Shape.WORDS:
        return text
    if shape is Shape.LINE:
        text = (text if _single_spaced(text) else _WHITESPACE.sub(" ", text)).strip()
    if reads_as_written(text):  # a pass in Python per character, and the table: only when needed
        return text.translate(_ASCII_HEADER_FIELDS) if "[" in text or "]" in text or "|" in text else text
    return "".join(_header_safe(char) for char in text)


def one_line_texts(texts: Iterable[str]) -> list[str]:
    """``outside(text, Shape.LINE)`` of each of ``texts``. A fresh worker writes a thousand memory
    lines at once, most of them printable ASCII, single-spaced and not spaced at either end, with
    nothing a marker or a header's field is made of (``<``, ``&``, ``[``, ``]``, ``|``): ``outside``
    keeps such a text as it is, and so does this, in one comprehension instead of a call each."""
    return [
        text
        if text.isascii()
        and text.isprintable()
        and "  " not in text
        and "<" not in text
        and "&" not in text
        and "[" not in text
        and "]" not in text
        and "|" not in text
        and text[:1] != " "
        and text[-1:] != " "
        else outside(text, Shape.LINE)
        for text in texts
    ]


def _single_spaced(text: str) -> bool:
    """Whether ``text`` has no whitespace but single spaces, so the pattern would leave it as it is:
    ASCII's other whitespace is all control characters. Recall writes a thousand memory lines on a
    fresh worker; this test costs a tenth of the pattern."""
    return text.isascii() and text.isprintable() and "  " not in text


def one_line_name(name: str) -> str:
    """A name fit for a header: one line, no brackets or pipes that could forge header fields, nor
    symbols that read as them (``［``, ``｜``, ``∣``)."""
    return outside(name, Shape.LINE)[:MAX_LABEL_CHARS]


def _header_safe(char: str) -> str:
    if char.isalnum() or char in " \n":
        return char
    return _HEADER_FIELDS.get(symbol_reading(char) or "", char)


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


def mentioned_channels(texts: Iterable[str]) -> set[str]:
    """The ids of the channels ``<#id>`` mentions in ``texts``."""
    return {match.group(1) for text in texts for match in _CHANNEL_MENTION.finditer(text)}


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
