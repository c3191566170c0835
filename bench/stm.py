"""Short-term memory benchmark: the context stage on a fully loaded server, and the DynamoDB
requests one turn's STM load costs, on in-process moto."""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
from moto import mock_aws

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.models import Participant, ServerConfig, StmCategory, UserProfile
from kioku.domain.stm.capture import StmRowIdentity
from kioku.domain.stm.context import build_short_term_memory_context
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmLimits
from kioku.domain.stm.update_tool import StmUpdate
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.playground.aws import create_local_resources
from kioku.services import stm as stm_service

SERVER, CHANNEL, USER = "900", "100", "7"
OTHER_CHANNELS = ("200", "300", "400")
CATEGORY_COUNT, CATEGORY_CHARS, CRUDE_PER_CHANNEL = 5, 1500, 10
ROUNDS = 2000


def main() -> None:
    _offline_aws()
    with mock_aws():
        resources = create_local_resources(boto3.client("dynamodb"), boto3.client("sqs"))
        table = KiokuTable(resources.table_name)
        store = StmStore(table)
        limits = StmLimits()
        now = datetime.now(UTC)
        categories = tuple(
            StmCategory(slug=f"section_{i}", label=f"Section {i}", description="", position=i)
            for i in range(CATEGORY_COUNT)
        )
        ConfigStore(table).save_server_config(ServerConfig(guild_id=SERVER, categories=categories))
        _fill(store, categories, now, limits)

        calls: list[str] = []
        table.client.meta.events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
        _load(store, now, limits)
        plain_requests = len(calls)

        ConfigStore(table).save_user_profile(UserProfile(user_id=USER, cross_server_opt_in=True))
        calls.clear()
        folded = _load(store, now, limits)
        folded_requests = len(calls)

    turn = _turn(folded.config, folded.profile, now)
    context = build_short_term_memory_context(turn, folded.state, limits)
    assert len(context.memory_items) == 1 + limits.max_other_channels, "the bench must render a full load"
    timings = []
    for _ in range(ROUNDS):
        start = time.perf_counter_ns()
        build_short_term_memory_context(turn, folded.state, limits)
        timings.append((time.perf_counter_ns() - start) / 1000)
    timings.sort()
    median = statistics.median(timings)
    p95 = timings[int(len(timings) * 0.95)]
    print(f"stm.context_stage_us median={median:.0f} p95={p95:.0f}")
    print(f"stm.load_requests={plain_requests}")
    print(f"stm.load_requests_cross_server={folded_requests}")


def _offline_aws() -> None:
    """Only moto is ever reached: fake credentials, a region, no endpoint overrides."""
    for name in [name for name in os.environ if name.startswith("AWS_ENDPOINT_URL")]:
        del os.environ[name]
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ["AWS_ACCESS_KEY_ID"] = os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
    os.environ.pop("AWS_SESSION_TOKEN", None)


def _fill(store: StmStore, categories: tuple[StmCategory, ...], now: datetime, limits: StmLimits) -> None:
    texts = {c.slug: ("The conversation went on about the plan. " * 40)[:CATEGORY_CHARS] for c in categories}
    rows = [(SERVER, None, channel) for channel in (CHANNEL, *OTHER_CHANNELS)] + [(None, USER, "dm-1")]
    for age, (guild_id, user_id, channel) in enumerate(rows):
        address = StmAddress(channel_id=channel, persona_id="kioku", guild_id=guild_id, user_id=user_id)
        identity = StmRowIdentity(
            address=address, lineage_id=1, channel_name=f"channel-{channel}", private=False, described_at=now
        )
        written = now - timedelta(minutes=age + 1)
        lines = [
            CrudeMessage(
                speaker="Alice" if i % 2 else "Kioku",
                user_id=USER if i % 2 else "1",
                role=CrudeRole.USER if i % 2 else CrudeRole.ASSISTANT,
                text=f"message {i} about <@{USER}> and the plan for the weekend, with some detail",
                ts=written - timedelta(seconds=CRUDE_PER_CHANNEL - i),
                message_id=f"{channel}-{i}",
            )
            for i in range(CRUDE_PER_CHANNEL)
        ]
        store.capture(identity, None, lines, written, limits)
        store.write_memory(identity, StmUpdate(categories=texts), categories, written, limits.retention)


def _load(store: StmStore, now: datetime, limits: StmLimits):
    query = stm_service.turn_memory_query(
        guild_id=SERVER,
        channel_id=CHANNEL,
        user_id=USER,
        parent_channel_id=None,
        now=now,
        limits=limits,
        guessed=stm_service.PersonaGuesses().guess(SERVER),  # a cold container: the default persona
    )
    return store.load_turn(query)


def _turn(config: ServerConfig, profile: UserProfile, now: datetime) -> TurnContext:
    alice = Participant(user_id=USER, username="alice", global_name="Alice")
    return TurnContext(
        guild_id=SERVER,
        channel_id=CHANNEL,
        user=alice,
        bot=BotIdentity(user_id="1", username="kioku"),
        config=replace(config, stm=replace(config.stm, refresh_cadence=0)),
        profile=profile,
        now=now,
        participants=(alice,),
    )


if __name__ == "__main__":
    main()
