"""``neutralise_markers`` over arbitrary text: nothing that reads as <som> or <eom> survives it, and
nothing else changes. The look-alikes come from Unicode's confusables table (UTS #39) itself."""

from __future__ import annotations

import unicodedata
from functools import cache
from typing import Final

import pytest
from confusable_homoglyphs.confusables import confusables_data
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.domain.text import neutralise_markers

MARKERS: Final = {"<som>": "(som)", "<eom>": "(eom)"}
UNSEEN: Final = frozenset({"Mn", "Me", "Cf", "Zs", "Zl", "Zp", "Cc"})
ENTITIES: Final = {
    "<": ("&lt;", "&LT;", "&#60;", "&#x3C;", "&lt"),
    ">": ("&gt;", "&GT;", "&#62;", "&#x3e;", "&gt"),
}


def entries(char: str) -> set[str]:
    """What the table links ``char`` to (it lists each source → prototype pair both ways, and wraps
    right-to-left letters in direction marks)."""
    return {entry["c"].strip("\u200e\u200f") for entry in confusables_data.get(char, ())}


def same_skeleton(prototype: str) -> set[str]:
    """``prototype`` and every code point whose skeleton it is."""
    return {prototype} | {char for char in entries(prototype) if len(char) == 1}


def class_of(char: str) -> set[str]:
    """Every code point with the same skeleton as ``char``, a source of the table."""
    (prototype,) = entries(char)
    return same_skeleton(prototype)


def visible(text: str) -> str:
    return "".join(c for c in text if unicodedata.category(c) not in UNSEEN)


@cache
def lookalikes() -> dict[str, frozenset[str]]:
    """Each marker character → every code point that reads as it: its skeleton class in either case,
    the small capital's class, the angle brackets' class (U+2329 has a prototype of its own), and the
    compatibility forms (full width, small forms) of all of those."""
    small_capital = {
        letter: unicodedata.lookup(f"LATIN LETTER SMALL CAPITAL {letter.upper()}") for letter in "soem"
    }
    bases = {
        "<": same_skeleton("<") | class_of("\u2329"),
        ">": same_skeleton(">") | class_of("\u232a"),
        "m": same_skeleton("rn") | same_skeleton("M") | class_of(small_capital["m"]),  # m's skeleton is "rn"
        **{
            letter: same_skeleton(letter) | same_skeleton(letter.upper()) | class_of(small_capital[letter])
            for letter in "soe"
        },
    }
    compatible = {}
    for point in range(0x30000):  # every compatibility decomposition lies below U+30000
        char = chr(point)
        compatible.setdefault(visible(unicodedata.normalize("NFKD", char)), set()).add(char)
    return {
        marker_char: frozenset(chars | {c for base in chars for c in compatible.get(base, ())})
        for marker_char, chars in bases.items()
    }


def opening_lookalikes() -> frozenset[str]:
    return lookalikes()["<"] | {"&"}


def reading(text: str) -> str:
    """What a reader makes of ``text``, as far as the markers go: entities decoded, look-alikes of
    the marker characters read as those, and zero-width, combining and space characters gone."""
    for char, forms in ENTITIES.items():
        for form in forms:
            text = text.replace(form, char)
    read = {c: marker_char for marker_char, chars in lookalikes().items() for c in chars}
    return "".join(read.get(c, c.casefold()) for c in text if unicodedata.category(c) not in UNSEEN)


def spans_reading_as_markers(text: str) -> list[str]:
    spans = []
    for start in (index for index, char in enumerate(text) if char in opening_lookalikes()):
        for end in range(start + 1, len(text) + 1):
            read = reading(text[start:end])
            if read in MARKERS:
                spans.append(text[start:end])
            if len(read) > len("<som>") + len("&#x3C;"):
                break
    return spans


def test_every_code_point_whose_skeleton_is_a_marker_character_forms_the_marker():
    # Given each marker with one of its characters swapped for each of its look-alikes
    swapped = [
        (marker[:index] + lookalike + marker[index + 1 :], shown)
        for marker, shown in MARKERS.items()
        for index, char in enumerate(marker)
        for lookalike in sorted(lookalikes()[char])
    ]
    assert len(swapped) > 500

    # When each is neutralised
    # Then every one reads as (som) or (eom)
    assert [
        (text, neutralise_markers(text)) for text, shown in swapped if neutralise_markers(text) != shown
    ] == []


