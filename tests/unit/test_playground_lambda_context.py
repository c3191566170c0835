"""The local stack's Lambda context runs down as Lambda's does."""

from __future__ import annotations

from kioku.playground.functions import LambdaContext


def test_the_remaining_time_runs_down_from_the_functions_timeout_and_stops_at_zero():
    # Given an invocation of a function with a 120 s timeout, on a clock the test moves
    now = [1000.0]
    context = LambdaContext(120, clock=lambda: now[0])

    # Then every model call of the turn shares that one deadline
    assert context.get_remaining_time_in_millis() == 120_000
    now[0] += 45.5
    assert context.get_remaining_time_in_millis() == 74_500
    now[0] += 200
    assert context.get_remaining_time_in_millis() == 0


def test_by_default_the_local_function_has_thirty_seconds():
    assert 29_000 < LambdaContext().get_remaining_time_in_millis() <= 30_000
