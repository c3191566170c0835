"""Memories people write by hand, over the real path: ``/personal memories add``, ``/server memories
add`` and the ``Remember this`` message command, signed as Discord signs them, through the
interactions endpoint, the queue and the worker on moto, to the deferred answer with the memory's id;
then recalled (or not) by turns through the relay. Every refusal is an ephemeral answer and leaves
the table as it was."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Final

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import GLOBAL_LINEAGE, MemoryStatus, ScopeKind
from kioku.playground.events import message_command, slash_command
from kioku.playground.stack import LocalStack
from kioku.playground.standins import completion_body
from kioku.services.commands.memory_add import REMEMBER_THIS
from tests.e2e.conftest import GENERAL, GUILD, relay_post, running_stack, signed_post

pytestmark = pytest.mark.e2e

SECRET: Final = "300000000000000003"
VIEW_CHANNEL: Final = 1 << 10
MANAGER: Final = str((1 << 5) | VIEW_CHANNEL)
MEMBER: Final = str(VIEW_CHANNEL)
PRIVATE: Final = [{"id": GUILD, "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}]
LTM_HEADER: Final = "Long-term memories:"
LUNA_ID: Final = "600000000000000001"
DEFERRED: Final = {"type": 5, "data": {"flags": 64}}


@pytest.fixture
def stack(llm):
    """The local stack with #general (public) and #secret (hidden from @everyone); a personal book
    holds two memories, so a full one is quick to reach."""
    with running_stack(llm, MAX_PERSONAL_MEMORIES="2") as running:
        running.discord.seed_channel(GENERAL, name="general", guild_id=GUILD)
        running.discord.seed_channel(SECRET, name="secret", guild_id=GUILD, permission_overwrites=PRIVATE)
        yield running


def person(stack: LocalStack, name: str) -> dict[str, Any]:
    user = stack.discord.seed_user(name, global_name=name.title())
    stack.discord.seed_member(GUILD, user)
    return user


def post(stack: LocalStack, payload: dict[str, Any]) -> dict[str, Any]:
    response = signed_post(stack, "interactions", json.dumps(payload).encode(), stack.signing_key)
    assert response.status_code == 200, response.text
    return response.json()


def manage(
    stack: LocalStack, name: str, subcommand: str, options: dict[str, Any], interaction_id: str = ""
) -> None:
    """A manager's ``/<name> <subcommand>``, answered at once."""
    payload = slash_command(
        stack.application_id,
        name,
        subcommand,
        options,
        guild_id=GUILD,
        permissions=MANAGER,
        interaction_id=interaction_id or stack.discord.new_id(),
    )
    assert post(stack, payload)["type"] == 4


def run(stack: LocalStack, payload: dict[str, Any]) -> str:
    """Send the interaction, let the worker save, and read the answer it left, asserting the
    endpoint deferred it ephemerally."""
    assert post(stack, payload) == DEFERRED
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    answer = stack.discord.interaction_response(payload["token"])
    assert answer is not None
    return answer["content"]


def add(
    stack: LocalStack,
    who: dict[str, Any],
    kind: str,
    options: dict[str, Any],
    *,
    channel: str = GENERAL,
    guild: str | None = GUILD,
    permissions: str = MEMBER,
) -> dict[str, Any]:
    """``who``'s ``/<kind> memories add`` as Discord sends it."""
    interaction_id = stack.discord.new_id()
    return slash_command(
        stack.application_id,
        kind,
        "memories add",
        options,
        guild_id=guild,
        channel_id=channel,
        user_id=who["id"],
        username=who["username"],
        global_name=who.get("global_name"),
        permissions=permissions,
        interaction_id=interaction_id,
        token=f"token-{interaction_id}",
    )


def remember(
    stack: LocalStack,
    who: dict[str, Any],
    message: dict[str, Any],
    *,
    channel: str,
    permissions: str = MEMBER,
) -> dict[str, Any]:
    """``who`` picks "Remember this" from the Apps menu of ``message``."""
    interaction_id = stack.discord.new_id()
    return message_command(
        stack.application_id,
        REMEMBER_THIS,
        message["id"],
        target=message,
        guild_id=GUILD,
        channel_id=channel,
        user_id=who["id"],
        username=who["username"],
        permissions=permissions,
        interaction_id=interaction_id,
        token=f"token-{interaction_id}",
    )


