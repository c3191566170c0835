"""The playground console: what to click (by number, by label, never a guess), how long to wait,
and embeds shown as Discord lays them out."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kioku.playground.render import readable, render_buttons, render_embed
from kioku.playground.session import parse_duration, pick_button

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


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("25h", timedelta(hours=25)),
        ("90m", timedelta(minutes=90)),
        ("2d", timedelta(days=2)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("45s", timedelta(seconds=45)),
        (" 1D12H ", timedelta(days=1, hours=12)),
    ],
)
def test_a_wait_reads_days_hours_minutes_and_seconds(text, span):
    assert parse_duration(text) == span


@pytest.mark.parametrize("text", ["", "soon", "25", "h", "-1h", "0m", "3651d", "1h 30m", "30m1h"])
def test_a_wait_that_is_no_forward_duration_is_refused(text):
    with pytest.raises(ValueError, match=r"duration|wait between"):
        parse_duration(text)


def test_an_embed_keeps_its_line_breaks_and_reads_without_markdown():
    embed = {
        "title": "**Memories** about you",
        "description": "First line with *emphasis*.\nSecond line, saved <t:1796083200:R>.\n\n`#12345`",
        "fields": [{"name": "__Where__", "value": "one\ntwo"}],
        "footer": {"text": "page 1/2"},
    }
    assert render_embed(embed).splitlines() == [
        "┃ Memories about you",
        "┃ First line with emphasis.",
        "┃ Second line, saved 2026-12-01 00:00 UTC.",
        "┃ ",
        "┃ #12345",
        "┃ ▸ Where",
        "┃   one",
        "┃   two",
        "┃ — page 1/2",
    ]


def test_readable_leaves_lone_stars_and_snake_case_alone():
    assert readable("2 * 3 * 4 and some_snake_case") == "2 * 3 * 4 and some_snake_case"


def test_readable_shows_discord_subtext_without_its_marker():
    assert readable("-# by Bobby in #general\n# Title") == "by Bobby in #general\nTitle"
