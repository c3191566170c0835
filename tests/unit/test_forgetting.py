"""A message's sent time comes from its snowflake; the forget-all mark covers what was sent before it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kioku.domain.forgetting import first_snowflake_at, forgotten_since, snowflake_time


def test_a_snowflake_tells_when_it_was_made():
    # Discord's own example (docs, "Snowflakes"): 175928847299117063 is 2016-04-30 11:18:25.796 UTC
    assert snowflake_time("175928847299117063") == datetime(2016, 4, 30, 11, 18, 25, 796000, tzinfo=UTC)


def test_the_first_snowflake_of_a_moment_reads_back_as_that_moment_and_orders_with_time():
    moment = datetime(2026, 12, 1, 20, 10, 0, 123000, tzinfo=UTC)
    assert snowflake_time(first_snowflake_at(moment)) == moment
    assert first_snowflake_at(moment) < first_snowflake_at(moment + timedelta(milliseconds=1))


@pytest.mark.parametrize("not_a_snowflake", ["-5", "abc", ""])
def test_what_is_not_a_snowflake_has_no_time(not_a_snowflake):
    with pytest.raises(ValueError):
        snowflake_time(not_a_snowflake)


def test_only_what_was_sent_before_the_forget_all_or_at_its_instant_is_forgotten():
    sent = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)
    assert forgotten_since(None, sent) is False
    assert forgotten_since(sent + timedelta(seconds=1), sent) is True
    assert forgotten_since(sent, sent) is True  # the same millisecond cannot tell which came first
    assert forgotten_since(sent - timedelta(seconds=1), sent) is False
