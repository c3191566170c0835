""" "Why this answer?" over the real path: turns through the relay, the queue and TurnFunction, then the
message command through the interactions endpoint, signed as Discord signs it, on replies in a public
channel, in a thread of a private channel and in a DM; asked by the speaker, by someone else, and
after a forget."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.playground.events import message_command, slash_command
from kioku.playground.standins import completion_body
from kioku.services.commands.registry import WHY_THIS_ANSWER as NAME
from kioku.services.commands.why_answer import NOT_A_REPLY
from tests.e2e.conftest import GENERAL, GUILD, forget_all_as, relay_post, signed_post

pytestmark = pytest.mark.e2e

SECRET, PLANS, NOOK = "300000000000000003", "300000000000000004", "300000000000000005"
DM_CHANNEL: Final = "310000000000000009"
VIEW_CHANNEL: Final = 1 << 10
PRIVATE: Final = [{"id": GUILD, "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}]


def save(content: str, scope: str = "server_wide", **target: str) -> dict[str, Any]:
    arguments = {"memory_content": content, "memory_scope": scope, **target}
    return completion_body(tool_calls=[("create_long_term_memory", arguments)])


def person(stack, name: str) -> dict[str, Any]:
    user = stack.discord.seed_user(name, global_name=name.title())
    stack.discord.seed_member(GUILD, user)
    return user


def turn(stack, channel_id: str, author: dict, text: str, *, guild: str | None = GUILD) -> str:
    """``author`` says ``text`` to the bot; the id of the bot's reply."""
    message = stack.discord.seed_message(channel_id, author, f"<@{stack.application_id}> {text}")
    assert relay_post(stack, message, guild).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    reply = stack.discord.channel_messages(channel_id)[-1]
    assert reply["author"]["id"] == stack.application_id
    return reply["id"]


def why(stack, reply_id: str, asker: dict, channel_id: str, **where: Any) -> dict[str, Any]:
    """``asker`` picks "Why this answer?" from the Apps menu of message ``reply_id``: the answer."""
    command = message_command(
        stack.application_id,
        NAME,
        reply_id,
        channel_id=channel_id,
        user_id=asker["id"],
        interaction_id=stack.discord.new_id(),
        **where,
    )
    response = signed_post(stack, "interactions", json.dumps(command).encode(), stack.signing_key)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["type"] == 4 and answer["data"]["flags"] == 64  # only the asker sees it
    return answer["data"]


def shown(answer: dict[str, Any]) -> str:
    return json.dumps(answer, ensure_ascii=False)


def test_in_a_public_channel_the_speaker_sees_their_memory_others_only_count_it_and_a_forget_shows(
    stack, llm
):
    alice, bob = person(stack, "alice"), person(stack, "bob")
    # Given a server memory and a personal memory about Alice, saved in #general
    llm.enqueue(save("the book club meets on Fridays"), completion_body("Noted."))
    turn(stack, GENERAL, alice, "the book club meets on Fridays")
    llm.enqueue(
        save("{user} likes oolong tea", "target_user", target_user="Alice"), completion_body("Noted.")
    )
    turn(stack, GENERAL, alice, "I like oolong tea")
    # and a turn of Alice's that was shown both
    llm.enqueue(completion_body("Fridays, with tea."))
    reply = turn(stack, GENERAL, alice, "when do we meet?")
    assert "oolong" in str(llm.bodies[-1]["messages"])

    # When Alice asks why, then Bob asks about the same reply
    to_alice = shown(why(stack, reply, alice, GENERAL))
    to_bob = shown(why(stack, reply, bob, GENERAL))

    # Then Alice sees both memories, hers about her; Bob sees the server's and only a count of hers
    assert "book club meets on Fridays" in to_alice and "You like oolong tea" in to_alice
    assert "book club meets on Fridays" in to_bob
    assert "oolong" not in to_bob and "1 memory about someone else" in to_bob

    # and her list says how often, and where last, the memory about her was used (saved, then recalled)
    listed = slash_command(
        stack.application_id,
        "personal",
        "memories list",
        guild_id=GUILD,
        channel_id=GENERAL,
        user_id=alice["id"],
        interaction_id=stack.discord.new_id(),
    )
    fields = signed_post(stack, "interactions", json.dumps(listed).encode(), stack.signing_key).json()
    (tea,) = [f["name"] for f in fields["data"]["embeds"][0]["fields"] if "oolong" in f["value"]]
    assert f"used in 2 turns of the last 16 days, last in <#{GENERAL}>" in tea

    # When Alice forgets the tea memory by its id, then everything
    (tea_id,) = [line.split(" ")[0][1:] for line in to_alice.split("\\n") if "oolong" in line] or [None]
    assert tea_id is not None
    forgot = slash_command(
        stack.application_id,
        "personal",
        "memories forget",
        {"memory_id": int(tea_id)},
        guild_id=GUILD,
        channel_id=GENERAL,
        user_id=alice["id"],
        interaction_id=stack.discord.new_id(),
    )
    assert "Forgotten" in shown(
        signed_post(stack, "interactions", json.dumps(forgot).encode(), stack.signing_key).json()
    )
    after_forget = shown(why(stack, reply, alice, GENERAL))

    # Then the reply's answer says it is forgotten, never its text
    assert f"#{tea_id} · recalled · forgotten since" in after_forget and "oolong" not in after_forget

    # When she forgets everything (her partition notes the turns that were shown memories about her)
    traces = TurnLedger(KiokuTable(stack.resources.table_name)).traces
    assert [note.turn_id for note in traces.notes_of(alice["id"])] != []
    forget_all_as(stack, alice)
    after_forget_all = shown(why(stack, reply, alice, GENERAL))
    to_bob_after = shown(why(stack, reply, bob, GENERAL))

    # Then her part of the reply's record is gone: not even the id of her memory is kept
    assert f"#{tea_id}" not in after_forget_all and "book club meets on Fridays" in after_forget_all
    assert "about someone else" not in to_bob_after
    assert traces.notes_of(alice["id"]) == []


