"""Redelivery holes of an alter persona's turn (issue 38), each held here on the crash harness.

Webhook executions take no nonce: what keeps Luna's chunks to one post each is the outbox as a
claim (one attempt posts it; another that finds it held gives the turn back until that attempt is
surely over, then adopts what was posted) and the webhooks the turn posted through, kept in it. A
webhook lost for good mid-delivery (no Manage Webhooks) ends the turn with the bot's notice; a job of
a newer format goes back to the queue for a newer worker. Then the harness's other cases: clocks
apart, a throttled commit, a channel deleted mid-turn.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest

from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.stm.entries import StmAddress
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.playground.standins import RecordedRequest
from kioku.services.persona_voice import NO_WEBHOOK_PERMISSION
from kioku.signatures import sign_request
from tests.e2e.crash_harness import (
    Chaos,
    Containers,
    CrashWorld,
    Fault,
    add_luna,
    crash_world,
    dynamodb_refusal,
    twin_of,
)
from tests.e2e.test_turn_crash_points import (
    GUILD,
    PARAGRAPHS,
    _is_commit,
    _table_items,
    answer,
    chunk_post,
    memory_guards,
    new_channel_and_person,
)
from tests.e2e.test_turn_crash_points import dead_letters as all_dead_letters

pytestmark = pytest.mark.e2e

LUNA_ID = "200000000000000778"


@pytest.fixture(scope="module")
def running() -> Iterator[CrashWorld]:
    with crash_world(answer) as world:
        yield world


@pytest.fixture(scope="module")
def luna(running: CrashWorld) -> str:
    """Luna, an alter persona of the module's server, added once through /persona add."""
    return add_luna(running.stack, GUILD, LUNA_ID)


@pytest.fixture
def world(running: CrashWorld, luna: str, monkeypatch: pytest.MonkeyPatch) -> CrashWorld:
    return running.entered(monkeypatch)


@pytest.fixture
def twin(running: CrashWorld) -> Iterator[Containers]:
    """A second TurnFunction, running the same job at once (a duplicated job)."""
    with twin_of(running) as containers:
        yield containers


def call_luna(stack: LocalStack, channel: str, alice: dict[str, Any]) -> dict[str, Any]:
    trigger = stack.discord.seed_message(channel, alice, "Luna, remember I love green tea")
    body = gateway_dispatch(trigger, GUILD, {"nick": None, "roles": []})
    headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
    assert httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10).status_code == 202
    return trigger


def luna_posts(stack: LocalStack, channel: str) -> list[dict[str, Any]]:
    return [m for m in stack.discord.channel_messages(channel) if m.get("webhook_id")]


def bot_posts(stack: LocalStack, channel: str) -> list[dict[str, Any]]:
    return [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]


def posts_per_chunk(stack: LocalStack, channel: str) -> list[int]:
    counted = Counter(m["content"] for m in luna_posts(stack, channel))
    return [counted[chunk] for chunk in PARAGRAPHS]


def outboxes(stack: LocalStack, person: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        i
        for i in _table_items(stack)
        if i["sk"]["S"].startswith("OUTBOX#") and i["pk"]["S"] == f"USER#{person['id']}"
    ]


def dead_letters(stack: LocalStack, channel: str) -> list[dict[str, Any]]:
    return [m for m in all_dead_letters(stack) if m["Attributes"]["MessageGroupId"] == channel]


def assert_luna_answered_once(stack: LocalStack, channel: str, alice: dict[str, Any], luna: str) -> None:
    """Every chunk, then the notice, once and in order through Luna's webhooks; her row captured
    once, the memory saved once, nothing left in the outbox or dead-lettered."""
    posted = luna_posts(stack, channel)
    assert [m["content"] for m in posted] == [*PARAGRAPHS, ""]
    assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory saved"]
    assert {m["author"]["username"] for m in posted} == {"Luna"} and bot_posts(stack, channel) == []
    row = StmStore(KiokuTable(stack.resources.table_name)).get(StmAddress.of(GUILD, "", channel, luna))
    assert row is not None and row.turns_since_refresh == 1
    assert row.crude[0].text == "Luna, remember I love green tea"
    assert len(memory_guards(stack, alice)) == 1
    assert outboxes(stack, alice) == [] and dead_letters(stack, channel) == []


