"""What people do while a turn is unfinished (issue 38's harness cases): "Why this answer?" asked on a
reply whose turn is still committing, and an alter persona removed while its turn runs.

The harness of ``test_turn_crash_points``: TurnFunction in child processes, one killed (or held)
at a chosen request, the redelivery to a fresh one; the interactions endpoint answers the person
meanwhile, as Discord would call it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from kioku.playground.events import component_click, message_command, slash_command
from kioku.services.commands.registry import WHY_THIS_ANSWER as NAME
from kioku.services.commands.why_answer import NOT_A_REPLY, NOT_YET_A_REPLY
from tests.e2e.conftest import relay_post, signed_post
from tests.e2e.crash_harness import MANAGE_GUILD, CrashWorld, add_luna, crash_world
from tests.e2e.test_turn_crash_points import (
    GUILD,
    PARAGRAPHS,
    _table_items,
    answer,
    chunk_post,
    commit,
    model_call,
    new_channel_and_person,
    outbox_keep,
    queue_message,
)
from tests.e2e.test_turn_crash_points import dead_letters as all_dead_letters

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


# -- an alter persona removed while its turn runs ----------------------------------------------------


def server_with_luna(stack) -> tuple[str, str, str, dict[str, Any]]:
    """A server of its own (removing Luna touches nothing of another test's), Luna added to it, a
    channel and Alice: (guild, Luna's id, channel, Alice)."""
    guild, luna, channel = stack.discord.new_id(), stack.discord.new_id(), stack.discord.new_id()
    stack.discord.seed_channel(channel, name="general", guild_id=guild)
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(guild, alice)
    add_luna(stack, guild, luna)
    return guild, luna, channel, alice


def call_luna(stack, guild: str, channel: str, alice: dict[str, Any]) -> dict[str, Any]:
    trigger = stack.discord.seed_message(channel, alice, "Luna, remember I love green tea")
    assert relay_post(stack, trigger, guild).status_code == 202
    return trigger


def remove(stack, guild: str, persona: str) -> None:
    """A manager's /persona remove, confirmed with its button."""
    command = slash_command(
        stack.application_id,
        "persona",
        "remove",
        {"persona": persona},
        guild_id=guild,
        permissions=MANAGE_GUILD,
    )
    asked = signed_post(stack, "interactions", json.dumps(command).encode(), stack.signing_key).json()
    confirm = asked["data"]["components"][0]["components"][0]["custom_id"]
    clicked = component_click(command, confirm)
    done = signed_post(stack, "interactions", json.dumps(clicked).encode(), stack.signing_key).json()
    assert done["data"]["embeds"][0]["title"] == f"Removed: {persona}", done


def luna_posts(stack, channel: str) -> list[dict[str, Any]]:
    return [m for m in stack.discord.channel_messages(channel) if m.get("webhook_id")]


REMOVAL_POINTS = [
    # the worker dies after its read, asking the model; after Luna's answer is kept; after chunk 1
    (model_call(2), []),
    (outbox_keep("after"), []),
    (chunk_post(1), PARAGRAPHS[:1]),
]


@pytest.mark.parametrize(
    ("fault", "before"), [pytest.param(f, b, id=f"killed at {f.name}") for f, b in REMOVAL_POINTS]
)
def test_a_persona_removed_while_its_killed_turn_waits_for_redelivery_says_nothing_more(world, fault, before):
    stack, harness = world.stack, world.harness
    guild, luna, channel, alice = server_with_luna(stack)
    trigger = call_luna(stack, guild, channel, alice)

    # When Luna's turn is killed after its read, a manager removes Luna, and the turn is redelivered
    assert harness.deliver(fault, max_deliveries=1) == ["killed"]
    remove(stack, guild, "Luna")
    outcomes = harness.deliver()

    # Then the redelivery ends the turn as Luna's no more: nothing more posted (no chunk, no
    # notice) through any webhook or as the bot, no webhook made again, no outbox, no row of hers
    # captured, not dead-lettered; the turn recorded done
    assert outcomes == ["done"], outcomes
    assert [m["content"] for m in luna_posts(stack, channel)] == before
    assert bot_posts(stack, channel) == []
    items = _table_items(stack)
    assert [i for i in items if i["pk"]["S"] == f"USER#{alice['id']}" and "OUTBOX#" in i["sk"]["S"]] == []
    assert [i for i in items if i["pk"]["S"] == f"STM#S#{guild}" and luna in i["sk"]["S"]] == []
    assert [
        i for i in items if i["pk"]["S"] == f"SERVER#{guild}" and i["sk"]["S"].startswith("WEBHOOK#")
    ] == []
    assert [i for i in items if i["sk"]["S"] == "DONE" and trigger["id"] in i["pk"]["S"]]
    assert [m for m in all_dead_letters(stack) if m["Attributes"]["MessageGroupId"] == channel] == []


def test_a_persona_removed_while_its_turn_is_about_to_keep_its_answer_posts_nothing_as_it(world):
    stack, harness = world.stack, world.harness
    guild, luna, channel, alice = server_with_luna(stack)
    call_luna(stack, guild, channel, alice)

    # When a manager removes Luna while her turn, its answer known, is about to keep it
    keep = replace(outbox_keep("before"), action="meanwhile", meanwhile=lambda: remove(stack, guild, "Luna"))
    outcomes = harness.deliver(keep)

    # Then nothing is posted in her voice or captured in a row of hers; nothing left behind
    assert harness.chaos.fired and outcomes == ["done"], outcomes
    assert luna_posts(stack, channel) == [] and bot_posts(stack, channel) == []
    items = _table_items(stack)
    assert [i for i in items if i["pk"]["S"] == f"USER#{alice['id']}" and "OUTBOX#" in i["sk"]["S"]] == []
    assert [i for i in items if i["pk"]["S"] == f"STM#S#{guild}" and luna in i["sk"]["S"]] == []
    assert [
        i for i in items if i["pk"]["S"] == f"SERVER#{guild}" and i["sk"]["S"].startswith("WEBHOOK#")
    ] == []


def test_a_persona_removed_once_its_turn_has_posted_is_not_captured_in_a_row_of_hers(world):
    stack, harness = world.stack, world.harness
    guild, luna, channel, alice = server_with_luna(stack)
    trigger = call_luna(stack, guild, channel, alice)

    # When a manager removes Luna once her turn has posted everything, just before its commit
    fault = replace(commit("before"), action="meanwhile", meanwhile=lambda: remove(stack, guild, "Luna"))
    outcomes = harness.deliver(fault)

    # Then what she posted stays, the turn is recorded done, and no row of hers comes back
    assert harness.chaos.fired and outcomes == ["done"], outcomes
    assert [m["content"] for m in luna_posts(stack, channel)] == [*PARAGRAPHS, ""]
    items = _table_items(stack)
    assert [i for i in items if i["pk"]["S"] == f"STM#S#{guild}" and luna in i["sk"]["S"]] == []
    assert [i for i in items if i["pk"]["S"] == f"USER#{alice['id']}" and "OUTBOX#" in i["sk"]["S"]] == []
    assert [i for i in items if i["sk"]["S"] == "DONE" and trigger["id"] in i["pk"]["S"]]
