"""What a reader takes text for: HTML entities decoded, compatibility forms and Unicode's confusables
(the UTS #39 skeleton) folded, case folded, and what cannot be seen dropped. ``replace_lookalikes``
finds what reads as a given ASCII string and rewrites only those spans.

The table is the data file ``confusable-homoglyphs`` ships (Unicode's confusables.txt as JSON; the
package's own functions import urllib and a second table we do not need). It is read on the first
call, once per container, never at import: a PING must not pay for it.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Mapping
from functools import cache, lru_cache
from html.entities import html5
from typing import Final

UNSEEN_CATEGORIES: Final = frozenset({"Cf", "Mn", "Me", "Zs", "Zl", "Zp", "Cc"})
"""Format characters, combining marks, spaces and controls: a reader reads across them."""
BLANK_LETTERS: Final = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and symbols that render as nothing (Hangul fillers, the blank Braille pattern)."""
ANGLE_BRACKETS: Final = {"\u2329": "<", "\u232a": ">"}
"""UTS #39 gives 〈 ⟨ 〈 a prototype of their own (❬); a reader still takes them for < and >."""
BY_EYE_BLOCKS: Final = ((0x2190, 0x2C00), (0x0180, 0x02B0), (0x1D00, 0x1DC0), (0xA720, 0xA800))
"""Where the look-alikes UTS #39 reads otherwise lie: arrows and mathematical operators, and the
Latin extensions (IPA, phonetic, epigraphic letters)."""
_BY_EYE = (
    (re.compile(r"(?:LESS-THAN|PRECEDES)\b"), "<"),
    (re.compile(r"(?:GREATER-THAN|SUCCEEDS)\b"), ">"),
    (re.compile(r"(?:LATIN|MODIFIER) .*\b(?:TURNED|INVERTED) M\b"), "m"),
    (
        re.compile(r"(?:BOX DRAWINGS (?:LIGHT|HEAVY) |(?:LIGHT |MEDIUM |HEAVY )?)VERTICAL(?: BAR| LINE)?$"),
        "l",
    ),
    (re.compile(r"(?:LEFT|RIGHT) VERTICAL BOX LINE$"), "l"),
)
"""A sign that begins as a less-than (``⋖``, ``≤``, ``≺``) reads as ``<``; a turned or inverted m
(``ɯ``, which UTS #39 reads as w) as ``m``; a vertical line or bar (``│``, ``❘``, and ``￨`` through
its compatibility form) as ``|``, whose skeleton is ``l``."""
_SMALL_CAPITAL = re.compile(r"LATIN LETTER SMALL CAPITAL ([A-Z])")
_DIRECTION_MARKS = str.maketrans("", "", "\u200e\u200f")  # the table's comments wrap right-to-left letters
_ENTITY = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")
"""What ``html.unescape`` looks at."""
_MAX_CACHED_CHARACTERS: Final = 50_000
_COMMON_BLOCKS: Final = (
    (0x00A0, 0x0250),  # Latin-1 Supplement, Latin Extended-A and -B
    (0x0370, 0x0530),  # Greek, Cyrillic
    (0x2010, 0x2070),  # General Punctuation: dashes, curly quotes, ellipsis
    (0x20A0, 0x20C0),  # currency signs
    (0x2190, 0x2200),  # arrows
    (0x2600, 0x27C0),  # miscellaneous symbols, dingbats
    (0x1F300, 0x1FB00),  # emoji
)
_NOT_AS_WRITTEN: Final = "\u2039\u203a\u2758\u2759\u275a\u276c\u276d\u276e\u276f"
"""The few characters of ``_COMMON_BLOCKS`` that read as a bracket or a bar (``‹ › ❘ ❙ ❚ ❬ ❭ ❮ ❯``)."""


