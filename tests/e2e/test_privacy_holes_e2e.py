"""The privacy holes of issue 37, each through the public interfaces on the local stack (the
interactions endpoint, the relay and the worker on moto; Discord and the model as stand-ins on
127.0.0.1): a persona's nickname never takes a member's own name, and records past their time are
gone on every read."""

from __future__ import annotations

import json
import time

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import ScopeKind
from kioku.playground.events import slash_command
from kioku.playground.stack import LocalStack
from kioku.playground.standins import completion_body
from kioku.services.commands.why_answer import NOT_A_REPLY
from tests.e2e.conftest import GENERAL, GUILD, signed_post
from tests.e2e.test_personas_e2e import LUNA_ID, MANAGE_GUILD, manage, say
from tests.e2e.test_why_answer_e2e import PRIVATE, SECRET, person, save, shown, turn, why

pytestmark = pytest.mark.e2e


def _luna(stack: LocalStack) -> None:
    manage(stack, "add", {"name": "Luna", "prompt": "You are {bot}, calm."}, LUNA_ID)
    manage(stack, "addressing", {"persona": "Luna", "trigger_words": "moon"})


def _about(stack: LocalStack, user_id: str) -> list[str]:
    store = DynamoMemoryStore(KiokuTable(stack.resources.table_name))
    return [memory.content for memory in store.memories_of(ScopeKind.PERSONAL, user_id)]


def _save_about(target_user: str, fact: str) -> dict:
    arguments = {"memory_content": fact, "memory_scope": "target_user", "target_user": target_user}
    return completion_body(tool_calls=[("create_long_term_memory", arguments)])


def test_a_persona_nickname_never_takes_the_speaker_s_memory_about_themself(stack, llm):
    # Given Luna, who calls Carol "bob" (set before Bob, whose username is bob, ever spoke)
    _luna(stack)
    carol = stack.discord.seed_user("carol", global_name="Carol")
    bob = stack.discord.seed_user("bob")
    for member in (carol, bob):
        stack.discord.seed_member(GUILD, member)
    manage(stack, "nickname", {"persona": "Luna", "member": carol["id"], "nickname": "bob"})

    # When Bob asks Luna to remember something about himself, and the model names him "bob"
    llm.enqueue(_save_about("bob", "{user} drinks oolong"), completion_body("Noted."))
    say(stack, bob, "moon, remember that I drink oolong")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    # Then it is Bob's memory, not Carol's
    assert _about(stack, bob["id"]) == ["{user} drinks oolong"]
    assert _about(stack, carol["id"]) == []


def test_a_nickname_that_a_guild_member_is_called_finds_that_member(stack, llm):
    # Given Luna, who calls Carol "Skipper", and Skip, whose username is skipper, not in the talk
    _luna(stack)
    carol = stack.discord.seed_user("carol", global_name="Carol")
    skipper = stack.discord.seed_user("skipper")
    alice = stack.discord.seed_user("alice", global_name="Alice")
    for member in (carol, skipper, alice):
        stack.discord.seed_member(GUILD, member)
    manage(stack, "nickname", {"persona": "Luna", "member": carol["id"], "nickname": "Skipper"})

    # When Alice tells Luna something about "skipper"
    llm.enqueue(_save_about("skipper", "{user} sails on Sundays"), completion_body("Noted."))
    say(stack, alice, "moon, remember that skipper sails on Sundays")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    # Then the member called skipper is the one it is about
    assert _about(stack, skipper["id"]) == ["{user} sails on Sundays"]
    assert _about(stack, carol["id"]) == []


def test_persona_nickname_refuses_another_member_s_name_saying_whose(stack, llm):
    # Given Luna, and Bob (display name Bobby), who has spoken with her
    _luna(stack)
    carol = stack.discord.seed_user("carol", global_name="Carol")
    bob = stack.discord.seed_user("bob", global_name="Bobby")
    for member in (carol, bob):
        stack.discord.seed_member(GUILD, member)
    llm.enqueue(completion_body("Hello."))
    say(stack, bob, "moon, hello")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    # When a manager has Luna call Carol "bobby", then "BOB", then their own name (the manager's)
    refusals = [
        manage(stack, "nickname", {"persona": "Luna", "member": carol["id"], "nickname": nickname})
        for nickname in ("bobby", "BOB")
    ]

    # Then each is refused, ephemerally, saying whose name it is, and nothing is written
    for body in refusals:
        assert body["data"]["flags"] & 64
        (embed,) = body["data"]["embeds"]
        assert embed["title"] == "Nothing was saved"
        assert f"<@{bob['id']}>'s name" in embed["description"]
    luna = ConfigStore(KiokuTable(stack.resources.table_name)).get_server_config(GUILD).persona_named("Luna")
    assert luna.nickname_of(carol["id"]) is None
    # and a name nobody has is kept
    manage(stack, "nickname", {"persona": "Luna", "member": carol["id"], "nickname": "Captain"})
    luna = ConfigStore(KiokuTable(stack.resources.table_name)).get_server_config(GUILD).persona_named("Luna")
    assert luna.nickname_of(carol["id"]) == "Captain"


def _age_every_kept_record(stack: LocalStack) -> int:
    """Every item with a TTL set to a minute ago, left in the table as DynamoDB leaves it for days."""
    client = KiokuTable(stack.resources.table_name).client
    past = str(int(time.time()) - 60)
    aged = 0
    for item in client.scan(TableName=stack.resources.table_name)["Items"]:
        if "expires_at" in item:
            key = {"pk": item["pk"], "sk": item["sk"]}
            client.update_item(
                TableName=stack.resources.table_name,
                Key=key,
                UpdateExpression="SET expires_at = :past",
                ExpressionAttributeValues={":past": {"N": past}},
            )
            aged += 1
    return aged


