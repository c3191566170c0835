"""The time memory is kept by. Deployed it is the system clock; the playground moves it forward
(``:wait 25h``) so freshness, expiry, rate windows and the janitor can be tried in minutes.

Signature freshness and timeouts read their own clocks (``time.time``, ``time.monotonic``): moving
this one never makes a request look stale or a model call time out.

Every time kioku reads (Discord's timestamps, its own stored ones) goes through :func:`parse_time`,
which never returns a naive datetime: naive and aware datetimes cannot be compared.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, Final

_offset = timedelta(0)

RFC3339: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})", re.ASCII
)


class InvalidTime(ValueError):
    """Not an RFC 3339 date-time with a UTC offset (``Z`` or ``±hh:mm``)."""


def parse_time(text: Any) -> datetime:
    """``text`` as an aware datetime in UTC. Anything but an RFC 3339 time with an offset raises
    InvalidTime: a time without one is ambiguous, and the dates, weeks and compact forms
    ``datetime.fromisoformat`` also accepts are not what Discord or kioku write."""
    if not isinstance(text, str) or not RFC3339.fullmatch(text):
        raise InvalidTime("not an RFC 3339 time with an offset")
    try:
        return datetime.fromisoformat(text.upper()).astimezone(UTC)
    except ValueError:
        raise InvalidTime("not a valid RFC 3339 time") from None


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
