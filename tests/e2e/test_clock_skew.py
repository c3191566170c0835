"""Clocks that disagree: Discord's ahead of AWS's, a worker's off from DynamoDB's (issue 27).

The crash harness's turn (a memory saved, three chunks, the notice), on a stack whose Discord runs
three hours ahead of AWS all through this module: every message, interaction and post is stamped
(its snowflake too) three hours after what the workers and DynamoDB's TTL take for now. Some
workers' clocks are further off, thirteen hours either way (more than a short-term line lives).

What holds: each turn answered, announced and captured once; its two lines stamped on Discord's
clock (the message's time, the time of the reply's first post), so they keep their order and live
as long for every worker whatever the clock of the one that kept them; its author's rate counted
once, in the minute Discord says it was sent; every record it leaves expires within its retention
of DynamoDB's now (plus the skew), none early and none never; and a forget-all confirmed after a
message forgets it, whichever clock is ahead.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.dynamodb.turn_ledger import RECORD_RETENTION
from kioku.domain.models import Persona
from kioku.domain.stm.entries import CrudeMessage, StmAddress, StmEntry, StmLimits, live_crude
from kioku.playground.stack import LocalStack
from kioku.playground.standins import completion_body
from tests.e2e.conftest import forget_all_as
from tests.e2e.crash_harness import CrashWorld, crash_world
from tests.e2e.test_turn_crash_points import (
    GUILD,
    _table_items,
    answer,
    assert_delivered_and_captured_once,
    chunk_post,
    new_channel_and_person,
    queue_message,
)

pytestmark = pytest.mark.e2e

DISCORD_AHEAD = timedelta(hours=3)
WORKER_OFF = timedelta(hours=13)  # more than SHORT_TERM_MEMORY_TTL_HOURS (12): a line's whole life
SLACK = timedelta(minutes=5)  # the test's own time


@pytest.fixture(scope="module")
def running() -> Iterator[CrashWorld]:
    """One stack for the module, its Discord three hours ahead (each test takes a channel and a
    person of its own)."""
    with crash_world(answer) as world:
        world.stack.discord.ahead = DISCORD_AHEAD
        yield world


@pytest.fixture
def world(running: CrashWorld, monkeypatch: pytest.MonkeyPatch) -> CrashWorld:
    """The module's stack, its environment set again (every test starts from a bare one)."""
    return running.entered(monkeypatch)


def row_of(stack: LocalStack, channel: str) -> StmEntry | None:
    return StmStore(KiokuTable(stack.resources.table_name)).get(
        StmAddress.of(GUILD, "", channel, Persona().persona_id)
    )


def lines_of(stack: LocalStack, channel: str) -> tuple[CrudeMessage, ...]:
    row = row_of(stack, channel)
    return () if row is None else row.crude


def expiries(stack: LocalStack, alice: dict[str, Any], trigger: dict[str, Any]) -> dict[str, datetime]:
    """When DynamoDB's TTL removes each record Alice's turn left (her rate's minute, the note of
    the rows holding her lines, the note of her memories it was shown, the turn's completion
    record), by sort key."""
    return {
        item["sk"]["S"]: datetime.fromtimestamp(int(item["expires_at"]["N"]), UTC)
        for item in _table_items(stack)
        if "expires_at" in item
        and (
            item["pk"]["S"] == f"USER#{alice['id']}"
            or (trigger["id"] in item["pk"]["S"] and item["sk"]["S"] == "DONE")
        )
    }


def assert_kept_for_their_retention(kept: dict[str, datetime], *, worker_ahead: timedelta) -> None:
    """Each record expires a retention after it was written (16 days for the rate and the
    completion record, STM_JANITOR_RETENTION_DAYS for a note of lines), by the clock of the one
    that wrote it (the rate's minute by Discord's): never before DynamoDB's now plus the retention
    less the skew, never more than the skew after it."""
    now = datetime.now(UTC)
    skews = (timedelta(0), DISCORD_AHEAD, worker_ahead)
    for sk, at in kept.items():
        # the record's retention: the rate, the completion record, and the notes of the memories it was shown
        turns = sk == "DONE" or sk.startswith(("RATE#", "SHOWN#"))
        retention = RECORD_RETENTION if turns else StmLimits().retention
        earliest, latest = now + retention + min(skews) - SLACK, now + retention + max(skews) + SLACK
        assert earliest <= at <= latest, (sk, at, earliest, latest)
    assert "DONE" in kept and any(sk.startswith("RATE#") for sk in kept), kept


# -- a message stamped hours ahead of the worker ----------------------------------------------------


