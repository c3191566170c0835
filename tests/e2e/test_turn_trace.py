"""The turn worker's trace hook: a deployed worker keeps no finished turn; the playground's session
is told of each one while its stack runs, and of no other stack's."""

from __future__ import annotations

import gc
import io
import weakref

import pytest

from kioku.playground.session import Playground
from kioku.playground.stack import LocalStack
from kioku.services.turn import TurnRecord
from tests.e2e.conftest import GENERAL, GUILD, STAND_IN_REPLY, relay_post, running_stack

pytestmark = pytest.mark.e2e


def addressed_turn(stack: LocalStack, text: str) -> None:
    """Alice addresses kioku in #general; TurnFunction answers."""
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    message = stack.discord.seed_message(GENERAL, alice, f"<@{stack.application_id}> {text}")
    assert relay_post(stack, message, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]


def test_the_worker_keeps_no_turn_it_finished(stack):
    # Given an observer that holds each finished turn only weakly, as if none were registered
    finished: list[weakref.ref[TurnRecord]] = []
    stack.observe_turns(lambda turn: finished.append(weakref.ref(turn)))

    # When kioku answers three messages
    for text in ("hello", "how are you?", "bye"):
        addressed_turn(stack, text)
    gc.collect()

    # Then they were answered, and nothing in the worker still holds any of the turns
    replies = [
        m for m in stack.discord.channel_messages(GENERAL) if m["author"]["id"] == stack.application_id
    ]
    assert [m["content"] for m in replies] == [STAND_IN_REPLY] * 3
    assert len(finished) == 3
    assert [ref() for ref in finished] == [None, None, None]


def test_a_session_sees_the_turns_of_its_own_stack_while_it_runs(llm):
    # Given a session on a stack that has stopped
    with running_stack(llm) as first:
        earlier = Playground(first, io.StringIO())
    # When a session on a new stack talks to kioku
    with running_stack(llm) as second:
        second.discord.seed_channel(GENERAL, name="general", guild_id=GUILD)
        session = Playground(second, io.StringIO())
        addressed_turn(second, "hello")
    # Then the new session has the turn, with its model request, and the stopped one does not
    assert [turn.reply_ids for turn in session.turns] == [
        [m["id"] for m in second.discord.channel_messages(GENERAL)][-1:]
    ]
    assert session.turns[0].requests
    assert earlier.turns == []