def table_items(stack: LocalStack) -> list[dict[str, Any]]:
    client = KiokuTable(stack.resources.table_name).client
    items = client.scan(TableName=stack.resources.table_name)["Items"]
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=repr))  # vectors are bytes


def ltm(stack: LocalStack) -> DynamoMemoryStore:
    return DynamoMemoryStore(KiokuTable(stack.resources.table_name))


def recalled(body: dict[str, Any]) -> str:
    return "".join(str(m["content"]) for m in body["messages"] if str(m["content"]).startswith(LTM_HEADER))


def turn(stack: LocalStack, llm, author: dict[str, Any], text: str, channel: str = GENERAL) -> str:
    """``author`` talks to kioku in ``channel``: the long-term memories its model was shown."""
    message = stack.discord.seed_message(channel, author, f"<@{stack.application_id}> {text}")
    assert relay_post(stack, message, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    return recalled(llm.bodies[-1])


def memory_id(answer: str) -> str:
    return answer.split("**#")[1].split("**")[0]


# -- /personal memories add ---------------------------------------------------------------------------


def test_a_personal_memory_added_by_hand_is_recalled_for_its_author_with_its_id(stack, llm):
    alice = person(stack, "alice")
    answer = run(stack, add(stack, alice, "personal", {"content": "I am allergic to peanuts"}))
    assert answer.startswith("Saved as memory **#") and "Only you see this" in answer
    (memory,) = ltm(stack).memories_of(ScopeKind.PERSONAL, alice["id"])
    assert memory.memory_id == memory_id(answer)
    assert (memory.content, memory.author_id, memory.scope.lineage) == (
        "I am allergic to peanuts",
        alice["id"],
        1,
    )
    assert not memory.origin.private and memory.origin.channel_id == GENERAL
    assert memory.expires_at is None  # the draft's only: its storing is issue 39's expiry part
    # recalled in her next turn, in another channel too (what she says of herself in public follows her)
    assert "allergic to peanuts" in turn(stack, llm, alice, "what should I avoid?", channel=SECRET)


def test_a_personal_memory_can_be_added_in_a_dm(stack, llm):
    alice = person(stack, "alice")
    dm = "310000000000000009"
    stack.discord.seed_channel(dm)
    answer = run(stack, add(stack, alice, "personal", {"content": "I live in Lyon"}, channel=dm, guild=None))
    (memory,) = ltm(stack).memories_of(ScopeKind.PERSONAL, alice["id"])
    assert memory.memory_id == memory_id(answer) and memory.origin.guild_id is None


def test_an_all_personas_memory_is_lineage_0_recalled_by_an_alter_persona_and_counted_in_both_limits(
    stack, llm
):
    # Given Luna, an alter persona with her own lineage, answering to "moon"
    manage(stack, "persona", "add", {"name": "Luna", "prompt": "You are {bot}."}, LUNA_ID)
    manage(stack, "server", "addressing", {"persona": "Luna", "trigger_words": "moon"})
    alice = person(stack, "alice")
    # When Alice adds a memory for every persona, with an expiry
    options = {"content": "My cat is called Miso", "all_personas": True, "expires_in_days": 30}
    answer = run(stack, add(stack, alice, "personal", options))
    assert "every persona" in answer and "for 30 days" in answer
    (memory,) = ltm(stack).memories_of(ScopeKind.PERSONAL, alice["id"])
    assert memory.scope.lineage == GLOBAL_LINEAGE
    # Then Luna recalls it
    save = {"memory_content": "{user} plays the cello", "memory_scope": "target_user", "target_user": "Alice"}
    llm.enqueue(completion_body(tool_calls=[("create_long_term_memory", save)]), completion_body("Noted."))
    message = stack.discord.seed_message(GENERAL, alice, "moon, do you know my cat?")
    assert relay_post(stack, message, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    luna_request, luna_after_tool = llm.bodies[-2:]
    assert "Miso" in recalled(luna_request)
    # and it counts in Luna's limit (2): her own save fits beside it ...
    tool_answer = json.loads(luna_after_tool["messages"][-1]["content"])
    assert tool_answer["status"] == "memory_saved_successfully"
    # ... and in the main persona's: one by hand there fits, a third in either lineage does not
    run(stack, add(stack, alice, "personal", {"content": "I take the train to work"}))
    before = table_items(stack)
    answer = run(stack, add(stack, alice, "personal", {"content": "My favourite colour is green"}))
    assert answer.startswith("Nothing was saved: this memory book is full")
    answer = run(stack, add(stack, alice, "personal", {"content": "I was born in May", "all_personas": True}))
    assert answer.startswith("Nothing was saved: this memory book is full")
    assert table_items(stack) == before


# -- refusals -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"content": "   "}, "nothing to remember"),
        ({"content": "x" * 1001}, "at most 1000"),
        ({"content": "I like tea", "expires_in_days": 0}, "from 1 to 3650"),
        ({"content": "I like tea", "expires_in_days": 3651}, "from 1 to 3650"),
    ],
)
def test_a_bad_add_is_refused_at_once_and_changes_nothing(stack, llm, options, said):
    alice = person(stack, "alice")
    before = table_items(stack)
    answer = post(stack, add(stack, alice, "personal", options))
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    assert said in answer["data"]["embeds"][0]["description"]
    assert stack.deliver_turns() == []  # nothing queued
    assert table_items(stack) == before


