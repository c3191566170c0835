"""The playground console's reading of what to click: by number, by label, never a guess."""

from __future__ import annotations

import pytest

from kioku.playground.console import pick_button, render_buttons

ROWS = [
    {
        "type": 1,
        "components": [
            {"type": 2, "custom_id": "a:1", "label": "Approve #11111"},
            {"type": 2, "custom_id": "r:1", "label": "Reject #11111"},
        ],
    },
    {
        "type": 1,
        "components": [
            {"type": 2, "custom_id": "a:2", "label": "Approve #22222"},
            {"type": 2, "custom_id": "n", "label": "Next", "disabled": True},
        ],
    },
]


@pytest.mark.parametrize(
    ("choice", "custom_id"),
    [("1", "a:1"), ("3", "a:2"), ("Reject #11111", "r:1"), ("reject", "r:1"), ("approve #222", "a:2")],
)
def test_a_button_is_picked_by_number_whole_label_or_the_unique_start_of_one(choice, custom_id):
    assert pick_button(ROWS, choice)["custom_id"] == custom_id


@pytest.mark.parametrize(
    ("choice", "complaint"),
    [
        ("Approve", "could be several buttons"),
        ("0", "no button"),
        ("9", "no button"),
        ("Forget", "no button"),
        ("", "no button"),
        ("Next", "disabled"),
    ],
)
def test_an_ambiguous_missing_or_disabled_button_is_not_clicked(choice, complaint):
    picked = pick_button(ROWS, choice)

    assert isinstance(picked, str) and complaint in picked


def test_buttons_are_shown_numbered_as_they_are_clicked():
    assert render_buttons(ROWS)[:2] == [
        "  [1: Approve #11111]  [2: Reject #11111]",
        "  [3: Approve #22222]  [4: Next (disabled)]",
    ]