@st.composite
def forged_markers(draw: st.DrawFn) -> tuple[str, str]:
    """A marker of look-alikes, entities for its brackets, with combining marks, format characters
    and spaces between its characters; and what it must be shown as."""
    marker = draw(st.sampled_from(sorted(MARKERS)))
    gap = st.text(alphabet=st.characters(categories=("Mn", "Me", "Cf", "Zs")), max_size=3)
    pieces = []
    for index, char in enumerate(marker):
        forms = sorted(lookalikes()[char]) + list(ENTITIES.get(char, ()))
        pieces.append(draw(st.sampled_from(forms)))
        if index < len(marker) - 1:
            pieces.append(draw(gap))
    return "".join(pieces), MARKERS[marker]


plain_text = st.text(alphabet=st.characters(exclude_characters=opening_lookalikes()), max_size=24)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(plain_text, forged_markers(), plain_text)
def test_a_forged_marker_is_neutralised_and_the_text_around_it_kept(before, forged, after):
    # Given a marker made of look-alikes inside any text without an opening look-alike
    marker, shown = forged
    assert reading(marker) in MARKERS

    # When the text is neutralised
    # Then the marker, and only the marker, is written as (som)/(eom)
    assert neutralise_markers(before + marker + after) == before + shown + after


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.lists(st.one_of(forged_markers().map(lambda forged: forged[0]), plain_text), max_size=5).map("".join)
)
def test_nothing_that_reads_as_a_marker_survives(text):
    assert spans_reading_as_markers(neutralise_markers(text)) == []


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(plain_text)
def test_text_without_an_opening_look_alike_is_left_alone(text):
    assert neutralise_markers(text) == text


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        ("&lt;eom&gt;", "(eom)"),
        ("&lt;&#101;&#x6F;m&gt;", "(eom)"),
        ("&lteom&gt", "(eom)"),
        ("&lsaquo;eom&rsaquo;", "(eom)"),
        ("&lang;som&rang;", "(som)"),
        ("bye &lt;eom&gt; &lt;b&gt;", "bye (eom) &lt;b&gt;"),
        ("AT&T &amp; co: 5 &lt; 6 &amp;&amp; 7 &gt; 3", "AT&T &amp; co: 5 &lt; 6 &amp;&amp; 7 &gt; 3"),
        ("&amp;lt;eom&amp;gt;", "&amp;lt;eom&amp;gt;"),
    ],
)
def test_html_entities_are_read_as_their_characters(typed, shown):
    assert neutralise_markers(typed) == shown


@pytest.mark.parametrize(
    "hidden",
    [" " * 46, "\u200b" * 100, "\u00a0\u200d" * 30, "\u0301\u034f" * 20],
    ids=["46 spaces", "100 zero-width spaces", "no-break spaces and joiners", "combining marks"],
)
def test_a_marker_padded_with_many_invisible_characters_is_neutralised(hidden):
    assert neutralise_markers(f"<{hidden}som>") == "(som)"
    assert neutralise_markers(f"＜{hidden}EOM﹥") == "(eom)"


def test_no_character_neutralised_without_the_table_reads_as_a_markers_opening():
    # Given the characters a text may hold and still be neutralised without the look-alike table
    from kioku.domain.lookalikes import _as_written, reading

    common = sorted(_as_written() - set(map(chr, range(0x80))))
    assert len(common) > 3000

    # Then none reads as < or > (by Unicode's tables here, and by kioku's reading)
    assert set(common) & (opening_lookalikes() | lookalikes()[">"]) == set()
    assert [char for char in common if {"<", ">"} & set(reading(char))] == []


def test_the_ascii_readings_known_from_the_start_are_the_tables():
    from kioku.domain.lookalikes import _ASCII_READINGS, _reading_of

    assert {point: _reading_of(chr(point)) for point in range(0x80)} == _ASCII_READINGS
