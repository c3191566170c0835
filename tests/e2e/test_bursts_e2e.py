"""Bursts in an ``always`` channel, end to end on the local stack (the relay and the worker on moto,
Discord and the model stand-ins on 127.0.0.1): messages sent while a turn of the channel is queued
or running join the next turn, answered in one reply to the newest, in order, none lost; the rate
still bounds a burst, with one notice; in a channel that is not ``always`` each addressed message
is its own turn; only the same person's messages in the same channel join."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kioku.adapters.dynamodb.keys import turn_record_key
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.models import Persona
from kioku.domain.stm.entries import CrudeRole, StmAddress
from kioku.domain.text import END_OF_MESSAGE
from kioku.playground.events import slash_command
from kioku.playground.stack import LocalStack
from kioku.playground.standins import OpenAIStandIn, completion_body
from kioku.services.turn import RATE_NOTICE
from tests.e2e.conftest import (
    GENERAL,
    GUILD,
    STAND_IN_KEY,
    relay_post,
    running_stack,
    same_minute,
    signed_post,
)

pytestmark = pytest.mark.e2e

MANAGE_GUILD = str(1 << 5)
RANDOM = "300000000000000002"
BURST = ["hey there", "so I was wondering", "about the trip", "to Kyoto next month", "what do you say?"]


def manage(stack: LocalStack, options: dict[str, Any]) -> None:
    payload = slash_command(
        stack.application_id,
        "server",
        "addressing",
        options,
        guild_id=GUILD,
        permissions=MANAGE_GUILD,
        interaction_id=stack.discord.new_id(),
    )
    response = signed_post(stack, "interactions", json.dumps(payload).encode(), stack.signing_key)
    assert response.status_code == 200, response.text


def member(stack: LocalStack, name: str) -> dict[str, Any]:
    user = stack.discord.seed_user(name, global_name=name.title())
    stack.discord.seed_member(GUILD, user)
    return user


def say(stack: LocalStack, author: dict[str, Any], text: str, channel: str = GENERAL) -> dict[str, Any]:
    message = stack.discord.seed_message(channel, author, text)
    assert relay_post(stack, message, GUILD).status_code == 202
    return message


def bot_posts(stack: LocalStack, channel: str = GENERAL) -> list[dict[str, Any]]:
    return [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]


def replied_to(message: dict[str, Any]) -> str | None:
    return (message.get("message_reference") or {}).get("message_id")


def dialogue(body: dict[str, Any]) -> list[str]:
    """The user messages of a model request, as the model reads them."""
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


def said_in(body: dict[str, Any]) -> list[str]:
    """Which of the burst's messages the model was shown, in the order shown."""
    return [text for line in dialogue(body) for text in BURST if f"{text}{END_OF_MESSAGE}" in line]


def done_records(stack: LocalStack, ids: list[str]) -> list[str]:
    """Which of the messages ``ids`` are recorded as answered (a turn of theirs done)."""
    table = KiokuTable(stack.resources.table_name)
    return [i for i in ids if table.get(turn_record_key("message", i)) is not None]


def stm_lines(stack: LocalStack, channel: str = GENERAL) -> list[tuple[CrudeRole, str]]:
    row = StmStore(KiokuTable(stack.resources.table_name)).get(
        StmAddress.of(GUILD, "", channel, Persona().persona_id)
    )
    assert row is not None
    return [(line.role, line.text) for line in row.crude]


def test_a_burst_of_five_queued_together_is_answered_by_one_turn_in_order(stack, llm):
    # Given #general, where kioku answers every message, and Alice's five messages queued together
    manage(stack, {"channel": GENERAL, "mode": "always"})
    alice = member(stack, "alice")
    burst = [say(stack, alice, text) for text in BURST]

    # When the worker takes the queue
    responses = stack.deliver_turns()

    # Then every job ended well, and one turn answered all five: the model asked once, shown the
    # five in order, its one reply to the newest
    assert all(r == {"batchItemFailures": []} for r in responses)
    assert len(llm.bodies) == 1
    assert said_in(llm.bodies[0])[-5:] == BURST
    (reply,) = bot_posts(stack)
    assert replied_to(reply) == burst[-1]["id"]
    # each message recorded done (none lost), and the row holds the five lines, then the answer
    ids = [m["id"] for m in burst]
    assert done_records(stack, ids) == ids
    assert stm_lines(stack) == [*((CrudeRole.USER, t) for t in BURST), (CrudeRole.ASSISTANT, "Sure.")]