@pytest.mark.parametrize("killed", [False, True], ids=["whole", "killed after chunk 1"])
def test_a_message_stamped_hours_ahead_is_answered_once_with_its_lines_in_order(world, killed):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)

    # Given Alice's message, sent (by Discord's clock) three hours after the worker's now
    trigger = queue_message(stack, channel, alice)
    assert datetime.fromisoformat(trigger["timestamp"]) > datetime.now(UTC) + DISCORD_AHEAD - SLACK

    # When a worker takes it (killed once chunk 1 is posted, a fresh one taking the redelivery)
    outcomes = harness.deliver(chunk_post(1) if killed else None)

    # Then it is answered, announced and captured once, her words before the answer
    assert outcomes == (["killed", "done"] if killed else ["done"]), outcomes
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    said, answered = lines_of(stack, channel)
    assert said.ts <= answered.ts
    # her rate counted once, in the minute Discord says she sent it, and every record kept for its
    # retention, give or take the skew
    (rate,) = [
        i for i in _table_items(stack) if i["pk"]["S"] == f"USER#{alice['id']}" and "RATE#" in i["sk"]["S"]
    ]
    assert [t["S"] for t in rate["counted"]["L"]] == [trigger["id"]]
    minute = int(datetime.fromisoformat(trigger["timestamp"]).timestamp()) // 60
    assert rate["sk"]["S"] == f"RATE#{minute}"
    assert_kept_for_their_retention(expiries(stack, alice, trigger), worker_ahead=timedelta(0))

    # And her next message is answered once, its lines after the first turn's
    world.llm.enqueue(completion_body("Noted."))
    later = queue_message(stack, channel, alice)
    assert harness.deliver() == ["done"]
    assert [line.message_id for line in lines_of(stack, channel)][::2] == [trigger["id"], later["id"]]
    assert [line.ts for line in lines_of(stack, channel)] == sorted(
        line.ts for line in lines_of(stack, channel)
    )


# -- a worker whose clock is off from DynamoDB's ----------------------------------------------------


@pytest.mark.parametrize("worker_ahead", [-WORKER_OFF, WORKER_OFF], ids=["worker behind", "worker ahead"])
@pytest.mark.parametrize("killed", [False, True], ids=["whole", "killed after chunk 1"])
def test_a_worker_clock_off_by_more_than_a_lines_life_loses_nothing_early_and_keeps_nothing_for_ever(
    world, worker_ahead, killed
):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    trigger = queue_message(stack, channel, alice)

    # When a worker whose clock is thirteen hours off takes the turn (answering it whole, or killed
    # once it kept the answer and posted chunk 1, a worker on the right clock taking the redelivery)
    outcomes = harness.deliver(chunk_post(1) if killed else None, clock_ahead=worker_ahead)

    # Then the turn is answered, announced and captured once
    assert outcomes == (["killed", "done"] if killed else ["done"]), outcomes
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    # its two lines live, in order, for a worker on DynamoDB's clock (neither stamped by the
    # skewed clock, so neither expired at once nor kept past its time)
    row = row_of(stack, channel)
    assert row is not None
    lines, now = row.crude, datetime.now(UTC)
    assert live_crude(row, now, StmLimits()) == lines and lines[0].ts <= lines[1].ts
    assert all(now - SLACK <= line.ts <= now + DISCORD_AHEAD + SLACK for line in lines)
    # every record it left expires within its retention, give or take the skew
    assert_kept_for_their_retention(expiries(stack, alice, trigger), worker_ahead=worker_ahead)

    # And Alice's next message, on the right clock, is answered once and captured after them
    llm.enqueue(completion_body("Noted."))
    later = queue_message(stack, channel, alice)
    assert harness.deliver() == ["done"]
    assert [line.message_id for line in lines_of(stack, channel)][::2] == [trigger["id"], later["id"]]


# -- forget-all, with Discord's clock ahead -----------------------------------------------------------


def test_a_message_queued_before_a_forget_all_is_forgotten_though_discords_clock_is_ahead(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = len(llm.bodies)

    # Given Alice's message waiting on the queue, then her forget-all confirmed (both stamped by
    # Discord three hours after the interactions function's now)
    queue_message(stack, channel, alice)
    forget_all_as(stack, alice, channel)

    # When the worker takes the turn
    assert harness.deliver() == ["done"]

    # Then nothing of it is kept or asked: the model not called, her line not captured, nothing posted
    assert len(llm.bodies) == asked_before
    assert lines_of(stack, channel) == ()
    assert [
        m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id
    ] == []