@cache
def _readings() -> dict[str, str]:
    """Each look-alike in the confusables table → what it reads as (its prototype)."""
    from importlib import resources  # here: its import is a fifth of a cold relayed message's own modules

    table = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8")
    linked: dict[str, list[str]] = {}
    for key, entries in json.loads(table).items():
        links = linked.setdefault(key.translate(_DIRECTION_MARKS), [])
        links += [entry["c"].translate(_DIRECTION_MARKS) for entry in entries]
    # The table lists each source → prototype pair both ways; a source has one link, to a prototype
    # that is a sequence or has other sources. A lone pair keeps the ASCII (else the lower) one.
    classes: dict[str, list[str]] = {}
    for char, (other, *more) in linked.items():
        is_source = len(other) > 1 or len(linked.get(other, ())) > 1 or _preferred(other, char)
        if len(char) == 1 and not more and is_source:
            classes.setdefault(other, []).append(char)
    readings = {member: prototype for prototype, members in classes.items() for member in members}
    for prototype, members in classes.items():
        letters = {
            small for char in (prototype, *members) if (small := _small_capital_letter(char)) is not None
        }
        if len(letters) == 1:  # ᴇ and ꭼ read as e, ᴍ and м as m
            readings.update(dict.fromkeys((prototype, *members), letters.pop()))
    for bracket, reads_as in ANGLE_BRACKETS.items():
        prototype = readings[bracket]
        readings.update(dict.fromkeys((prototype, *classes[prototype]), reads_as))
    readings.update(_read_by_eye())
    return readings


def _read_by_eye() -> dict[str, str]:
    """The characters a reader takes for ``<``, ``>`` or ``m`` that the table reads as something
    else (``⋖`` as ``<·``, ``ɯ`` as ``w``) or as nothing: read by their names."""
    found = {}
    for start, end in BY_EYE_BLOCKS:
        for point in range(start, end):
            name = unicodedata.name(chr(point), "")
            for pattern, reads_as in _BY_EYE:
                if pattern.match(name):
                    found[chr(point)] = reads_as
    return found


def _preferred(candidate: str, other: str) -> bool:
    return (not candidate.isascii(), candidate) < (not other.isascii(), other)


def _small_capital_letter(char: str) -> str | None:
    found = _SMALL_CAPITAL.fullmatch(unicodedata.name(char, "")) if len(char) == 1 else None
    return found.group(1).lower() if found else None


def _visible(text: str) -> str:
    return "".join(
        c
        for c in text
        if c == "\n" or (unicodedata.category(c) not in UNSEEN_CATEGORIES and c not in BLANK_LETTERS)
    )


def _reading_of(char: str) -> str:
    """NFKD, unseen characters dropped, each character's prototype, case folded; twice, because a
    capital's look-alike reads as the capital, which lower-cased has look-alikes of its own (М → M →
    m → rn). A line break is kept: nothing reads across it."""
    readings = _readings()
    text = _visible(unicodedata.normalize("NFKD", char))
    for _ in range(2):
        text = "".join(readings.get(c) or _small_capital_letter(c) or c for c in text).casefold()
    return _visible(unicodedata.normalize("NFKD", text))


class _Readings(dict[int, str]):
    """``str.translate``'s table: each code point's reading, worked out the first time it is met."""

    def __missing__(self, point: int) -> str:
        reading = _reading_of(chr(point))
        if len(self) < _MAX_CACHED_CHARACTERS:
            self[point] = reading
        return reading


_ASCII_READINGS: Final = {
    **{point: chr(point).lower() for point in range(0x80)},
    **dict.fromkeys((*range(0x20), 0x20, 0x7F), ""),  # controls and the space: unseen
    ord("\n"): "\n",
    **{ord(char): read for char, read in (('"', "''"), ("%", "o/0"), ("0", "o"), ("1", "l"), ("I", "l"))},
    **{ord(char): read for char, read in (("M", "rn"), ("m", "rn"), ("`", "'"), ("|", "l"))},
}
"""What ``_reading_of`` makes of each ASCII character (``tests/unit/test_marker_properties.py``
checks it): known from the start, an ASCII text holding ``<`` or ``&`` is read without the table."""
_READINGS: Final = _Readings(_ASCII_READINGS)


@cache
def _as_written() -> frozenset[str]:
    blocks = (map(chr, range(start, end)) for start, end in ((0, 0x80), *_COMMON_BLOCKS))
    return frozenset(char for block in blocks for char in block) - frozenset(_NOT_AS_WRITTEN)