def test_in_a_thread_of_a_private_channel_and_for_a_member_who_cannot_see_a_recalled_channel(stack, llm):
    alice, bob, carol = person(stack, "alice"), person(stack, "bob"), person(stack, "carol")
    stack.discord.seed_channel(GENERAL, name="general", guild_id=GUILD)
    stack.discord.seed_channel(NOOK, name="nook", guild_id=GUILD)
    stack.discord.seed_channel(SECRET, name="secret", guild_id=GUILD, permission_overwrites=PRIVATE)
    stack.discord.seed_channel(PLANS, name="plans", guild_id=GUILD, parent_id=SECRET)
    # Given a memory saved in a thread of the private #secret, and a turn there that was shown it
    llm.enqueue(save("the vault code is okapi"), completion_body("Noted."))
    turn(stack, PLANS, alice, "the vault code is okapi")
    llm.enqueue(completion_body("Okapi."))
    in_thread = turn(stack, PLANS, alice, "what is the code?")
    # and, in public #general, a turn that recalled #nook while it was public
    llm.enqueue(completion_body("Hi."))
    turn(stack, NOOK, bob, "the picnic moved to Sunday")
    llm.enqueue(completion_body("Sunday it is."))
    in_general = turn(stack, GENERAL, bob, "what is new?")
    assert "picnic" in str(llm.bodies[-1]["messages"])

    # When #nook turns private (its next turn describes it so), and Carol asks about the reply in #general
    stack.discord.set_permission_overwrites(NOOK, PRIVATE)
    llm.enqueue(completion_body("Shh."))
    turn(stack, NOOK, bob, "this is private now")
    to_carol = shown(why(stack, in_general, carol, GENERAL))
    # and Alice and Bob ask about the reply in the thread of #secret
    where = {"guild_id": GUILD, "parent_channel_id": SECRET}
    to_alice = shown(why(stack, in_thread, alice, PLANS, **where))
    to_bob = shown(why(stack, in_thread, bob, PLANS, **where))

    # Then Carol reads "a channel you can't see" for #nook, never its name
    assert "a channel you can't see" in to_carol and "nook" not in to_carol
    # and in the thread, where that memory is recalled for anyone, both see it, named where it was said
    for answer in (to_alice, to_bob):
        assert "the vault code is okapi" in answer and f"<#{PLANS}>" in answer
    # and asked from another channel about the thread's reply, nothing of it is told
    assert why(stack, in_thread, bob, GENERAL)["content"] == NOT_A_REPLY


def test_in_a_dm_the_partner_sees_what_their_turn_was_shown(stack, llm):
    alice = person(stack, "alice")
    llm.enqueue(
        save("{user} is learning the cello", "target_user", target_user="Alice"), completion_body("Nice.")
    )
    turn(stack, DM_CHANNEL, alice, "I am learning the cello", guild=None)
    llm.enqueue(completion_body("Practice!"))
    reply = turn(stack, DM_CHANNEL, alice, "what am I learning?", guild=None)

    answer = shown(why(stack, reply, alice, DM_CHANNEL, guild_id=None))

    assert "You are learning the cello" in answer and "in our DM" in answer


def test_a_message_that_is_not_a_kioku_reply_gets_a_clear_answer(stack, llm):
    alice = person(stack, "alice")
    own = stack.discord.seed_message(GENERAL, alice, "just chatting")
    assert why(stack, own["id"], alice, GENERAL)["content"] == NOT_A_REPLY
