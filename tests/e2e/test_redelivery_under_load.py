"""A worker killed under load (issue 38's harness cases): many channels with turns queued, the
worker holding a batch of them killed mid-batch at a crash point, the rest redelivered.

The harness of ``test_turn_crash_points`` (TurnFunction in child processes, moto, Discord, the model
behind proxies and stand-ins). Each channel's person says two things; the first asks the model to
remember something (a save, then an answer), the second is only answered. Afterwards every message
is answered once, in its channel's order, each memory saved and announced once, nothing left behind.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Final

import httpx
import pytest

from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.playground.standins import RecordedRequest, completion_body
from kioku.signatures import sign_request
from tests.e2e.crash_harness import CrashWorld, Fault, crash_world
from tests.e2e.test_turn_crash_points import (
    GUILD,
    SAVE,
    _is_commit,
    _table_items,
    new_channel_and_person,
)
from tests.e2e.test_turn_crash_points import dead_letters as all_dead_letters

pytestmark = pytest.mark.e2e

CHANNELS: Final = 6
SAID: Final = re.compile(r"(?<!Answer to )\bm\d+-\d\b")


def script(body: dict[str, Any]) -> dict[str, Any]:
    """A message asking to remember saves a memory first; every answer names the message it
    answers (the last one the model was shown)."""
    said = SAID.findall(json.dumps(body["messages"]))[-1]
    if body["messages"][-1]["role"] != "tool" and "remember" in json.dumps(body["messages"][-1]):
        return completion_body(tool_calls=[SAVE])
    return completion_body(f"Answer to {said}")


@pytest.fixture(scope="module")
def running() -> Iterator[CrashWorld]:
    with crash_world(script) as world:
        yield world


@pytest.fixture
def world(running: CrashWorld, monkeypatch: pytest.MonkeyPatch) -> CrashWorld:
    return running.entered(monkeypatch)


def say(stack: LocalStack, channel: str, person: dict[str, Any], text: str) -> dict[str, Any]:
    """``person``'s message to the bot, relayed and queued in its channel's group."""
    trigger = stack.discord.seed_message(channel, person, f"<@{stack.application_id}> {text}")
    body = gateway_dispatch(trigger, GUILD, {"nick": None, "roles": []})
    headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
    assert httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10).status_code == 202
    return trigger


def answer_post(nth: int) -> Fault:
    """The ``nth`` answer the worker posts (of any channel)."""

    def matches(request: RecordedRequest) -> bool:
        return request.method == "POST" and str((request.body or {}).get("content", "")).startswith(
            "Answer to"
        )

    return Fault(f"answer {nth} posted", "discord", matches, "kill", "after", nth)


LOAD_POINTS = [
    answer_post(5),
    Fault("commit 4 about to be written", "dynamodb", _is_commit, "kill", "before", 4),
]


@pytest.mark.parametrize("fault", [pytest.param(f, id=f.name) for f in LOAD_POINTS])
def test_a_worker_killed_mid_batch_across_many_channels_leaves_each_message_answered_once_in_order(
    world, fault
):
    stack, harness = world.stack, world.harness
    # Given six channels, each with its person's two messages queued: remember, then a question
    talks = []
    for n in range(CHANNELS):
        channel, person = new_channel_and_person(stack)
        first = say(stack, channel, person, f"m{n}-1 remember I love green tea")
        second = say(stack, channel, person, f"m{n}-2 what do you think?")
        talks.append((channel, person, first, second))

    # When the worker holding a batch of them is killed mid-batch, and the rest is redelivered
    outcomes = harness.deliver(fault, max_deliveries=10)

    # Then every message is answered once, replying to it, in its channel's order; each memory
    # saved once and announced once after its answer; nothing left behind or dead-lettered
    assert harness.chaos.fired and outcomes[0] == "killed" and outcomes[-1] == "done", outcomes
    items, dead = _table_items(stack), {m["Attributes"]["MessageGroupId"] for m in all_dead_letters(stack)}
    for n, (channel, person, first, second) in enumerate(talks):
        posted = [
            m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id
        ]
        assert [m["content"] for m in posted] == [f"Answer to m{n}-1", "", f"Answer to m{n}-2"], n
        assert [m["message_reference"]["message_id"] for m in (posted[0], posted[2])] == [
            first["id"],
            second["id"],
        ]
        assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory saved"]
        kept = [i["sk"]["S"] for i in items if i["pk"]["S"] == f"USER#{person['id']}"]
        assert len([sk for sk in kept if sk.startswith("H#")]) == 1  # the memory's guard: saved once
        assert [sk for sk in kept if sk.startswith("OUTBOX#")] == [] and channel not in dead