def _interact_as(stack: LocalStack, command: dict) -> dict:
    response = signed_post(stack, "interactions", json.dumps(command).encode(), stack.signing_key)
    assert response.status_code == 200, response.text
    return response.json()


def test_records_past_their_time_are_gone_for_why_this_answer_the_list_and_the_export(stack, llm):
    # Given a memory about Alice, and a reply of a turn that recalled it
    alice = person(stack, "alice")
    llm.enqueue(
        save("{user} likes oolong tea", "target_user", target_user="Alice"), completion_body("Noted.")
    )
    turn(stack, GENERAL, alice, "I like oolong tea")
    llm.enqueue(completion_body("Oolong, then."))
    reply = turn(stack, GENERAL, alice, "what do I drink?")
    assert "oolong" in shown(why(stack, reply, alice, GENERAL))

    # When every record the turns kept is past its time, though DynamoDB has not deleted it yet
    assert _age_every_kept_record(stack) > 0

    # Then "Why this answer?" keeps no record of the reply
    assert why(stack, reply, alice, GENERAL)["content"] == NOT_A_REPLY
    # and her list no longer counts the turns that used the memory
    listed = _interact_as(
        stack,
        slash_command(
            stack.application_id,
            "personal",
            "memories list",
            guild_id=GUILD,
            channel_id=GENERAL,
            user_id=alice["id"],
            interaction_id=stack.discord.new_id(),
        ),
    )
    (tea,) = [f for f in listed["data"]["embeds"][0]["fields"] if "oolong" in f["value"]]
    assert "used in" not in tea["name"]
    # and her export lists no turn shown her memories
    exported = slash_command(
        stack.application_id,
        "personal",
        "memories export",
        guild_id=GUILD,
        user_id=alice["id"],
        token="export-token",
    )
    assert _interact_as(stack, exported) == {"type": 5, "data": {"flags": 64}}
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    (document,) = [
        json.loads(body) for body in stack.discord.interaction_attachments("export-token").values()
    ]
    assert document["turns_shown_your_memories"] == []
    assert [m["text"] for m in document["long_term_memories"]] == ["{user} likes oolong tea"]


def test_with_the_bypass_on_why_this_answer_counts_a_private_channel_s_memory_without_its_text(stack, llm):
    alice, bob = person(stack, "alice"), person(stack, "bob")
    stack.discord.seed_channel(SECRET, name="secret", guild_id=GUILD, permission_overwrites=PRIVATE)
    # Given a server with the privacy bypass on, and a memory said in its private #secret
    bypass = slash_command(
        stack.application_id,
        "server",
        "privacy bypass",
        {"enabled": True},
        guild_id=GUILD,
        permissions=MANAGE_GUILD,
        interaction_id=stack.discord.new_id(),
    )
    _interact_as(stack, bypass)
    llm.enqueue(save("the vault code is okapi"), completion_body("Noted."))
    turn(stack, SECRET, alice, "the vault code is okapi")
    # and a reply in #general whose turn the bypass let recall it
    llm.enqueue(completion_body("Something about a vault."))
    reply = turn(stack, GENERAL, bob, "anything new?")
    assert "okapi" in str(llm.bodies[-1]["messages"])

    # When Bob asks why
    answer = shown(why(stack, reply, bob, GENERAL))

    # Then the memory is counted and labelled, never its text nor its channel's name (nor the row's)
    assert "a memory from a channel you can't see" in answer
    assert "okapi" not in answer and "secret" not in answer and SECRET not in answer


def test_with_personal_memories_off_no_personal_memory_is_offered_or_kept(stack, llm):
    alice = person(stack, "alice")
    # Given a server that turned personal memories off
    off = slash_command(
        stack.application_id,
        "capabilities",
        "manage",
        {"personal_memories": False},
        guild_id=GUILD,
        permissions=MANAGE_GUILD,
        interaction_id=stack.discord.new_id(),
    )
    _interact_as(stack, off)

    # When Alice tells kioku about herself, and the model still asks to save it about her
    llm.enqueue(
        save("{user} likes oolong tea", "target_user", target_user="Alice"),
        completion_body("I can't keep that here."),
    )
    turn(stack, GENERAL, alice, "remember that I like oolong tea")

    # Then the create tool offered no personal scope and no target_user
    (create,) = [
        t["function"] for t in llm.bodies[0]["tools"] if t["function"]["name"] == "create_long_term_memory"
    ]
    assert create["parameters"]["properties"]["memory_scope"]["enum"] == ["server_wide"]
    assert "target_user" not in create["parameters"]["properties"]
    # and the save was refused with a reason the model can relay, and nothing was written
    (result,) = [json.loads(m["content"]) for m in llm.bodies[1]["messages"] if m["role"] == "tool"]
    assert result["status"] == "memory_save_failed_disabled"
    assert "turned personal memories off" in result["message"]
    assert _about(stack, alice["id"]) == []
    store = DynamoMemoryStore(KiokuTable(stack.resources.table_name))
    assert store.memories_of(ScopeKind.SERVER, GUILD) == []
    assert not [m for m in stack.discord.channel_messages(GENERAL) if m.get("embeds")]