_ASCII: Final = frozenset(map(chr, range(0x80)))
_COMMON_EDGES: Final = tuple(edge for block in _COMMON_BLOCKS for edge in block)
"""Where each common block starts and ends: a code point is in one when an odd number of edges are at
or below it."""


def reads_as_written(text: str) -> bool:
    """Whether every character of ``text`` is ASCII or one of the common others (accented letters,
    curly quotes, dashes, emoji) that a reader takes for nothing a marker's ``<`` or ``>``, or a
    header's bracket or bar, is made of (``_as_written``; ``tests/unit/test_marker_properties.py``
    and ``test_outside_strings.py`` check each against Unicode's tables): such a text is neutralised
    without the table, which costs a fresh worker a third of its first ranking to read. Its few
    distinct characters that are not ASCII are placed among the blocks' edges: building the set of
    the blocks' 7,900 characters would cost a fresh worker's first ranking half a millisecond."""
    if text.isascii():
        return True
    return all(
        bisect_right(_COMMON_EDGES, ord(char)) % 2 and char not in _NOT_AS_WRITTEN
        for char in set(text).difference(_ASCII)
    )


def reading(text: str) -> str:
    """``text`` as a reader sees it: ``<``, ``＜``, ``‹``, ``〈`` and ``&lt;`` all read as ``<``,
    ``е`` (Cyrillic), ``ℯ`` and ``ᴇ`` as ``e``, and ``m`` as ``rn`` (its UTS #39 skeleton)."""
    return html.unescape(text).translate(_READINGS)


@lru_cache(maxsize=4096)
def symbol_reading(char: str) -> str | None:
    """What a punctuation mark or symbol reads as (``［`` as ``[``; ``｜``, ``∣`` and ``⏽`` as ``|``'s
    skeleton, ``l``), or None for a letter, a digit or a symbol made of them (``ⓛ``)."""
    shown = _visible(unicodedata.normalize("NFKD", char))
    if not shown or any(unicodedata.category(c)[0] not in "PS" for c in shown):
        return None
    return char.translate(_READINGS)


def replace_lookalikes(text: str, replacements: Mapping[str, str]) -> str:
    """``text`` with every span that reads as a key of ``replacements`` written as its value; every
    other character stays as written."""
    wanted = {reading(key): value for key, value in replacements.items()}
    pattern = _pattern(tuple(wanted))
    if not pattern.search(reading(text)):
        return text
    units, read = _read_units(text)
    read_ends = [read_end for read_end, _, _ in units]
    pieces, kept_from = [], 0
    for match in pattern.finditer(read):
        start = units[bisect_right(read_ends, match.start())][1]
        end = units[bisect_right(read_ends, match.end() - 1)][2]
        if start < kept_from:
            continue
        pieces += [text[kept_from:start], wanted[match.group(0)]]
        kept_from = end
    return "".join([*pieces, text[kept_from:]])


@cache
def _pattern(readings: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(r) for r in sorted(readings, key=len, reverse=True)))


def _read_units(text: str) -> tuple[list[tuple[int, int, int]], str]:
    """``text`` read unit by unit (a character, or an entity as ``html.unescape`` takes it): for each
    unit, where its reading ends and where it starts and ends in ``text``; and the whole reading."""
    units: list[tuple[int, int, int]] = []
    pieces: list[str] = []
    read_end = position = 0
    while position < len(text):
        end, decoded = _unit(text, position)
        piece = decoded.translate(_READINGS)
        read_end += len(piece)
        pieces.append(piece)
        units.append((read_end, position, end))
        position = end
    return units, "".join(pieces)


def _unit(text: str, position: int) -> tuple[int, str]:
    """Where the unit at ``position`` ends and what it decodes to, as ``html.unescape`` would."""
    entity = _ENTITY.match(text, position) if text[position] == "&" else None
    if entity is None:
        return position + 1, text[position]
    reference = entity.group(0)
    if reference[1] == "#":
        return entity.end(), html.unescape(reference)
    name = reference[1:]
    if name in html5:
        return entity.end(), html5[name]
    for size in range(len(name) - 1, 1, -1):  # a legacy entity without its semicolon: "&ltb"
        if name[:size] in html5:
            return position + 1 + size, html5[name[:size]]
    return position + 1, "&"
