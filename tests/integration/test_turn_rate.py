"""Turns per person per minute: a conditional counter in DynamoDB, then one notice and silence."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from kioku.adapters.dynamodb.keys import ItemKey
from kioku.adapters.dynamodb.turn_ledger import RateLedger
from kioku.domain.turn import RateTaken

NOW = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)
LIMIT = 10


def test_thirty_turns_at_once_let_exactly_the_limit_through_and_one_notice(moto_server):
    # Given thirty turns of one person arriving together, each worker with its own client
    ledgers = [RateLedger(moto_server.table()) for _ in range(30)]
    start = threading.Barrier(len(ledgers))

    def take(turn: tuple[int, RateLedger]) -> int | None:
        start.wait()
        return turn[1].take("400000000000000001", f"turn-{turn[0]}", NOW, LIMIT).number

    # When each counts its turn
    with ThreadPoolExecutor(max_workers=len(ledgers)) as pool:
        taken = list(pool.map(take, enumerate(ledgers)))
    # Then ten go ahead, one is told, the rest are refused, and the stored count stops at eleven
    assert sorted(n for n in taken if n is not None) == list(range(1, LIMIT + 2))
    assert taken.count(None) == 30 - (LIMIT + 1)


def test_the_next_minute_starts_again_and_people_count_apart(table):
    ledger = RateLedger(table)
    for n in range(LIMIT + 1):
        ledger.take("1", f"t{n}", NOW, LIMIT)
    assert ledger.take("1", "late", NOW, LIMIT) == RateTaken(None)
    assert ledger.take("2", "t0", NOW, LIMIT) == RateTaken(1)
    assert ledger.take("1", "next", NOW + timedelta(seconds=30), LIMIT) == RateTaken(1)
    stored = table.get(ItemKey("USER#1", f"RATE#{int(NOW.timestamp()) // 60}"))
    assert stored["turns"] == LIMIT + 1 and stored["expires_at"] > NOW.timestamp()


def test_a_turn_counted_before_gets_its_first_number_again_and_is_not_counted_twice(table):
    # Given a minute in which a person's turns went over the limit
    ledger = RateLedger(table)
    first = [ledger.take("1", f"t{n}", NOW, LIMIT).number for n in range(LIMIT + 2)]
    assert first == [*range(1, LIMIT + 2), None]

    # When each of them comes back (redelivered, duplicated, redriven days later)
    again = [ledger.take("1", f"t{n}", NOW, LIMIT) for n in range(LIMIT + 2)]

    # Then each gets the answer it got first, known as counted before, and the count has not moved
    assert [taken.number for taken in again] == first
    assert [taken.before for taken in again] == [True] * (LIMIT + 1) + [False]
    stored = table.get(ItemKey("USER#1", f"RATE#{int(NOW.timestamp()) // 60}"))
    assert stored["turns"] == LIMIT + 1
    # and the minute is kept as long as a turn can come back
    assert stored["expires_at"] >= (NOW + timedelta(days=15)).timestamp()
