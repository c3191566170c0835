"""The time memory is kept by. Deployed it is the system clock; the playground moves it forward
(``:wait 25h``) so freshness, expiry, rate windows and the janitor can be tried in minutes.

Signature freshness and timeouts read their own clocks (``time.time``, ``time.monotonic``): moving
this one never makes a request look stale or a model call time out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_offset = timedelta(0)


def now() -> datetime:
    return datetime.now(UTC) + _offset


def advance(by: timedelta) -> None:
    """Move the clock forward by ``by`` (the playground's ``:wait``); it never goes back."""
    global _offset
    if by < timedelta(0):
        raise ValueError("the clock only moves forward")
    _offset += by


def reset() -> None:
    global _offset
    _offset = timedelta(0)
