"""What people do while a turn is unfinished (issue 38's harness cases): "Why this answer?" asked on a
reply whose turn is still committing, and an alter persona removed while its turn runs.

The harness of ``test_turn_crash_points``: TurnFunction in child processes, one killed (or held)
at a chosen request, the redelivery to a fresh one; the interactions endpoint answers the person
meanwhile, as Discord would call it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kioku.playground.events import message_command
from kioku.services.commands.why_answer import NAME, NOT_A_REPLY, NOT_YET_A_REPLY
from tests.e2e.conftest import signed_post
from tests.e2e.crash_harness import CrashWorld, crash_world
from tests.e2e.test_turn_crash_points import (
    GUILD,
    PARAGRAPHS,
    _table_items,
    answer,
    commit,
    new_channel_and_person,
    queue_message,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def running() -> Iterator[CrashWorld]:
    with crash_world(answer) as world:
        yield world


@pytest.fixture
def world(running: CrashWorld, monkeypatch: pytest.MonkeyPatch) -> CrashWorld:
    return running.entered(monkeypatch)


def bot_posts(stack, channel: str) -> list[dict[str, Any]]:
    return [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]


def why(stack, target: dict[str, Any], asker: dict[str, Any], channel: str) -> dict[str, Any]:
    """``asker`` picks "Why this answer?" on message ``target`` (which Discord resolves into the
    interaction): the (ephemeral) answer's data."""
    command = message_command(
        stack.application_id,
        NAME,
        target["id"],
        target=target,
        guild_id=GUILD,
        channel_id=channel,
        user_id=asker["id"],
        interaction_id=stack.discord.new_id(),
    )
    response = signed_post(stack, "interactions", json.dumps(command).encode(), stack.signing_key)
    assert response.status_code == 200, response.text
    answered = response.json()
    assert answered["type"] == 4 and answered["data"]["flags"] == 64
    return answered["data"]


# -- "Why this answer?" while its turn is still committing ------------------------------------------


def test_why_asked_on_a_reply_whose_turn_is_still_committing_says_so_then_shows_that_turn(world):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    # Given an earlier turn of Alice's in the channel, done (its record and reply pointers written)
    queue_message(stack, channel, alice)
    assert harness.deliver() == ["done"]
    earlier = bot_posts(stack, channel)
    earlier_trace = json.dumps(why(stack, earlier[0], alice, channel), ensure_ascii=False)

    # When her next turn (shown that memory: its save finds it there) posts its reply, and the
    # worker is killed before its commit
    trigger = queue_message(stack, channel, alice)
    assert harness.deliver(commit("before"), max_deliveries=1) == ["killed"]
    posted = bot_posts(stack, channel)[len(earlier) :]
    assert [m["content"] for m in posted] == PARAGRAPHS

    # Then Why on its chunks, before the redelivery, says the answer is being finished: no other
    # turn's trace, no error; on Alice's own message, that it is no reply of kioku's
    for reply in posted:
        asked = why(stack, reply, alice, channel)
        assert asked["content"] == NOT_YET_A_REPLY and "embeds" not in asked, asked
    assert why(stack, trigger, alice, channel)["content"] == NOT_A_REPLY

    # When the redelivery commits the turn
    assert harness.deliver() == ["done"]

    # Then Why on each chunk shows that turn's trace: the memory recalled, not saved as before
    for reply in posted:
        shown = json.dumps(why(stack, reply, alice, channel), ensure_ascii=False)
        assert "· recalled ·" in shown and "saved in this turn" not in shown, shown
    assert "saved in this turn" in earlier_trace
    items = _table_items(stack)
    assert [i for i in items if i["sk"]["S"] == "DONE" and trigger["id"] in i["pk"]["S"]]
