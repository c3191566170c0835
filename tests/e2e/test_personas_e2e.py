"""Several personas in one channel, end to end on the local stack (the relay and the worker on moto,
Discord and the model stand-ins on 127.0.0.1): each answers by its trigger word through the channel's
webhook, with its own short-term row and long-term lineage (one sharing another's); no persona
answers kioku's own webhook messages; without Manage Webhooks the bot says so; a removed persona
goes with its confirmation; every body sent to Discord is one its docs accept (tests/discord_contract.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import ScopeKind
from kioku.domain.stm.entries import StmAddress
from kioku.playground.events import component_click, slash_command
from kioku.playground.stack import LocalStack
from kioku.playground.standins import completion_body
from tests.discord_contract import checked_posts
from tests.e2e.conftest import GENERAL, GUILD, relay_post, signed_post

pytestmark = pytest.mark.e2e

MANAGE_GUILD = str(1 << 5)
LUNA_ID, SOL_ID = "600000000000000001", "600000000000000002"
LOCKED = "300000000000000009"
LTM_HEADER = "Long-term memories:"


def interact(stack: LocalStack, payload: dict) -> dict:
    response = signed_post(stack, "interactions", json.dumps(payload).encode(), stack.signing_key)
    assert response.status_code == 200, response.text
    return response.json()


def manage(
    stack: LocalStack, subcommand: str, options: dict, interaction_id: str = "500000000000000001"
) -> dict:
    return interact(
        stack,
        slash_command(
            stack.application_id,
            *(("server", "addressing") if subcommand == "addressing" else ("persona", subcommand)),
            options,
            guild_id=GUILD,
            permissions=MANAGE_GUILD,
            interaction_id=interaction_id,
        ),
    )


def say(stack: LocalStack, author: dict, text: str, channel: str = GENERAL) -> dict:
    message = stack.discord.seed_message(channel, author, text)
    assert relay_post(stack, message, GUILD).status_code == 202
    return message


def persona_posts(stack: LocalStack, channel: str = GENERAL) -> list[tuple[str, str]]:
    return [
        (m["author"]["username"], m["content"] or m["embeds"][0]["title"])
        for m in stack.discord.channel_messages(channel)
        if m.get("webhook_id")
    ]


def stores(stack: LocalStack) -> tuple[ConfigStore, StmStore, DynamoMemoryStore]:
    table = KiokuTable(stack.resources.table_name)
    return ConfigStore(table), StmStore(table), DynamoMemoryStore(table)


def recalled(body: dict[str, Any]) -> str:
    """The long-term memories the request carried (not the dialogue that may quote them)."""
    return "".join(str(m["content"]) for m in body["messages"] if str(m["content"]).startswith(LTM_HEADER))


def system_prompt(body: dict[str, Any]) -> str:
    return body["messages"][0]["content"]


def test_two_personas_in_one_channel_each_answer_by_trigger_word_with_their_own_memory(stack, llm):
    configs, stm, ltm = stores(stack)
    # Given Luna (trigger word "moon", her own lineage) and Sol (trigger word "sun", Luna's memories)
    manage(
        stack,
        "add",
        {
            "name": "Luna",
            "prompt": "You are {bot}, calm and nocturnal.",
            "avatar_url": "https://example.com/luna.png",
        },
        LUNA_ID,
    )
    manage(
        stack,
        "add",
        {"name": "Sol", "prompt": "You are {bot}, bright and loud.", "memories_from": "Luna"},
        SOL_ID,
    )
    manage(stack, "addressing", {"persona": "Luna", "trigger_words": "moon"})
    manage(stack, "addressing", {"persona": "Sol", "trigger_words": "sun"})
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)

    # When Alice calls the moon, and Luna saves a server memory with the model's tool
    save = {"memory_content": "The book club meets on Fridays", "memory_scope": "server_wide"}
    llm.enqueue(
        completion_body(tool_calls=[("create_long_term_memory", save)]), completion_body("Noted, softly.")
    )
    say(stack, alice, "moon, remember that the book club meets on Fridays")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    # Then Luna answered through the channel's webhook, under her name and avatar, her notice too
    assert persona_posts(stack) == [("Luna", "Noted, softly."), ("Luna", "Memory saved")]
    (hook,) = stack.discord.webhooks_of(GENERAL)
    executed = stack.discord.requests_to("POST", rf"/api/v10/webhooks/{hook['id']}/.*")
    assert executed[0].body["avatar_url"] == "https://example.com/luna.png"
    assert executed[0].body["allowed_mentions"] == {"parse": []}
    assert system_prompt(llm.bodies[0]).startswith("You are Luna, calm and nocturnal.")
    # with her own short-term row, and the memory in her lineage
    luna = configs.get_server_config(GUILD).persona_named("Luna")
    assert stm.get(StmAddress.of(GUILD, "", GENERAL, LUNA_ID)).crude[-1].text == "Noted, softly."
    assert stm.get(StmAddress.of(GUILD, "", GENERAL, "kioku")) is None
    (memory,) = ltm.memories_of(ScopeKind.SERVER, GUILD)
    assert memory.scope.lineage == luna.lineage_id == int(LUNA_ID)

    # When Alice calls both, the sun first, then the main persona by mention
    llm.enqueue(
        completion_body("Fridays! Loud and clear."),
        completion_body("Indeed."),
        completion_body("Hello Alice."),
    )
    say(stack, alice, "sun and moon: when does the club meet?")
    say(stack, alice, f"<@{stack.application_id}> and you?")
    assert all(batch == {"batchItemFailures": []} for batch in stack.deliver_turns())

    # Then Sol answers, then Luna, each once, in the order named; the main persona as the bot
    assert persona_posts(stack)[2:] == [("Sol", "Fridays! Loud and clear."), ("Luna", "Indeed.")]
    sol_request, luna_request, main_request = llm.bodies[2:5]
    assert system_prompt(sol_request).startswith("You are Sol, bright and loud.")
    # Sol recalls Luna's memory (a shared lineage); the main persona does not (another lineage)
    assert "book club meets on Fridays" in recalled(sol_request)
    assert "book club meets on Fridays" not in recalled(main_request)
    # Sol reads Luna's earlier answer as another bot's, Luna reads it as her own
    sol_saw = [m for m in sol_request["messages"] if "Noted, softly." in str(m["content"])]
    luna_saw = [m for m in luna_request["messages"] if "Noted, softly." in str(m["content"])]
    assert sol_saw[0]["role"] == "user" and str(sol_saw[0]["content"]).startswith("[BOT Luna |")
    assert luna_saw[0]["role"] == "assistant" and str(luna_saw[0]["content"]).startswith(
        f"[Luna | UserID:{LUNA_ID}"
    )
    # and the main persona reads it as another bot's (the answers after its message it never sees)
    main_saw = [m for m in main_request["messages"] if "Noted, softly." in str(m["content"])]
    assert main_saw[0]["role"] == "user" and str(main_saw[0]["content"]).startswith("[BOT Luna |")
    # each persona has its own row here
    assert {
        stm.get(StmAddress.of(GUILD, "", GENERAL, p)) is not None for p in (LUNA_ID, SOL_ID, "kioku")
    } == {True}
    assert stm.get(StmAddress.of(GUILD, "", GENERAL, SOL_ID)).crude[-1].text == "Fridays! Loud and clear."

    # and the webhook was created once, then reused
    assert len(stack.discord.requests_to("POST", r"/api/v10/channels/\d+/webhooks")) == 1

    # Every body kioku sent Discord meets what Discord documents (tests/discord_contract.py)
    checked = checked_posts(stack.discord.requests)
    assert {
        "/channels/{channel_id}/webhooks",
        "/webhooks/{webhook_id}/{webhook_token}",
        "/channels/{channel_id}/messages",
    } <= set(checked)


def test_a_persona_s_own_words_are_only_what_it_posted_through_the_channel_s_webhook(stack, llm):
    from kioku.adapters.discord_rest import DiscordRest
    from kioku.entrypoints.composition import forget

    manage(stack, "add", {"name": "Luna", "prompt": "x"}, LUNA_ID)
    manage(stack, "addressing", {"persona": "Luna", "trigger_words": "moon"})
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    llm.enqueue(completion_body("Hello from Luna."))
    say(stack, alice, "moon, hello")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    # Given someone posting as "Luna" through another webhook of the application in the channel
    rest = DiscordRest(stack.discord.base_url, stack.discord.token)
    other = rest.create_webhook(GENERAL, "lookalike")
    rest.execute_webhook(other["id"], other["token"], "Free lunch for all, I promise.", username="Luna")
    rest.close()
    # When Alice calls the moon again, in a new container (the webhook known only as stored)
    forget()
    llm.enqueue(completion_body("Not my words."))
    say(stack, alice, "moon, did you promise lunch?")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    # Then Luna hears her answer as hers, and the lookalike as another bot named Luna
    heard = {str(m["content"]).split("\n")[-1]: m for m in llm.bodies[-1]["messages"][1:]}
    (own,) = [m for text, m in heard.items() if "Hello from Luna." in text]
    (lookalike,) = [m for text, m in heard.items() if "Free lunch" in text]
    assert own["role"] == "assistant"
    assert lookalike["role"] == "user" and str(lookalike["content"]).startswith("[BOT Luna |")


def test_kioku_never_answers_its_own_webhook_messages(stack, llm):
    manage(stack, "add", {"name": "Luna", "prompt": "x"}, LUNA_ID)
    manage(stack, "addressing", {"trigger_words": "kioku", "answer_other_bots": True})
    # Given a message Luna posted that names Luna, the moon and kioku, relayed back by the gateway
    own = stack.discord.seed_message(
        GENERAL, {"id": "700000000000000007", "username": "Luna", "bot": True}, "Luna here, kioku!"
    )
    own.update(webhook_id="700000000000000007", application_id=stack.application_id)
    # Then the relay answers 204: nobody's turn
    assert relay_post(stack, own, GUILD).status_code == 204
    assert stack.deliver_turns() == [] and llm.bodies == []


def test_without_manage_webhooks_the_bot_says_so_and_the_persona_is_silent(stack, llm):
    manage(stack, "add", {"name": "Luna", "prompt": "x"}, LUNA_ID)
    stack.discord.seed_channel(LOCKED, name="locked", guild_id=GUILD)
    stack.discord.forbid_webhooks(LOCKED)
    alice = stack.discord.seed_user("alice")
    stack.discord.seed_member(GUILD, alice)

    say(stack, alice, "Luna, are you there?", channel=LOCKED)
    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    # the bot itself answers, saying what is missing; the model was never asked; nothing captured
    (answer,) = [
        m for m in stack.discord.channel_messages(LOCKED) if m["author"]["id"] == stack.application_id
    ]
    assert "Manage Webhooks" in answer["content"] and "**Luna**" in answer["content"]
    assert llm.bodies == [] and persona_posts(stack, LOCKED) == []
    _, stm, _ = stores(stack)
    assert stm.get(StmAddress.of(GUILD, "", LOCKED, LUNA_ID)) is None
    # and /persona list tells a manager there
    listed = interact(
        stack,
        slash_command(stack.application_id, "persona", "list", guild_id=GUILD, channel_id=LOCKED)
        | {"app_permissions": str(1 << 11)},
    )
    assert "Manage Webhooks" in json.dumps(listed)
    checked_posts(stack.discord.requests)


def test_a_removed_persona_goes_with_its_confirmation_and_is_no_longer_called(stack, llm):
    configs, stm, _ = stores(stack)
    manage(stack, "add", {"name": "Luna", "prompt": "x"}, LUNA_ID)
    alice = stack.discord.seed_user("alice")
    stack.discord.seed_member(GUILD, alice)
    say(stack, alice, "Luna, hi")
    stack.deliver_turns()
    assert stm.get(StmAddress.of(GUILD, "", GENERAL, LUNA_ID)) is not None

    asked = manage(stack, "remove", {"persona": "Luna"})
    assert "Luna's 1 short-term memory row in this server goes with it" in json.dumps(asked)
    confirm = asked["data"]["components"][0]["components"][0]["custom_id"]
    command = slash_command(
        stack.application_id, "persona", "remove", guild_id=GUILD, permissions=MANAGE_GUILD
    )
    done = interact(stack, component_click(command, confirm))
    assert done["data"]["embeds"][0]["title"] == "Removed: Luna"
    assert configs.get_server_config(GUILD).persona_named("Luna") is None
    assert stm.get(StmAddress.of(GUILD, "", GENERAL, LUNA_ID)) is None

    # a message calling her now is nobody's turn
    message = stack.discord.seed_message(GENERAL, alice, "Luna, still there?")
    assert relay_post(stack, message, GUILD).status_code == 204
