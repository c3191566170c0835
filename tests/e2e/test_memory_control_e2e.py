"""A person's data over the real path: /personal memories export from the interactions endpoint,
through the queue and the worker, to a JSON file attached to the interaction's answer."""

from __future__ import annotations

import json

import pytest

from kioku.playground.events import slash_command
from kioku.playground.standins import completion_body
from tests.e2e.conftest import GENERAL, GUILD, relay_post, signed_post

pytestmark = pytest.mark.e2e

CHANNEL = GENERAL


def test_an_export_arrives_as_a_json_file_with_what_was_kept(stack, llm):
    # Given Alice told kioku something it saved, in a channel turn
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    llm.enqueue(
        completion_body(
            tool_calls=[
                (
                    "create_long_term_memory",
                    {
                        "memory_content": "{user} likes tea",
                        "memory_scope": "target_user",
                        "target_user": "Alice",
                    },
                )
            ]
        ),
        completion_body("Noted."),
    )
    message = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> remember I like tea")
    assert relay_post(stack, message, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    # When she asks for her export
    command = slash_command(
        stack.application_id,
        "personal",
        "memories export",
        guild_id=GUILD,
        user_id=alice["id"],
        token="export-token",
    )
    answer = signed_post(stack, "interactions", json.dumps(command).encode(), stack.signing_key)
    assert answer.json() == {"type": 5, "data": {"flags": 64}}
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    # Then the answer carries a JSON file with her memory and her line, and the model was not asked
    files = stack.discord.interaction_attachments("export-token")
    (name,) = files
    document = json.loads(files[name])
    assert name == f"kioku-export-{alice['id']}.json"
    assert [m["text"] for m in document["long_term_memories"]] == ["{user} likes tea"]
    lines = [m["text"] for row in document["your_lines_in_server_short_term_memory"] for m in row["messages"]]
    assert lines == ["@Kioku remember I like tea"]  # issue 11.7: captured lines keep names, not ids
    assert len(llm.bodies) == 2  # the chat turn's two rounds only
