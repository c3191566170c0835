"""``/persona edit`` on the local stack: the name and personality a manager saves are what the next
turn's system prompt says and how the bot's own messages are labelled in its dialogue."""

from __future__ import annotations

import json

import pytest

from kioku.playground.events import modal_submit, slash_command
from kioku.playground.stack import LocalStack
from tests.e2e.conftest import GENERAL, GUILD, relay_post, signed_post

pytestmark = pytest.mark.e2e

MANAGE_GUILD = str(1 << 5)


def interact(stack: LocalStack, payload: dict) -> dict:
    response = signed_post(stack, "interactions", json.dumps(payload).encode(), stack.signing_key)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_saved_persona_speaks_in_the_next_turn(stack, llm):
    # Given a manager who renames the bot and gives it a personality through the form
    command = slash_command(stack.application_id, "persona", "edit", guild_id=GUILD, permissions=MANAGE_GUILD)
    form = interact(stack, command)
    personality = "You are {bot}, a dry-witted librarian who loves footnotes."
    saved = interact(
        stack, modal_submit(command, form["data"]["custom_id"], {"name": "Mimi", "prompt": personality})
    )
    assert saved["data"]["embeds"][0]["title"] == "Saved: the persona"

    # and a channel where the bot spoke before
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    earlier = stack.discord.seed_message(GENERAL, stack.discord.bot_user, "Hello, I keep the shelves.")

    # When Alice addresses it
    message = stack.discord.seed_message(GENERAL, alice, f"<@{stack.application_id}> who are you?")
    assert relay_post(stack, message, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    # Then the model is told who it is, and its own earlier message carries its new name
    (request,) = llm.bodies
    system = request["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are Mimi, a dry-witted librarian who loves footnotes.")
    own = [m for m in request["messages"] if earlier["id"] in str(m.get("content"))]
    assert own and str(own[0]["content"]).startswith(f"[Mimi | UserID:{stack.application_id}")