def test_a_near_duplicate_is_answered_with_the_memory_it_repeats_and_saves_nothing(stack, llm):
    alice = person(stack, "alice")
    first = run(stack, add(stack, alice, "personal", {"content": "I love green tea in the morning"}))
    before = table_items(stack)
    again = run(stack, add(stack, alice, "personal", {"content": "I love green tea in the morning!!"}))
    reworded = run(stack, add(stack, alice, "personal", {"content": "in the morning I love green tea"}))
    for answer in (again, reworded):
        assert answer.startswith("Nothing") and f"**#{memory_id(first)}**" in answer
    assert table_items(stack) == before


def test_personal_memories_switched_off_refuse_an_add_and_change_nothing(stack, llm):
    alice = person(stack, "alice")
    config = ConfigStore(KiokuTable(stack.resources.table_name))
    current = config.get_server_config(GUILD)
    config.save_server_config(
        replace(current, capabilities=replace(current.capabilities, personal_memories_enabled=False))
    )
    before = table_items(stack)
    answer = post(stack, add(stack, alice, "personal", {"content": "I like tea"}))
    assert "turned off" in answer["data"]["embeds"][0]["description"]
    assert stack.deliver_turns() == []
    assert table_items(stack) == before


# -- /server memories add --------------------------------------------------------------------------------


def test_a_server_memory_added_in_a_private_channel_is_recalled_only_there(stack, llm):
    manager, bob = person(stack, "manager"), person(stack, "bob")
    answer = run(
        stack,
        add(
            stack,
            manager,
            "server",
            {"content": "The launch is on March 3"},
            channel=SECRET,
            permissions=MANAGER,
        ),
    )
    (memory,) = ltm(stack).memories_of(ScopeKind.SERVER, GUILD)
    assert memory.memory_id == memory_id(answer)
    assert (memory.author_id, memory.origin.channel_id, memory.origin.private) == (
        manager["id"],
        SECRET,
        True,
    )
    assert "launch is on March 3" in turn(stack, llm, bob, "when is the launch?", channel=SECRET)
    assert "launch is on March 3" not in turn(stack, llm, bob, "when is the launch?", channel=GENERAL)


def test_a_server_memory_goes_to_the_named_persona_s_lineage_and_needs_manage_server(stack, llm):
    manager, bob = person(stack, "manager"), person(stack, "bob")
    manage(stack, "persona", "add", {"name": "Luna", "prompt": "You are {bot}."}, LUNA_ID)
    run(
        stack,
        add(
            stack,
            manager,
            "server",
            {"content": "Moon nights are Tuesdays", "persona": "Luna"},
            permissions=MANAGER,
        ),
    )
    (memory,) = ltm(stack).memories_of(ScopeKind.SERVER, GUILD)
    assert memory.scope.lineage == int(LUNA_ID)
    before = table_items(stack)
    for payload in (
        add(stack, bob, "server", {"content": "Bob rules"}),  # no Manage Server
        add(stack, manager, "server", {"content": "Sun days", "persona": "Sol"}, permissions=MANAGER),
    ):
        answer = post(stack, payload)
        assert answer["type"] == 4 and answer["data"]["embeds"][0]["title"] in (
            "Not allowed",
            "Not understood",
        )
    assert stack.deliver_turns() == []
    assert table_items(stack) == before


# -- Remember this ---------------------------------------------------------------------------------------


