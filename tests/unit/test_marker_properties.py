"""``neutralise_markers`` over arbitrary text: nothing that reads as <som> or <eom> survives it."""

from __future__ import annotations

import sys
import unicodedata
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.domain.text import MARKER_CLOSERS, MARKER_OPENERS, neutralise_markers

MARKERS: Final = frozenset({"<som>", "<eom>"})
OPENERS: Final = "<＜﹤"
CLOSERS: Final = ">＞﹥"
INVISIBLES: Final = "\u200b\u200c\u200d\u2060\ufeff"
SPACES: Final = " \u00a0\u3000"
COMBINING: Final = "\u0301\u0338"
LETTERS: Final = {
    "s": "sSｓＳſˢ",
    "o": "oOｏＯᵒ",
    "m": "mMｍＭᵐ",
    "e": "eEｅＥᵉ",
}
"""Each letter in either case, full width, and a compatibility form (long s, superscripts)."""
UNSEEN_CHARACTERS: Final = INVISIBLES + SPACES + COMBINING
ALPHABET: Final = OPENERS + CLOSERS + UNSEEN_CHARACTERS + "".join(LETTERS.values()) + "xy"
UNSEEN: Final = frozenset({"Cf", "Mn", "Zs"})


def reading(text: str) -> str:
    """What a reader makes of ``text``: compatibility forms and case folded, zero-width, combining
    and space characters gone."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    return "".join(c for c in folded if unicodedata.category(c) not in UNSEEN)


def spans_reading_as_markers(text: str) -> list[str]:
    return [
        text[start:end]
        for start in range(len(text))
        if reading(text[start]).startswith("<")
        for end in range(start + 1, len(text) + 1)
        if reading(text[start:end]) in MARKERS
    ]


@st.composite
def marker_lookalikes(draw: st.DrawFn) -> str:
    """<som> or <eom> in any width and case, with invisible, space and combining characters anywhere
    inside."""
    gap = st.text(alphabet=UNSEEN_CHARACTERS, max_size=20)
    pieces = [draw(st.sampled_from(OPENERS))]
    for letter in draw(st.sampled_from(["som", "eom"])):
        pieces += [draw(gap), draw(st.sampled_from(LETTERS[letter]))]
    pieces += [draw(gap), draw(st.sampled_from(CLOSERS))]
    return "".join(pieces)


texts = st.lists(st.one_of(marker_lookalikes(), st.text(alphabet=ALPHABET, max_size=12)), max_size=6).map(
    "".join
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(texts)
def test_nothing_that_reads_as_a_marker_survives(text):
    # Given any text mixing angle brackets, letters of any width and case, zero-width characters
    # When it is neutralised
    neutralised = neutralise_markers(text)

    # Then no part of it reads as <som> or <eom>
    assert spans_reading_as_markers(neutralised) == []


@pytest.mark.parametrize(
    "hidden",
    [" " * 46, "\u200b" * 100, "\u00a0\u200d" * 30],
    ids=["46 spaces", "100 zero-width spaces", "no-break spaces and joiners"],
)
def test_a_marker_padded_with_many_invisible_characters_is_neutralised(hidden):
    assert neutralise_markers(f"<{hidden}som>") == "(som)"
    assert neutralise_markers(f"＜{hidden}EOM﹥") == "(eom)"


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet=ALPHABET.translate(str.maketrans("", "", OPENERS)), max_size=40))
def test_text_without_an_opening_bracket_is_left_alone(text):
    assert neutralise_markers(text) == text


def test_the_marker_characters_are_every_code_point_that_decomposes_to_an_angle_bracket():
    # Given every code point whose compatibility decomposition begins with "<" or ">"
    code_points = [chr(point) for point in range(sys.maxunicode + 1)]
    openers = {c for c in code_points if unicodedata.normalize("NFKD", c).startswith("<")}
    closers = {c for c in code_points if unicodedata.normalize("NFKD", c).startswith(">")}

    # Then those are the markers' openers and closers
    assert set(MARKER_OPENERS) == openers
    assert set(MARKER_CLOSERS) == closers


def test_struck_angle_brackets_are_neutralised_too():
    # Given ≮ and ≯: "<" and ">" with a combining long solidus overlay (U+0338, a mark a reader drops)
    text = "\u226esom\u226f"
    assert spans_reading_as_markers(text) == [text]

    # When the text is neutralised
    # Then it no longer reads as <som>
    assert spans_reading_as_markers(neutralise_markers(text)) == []
