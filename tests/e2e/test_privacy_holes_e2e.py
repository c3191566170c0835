"""The privacy holes of issue 37, each through the public interfaces on the local stack (the
interactions endpoint, the relay and the worker on moto; Discord and the model as stand-ins on
127.0.0.1): a persona's nickname never takes a member's own name, and records past their time are
gone on every read."""

from __future__ import annotations

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import ScopeKind
from kioku.playground.stack import LocalStack
from kioku.playground.standins import completion_body
from tests.e2e.conftest import GUILD
from tests.e2e.test_personas_e2e import LUNA_ID, manage, say

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
