"""Buttons and message updates as Discord takes them: within its limits, or refused before sending."""

from __future__ import annotations

import pytest

from kioku.discord.protocol import ButtonStyle
from kioku.discord.responses import updated_message
from kioku.discord.ui import Button, action_rows


def test_buttons_come_in_action_rows_with_their_style_and_state():
    rows = action_rows(
        [[Button("x:1", "Approve", ButtonStyle.SUCCESS), Button("x:2", "Next", disabled=True)]]
    )

    assert rows == [
        {
            "type": 1,
            "components": [
                {"type": 2, "custom_id": "x:1", "label": "Approve", "style": 3, "disabled": False},
                {"type": 2, "custom_id": "x:2", "label": "Next", "style": 2, "disabled": True},
            ],
        }
    ]


def test_a_long_label_is_cut_to_eighty_characters():
    (row,) = action_rows([[Button("x:1", "a" * 200)]])

    assert len(row["components"][0]["label"]) == 80


@pytest.mark.parametrize(
    "rows",
    [
        [[Button(f"x:{n}", "b")] for n in range(6)],
        [[Button(f"x:{n}", "b") for n in range(6)]],
        [[]],
        [[Button("x:1", "b")], [Button("x:1", "c")]],
        [[Button("x" * 101, "b")]],
        [[Button("", "b")]],
    ],
    ids=[
        "six rows",
        "six in a row",
        "an empty row",
        "a repeated custom_id",
        "a long custom_id",
        "no custom_id",
    ],
)
def test_what_discord_would_reject_is_refused_before_sending(rows):
    with pytest.raises(ValueError):
        action_rows(rows)


def test_an_update_clears_what_it_leaves_out():
    body = updated_message(embeds=[{"title": "t"}])

    assert body["type"] == 7
    assert body["data"]["content"] == "" and body["data"]["components"] == []
    assert "flags" not in body["data"]