def before_chunk_2(meanwhile: Any) -> Fault:
    """Just before chunk 2, where the worker checks its outbox is still kept (and notes what it
    posted), ``meanwhile`` runs: another worker, a change in the channel."""

    def matches(request: RecordedRequest) -> bool:
        return request.path in ("GetItem", "UpdateItem") and b"OUTBOX#" in request.raw_body

    return Fault("before chunk 2, meanwhile", "dynamodb", matches, "meanwhile", "before", meanwhile=meanwhile)


# -- 1. two containers on one persona turn ---------------------------------------------------------


def test_a_twin_finding_luna_s_outbox_claimed_posts_nothing_and_each_chunk_goes_once(world, luna, twin):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = len(llm.bodies)
    call_luna(stack, channel, alice)
    twin_outcomes: list[str] = []

    # When a twin container takes the same job while the first is about to post chunk 2
    outcomes = harness.deliver(before_chunk_2(lambda: twin_outcomes.append(harness.run_twin(twin))))

    # Then the twin found the outbox claimed and gave the turn back unposted; each chunk went once
    assert harness.chaos.fired and outcomes == ["done"] and twin_outcomes == ["failed"], (
        outcomes,
        twin_outcomes,
    )
    assert posts_per_chunk(stack, channel) == [1, 1, 1]
    assert_luna_answered_once(stack, channel, alice, luna)
    assert len(llm.bodies) - asked_before == 2  # the twin took the kept answer, never asking


def answer_keep(meanwhile: Any) -> Fault:
    def matches(request: RecordedRequest) -> bool:
        return (
            request.path == "TransactWriteItems"
            and b"OUTBOX#" in request.raw_body
            and b"Part 1:" in request.raw_body
        )

    return Fault(
        "Luna's answer kept, a twin meanwhile",
        "dynamodb",
        matches,
        "meanwhile",
        "before",
        meanwhile=meanwhile,
    )


def notices_keep(meanwhile: Any) -> Fault:
    """The outbox of tool notices only, kept before the answer is known (``Conversation.ask``)."""

    def matches(request: RecordedRequest) -> bool:
        return (
            request.path == "TransactWriteItems"
            and b"OUTBOX#" in request.raw_body
            and b"Part 1:" not in request.raw_body
        )

    return Fault(
        "the notices kept, a twin meanwhile", "dynamodb", matches, "meanwhile", "before", meanwhile=meanwhile
    )


def test_a_twin_that_did_the_whole_persona_turn_first_leaves_the_other_nothing_to_post(world, luna, twin):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    call_luna(stack, channel, alice)
    twin_outcomes: list[str] = []

    # When a twin does the whole turn while the first is about to keep its memory notice
    outcomes = harness.deliver(notices_keep(lambda: twin_outcomes.append(harness.run_twin(twin))))

    # Then the first finds the turn done at that keep and keeps and posts nothing
    assert harness.chaos.fired and outcomes == ["done"] and twin_outcomes == ["done"]
    assert posts_per_chunk(stack, channel) == [1, 1, 1]
    assert_luna_answered_once(stack, channel, alice, luna)


def test_a_twin_finding_only_the_notices_kept_by_a_live_worker_gives_the_turn_back(world, luna, twin):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    call_luna(stack, channel, alice)
    twin_outcomes: list[str] = []

    # When a twin takes the job while the first, its notice kept, is about to keep its answer
    outcomes = harness.deliver(answer_keep(lambda: twin_outcomes.append(harness.run_twin(twin))))

    # Then the notices are the first's claim: the twin gives the turn back, the first posts it once
    assert harness.chaos.fired and outcomes == ["done"] and twin_outcomes == ["failed"]
    assert posts_per_chunk(stack, channel) == [1, 1, 1]
    assert_luna_answered_once(stack, channel, alice, luna)


def test_a_twin_that_finds_the_claim_of_a_worker_killed_meanwhile_adopts_its_posts_after_waiting(
    world, luna, twin
):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    call_luna(stack, channel, alice)
    twin_outcomes: list[str] = []

    def twin_then_die() -> None:
        twin_outcomes.append(harness.run_twin(twin))
        harness.chaos.arm(chunk_post(2, "kill", "before"))

    # When a twin gives the turn back, and the first worker dies before chunk 2
    outcomes = harness.deliver(before_chunk_2(twin_then_die))

    # Then the next receive (after the twin's wait) takes the outbox over: each chunk once
    assert twin_outcomes == ["failed"] and outcomes[0] == "killed" and outcomes[-1] == "done", outcomes
    assert posts_per_chunk(stack, channel) == [1, 1, 1]
    assert_luna_answered_once(stack, channel, alice, luna)


