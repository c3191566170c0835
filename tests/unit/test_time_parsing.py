"""The one parser of the times kioku reads: RFC 3339 with an offset, always aware, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import kioku
from kioku.clock import InvalidTime, parse_time


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T01:00:00.000000+00:00", datetime(2026, 11, 30, 1, tzinfo=UTC)),
        ("2026-11-30T01:00:00Z", datetime(2026, 11, 30, 1, tzinfo=UTC)),
        ("2026-11-30t01:00:00z", datetime(2026, 11, 30, 1, tzinfo=UTC)),
        ("2026-11-30T10:00:00.5+09:00", datetime(2026, 11, 30, 1, 0, 0, 500000, tzinfo=UTC)),
        ("2026-11-29T20:00:00-05:00", datetime(2026, 11, 30, 1, tzinfo=UTC)),
    ],
)
def test_a_time_with_an_offset_is_read_as_the_same_instant_in_utc(text, expected):
    parsed = parse_time(text)
    assert parsed == expected
    assert parsed.utcoffset() is not None and parsed.utcoffset().total_seconds() == 0


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-30T01:00:00",  # no offset: which instant is it?
        "2026-11-30T01:00:00.000000",
        "2026-11-30",
        "20261130T010000Z",
        "2026-W48-1T01:00:00Z",
        "2026-11-31T01:00:00Z",
        "2026-11-30T01:00:00+24:00",
        "２０２６-11-30T01:00:00Z",
        "2026-11-30T01:00:00Z trailing",
        "",
        None,
        1764464400,
    ],
)
def test_anything_else_is_refused_never_read_as_naive(text):
    with pytest.raises(InvalidTime):
        parse_time(text)


def test_every_time_kioku_reads_goes_through_the_one_parser():
    # a second parser is how a naive datetime got in (merge_crude's TypeError): only clock.py parses
    package = Path(kioku.__file__).parent
    parsing = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "fromisoformat" in path.read_text(encoding="utf-8") and path.name != "clock.py"
    ]
    assert parsing == []