def test_a_text_file_in_a_covered_message_is_read_into_it(stack, llm):
    # Given an always channel, and Alice's second message of a burst bringing a small text file
    manage(stack, {"channel": GENERAL, "mode": "always"})
    alice = member(stack, "alice")
    notes = stack.cdn.put("notes.txt", b"pack the rail pass", "text/plain; charset=utf-8")
    say(stack, alice, "hey there")
    message = stack.discord.seed_message(GENERAL, alice, "my list", attachments=[notes])
    assert relay_post(stack, message, GUILD).status_code == 202

    stack.deliver_turns()

    # Then the one turn answering both showed the file's text inside the covered message, once fetched
    (body,) = llm.bodies
    assert any("my list" in line and "pack the rail pass" in line for line in dialogue(body))
    assert len(stack.cdn.fetched()) == 1


def test_messages_sent_while_a_turn_runs_join_the_next_turn():
    asked: list[dict[str, Any]] = []
    burst: list[dict[str, Any]] = []
    stacks: list[LocalStack] = []

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        if len(asked) == 1:  # the other three arrive while the first turn asks the model
            burst.extend(say(stacks[0], alice, text) for text in BURST[2:])
        return completion_body(f"Reply {len(asked)}.")

    with OpenAIStandIn(api_key=STAND_IN_KEY, responder=answer) as model, running_stack(model) as stack:
        stacks.append(stack)
        # Given #general always answering, and Alice's first two messages queued
        stack.discord.seed_channel(GENERAL, name="general", guild_id=GUILD)
        manage(stack, {"channel": GENERAL, "mode": "always"})
        alice = member(stack, "alice")
        burst.extend(say(stack, alice, text) for text in BURST[:2])

        # When the worker takes the queue
        stack.deliver_turns()

        # Then two turns answered all five, in order: the first the two it read, the next the three
        assert len(asked) == 2
        first, second = bot_posts(stack)
        assert (first["content"], replied_to(first)) == ("Reply 1.", burst[1]["id"])
        assert (second["content"], replied_to(second)) == ("Reply 2.", burst[4]["id"])
        assert not any(BURST[2] in line for line in dialogue(asked[0]))
        assert said_in(asked[1])[-5:] == BURST
        ids = [m["id"] for m in burst]
        assert done_records(stack, ids) == ids
        assert [text for role, text in stm_lines(stack) if role is CrudeRole.USER] == BURST


def test_a_burst_longer_than_the_dialogue_shows_is_answered_in_order(llm):
    with running_stack(llm, DIALOGUE_HISTORY_LIMIT="3") as stack:
        stack.discord.seed_channel(GENERAL, name="general", guild_id=GUILD)
        manage(stack, {"channel": GENERAL, "mode": "always"})
        alice = member(stack, "alice")
        stack.discord.seed_message(GENERAL, alice, "said before")

        # Given five messages queued together, more than the three messages a dialogue shows
        burst = [say(stack, alice, text) for text in BURST]

        # When the worker takes the queue
        stack.deliver_turns()

        # Then the first turn read the messages right after its own (the latest three do not hold it)
        # and answered the first three, all the dialogue shows, the next turn the last two: none
        # lost, in order
        assert [replied_to(m) for m in bot_posts(stack)] == [burst[2]["id"], burst[4]["id"]]
        assert said_in(llm.bodies[0]) == BURST[:3] and said_in(llm.bodies[1])[-2:] == BURST[3:]
        ids = [m["id"] for m in burst]
        assert done_records(stack, ids) == ids


