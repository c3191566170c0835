"""Turns per person per minute: a conditional counter in DynamoDB, then one notice and silence."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from kioku.adapters.dynamodb.keys import ItemKey
from kioku.adapters.dynamodb.turn_ledger import RateLedger

NOW = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)
LIMIT = 10


def test_thirty_turns_at_once_let_exactly_the_limit_through_and_one_notice(moto_server):
    # Given thirty turns of one person arriving together, each worker with its own client
    ledgers = [RateLedger(moto_server.table()) for _ in range(30)]
    start = threading.Barrier(len(ledgers))

    def take(ledger: RateLedger) -> int | None:
        start.wait()
        return ledger.take("400000000000000001", NOW, LIMIT)

    # When each counts its turn
    with ThreadPoolExecutor(max_workers=len(ledgers)) as pool:
        taken = list(pool.map(take, ledgers))
    # Then ten go ahead, one is told, the rest are refused, and the stored count stops at eleven
    assert sorted(n for n in taken if n is not None) == list(range(1, LIMIT + 2))
    assert taken.count(None) == 30 - (LIMIT + 1)


def test_the_next_minute_starts_again_and_people_count_apart(table):
    ledger = RateLedger(table)
    for _ in range(LIMIT + 1):
        ledger.take("1", NOW, LIMIT)
    assert ledger.take("1", NOW, LIMIT) is None
    assert ledger.take("2", NOW, LIMIT) == 1
    assert ledger.take("1", NOW + timedelta(seconds=30), LIMIT) == 1
    stored = table.get(ItemKey("USER#1", f"RATE#{int(NOW.timestamp()) // 60}"))
    assert stored["turns"] == LIMIT + 1 and stored["expires_at"] > NOW.timestamp()
