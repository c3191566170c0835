"""32 containers capturing turns in one channel at once, against a single-threaded moto server."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

import pytest

from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.domain.stm.capture import StmRowIdentity
from kioku.domain.stm.entries import StmAddress
from kioku.services.stm import PersonaGuesses, ShortTermMemoryTurn, turn_memory_query
from tests.unit.stm_builders import CHANNEL, LIMITS, NOW, SERVER, USER, message, turn


def _at_now(table):
    """A container's table reading at these tests' time (``NOW``): its rows are not past their time."""
    table.clock = lambda: NOW
    return table


WORKERS = 32
ADDRESS = StmAddress.of(SERVER, USER, CHANNEL, "kioku")


def capture_concurrently(moto_server, limits) -> None:
    start = threading.Barrier(WORKERS)

    def one_turn(index: int) -> None:
        store = StmStore(_at_now(moto_server.table()))  # its own client: its own Lambda container
        loaded = store.load_turn(
            turn_memory_query(
                guild_id=SERVER,
                channel_id=CHANNEL,
                user_id=USER,
                parent_channel_id=None,
                now=NOW,
                limits=limits,
                guessed=PersonaGuesses().guess(SERVER),  # a cold container
            )
        )
        memory = ShortTermMemoryTurn(store, turn(loaded.config), loaded.state, limits)
        line = message(f"turn-{index:02d}", age=timedelta(seconds=WORKERS - index), message_id=str(index))
        start.wait()  # every container read the same row before anyone writes
        store.capture_turn(memory.capture_of([line]))

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for future in [pool.submit(one_turn, index) for index in range(WORKERS)]:
            future.result()


@pytest.mark.parametrize("cap", [50, 10])
def test_concurrent_captures_count_every_turn_and_lose_no_message(moto_server, cap):
    # Given a channel whose row already counted one turn
    limits = replace(LIMITS, max_messages_per_channel=cap)
    store = StmStore(_at_now(moto_server.table()))
    identity = StmRowIdentity(address=ADDRESS, lineage_id=1)
    store.capture(
        identity, None, [message("before", age=timedelta(minutes=5), message_id="before")], NOW, limits
    )

    # When 32 containers capture a turn each, at the same moment
    capture_concurrently(moto_server, limits)

    # Then the counter rose by exactly 32 and the list holds the newest messages the cap allows
    entry = store.get(ADDRESS)
    assert entry.turns_since_refresh == 1 + WORKERS
    everything = ["before"] + [f"turn-{index:02d}" for index in range(WORKERS)]
    assert [m.text for m in entry.crude] == everything[-cap:]


def test_the_same_turn_finished_by_many_attempts_at_once_counts_once(moto_server):
    # Given eight attempts of ONE turn (a duplicated delivery), each in its own container, each
    # ready to commit its capture together with the turn's completion record
    from kioku.adapters.dynamodb.turn_ledger import TurnLedger
    from kioku.domain.turn import TurnAlreadyRecorded, TurnOutcome

    attempts = 8
    start = threading.Barrier(attempts)
    identity = StmRowIdentity(address=ADDRESS, lineage_id=1)
    outcomes: list[str] = []

    def attempt(index: int) -> None:
        table = _at_now(moto_server.table())
        store, ledger = StmStore(table), TurnLedger(table)
        done = ledger.op_record("message", "700000000000000042", TurnOutcome(reply_ids=(str(index),)), NOW)
        line = message(f"answer from attempt {index}", message_id=f"reply-{index}")
        start.wait()
        try:
            store.capture(identity, None, [line], NOW, LIMITS, also=[done])
            outcomes.append("recorded")
        except TurnAlreadyRecorded:
            outcomes.append("already")

    # When they all finish at the same moment
    with ThreadPoolExecutor(max_workers=attempts) as pool:
        for future in [pool.submit(attempt, index) for index in range(attempts)]:
            future.result()

    # Then exactly one committed: one count, one captured answer
    assert sorted(outcomes) == ["already"] * (attempts - 1) + ["recorded"]
    entry = StmStore(_at_now(moto_server.table())).get(ADDRESS)
    assert entry.turns_since_refresh == 1
    assert len(entry.crude) == 1