def test_a_twin_s_outbox_of_notices_only_does_not_take_over_an_outbox_being_posted(world, luna, twin):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    call_luna(stack, channel, alice)
    twin_outcomes: list[str] = []

    def twin_killed_before_chunk_2() -> None:
        # the twin reads the turn after the first did: no outbox for either yet (the proxy's chaos
        # kills the child it was handed: the twin, this once)
        harness.chaos.arm(
            Fault("the twin before chunk 2", "dynamodb", before_chunk_2(None).matches, "kill", "before")
        )
        assert harness.last_event is not None
        twin_outcomes.append(harness._run_child(harness.last_event, containers=twin, chaos=harness.chaos)[0])

    # When the first worker is about to keep its memory notice, a twin keeps its answer, posts
    # chunk 1 and is killed; then the first keeps its notice
    outcomes = harness.deliver(notices_keep(twin_killed_before_chunk_2))

    # Then the first finds the outbox claimed and gives the turn back; its redelivery adopts chunk 1
    assert harness.chaos.fired and twin_outcomes == ["killed"], twin_outcomes
    assert posts_per_chunk(stack, channel) == [1, 1, 1]
    assert outcomes == ["failed", "done"], outcomes
    assert_luna_answered_once(stack, channel, alice, luna)


# -- 2. a webhook replaced mid-turn, then the worker killed ----------------------------------------


def test_posts_through_a_webhook_replaced_mid_turn_are_counted_by_the_redelivery(world, luna):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    call_luna(stack, channel, alice)

    def delete_then_kill() -> None:
        (hook,) = stack.discord.webhooks_of(channel)
        stack.discord.delete_webhook(hook["id"])
        # chunk 2 is refused (Unknown Webhook), posted through a new webhook; the worker dies then
        harness.chaos.arm(replace(chunk_post(2, "kill", "after"), nth=2))  # the 404 is the first

    # When someone deletes Luna's webhook before chunk 2, and the worker dies once chunk 2 went
    # through the replacement
    outcomes = harness.deliver(before_chunk_2(delete_then_kill))

    # Then the redelivery counts chunk 1 (through the deleted webhook) and chunk 2 as posted
    assert outcomes == ["killed", "done"], outcomes
    assert posts_per_chunk(stack, channel) == [1, 1, 1]
    assert_luna_answered_once(stack, channel, alice, luna)
    assert len({m["webhook_id"] for m in luna_posts(stack, channel)}) == 2


# -- 3. the webhook deleted and Manage Webhooks revoked mid-delivery -------------------------------


def test_a_webhook_lost_for_good_mid_delivery_ends_the_turn_with_the_bot_s_notice(world, luna):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    trigger = call_luna(stack, channel, alice)

    def revoke() -> None:
        (hook,) = stack.discord.webhooks_of(channel)
        stack.discord.delete_webhook(hook["id"])
        stack.discord.forbid_webhooks(channel)

    # When Luna's webhook is deleted and kioku loses Manage Webhooks before chunk 2
    outcomes = harness.deliver(before_chunk_2(revoke))

    # Then the turn ends at once: chunk 1 as Luna, then the bot's notice replying to Alice and the
    # memory notice, once each; nothing dead-lettered or left behind
    assert harness.chaos.fired and outcomes == ["done"], outcomes
    assert [m["content"] for m in luna_posts(stack, channel)] == PARAGRAPHS[:1]
    by_bot = bot_posts(stack, channel)
    assert [m["content"] for m in by_bot] == [NO_WEBHOOK_PERMISSION.format(name="Luna"), ""]
    assert by_bot[0]["message_reference"]["message_id"] == trigger["id"]
    assert [embed["title"] for m in by_bot for embed in m["embeds"]] == ["Memory saved"]
    assert dead_letters(stack, channel) == [] and outboxes(stack, alice) == []
    assert len(memory_guards(stack, alice)) == 1


# -- 4. a job of a newer format ----------------------------------------------------------------------


