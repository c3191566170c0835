"""What the model sees, checked against the seeds (issue 11), through the relay's signed POST, the
FIFO queue on moto and the turn worker, reading the one request the stand-in model received."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from kioku.playground.stack import LocalStack
from kioku.playground.standins import OpenAIStandIn
from tests.e2e.conftest import relay_post, running_stack

pytestmark = pytest.mark.e2e

GUILD = "200000000000000011"
CHANNEL = "300000000000000011"
HEADER = re.compile(r"^\[(?P<speaker>[^|\]]+) \| UserID:(?P<user>\d+) \| MessageID:(?P<message>\d+)\]")


@pytest.fixture
def stack(llm: OpenAIStandIn) -> Iterator[LocalStack]:
    with running_stack(llm) as running:
        running.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        yield running


def turn(stack: LocalStack, author: dict[str, Any], text: str, **member: Any) -> dict[str, Any]:
    """``author`` addresses the bot; the relay forwards the message with the author's member object."""
    message = stack.discord.seed_message(CHANNEL, author, f"<@{stack.application_id}> {text}")
    response = relay_post(stack, message, GUILD, {"nick": None, "roles": [], **member})
    assert response.status_code == 202, response.text
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    return message


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def dialogue(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] != "system" and HEADER.match(text_of(m))]


def test_one_person_keeps_one_label_and_one_name_across_the_history_and_the_live_message(stack, llm):
    # Given Alice wrote earlier (REST history carries no member) and now writes with her nickname
    alice = stack.discord.seed_user("alice", global_name="Alice A")
    stack.discord.seed_member(GUILD, alice, nick="Ally")
    stack.discord.seed_message(CHANNEL, alice, "anyone up for chess?")

    # When her message comes through the relay with its member object
    turn(stack, alice, "I'll bring the board", nick="Ally")

    # Then both of her messages carry the same label and the same name
    turns = dialogue(llm.bodies[0])
    assert [HEADER.match(text_of(t))["speaker"] for t in turns] == ["Ally (alice)", "Ally (alice)"]
    assert {t["name"] for t in turns} == {f"Ally_{alice['id']}"}
    assert "The person who just addressed you is Ally." in llm.bodies[0]["messages"][0]["content"]