def test_remember_this_on_one_s_own_message_is_a_personal_memory_about_oneself(stack, llm):
    alice = person(stack, "alice")
    said = stack.discord.seed_message(GENERAL, alice, "I run a marathon every spring")
    answer = run(stack, remember(stack, alice, said, channel=GENERAL))
    (memory,) = ltm(stack).memories_of(ScopeKind.PERSONAL, alice["id"])
    assert memory.memory_id == memory_id(answer)
    assert (memory.content, memory.author_id) == ("I run a marathon every spring", alice["id"])


def test_remember_this_on_someone_else_s_private_message_is_a_server_memory_recalled_only_there(stack, llm):
    alice, bob = person(stack, "alice"), person(stack, "bob")
    said = stack.discord.seed_message(SECRET, alice, "The wifi password changes on Mondays")
    answer = run(stack, remember(stack, bob, said, channel=SECRET))
    # never a personal memory about Alice: a server memory, by Bob, said in #secret
    assert ltm(stack).memories_of(ScopeKind.PERSONAL, alice["id"]) == []
    (memory,) = ltm(stack).memories_of(ScopeKind.SERVER, GUILD)
    assert memory.memory_id == memory_id(answer)
    assert (memory.author_id, memory.origin.channel_id, memory.origin.private) == (bob["id"], SECRET, True)
    assert "wifi password" in turn(stack, llm, bob, "when does the wifi change?", channel=SECRET)
    assert "wifi password" not in turn(stack, llm, bob, "when does the wifi change?", channel=GENERAL)


def test_remember_this_by_a_member_waits_for_review_where_the_server_reviews(stack, llm):
    alice, bob = person(stack, "alice"), person(stack, "bob")
    manage(stack, "server", "memories moderation", {"mode": "approval"})
    said = stack.discord.seed_message(GENERAL, alice, "Board games every Thursday")
    answer = run(stack, remember(stack, bob, said, channel=GENERAL))
    assert "review" in answer
    (memory,) = ltm(stack).memories_of(ScopeKind.SERVER, GUILD)
    assert memory.status is MemoryStatus.PENDING and memory.memory_id == memory_id(answer)


@pytest.mark.parametrize("case", ["attachment-only", "empty", "too long", "another channel", "unseen"])
def test_remember_this_refusals_change_nothing(stack, llm, case):
    alice, bob = person(stack, "alice"), person(stack, "bob")
    picture = [{"id": "1", "filename": "cat.png", "url": "https://cdn.example/cat.png", "size": 3}]
    said = {
        "attachment-only": lambda: stack.discord.seed_message(GENERAL, alice, "", attachments=picture),
        "empty": lambda: stack.discord.seed_message(GENERAL, alice, "   "),
        "too long": lambda: stack.discord.seed_message(GENERAL, alice, "y" * 1001),
        "another channel": lambda: stack.discord.seed_message(SECRET, alice, "Secret plans"),
        "unseen": lambda: stack.discord.seed_message(GENERAL, alice, "Plans"),
    }[case]()
    permissions = "0" if case == "unseen" else MEMBER
    before = table_items(stack)
    answer = post(stack, remember(stack, bob, said, channel=GENERAL, permissions=permissions))
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    assert answer["data"]["embeds"][0]["title"] in ("Nothing was saved", "Not allowed")
    assert stack.deliver_turns() == []
    assert table_items(stack) == before


def test_an_add_delivered_twice_saves_once_and_answers_with_the_same_id(stack, llm):
    alice = person(stack, "alice")
    payload = add(stack, alice, "personal", {"content": "I sing in a choir"})
    assert post(stack, payload) == DEFERRED
    queue = stack.resources.turn_queue_url
    (queued,) = stack.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    stack.sqs.delete_message(QueueUrl=queue, ReceiptHandle=queued["ReceiptHandle"])
    answers = []
    for copy in ("first", "again"):  # as SQS may hand a message out twice
        stack.sqs.send_message(
            QueueUrl=queue, MessageBody=queued["Body"], MessageGroupId=GENERAL, MessageDeduplicationId=copy
        )
        assert stack.deliver_turns() == [{"batchItemFailures": []}]
        answers.append(stack.discord.interaction_response(payload["token"])["content"])
    (memory,) = ltm(stack).memories_of(ScopeKind.PERSONAL, alice["id"])
    assert [memory_id(answer) for answer in answers] == [memory.memory_id] * 2
    assert all(answer.startswith("Saved as memory") for answer in answers)