def test_a_job_of_a_newer_format_goes_back_to_the_queue_and_is_dead_lettered_only_after_its_attempts(world):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    trigger = stack.discord.seed_message(channel, alice, "Luna, hello")
    body = json.dumps({"format": 3, "turn_id": trigger["id"], "channel_id": channel})
    stack.sqs.send_message(
        QueueUrl=stack.resources.turn_queue_url,
        MessageBody=body,
        MessageGroupId=channel,
        MessageDeduplicationId=f"newer-{trigger['id']}",
    )

    # When workers of this release take it, as a newer relay queued it during a deploy
    outcomes = harness.deliver()

    # Then it is given back (a batch item failure) twice, and dead-lettered on the third, saying why
    assert outcomes == ["failed", "failed", "done"], outcomes
    (dead,) = dead_letters(stack, channel)
    reason = dead["MessageAttributes"]["DeadLetterReason"]["StringValue"]
    assert (
        reason
        == "given back 3 of 3 times, no worker read it: not a turn job of this release: format 3 is newer than 2"
    )
    assert dead["Body"] == body and luna_posts(stack, channel) == bot_posts(stack, channel) == []


# -- the harness's other cases ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "skew", [timedelta(minutes=7), timedelta(minutes=-7), timedelta(hours=5), timedelta(hours=-5)], ids=str
)
def test_a_persona_turn_killed_on_a_worker_whose_clock_is_apart_is_finished_once(world, luna, skew):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    call_luna(stack, channel, alice)

    # When a worker whose clock is minutes or hours off dies after chunk 2, and one on time goes on
    outcomes = harness.deliver(chunk_post(2), clock_ahead=skew)

    # Then each chunk went once, the memory saved once, nothing left behind
    assert outcomes == ["killed", "done"], outcomes
    assert posts_per_chunk(stack, channel) == [1, 1, 1]
    assert_luna_answered_once(stack, channel, alice, luna)


@pytest.mark.parametrize("skew", [timedelta(minutes=-7), timedelta(hours=5)], ids=str)
def test_a_twin_whose_clock_is_apart_still_leaves_the_claimed_outbox_alone(world, luna, twin, skew):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    call_luna(stack, channel, alice)
    twin_outcomes: list[str] = []

    # When a twin whose clock is minutes or hours apart takes the job while chunk 2 is about to go
    def skewed_twin() -> None:
        assert harness.last_event is not None
        try:
            run = harness._run_child(harness.last_event, containers=twin, chaos=Chaos(), clock_ahead=skew)
        except AssertionError as crash:
            twin_outcomes.append(str(crash)[-1500:])
            return
        twin_outcomes.append(run[0])

    outcomes = harness.deliver(before_chunk_2(skewed_twin))

    # Then it gave the turn back: each chunk once
    assert outcomes == ["done"] and twin_outcomes == ["failed"], (outcomes, twin_outcomes)
    assert_luna_answered_once(stack, channel, alice, luna)


def test_a_commit_cancelled_for_throttling_is_retried_and_the_persona_turn_finished_once(world, luna):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = len(llm.bodies)
    call_luna(stack, channel, alice)

    # When the turn's commit is cancelled for throttling (more than botocore retries)
    refusal = dynamodb_refusal("TransactionCanceledException", ["ThrottlingError", "None", "None", "None"])
    fault = Fault("commit throttled", "dynamodb", _is_commit, "refuse", times=10, refusal=refusal)
    outcomes = harness.deliver(fault)

    # Then it is retried, not dead-lettered: posted, captured and saved once, the model asked once
    assert harness.chaos.fired and outcomes[-1] == "done", outcomes
    assert_luna_answered_once(stack, channel, alice, luna)
    assert len(llm.bodies) - asked_before == 2


def test_a_channel_deleted_while_luna_posts_is_dead_lettered_once_with_nothing_more_posted(world, luna):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    call_luna(stack, channel, alice)

    # When the channel is deleted before chunk 2 (Discord answers 404 Unknown Channel)
    outcomes = harness.deliver(before_chunk_2(lambda: stack.discord._channels.pop(channel)))

    # Then the turn is dead-lettered once, not retried; chunk 1 was the only post
    assert outcomes == ["done"], outcomes
    (dead,) = dead_letters(stack, channel)
    assert "404" in dead["MessageAttributes"]["DeadLetterReason"]["StringValue"]
