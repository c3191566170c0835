"""``neutralise_markers`` over arbitrary text: nothing that reads as <som> or <eom> survives it."""

from __future__ import annotations

import pytest

from kioku.domain.text import neutralise_markers


@pytest.mark.parametrize(
    "hidden",
    [" " * 46, "\u200b" * 100, "\u00a0\u200d" * 30],
    ids=["46 spaces", "100 zero-width spaces", "no-break spaces and joiners"],
)
def test_a_marker_padded_with_many_invisible_characters_is_neutralised(hidden):
    assert neutralise_markers(f"<{hidden}som>") == "(som)"
    assert neutralise_markers(f"＜{hidden}EOM﹥") == "(eom)"