def test_the_rate_still_bounds_a_burst_with_one_notice(llm):
    with running_stack(llm, TURN_RATE_LIMIT_PER_MINUTE="3") as stack:
        stack.discord.seed_channel(GENERAL, name="general", guild_id=GUILD)
        manage(stack, {"channel": GENERAL, "mode": "always"})
        alice = member(stack, "alice")

        # Given six messages of Alice's in one minute, three a minute allowed
        same_minute()
        burst = [say(stack, alice, f"message {n}") for n in range(1, 7)]

        # When the worker takes the queue
        stack.deliver_turns()

        # Then one turn answered the three the rate lets through (its reply to the third), the fourth
        # got the one notice, the last two nothing; the model was asked once
        assert len(llm.bodies) == 1
        assert not any("message 4" in line for line in dialogue(llm.bodies[0]))
        reply, notice = bot_posts(stack)
        assert (reply["content"], replied_to(reply)) == ("Sure.", burst[2]["id"])
        assert (notice["content"], replied_to(notice)) == (RATE_NOTICE, burst[3]["id"])
        ids = [m["id"] for m in burst]
        assert done_records(stack, ids) == ids[:4]


def test_in_a_channel_that_is_not_always_each_addressed_message_is_its_own_turn(stack, llm):
    # Given trigger words, no always channel, and three addressed messages of Alice's queued together
    manage(stack, {"trigger_words": "kioku"})
    alice = member(stack, "alice")
    burst = [say(stack, alice, f"kioku, question {n}") for n in range(1, 4)]

    stack.deliver_turns()

    # Then each got its own reply, in order, each turn shown nothing said after its message
    assert len(llm.bodies) == 3
    assert [replied_to(m) for m in bot_posts(stack)] == [m["id"] for m in burst]
    for n, body in enumerate(llm.bodies, start=1):
        assert any(f"question {n}" in line for line in dialogue(body))
        assert not any(f"question {n + 1}" in line for line in dialogue(body))


def test_only_the_same_person_s_messages_in_the_same_channel_join_a_turn(stack, llm):
    # Given two always channels, and Alice and Bob talking in them
    stack.discord.seed_channel(RANDOM, name="random", guild_id=GUILD)
    manage(stack, {"channel": GENERAL, "mode": "always"})
    manage(stack, {"channel": RANDOM, "mode": "always"})
    alice, bob = member(stack, "alice"), member(stack, "bob")
    first = say(stack, alice, "hello general")
    elsewhere = say(stack, alice, "a secret for random", RANDOM)
    second = say(stack, alice, "still here")
    bobs = say(stack, bob, "hi all")
    third = say(stack, alice, "and again")

    stack.deliver_turns()

    # Then #general's turns never showed #random's message as theirs (its short-term memory may be
    # recalled: #random is public); Alice's first two messages in #general (nothing of another
    # person's between them) are one turn, Bob's his own, Alice's last her own
    everyone = (first, elsewhere, second, bobs, third)
    shown = [[m["id"] for m in everyone if f"MessageID:{m['id']}]" in str(body)] for body in llm.bodies]
    assert len(shown) == 4
    assert [elsewhere["id"]] in shown and sum(elsewhere["id"] in ids for ids in shown) == 1
    assert [first["id"], second["id"]] in shown
    assert [replied_to(m) for m in bot_posts(stack)] == [second["id"], bobs["id"], third["id"]]
    assert [replied_to(m) for m in bot_posts(stack, RANDOM)] == [elsewhere["id"]]
    assert not any(first["id"] == replied_to(m) for m in bot_posts(stack))


def test_what_others_said_since_takes_no_place_of_the_context_before_the_turn(stack, llm):
    # Given an always channel with nine earlier messages of Carol's, then Alice's question, then four
    # of Bob's said while it waited in the queue (none of them relayed: only Alice's is a turn here)
    manage(stack, {"channel": GENERAL, "mode": "always"})
    carol, alice, bob = member(stack, "carol"), member(stack, "alice"), member(stack, "bob")
    before = [f"carol's point {n}" for n in range(9)]
    for text in before:
        stack.discord.seed_message(GENERAL, carol, text)
    say(stack, alice, "what do you all think?")
    for n in range(4):
        stack.discord.seed_message(GENERAL, bob, f"bob's aside {n}")

    # When the worker takes Alice's turn
    stack.deliver_turns()

    # Then the model is shown the nine before her message, as a turn in any channel would be
    # (the dialogue's ten: her own and nine earlier), and nothing of Bob's said after it
    (body,) = llm.bodies
    shown = "\n".join(dialogue(body))
    assert all(f"{text}{END_OF_MESSAGE}" in shown for text in before)
    assert "bob's aside" not in shown
