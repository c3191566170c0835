"""A person's data over the real path: /personal memories export from the interactions endpoint,
through the queue and the worker, to a JSON file attached to the interaction's answer."""

from __future__ import annotations

import json

import pytest

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import ScopeKind
from kioku.domain.models import Persona
from kioku.domain.stm.entries import StmAddress
from kioku.playground.events import slash_command
from kioku.playground.standins import completion_body
from tests.e2e.conftest import GENERAL, GUILD, forget_all_as, relay_post, signed_post

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


# -- forget-all and the turns still on their way (issue 17.2) ----------------------------------------

REMEMBER_TEA = completion_body(
    tool_calls=[
        (
            "create_long_term_memory",
            {
                "memory_content": "{user} likes oolong tea",
                "memory_scope": "target_user",
                "target_user": "Alice",
            },
        )
    ]
)


def what_kioku_keeps_of(stack, person: dict) -> dict:
    """Every memory about ``person``, every line of theirs in this channel's short-term memory, and
    what the bot posted."""
    store = DynamoMemoryStore(KiokuTable(stack.resources.table_name))
    row = StmStore(KiokuTable(stack.resources.table_name)).get(
        StmAddress.of(GUILD, "", CHANNEL, Persona().persona_id)
    )
    return {
        "memories": [m.content for m in store.memories_of(ScopeKind.PERSONAL, person["id"])],
        "lines": [line.text for line in (row.crude if row else ()) if line.user_id == person["id"]],
        "posted": [
            json.dumps([m["content"], m["embeds"]])
            for m in stack.discord.channel_messages(CHANNEL)
            if m["author"]["id"] == stack.application_id
        ],
    }


def test_a_reply_left_unfinished_before_forget_all_is_not_posted_or_captured_after_it(stack, llm):
    # Given Alice's turn whose model saved a memory about her, and whose reply Discord refused
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    llm.enqueue(REMEMBER_TEA, completion_body("Noted, oolong it is."))
    message = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> I like oolong tea")
    assert relay_post(stack, message, GUILD).status_code == 202
    stack.discord.fail_post(1, 500, {"message": "500: Internal Server Error", "code": 0})
    (first,) = stack.deliver_turns(max_batches=1)
    assert len(first["batchItemFailures"]) == 1  # back on the queue, its reply and notice kept
    # When Alice forgets everything before SQS hands the turn out again
    forget_all_as(stack, alice)
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    # Then the redelivery posted no "Memory saved" notice quoting her, kept none of her lines, and
    # nothing about her is left; the turn is done (nothing comes back, nothing waits in her partition)
    kept = what_kioku_keeps_of(stack, alice)
    assert kept["memories"] == [] and kept["lines"] == []
    assert not any("oolong" in posted or "Memory saved" in posted for posted in kept["posted"])
    assert stack.deliver_turns() == []
    items = KiokuTable(stack.resources.table_name).client.scan(TableName=stack.resources.table_name)["Items"]
    assert not [item for item in items if "OUTBOX#" in item["sk"]["S"] or item["sk"]["S"] == "UNFINISHED"]


def test_a_message_still_queued_at_forget_all_saves_and_captures_nothing_of_it(stack, llm):
    # Given Alice's message waiting on the queue
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    message = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> I like oolong tea")
    assert relay_post(stack, message, GUILD).status_code == 202
    # When she forgets everything, and only then the worker takes the turn, whose model would save a memory
    forget_all_as(stack, alice)
    llm.enqueue(REMEMBER_TEA, completion_body("Noted."))
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    # Then the model was not asked (nothing of the turn may be kept, so her words go nowhere); her
    # line was not captured; nothing was posted
    assert llm.bodies == []
    kept = what_kioku_keeps_of(stack, alice)
    assert kept == {"memories": [], "lines": [], "posted": []}
    # and a message she sends afterwards is remembered as usual
    llm.enqueue(REMEMBER_TEA, completion_body("Noted again."))
    later = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> I like oolong tea")
    assert relay_post(stack, later, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    kept = what_kioku_keeps_of(stack, alice)
    assert kept["memories"] == ["{user} likes oolong tea"]
    assert kept["lines"] == ["@Kioku I like oolong tea"]
