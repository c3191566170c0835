"""Checking admin edits of STM settings and capabilities: what is accepted, what is refused and why."""

from __future__ import annotations

import pytest

from kioku.domain.models import Capabilities, RenderMode, StmCategory, StmConfig
from kioku.domain.settings_edit import (
    InvalidSettingsEdit,
    apply_capabilities,
    apply_parameters,
    apply_prompt_overrides,
    category_line,
    parse_categories,
)

PLANS = StmCategory(slug="plans", label="Plans", description="what people mean to do", position=0)


def test_parameters_map_option_names_to_their_fields():
    stm = apply_parameters(
        StmConfig(),
        {
            "refresh_cadence": 3,
            "render_mode": "supersede",
            "crude_message_count": 0,
            "nudge_depth": 0,
            "content_depth": -1,
        },
    )
    assert stm == StmConfig(
        refresh_cadence=3,
        render_mode=RenderMode.SUPERSEDE,
        crude_message_count=0,
        nudge_injection_depth=0,
        content_injection_depth=-1,
    )


def test_parameters_not_given_keep_their_values():
    before = StmConfig(refresh_cadence=9, tool_description_override="custom")
    assert apply_parameters(before, {"nudge_depth": 4}) == StmConfig(
        refresh_cadence=9, tool_description_override="custom", nudge_injection_depth=4
    )


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"refresh_cadence": 0}, "`refresh_cadence` must be a whole number from 1 to 50"),
        ({"refresh_cadence": 51}, "from 1 to 50"),
        ({"crude_message_count": -1}, "`crude_message_count`"),
        ({"content_depth": -2}, "from -1 to 50"),
        ({"nudge_depth": 2.5}, "`nudge_depth`"),
        ({"nudge_depth": "2"}, "`nudge_depth`"),
        ({"nudge_depth": True}, "`nudge_depth`"),
        ({"render_mode": "verbose"}, "crude_summary, supersede"),
        ({"version": 3}, "`version` is not a parameter"),
    ],
)
def test_bad_parameters_are_refused_by_name(values, complaint):
    with pytest.raises(InvalidSettingsEdit) as raised:
        apply_parameters(StmConfig(), values)
    assert complaint in str(raised.value)


def test_every_bad_parameter_is_reported_at_once():
    with pytest.raises(InvalidSettingsEdit) as raised:
        apply_parameters(StmConfig(), {"refresh_cadence": 0, "nudge_depth": 99, "content_depth": 1})
    assert len(raised.value.problems) == 2


def test_prompt_overrides_are_stripped_and_blank_clears_them():
    before = StmConfig(tool_description_override="old", update_nudge_override="old nudge")
    after = apply_prompt_overrides(before, "  Keep it short, {user}.  ", "   \n ")
    assert after.tool_description_override == "Keep it short, {user}."
    assert after.update_nudge_override is None


def test_overlong_prompt_overrides_are_refused():
    with pytest.raises(InvalidSettingsEdit) as raised:
        apply_prompt_overrides(StmConfig(), "x" * 2001, "fine")
    assert "tool description is 2001 characters" in str(raised.value)


def test_category_lines_become_categories_in_order_with_slugs():
    categories = parse_categories(["Plans: what people mean to do", "", "  Mood  :  how it feels "], (), 5)
    assert categories == (
        StmCategory(slug="plans", label="Plans", description="what people mean to do", position=0),
        StmCategory(slug="mood", label="Mood", description="how it feels", position=1),
    )


def test_a_label_alone_is_a_category_without_description():
    assert parse_categories(["Open questions"], (), 5)[0].description == ""


def test_no_lines_means_single_summary_mode():
    assert parse_categories(["", "  "], (PLANS,), 5) == ()


def test_a_kept_label_keeps_its_slug_even_when_moved_and_recased():
    existing = (StmCategory(slug="category", label="予定", description="", position=0),)
    categories = parse_categories(["気分: mood", "予定: plans"], existing, 5)
    assert [(c.label, c.slug, c.position) for c in categories] == [
        ("気分", "category_2", 0),
        ("予定", "category", 1),
    ]


def test_labels_without_ascii_letters_still_get_distinct_slugs():
    slugs = [c.slug for c in parse_categories(["予定", "気分", "話題"], (), 5)]
    assert len(set(slugs)) == 3


@pytest.mark.parametrize(
    ("lines", "complaint"),
    [
        (["Plans: a", "plans!: b"], "repeats category 1"),
        (["Ｐｌａｎｓ", "plans"], "repeats category 1"),
        ([": no label"], "write a label"),
        (["!!!: punctuation only"], "at least one letter or digit"),
        (["L" * 51 + ": d"], "longer than 50 characters"),
        (["Plans: " + "d" * 301], "description is longer than 300"),
        ([f"C{n}" for n in range(6)], "At most 5 categories; you gave 6"),
    ],
)
def test_bad_category_lines_are_refused(lines, complaint):
    with pytest.raises(InvalidSettingsEdit) as raised:
        parse_categories(lines, (), 5)
    assert complaint in str(raised.value)


def test_category_line_round_trips_through_parsing():
    assert parse_categories([category_line(PLANS)], (PLANS,), 5) == (PLANS,)


def test_capability_toggles_change_only_what_is_given():
    after = apply_capabilities(Capabilities(), {"short_term_memory": False})
    assert after == Capabilities(short_term_memory_enabled=False)


@pytest.mark.parametrize(
    "values", [{"short_term_memory": "false"}, {"short_term_memory": 0}, {"telepathy": True}]
)
def test_bad_capability_toggles_are_refused(values):
    with pytest.raises(InvalidSettingsEdit):
        apply_capabilities(Capabilities(), values)
