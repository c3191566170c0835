"""Rows, limits, crude-list merging and categories."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from kioku.domain.models import StmCategory
from kioku.domain.stm.categories import active_categories, category_labels_text, slug_for_label
from kioku.domain.stm.entries import (
    MAX_CRUDE_LIST_BYTES,
    MAX_CRUDE_TEXT_CHARS,
    StmAddress,
    merge_crude,
)
from tests.unit.stm_builders import CATEGORIES, LIMITS, NOW, message

MINUTE = timedelta(minutes=1)


def test_merge_keeps_the_newest_messages_up_to_the_cap_in_send_order():
    existing = [message(f"old-{i}", age=(30 - i) * MINUTE) for i in range(9)]
    new = [message("new-b", age=MINUTE), message("new-a", age=2 * MINUTE)]
    merged = merge_crude(existing, new, NOW, LIMITS)
    assert len(merged) == LIMITS.max_messages_per_channel
    assert [m.text for m in merged[-3:]] == ["old-8", "new-a", "new-b"]
    assert "old-0" not in [m.text for m in merged]


def test_merge_drops_expired_lines_and_keeps_each_messages_own_timestamp():
    expired = message("expired", age=LIMITS.crude_ttl + MINUTE)
    kept = message("kept", age=LIMITS.crude_ttl - MINUTE)
    merged = merge_crude([expired], [kept], NOW, LIMITS)
    assert [(m.text, m.ts) for m in merged] == [("kept", kept.ts)]


def test_merge_ignores_a_message_it_already_holds():
    first = message("hello", message_id="m1")
    merged = merge_crude([first], [message("hello again", message_id="m1")], NOW, LIMITS)
    assert [m.text for m in merged] == ["hello"]


def test_merge_cuts_long_texts_and_keeps_the_list_within_its_byte_budget():
    huge = [message("😀" * 5000, age=(60 - i) * MINUTE, message_id=str(i)) for i in range(50)]
    merged = merge_crude([], huge, NOW, replace(LIMITS, max_messages_per_channel=50))
    assert all(len(m.text) <= MAX_CRUDE_TEXT_CHARS for m in merged)
    assert sum(m.stored_bytes() for m in merged) <= MAX_CRUDE_LIST_BYTES
    assert merged[-1].message_id == "49"  # the newest survive


def test_an_address_belongs_to_exactly_one_of_a_server_or_a_user():
    with pytest.raises(ValueError):
        StmAddress(channel_id="1", persona_id="p")
    with pytest.raises(ValueError):
        StmAddress(channel_id="1", persona_id="p", guild_id="s", user_id="u")
    assert StmAddress.of(None, "u", "1", "p").is_dm
    assert not StmAddress.of("s", "u", "1", "p").is_dm


@pytest.mark.parametrize(
    ("label", "taken", "slug"),
    [
        ("Current Plans", (), "current_plans"),
        ("  Mood & Vibe!! ", (), "mood_vibe"),
        ("Café", (), "cafe"),
        ("予定", (), "category"),
        ("Plans", ("plans",), "plans_2"),
        ("Plans", ("plans", "plans_2"), "plans_3"),
        ("x" * 100, (), "x" * 48),
    ],
)
def test_slugs_come_from_labels(label, taken, slug):
    assert slug_for_label(label, taken) == slug


def test_categories_are_in_position_order_and_capped():
    many = tuple(StmCategory(slug=f"c{i}", label=f"C{i}", description="", position=10 - i) for i in range(8))
    active = active_categories(many, 5)
    assert [c.slug for c in active] == ["c7", "c6", "c5", "c4", "c3"]
    assert category_labels_text(active_categories(CATEGORIES, 5)) == "Mood, Plans"


@pytest.mark.parametrize(
    "configured",
    [(), (StmCategory(slug="summary", label="Summary", description="", position=0),)],
)
def test_no_categories_or_only_the_default_one_is_fallback_mode(configured):
    assert active_categories(configured, 5) == ()
