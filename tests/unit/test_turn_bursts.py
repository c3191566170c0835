"""Which later messages a turn answers too, as the turn service asks (``services/turn_bursts.py``):
the run ``domain/bursts.py`` decides, each counted against the rate, unless an earlier attempt of
the turn marked some covered, whose answer a forget-all withdrew since: exactly those, then."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kioku.discord.models import parse_message
from kioku.domain.conditions import StoreFailed
from kioku.domain.models import Persona, ServerConfig, UserProfile
from kioku.domain.stm.context import StmState
from kioku.domain.stm.entries import StmLimits
from kioku.domain.turn import Outbox, RateTaken
from kioku.domain.turn_jobs import TurnJob
from kioku.domain.turn_read import TurnMemoryLoad, TurnRead
from kioku.services.stm import turn_memory_query
from kioku.services.turn_bursts import covered, later_records
from tests.unit.ltm_fakes import settings
from tests.unit.test_addressing import BOT_ID, CHANNEL_ID, GUILD_ID, guild_message
from tests.unit.test_bursts import TURN_ID, always, history

NOW = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)


class CountingRates:
    """Each message counted in turn, or the store failing."""

    def __init__(self, failing: bool = False) -> None:
        self.failing, self.taken = failing, []

    def take(self, user_id: str, turn_id: str, sent_at: datetime, limit: int) -> RateTaken:
        if self.failing:
            raise StoreFailed("the rate's table is unavailable")
        self.taken.append(turn_id)
        return RateTaken(len(self.taken))


def job() -> TurnJob:
    return TurnJob.from_message(parse_message(guild_message("hey", id=TURN_ID)), always=True)


def read(config: ServerConfig, **fields: Any) -> TurnRead:
    """The turn's read in a server configured as ``config`` (``fields``: its outbox, its later turns)."""
    author = job().author.id
    query = turn_memory_query(
        guild_id=GUILD_ID,
        channel_id=CHANNEL_ID,
        user_id=author,
        parent_channel_id=None,
        now=NOW,
        limits=StmLimits(),
        guessed=Persona(),
    )
    memory = TurnMemoryLoad(config, UserProfile(author), StmState())
    fields.setdefault("outbox", None)
    return TurnRead(
        memory=memory,
        done=None,
        author_forgotten_at=None,
        query=query,
        recall_lineage=1,
        recall_people=(),
        **fields,
    )


def answered(rates: CountingRates, turn_read: TurnRead, later=None) -> list[str]:
    later = later or history("so", "about Kyoto", "and then")
    return [
        m.content for m in covered(settings(DISCORD_APPLICATION_ID=BOT_ID), rates, job(), later, turn_read)
    ]


def test_a_fresh_turn_covers_the_run_each_counted_and_stops_where_the_rate_cannot_count():
    rates = CountingRates()
    assert answered(rates, read(always())) == ["so", "about Kyoto", "and then"]
    assert len(rates.taken) == 3
    assert answered(CountingRates(failing=True), read(always())) == []


@pytest.mark.parametrize("config", [always(), ServerConfig(guild_id=GUILD_ID)], ids=["always", "left always"])
@pytest.mark.parametrize("failing", [False, True], ids=["rate counts", "rate store failing"])
def test_messages_an_earlier_attempt_marked_are_covered_exactly_whatever_the_channel_or_rate_says_now(
    config, failing
):
    # Given an earlier attempt of the turn that kept an answer covering the first two later messages
    # (its outbox withdrawn since), and a third message sent after
    later = history("so", "about Kyoto", "and then")
    marked = frozenset(later_records(job(), later)[:2])
    rates = CountingRates(failing)

    # Then the turn covers those two, in order, none other, counting nothing again
    assert answered(rates, read(config, later_marked=marked), later) == ["so", "about Kyoto"]
    assert rates.taken == []


def test_a_kept_answer_says_what_it_covers_and_its_marks_add_nothing():
    later = history("so", "about Kyoto")
    kept = Outbox(reply="hello", chunks=("hello",), covers=(later[0].id,))
    marked = frozenset(later_records(job(), later))
    assert answered(CountingRates(), read(always(), outbox=kept, later_marked=marked), later) == []
