"""A turn survives its container being killed between any two of its effects.

The turn: the model saves a long-term memory (a tool call; with ``EMBEDDINGS_MODEL`` set, its
content embedded first), then answers in three chunks; the worker keeps its outbox, posts the
chunks, then the "Memory saved" notice, then commits. TurnFunction runs in a child process
(``crash_harness``); at each point the stand-ins SIGKILL it, or let the request apply and lose its
response, and a fresh child takes the redelivery. Whatever the point, afterwards: every chunk is
posted once and in order, the notice once, the turn captured once (its lines once, the cadence
counter at one), the memory saved once, no outbox left, and the model not asked again once an
answer was recorded. A turn Discord refuses for good is dead-lettered once, even when the worker
dies between sending it to the dead-letter queue and the end of its invocation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kioku.adapters.dynamodb.keys import turn_record_key
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.turn_queue import REASON_ATTRIBUTE
from kioku.domain.ltm.memory import ScopeKind
from kioku.domain.models import Persona
from kioku.domain.stm.entries import StmAddress
from kioku.domain.turn_jobs import TurnJob, record_id_of
from kioku.playground.events import slash_command
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.playground.standins import EmbeddingsStandIn, OpenAIStandIn, RecordedRequest, completion_body
from kioku.signatures import sign_request
from tests.e2e.conftest import forget_all_as, interact
from tests.e2e.crash_harness import CrashHarness, Fault, add_luna, crash_world

pytestmark = pytest.mark.e2e

GUILD = "200000000000000001"
PARAGRAPHS = [f"Part {n}: " + " ".join(["lorem"] * 250) for n in (1, 2, 3)]
ANSWER = "\n\n".join(PARAGRAPHS)
SAVE = (
    "create_long_term_memory",
    {"memory_content": "{user} loves green tea", "memory_scope": "target_user", "target_user": "Alice"},
)


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The first round saves a memory; once the tool has answered, the model replies."""
    if body["messages"][-1]["role"] == "tool":
        return completion_body(ANSWER)
    return completion_body(tool_calls=[SAVE])


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[LocalStack, OpenAIStandIn, CrashHarness, dict[str, str], EmbeddingsStandIn]]:
    """One stack for the module (each test takes a channel and a person of its own)."""
    with crash_world(answer) as world:
        yield world.stack, world.llm, world.harness, world.env, world.embeddings


@pytest.fixture
def world(running, monkeypatch) -> tuple[LocalStack, OpenAIStandIn, CrashHarness]:
    """The module's stack, its environment set again (every test starts from a bare one)."""
    stack, llm, harness, env, _ = running
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return stack, llm, harness


@pytest.fixture
def embeddings(running) -> EmbeddingsStandIn:
    return running[4]


# -- where the worker dies -------------------------------------------------------------------------


def model_call(nth: int) -> Fault:
    return Fault(
        f"during model call {nth}", "llm", lambda r: r.path == "/v1/chat/completions", "kill", "before", nth
    )


def chunk_post(n: int, action: str = "kill", when: str = "after") -> Fault:
    def matches(request: RecordedRequest) -> bool:
        return request.method == "POST" and str((request.body or {}).get("content", "")).startswith(
            f"Part {n}:"
        )

    return Fault(
        f"chunk {n} {'posted' if when == 'after' else 'about to be posted'}", "discord", matches, action, when
    )


def outbox_keep(when: str) -> Fault:
    """The transaction that keeps the turn's answer in its outbox, before the first post."""

    def matches(request: RecordedRequest) -> bool:
        return (
            request.path == "TransactWriteItems"
            and b"OUTBOX#" in request.raw_body
            and b"Part 1:" in request.raw_body
        )

    return Fault(f"outbox keep ({when})", "dynamodb", matches, "kill", when)


def embeddings_request(when: str) -> Fault:
    return Fault(
        f"embeddings request ({when})", "embeddings", lambda r: r.path == "/v1/embeddings", "kill", when
    )


def save_transaction(when: str) -> Fault:
    """The save tool's transaction (the memory, its book entry, its duplicate guard)."""
    return Fault(
        f"save transaction ({when})",
        "dynamodb",
        lambda r: r.path == "TransactWriteItems" and b"LTM#" in r.raw_body and not _is_commit(r),
        "kill",
        when,
    )


def dead_letter_send(when: str = "after") -> Fault:
    return Fault("dead-letter SendMessage", "sqs", lambda r: r.path == "SendMessage", "kill", when)


def notice_post(action: str = "kill") -> Fault:
    def matches(request: RecordedRequest) -> bool:
        return request.method == "POST" and bool((request.body or {}).get("embeds"))

    return Fault("notice posted", "discord", matches, action)


def commit(when: str, action: str = "kill") -> Fault:
    return Fault(f"commit ({when})", "dynamodb", _is_commit, action, when)


def _is_commit(request: RecordedRequest) -> bool:
    """The turn's commit: the one transaction that puts its record (a keep only checks the record is
    not there, and marks the messages a burst's answer covers, and a memory's change kept with its
    notice deletes the memory)."""
    if request.path != "TransactWriteItems":
        return False
    puts = [part["Put"]["Item"] for part in (request.body or {}).get("TransactItems", []) if "Put" in part]
    return any(
        item["sk"].get("S") == "DONE"
        and item["pk"].get("S", "").startswith("TURN#")
        and "covered_by" not in item
        for item in puts
    )


def dynamodb_write(operation: str, nth: int = 1, *, having: bytes = b"") -> Fault:
    return Fault(
        f"{operation} {nth}{' of ' + having.decode() if having else ''}",
        "dynamodb",
        lambda r: r.path == operation and having in r.raw_body and not _is_commit(r),
        "lose",
        "after",
        nth,
    )


# Each point, and how many model calls the whole turn makes when the worker dies there: two for
# the first attempt, two more only if it died before its answer was recorded.
KILL_POINTS = [
    (model_call(1), 1 + 2),
    (model_call(2), 2 + 2),
    (outbox_keep("after"), 2),
    (chunk_post(1, when="before"), 2),
    (chunk_post(1), 2),
    (chunk_post(2), 2),
    (chunk_post(3), 2),
    (notice_post(), 2),
    (commit("before"), 2),
    (commit("after"), 2),
]
LOST_RESPONSES = [
    (dynamodb_write("UpdateItem", having=b"RATE#"), 2),
    (dynamodb_write("TransactWriteItems", having=b"LTM#"), 2),
    (dynamodb_write("TransactWriteItems", 1, having=b"OUTBOX#"), 2),
    (dynamodb_write("TransactWriteItems", 2, having=b"OUTBOX#"), 2),
    (commit("after", "lose"), 2),
    (chunk_post(1, "lose"), 2),
    (chunk_post(2, "lose"), 2),
    (chunk_post(3, "lose"), 2),
    (notice_post("lose"), 2),
]


@pytest.mark.parametrize(
    ("fault", "model_calls"),
    [
        pytest.param(fault, calls, id=f"{fault.action} at {fault.name}")
        for fault, calls in KILL_POINTS + LOST_RESPONSES
    ],
)
def test_a_turn_interrupted_at_any_point_is_delivered_and_captured_exactly_once(world, fault, model_calls):
    stack, llm, harness = world
    channel, alice = new_channel_and_person(stack)
    asked_before = len(llm.bodies)

    # Given Alice's message queued for the worker
    trigger = queue_message(stack, channel, alice)

    # When the worker is interrupted at the point, and the redelivery goes to a fresh worker
    outcomes = harness.deliver(fault)

    # Then the point was reached, and the turn ended done
    assert harness.chaos.fired, f"the fault {fault.name!r} never fired"
    assert outcomes[-1] == "done" and len(outcomes) >= (2 if fault.action == "kill" else 1), outcomes
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    # and the model asked again only when no answer had been recorded
    assert len(llm.bodies) - asked_before == model_calls
    assert all(json.dumps(b).count(trigger["id"]) for b in llm.bodies[asked_before:])


EMBEDDING_POINTS = [
    (embeddings_request("before"), 1 + 2),
    (embeddings_request("after"), 1 + 2),
    (save_transaction("before"), 1 + 2),
]


@pytest.mark.parametrize(
    ("fault", "model_calls"),
    [pytest.param(fault, calls, id=f"{fault.action} at {fault.name}") for fault, calls in EMBEDDING_POINTS],
)
def test_a_save_interrupted_around_its_embedding_saves_the_memory_once(world, embeddings, fault, model_calls):
    stack, llm, harness = world
    channel, alice = new_channel_and_person(stack)
    asked_before, embedded_before = len(llm.bodies), len(embeddings.bodies)

    # Given Alice's message queued for a worker that embeds what it saves
    trigger = queue_message(stack, channel, alice)
    env = {"EMBEDDINGS_MODEL": "stand-in", "EMBEDDINGS_BASE_URL": embeddings.base_url}

    # When the worker dies asking for the memory's embedding, once it is answered, or just before
    # the save's transaction, and the redelivery goes to a fresh worker
    outcomes = harness.deliver(fault, env=env)

    # Then the turn ended done, the memory saved once, with its embedding, asked for by each attempt
    assert harness.chaos.fired, f"the fault {fault.name!r} never fired"
    assert outcomes == ["killed", "done"], outcomes
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    (memory,) = DynamoMemoryStore(KiokuTable(stack.resources.table_name)).memories_of(
        ScopeKind.PERSONAL, alice["id"]
    )
    assert memory.content == "{user} loves green tea" and memory.embedding
    assert len(embeddings.bodies) - embedded_before == 2
    assert len(llm.bodies) - asked_before == model_calls


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_worker_killed_once_it_dead_lettered_a_turn_leaves_the_turn_dead_lettered_once(world, when):
    stack, llm, harness = world
    channel, alice = new_channel_and_person(stack)
    asked_before = len(llm.bodies)

    # Given Alice's message, whose reply Discord refuses as such (the bot may not post there)
    refusal = {"message": "Missing Permissions", "code": 50013}
    stack.discord.fail_post(1, 403, refusal)
    stack.discord.fail_post(2, 403, refusal)
    trigger = queue_message(stack, channel, alice)

    # When the worker dies just before or right after sending the turn to the dead-letter queue (it
    # has hidden the message already; Lambda would delete it at the invocation's end), and a fresh
    # worker takes it again
    outcomes = harness.deliver(dead_letter_send(when))

    # Then the retry dead-lettered it too, and the dead-letter queue holds it once: the turn's own
    # message, in its channel's group, under the id SQS first gave it
    assert harness.chaos.fired and outcomes == ["killed", "done"], outcomes
    (dead,) = dead_letters(stack)
    assert TurnJob.from_json(dead["Body"]).turn_id == trigger["id"]
    assert dead["Attributes"]["MessageGroupId"] == channel
    assert dead["Attributes"]["MessageDeduplicationId"] == harness.message_ids[-1]
    reason = dead["MessageAttributes"][REASON_ATTRIBUTE]["StringValue"]
    assert reason.startswith("cannot succeed: DiscordError") and "403" in reason
    # nothing posted, the memory saved once, the model asked by the first attempt only
    assert [
        m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id
    ] == []
    assert len(memory_guards(stack, alice)) == 1
    assert len(llm.bodies) - asked_before == 2

    # And redriven once Discord lets the bot post, the turn is delivered and captured once
    redrive(stack, dead)
    assert harness.deliver() == ["done"]
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert len(llm.bodies) - asked_before == 2


def edit_original(action: str = "kill") -> Fault:
    def matches(request: RecordedRequest) -> bool:
        return request.method == "PATCH" and "/webhooks/" in request.path

    return Fault("the deferred response edited", "discord", matches, action)


CHAT_POINTS = [
    (model_call(2), 2 + 2),
    (edit_original(), 2),
    (chunk_post(2), 2),
    (notice_post(), 2),
    (commit("before"), 2),
    (edit_original("lose"), 2),
    (chunk_post(3, "lose"), 2),
]


@pytest.mark.parametrize(
    ("fault", "model_calls"),
    [pytest.param(fault, calls, id=f"{fault.action} at {fault.name}") for fault, calls in CHAT_POINTS],
)
def test_a_chat_command_interrupted_at_any_point_is_answered_and_captured_exactly_once(
    world, fault, model_calls
):
    stack, llm, harness = world
    channel = stack.discord.new_id()
    stack.discord.seed_channel(channel, name="general", guild_id=GUILD)
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    asked_before = len(llm.bodies)
    token = f"tok-{channel}"

    # Given Alice's /chat, deferred ("thinking…") and queued for the worker
    payload = slash_command(
        stack.application_id,
        "chat",
        options={"message": "remember I love green tea"},
        guild_id=GUILD,
        channel_id=channel,
        user_id=alice["id"],
        username="alice",
        global_name="Alice",
        interaction_id=stack.discord.new_id(),
        token=token,
    )
    body = json.dumps(payload).encode()
    headers = {"content-type": "application/json", **sign_request(stack.signing_key, body)}
    assert httpx.post(stack.urls["interactions"], content=body, headers=headers, timeout=10).json() == {
        "type": 5
    }

    # When the worker is interrupted at the point, and the redelivery goes to a fresh worker
    outcomes = harness.deliver(fault)

    # Then the first chunk is the interaction's answer, the others and the notice follow once each
    assert harness.chaos.fired, f"the fault {fault.name!r} never fired"
    assert outcomes[-1] == "done", outcomes
    original = stack.discord.interaction_response(token)
    assert original is not None and original["content"] == PARAGRAPHS[0]
    posted = [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]
    assert [m["content"] for m in posted] == [*PARAGRAPHS[1:], ""]
    assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory saved"]
    row = StmStore(KiokuTable(stack.resources.table_name)).get(
        StmAddress.of(GUILD, "", channel, Persona().persona_id)
    )
    assert row is not None and row.turns_since_refresh == 1
    said, answered = row.crude
    assert said.text == "remember I love green tea" and ANSWER.startswith(answered.text.rstrip("…"))
    items = _table_items(stack)
    assert [i for i in items if i["sk"]["S"].startswith("OUTBOX#")] == []
    assert len(memory_guards(stack, alice)) == 1
    assert len(llm.bodies) - asked_before == model_calls


# -- the turn and what it left -----------------------------------------------------------------


def new_channel_and_person(stack: LocalStack) -> tuple[str, dict[str, Any]]:
    channel = stack.discord.new_id()
    stack.discord.seed_channel(channel, name="general", guild_id=GUILD)
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    return channel, alice


def queue_message(stack: LocalStack, channel: str, alice: dict[str, Any]) -> dict[str, Any]:
    """Alice's message, relayed and queued for the worker."""
    trigger = stack.discord.seed_message(
        channel, alice, f"<@{stack.application_id}> remember I love green tea"
    )
    body = gateway_dispatch(trigger, GUILD, {"nick": None, "roles": []})
    headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
    assert httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10).status_code == 202
    return trigger


def dead_letters(stack: LocalStack) -> list[dict[str, Any]]:
    received = stack.sqs.receive_message(
        QueueUrl=stack.resources.dead_letter_queue_url,
        MaxNumberOfMessages=10,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    return received.get("Messages", [])


def redrive(stack: LocalStack, dead: dict[str, Any]) -> None:
    """What SQS's redrive does with a dead letter: back to the turn queue, in its group."""
    stack.sqs.send_message(
        QueueUrl=stack.resources.turn_queue_url,
        MessageBody=dead["Body"],
        MessageGroupId=dead["Attributes"]["MessageGroupId"],
        MessageDeduplicationId=f"redrive-{dead['MessageId']}",
    )
    stack.sqs.delete_message(
        QueueUrl=stack.resources.dead_letter_queue_url, ReceiptHandle=dead["ReceiptHandle"]
    )


def memory_guards(stack: LocalStack, alice: dict[str, Any]) -> list[dict[str, Any]]:
    """The duplicate guards of Alice's memories: one a memory saved."""
    return [
        i for i in _table_items(stack) if i["pk"]["S"].endswith(alice["id"]) and i["sk"]["S"].startswith("H#")
    ]


def assert_delivered_and_captured_once(
    stack: LocalStack, channel: str, alice: dict[str, Any], trigger: dict[str, Any]
) -> None:
    posted = [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]
    # every chunk exactly once and in order, the first replying to Alice, then the notice once
    assert [m["content"] for m in posted] == [*PARAGRAPHS, ""]
    assert (posted[0].get("message_reference") or {}).get("message_id") == trigger["id"]
    assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory saved"]
    # the turn captured exactly once
    row = StmStore(KiokuTable(stack.resources.table_name)).get(
        StmAddress.of(GUILD, "", channel, Persona().persona_id)
    )
    assert row is not None
    said, answered = row.crude  # the answer's line is kept cut to what a line may hold
    assert said.text == "@Kioku remember I love green tea"
    assert ANSWER.startswith(answered.text.rstrip("…")) and len(answered.text) > 100
    assert answered.message_id == posted[0]["id"]
    assert row.turns_since_refresh == 1
    items = _table_items(stack)
    # nothing of Alice's turn left in her outbox (the stack is the module's: another test's dead
    # letter may keep its own)
    assert [
        i for i in items if i["sk"]["S"].startswith("OUTBOX#") and i["pk"]["S"] == f"USER#{alice['id']}"
    ] == []
    assert [i["pk"]["S"] for i in items if i["sk"]["S"] == "DONE" and trigger["id"] in i["pk"]["S"]]
    # the memory saved once
    assert len(memory_guards(stack, alice)) == 1


def _table_items(stack: LocalStack) -> list[dict[str, Any]]:
    client = KiokuTable(stack.resources.table_name).client
    items, start = [], None
    while True:
        page = client.scan(
            TableName=stack.resources.table_name, **({"ExclusiveStartKey": start} if start else {})
        )
        items += page["Items"]
        start = page.get("LastEvaluatedKey")
        if not start:
            return items


# -- an alter persona: its webhook made, then its posts through it --------------------------------

LUNA_ID = "200000000000000777"


@pytest.fixture(scope="module")
def luna(running) -> str:
    """Luna, an alter persona of the module's server, added once through /persona add."""
    return add_luna(running[0], GUILD, LUNA_ID)


def webhook_creation(action: str = "kill", when: str = "after") -> Fault:
    def matches(request: RecordedRequest) -> bool:
        return (
            request.method == "POST" and request.path.endswith("/webhooks") and "/channels/" in request.path
        )

    return Fault(f"channel webhook created ({when})", "discord", matches, action, when)


PERSONA_POINTS = [
    webhook_creation(when="before"),
    webhook_creation(),
    webhook_creation("lose"),
    chunk_post(1, when="before"),
    chunk_post(2),
    chunk_post(3, "lose"),
    notice_post(),
    commit("before"),
]


@pytest.mark.parametrize("fault", [pytest.param(f, id=f"{f.action} at {f.name}") for f in PERSONA_POINTS])
def test_an_alter_persona_s_turn_interrupted_at_any_point_posts_through_one_webhook_exactly_once(
    world, luna, fault
):
    stack, llm, harness = world
    channel, alice = new_channel_and_person(stack)
    asked_before = len(llm.bodies)

    # Given Alice calling Luna by name in a channel where kioku has no webhook yet
    trigger = stack.discord.seed_message(channel, alice, "Luna, remember I love green tea")
    body = gateway_dispatch(trigger, GUILD, {"nick": None, "roles": []})
    headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
    assert httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10).status_code == 202

    # When the worker is interrupted at the point, and the redelivery goes to a fresh worker
    outcomes = harness.deliver(fault)

    # Then every chunk and the notice went once, in order, through the one webhook kioku keeps
    assert harness.chaos.fired, f"the fault {fault.name!r} never fired"
    assert outcomes[-1] == "done", outcomes
    messages = stack.discord.channel_messages(channel)
    assert [m for m in messages if m["author"]["id"] == stack.application_id] == []
    posted = [m for m in messages if m.get("webhook_id")]
    assert [m["content"] for m in posted] == [*PARAGRAPHS, ""]
    assert {m["author"]["username"] for m in posted} == {"Luna"}
    assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory saved"]
    hooks = {hook["id"] for hook in stack.discord.webhooks_of(channel)}
    assert len({m["webhook_id"] for m in posted}) == 1 and posted[0]["webhook_id"] in hooks
    # one webhook made, or two when a worker died after Discord made it and before keeping it (that
    # one stays unused in the channel)
    made_then_lost = fault.name.startswith("channel webhook") and fault.when == "after"
    assert len(hooks) == (2 if made_then_lost else 1)
    # Luna's own row captured once, nothing left in the outbox, the memory saved once, and the
    # model asked by one attempt only (the webhook is made before the model is asked)
    row = StmStore(KiokuTable(stack.resources.table_name)).get(StmAddress.of(GUILD, "", channel, luna))
    assert row is not None and row.turns_since_refresh == 1
    assert row.crude[0].text == "Luna, remember I love green tea"
    items = _table_items(stack)
    assert [
        i for i in items if i["sk"]["S"].startswith("OUTBOX#") and i["pk"]["S"] == f"USER#{alice['id']}"
    ] == []
    assert len(memory_guards(stack, alice)) == 1
    assert len(llm.bodies) - asked_before == 2


# -- a burst: one turn taking several messages of an always channel ---------------------------------

BURST = ("hey", "quick thing", "remember I love green tea")
BURST_POINTS = [
    (model_call(1), 1 + 2),
    (outbox_keep("after"), 2),
    (chunk_post(1, when="before"), 2),
    (chunk_post(2), 2),
    (notice_post(), 2),
    (commit("before"), 2),
    (commit("after", "lose"), 2),
]


@pytest.mark.parametrize(
    ("fault", "model_calls"),
    [pytest.param(fault, calls, id=f"{fault.action} at {fault.name}") for fault, calls in BURST_POINTS],
)
def test_a_turn_taking_several_messages_interrupted_answers_each_once(world, fault, model_calls):
    stack, llm, harness = world
    channel, alice = new_channel_and_person(stack)
    make_always(stack, channel)
    asked_before = len(llm.bodies)

    # Given three messages of Alice's in an always channel, queued together
    burst = [relay_message(stack, channel, alice, text) for text in BURST]

    # When the worker taking the first (and the two after it) is interrupted between reading them
    # and committing, and the redelivery goes to a fresh worker
    outcomes = harness.deliver(fault)

    # Then one reply answered all three, posted once, to the newest; its notice once
    assert harness.chaos.fired, f"the fault {fault.name!r} never fired"
    assert outcomes[-1] == "done", outcomes
    posted = [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]
    assert [m["content"] for m in posted] == [*PARAGRAPHS, ""]
    assert (posted[0].get("message_reference") or {}).get("message_id") == burst[-1]["id"]
    assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory saved"]
    # each message recorded answered (none skipped), the three captured once with the answer, as one turn
    items = _table_items(stack)
    done = {i["pk"]["S"] for i in items if i["sk"]["S"] == "DONE"}
    assert all(any(m["id"] in pk for pk in done) for m in burst)
    row = StmStore(KiokuTable(stack.resources.table_name)).get(
        StmAddress.of(GUILD, "", channel, Persona().persona_id)
    )
    assert row is not None and row.turns_since_refresh == 1
    assert [line.text for line in row.crude][:3] == list(BURST) and len(row.crude) == 4
    assert [
        i for i in items if i["sk"]["S"].startswith("OUTBOX#") and i["pk"]["S"] == f"USER#{alice['id']}"
    ] == []
    assert len(memory_guards(stack, alice)) == 1
    # the model asked by one turn only, again only when no answer had been recorded
    assert len(llm.bodies) - asked_before == model_calls


def make_always(stack: LocalStack, channel: str) -> None:
    """``channel`` made an always channel through /server addressing, as a manager would."""
    set_channel_mode(stack, channel, "always")


def set_channel_mode(stack: LocalStack, channel: str, mode: str) -> None:
    """``channel`` set to ``mode`` ("always" or "addressed") through /server addressing, as a
    manager would."""
    payload = slash_command(
        stack.application_id,
        "server",
        "addressing",
        {"channel": channel, "mode": mode},
        guild_id=GUILD,
        permissions=str(1 << 5),
        interaction_id=stack.discord.new_id(),
    )
    interact(stack, payload)


def relay_message(stack: LocalStack, channel: str, author: dict[str, Any], text: str) -> dict[str, Any]:
    message = stack.discord.seed_message(channel, author, text)
    body = gateway_dispatch(message, GUILD, {"nick": None, "roles": []})
    headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
    assert httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10).status_code == 202
    return message


# -- a burst's covering turn dead-lettered: its covered messages' own jobs come first ---------------

DEAD_LETTERED_POINTS = [
    # the messages the replies answer (the newest each covers), in the order they were posted
    (model_call(1), (2, 0)),  # nothing kept yet: the second message's job answers the last two
    (outbox_keep("after"), (2,)),
    (chunk_post(2), (2,)),
    (notice_post(), (2,)),
    (commit("after"), (2,)),
]


@pytest.mark.parametrize(
    ("fault", "answered"),
    [
        pytest.param(fault, answered, id=f"{fault.action} at {fault.name}")
        for fault, answered in DEAD_LETTERED_POINTS
    ],
)
def test_a_covering_turn_dead_lettered_midway_leaves_each_message_answered_once(
    world, fault, answered, monkeypatch
):
    stack, llm, harness = world
    channel, alice = new_channel_and_person(stack)
    make_always(stack, channel)
    # each answer its own words, so that a second answer is never taken for a redelivery's own posts
    monkeypatch.setattr(llm, "_responder", _numbered(llm))
    burst = [relay_message(stack, channel, alice, text) for text in BURST]

    # Given the worker taking the first message (and the two after it) dies at that point, and SQS
    # moves the message to the dead-letter queue (its receives spent) instead of handing it again
    assert harness.deliver(fault, max_deliveries=1) == ["killed"]
    assert harness.chaos.fired, f"the fault {fault.name!r} never fired"
    dead = _dead_letter_the_head(stack, burst[0])

    # When the messages it covers go to their own jobs first, then an operator redrives it
    harness.deliver()
    redrive(stack, dead)
    harness.deliver()

    # Then each message was answered by one reply, each reply posted once: the covering turn's
    # (once it kept its answer, its covered messages' jobs ended as done), or, when it died before
    # keeping anything, the second message's (covering the third) and the redriven first's alone
    posted = [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]
    firsts = [m for m in posted if m["content"].startswith("Part 1:")]
    assert [(m.get("message_reference") or {}).get("message_id") for m in firsts] == [
        burst[n]["id"] for n in answered
    ]
    for n in (1, 2, 3):
        assert len([m for m in posted if m["content"].startswith(f"Part {n}:")]) == len(answered)
    items = _table_items(stack)
    done = {i["pk"]["S"] for i in items if i["sk"]["S"] == "DONE"}
    assert all(any(m["id"] in pk for pk in done) for m in burst)
    assert [
        i for i in items if i["sk"]["S"].startswith("OUTBOX#") and i["pk"]["S"] == f"USER#{alice['id']}"
    ] == []


def test_a_covering_turn_dead_lettered_after_posting_is_not_answered_again_by_its_covered_jobs(world):
    stack, llm, harness = world
    channel, alice = new_channel_and_person(stack)
    make_always(stack, channel)
    asked_before = len(llm.bodies)
    burst = [relay_message(stack, channel, alice, text) for text in BURST]

    # Given Discord refuses the answer's second chunk as such: the turn covering all three is
    # dead-lettered with its first chunk posted
    stack.discord.fail_post(2, 403, {"message": "Missing Permissions", "code": 50013})
    harness.deliver()
    (dead,) = dead_letters(stack)
    assert TurnJob.from_json(dead["Body"]).turn_id == burst[0]["id"]

    # Then the two messages it covers, whose jobs came next, were not answered again: their jobs
    # found them marked covered when the answer was kept, before its first post
    posted = [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]
    assert [m["content"] for m in posted] == [PARAGRAPHS[0]]
    assert len(llm.bodies) - asked_before == 2

    # And redriven, the covering turn posts the rest of its answer once and records all three
    redrive(stack, dead)
    assert harness.deliver() == ["done"]
    posted = [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]
    assert [m["content"] for m in posted] == [*PARAGRAPHS, ""]
    assert (posted[0].get("message_reference") or {}).get("message_id") == burst[-1]["id"]
    records = {i["pk"]["S"]: i for i in _table_items(stack) if i["sk"]["S"] == "DONE"}
    for message in burst[1:]:
        (record,) = [r for pk, r in records.items() if pk.endswith(message["id"])]
        assert [v["S"] for v in record["reply_ids"]["L"]] == [m["id"] for m in posted[:3]]
    assert len(llm.bodies) - asked_before == 2


# -- a burst's covering turn retried after forget-all dropped its kept answer ------------------------


@pytest.mark.parametrize(
    "fault",
    [outbox_keep("after"), chunk_post(1)],
    ids=["killed after the keep", "killed after chunk 1"],
)
def test_a_covering_turn_retried_covering_fewer_leaves_none_of_its_messages_unanswered(
    world, monkeypatch, fault
):
    stack, llm, harness = world
    channel, alice, bob, burst = _a_burst_remembering_bob(stack, llm, monkeypatch)

    # Given the worker taking Alice's first message (and the two after it) killed once it kept its
    # answer, whose "Memory saved" notice quotes Bob, before its first post or right after it (not
    # noted: its posts noted, forget-all records the answer done, the next test's case): the two
    # later messages are marked covered by it, and Bob's partition points at Alice's outbox
    assert harness.deliver(fault, max_deliveries=1) == ["killed"]
    assert harness.chaos.fired, f"the fault {fault.name!r} never fired"
    marks = _records_of(stack, burst[1:])
    assert list(marks) == [m["id"] for m in burst[1:]]
    assert {m["covered_by"]["S"] for m in marks.values()} == {burst[0]["id"]}
    assert [_reply_ids(m) for m in marks.values()] == [[], []]
    assert [i["answers"]["S"] for i in _outboxes_of(stack, bob)] == [alice["id"]]

    # When Bob forgets everything (which drops Alice's kept answer: it quotes him), the channel goes
    # back to answering only when called (a fresh burst would cover none of the others), and the
    # three jobs are delivered again
    forget_all_as(stack, bob, channel)
    assert _outboxes_of(stack, alice) == [] and _outboxes_of(stack, bob) == []
    set_channel_mode(stack, channel, "addressed")
    assert harness.deliver()[-1] == "done"

    # Then each of Alice's messages is recorded answered by a whole reply that was posted
    posted = {
        m["id"]: m
        for m in stack.discord.channel_messages(channel)
        if m["author"]["id"] == stack.application_id
    }
    records = _records_of(stack, burst)
    answers = {m["id"]: _reply_ids(records.get(m["id"])) for m in burst}
    unanswered = {
        m["content"]: answers[m["id"]]
        for m in burst
        if not answers[m["id"]] or not posted.keys() >= set(answers[m["id"]])
    }
    assert unanswered == {}, "messages recorded done, or not at all, with no reply posted"
    for reply_ids in answers.values():
        assert [posted[r]["content"].split(":")[0] for r in reply_ids] == ["Part 1", "Part 2", "Part 3"]
    # and no message got two answers: one reply, to a message that records it as its answer (the
    # earlier attempt's posts found again by their nonces), and every chunk posted is one of it
    firsts = [m for m in posted.values() if m["content"].startswith("Part 1:")]
    assert len(firsts) == 1, f"{len(firsts)} answers to one burst"
    first = firsts[0]
    replied = (first.get("message_reference") or {}).get("message_id")
    assert replied in answers and answers[replied][0] == first["id"]
    chunks = [m["id"] for m in posted.values() if m["content"].startswith("Part ")]
    assert sorted(chunks) == sorted({r for reply_ids in answers.values() for r in reply_ids})
    # nothing quoting Bob posted after his forget-all, nothing of Alice's left waiting
    assert [embed["title"] for m in posted.values() for embed in m["embeds"]] == []
    assert _outboxes_of(stack, alice) == []


@pytest.mark.parametrize("persona", ["main", "luna"], ids=["as the bot, past the nonce window", "as Luna"])
def test_an_answer_withdrawn_after_its_first_posts_is_never_posted_again_by_its_retry(
    world, luna, monkeypatch, persona
):
    stack, llm, harness = world
    called = "Luna, " if persona == "luna" else ""
    channel, alice, bob, burst = _a_burst_remembering_bob(stack, llm, monkeypatch, called)

    # Given the worker answering Alice's three messages (a memory of Bob's in its notice) killed once
    # its second chunk is posted (the first one noted), then Bob forgetting everything, which
    # withdraws that answer; its redelivery comes past Discord's nonce window (a kill's visibility
    # timeout), or posts through Luna's webhook (which takes no nonce)
    assert harness.deliver(chunk_post(2), max_deliveries=1) == ["killed"]
    forget_all_as(stack, bob, channel)
    stack.discord.forget_nonces()
    asked = len(llm.bodies)

    # When the three jobs are delivered again
    assert harness.deliver()[-1] == "done"

    # Then nothing more is posted or asked: the answer's two chunks stand, once; the first message is
    # recorded done with the chunk its answer noted before it was withdrawn, the two it covers done
    def ours(m: dict[str, Any]) -> bool:
        return bool(m.get("webhook_id")) if persona == "luna" else m["author"]["id"] == stack.application_id

    posted = [m for m in stack.discord.channel_messages(channel) if ours(m)]
    assert [m["content"].split(":")[0] for m in posted] == ["Part 1", "Part 2"]
    assert len(llm.bodies) == asked
    records = _records_of(stack, burst, persona=LUNA_ID if persona == "luna" else None)
    assert list(records) == [m["id"] for m in burst]
    assert _reply_ids(records[burst[0]["id"]]) == [posted[0]["id"]]
    assert _outboxes_of(stack, alice) == [] and _outboxes_of(stack, bob) == []


def test_a_covering_turn_whose_author_forgot_everything_since_its_keep_asks_the_model_nothing_again(world):
    stack, llm, harness = world
    channel, alice = new_channel_and_person(stack)
    make_always(stack, channel)
    burst = [relay_message(stack, channel, alice, text) for text in BURST]
    # Given the worker taking Alice's first message (and the two after it) killed once it kept its
    # answer, then Alice forgetting everything (her kept answer dropped with it)
    assert harness.deliver(outbox_keep("after"), max_deliveries=1) == ["killed"]
    forget_all_as(stack, alice, channel)
    asked = len(llm.bodies)

    # When the three jobs are delivered again
    assert harness.deliver()[-1] == "done"

    # Then her words went nowhere: no model call, nothing posted, nothing of hers left waiting
    assert len(llm.bodies) == asked
    assert [
        m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id
    ] == []
    assert list(_records_of(stack, burst)) == [m["id"] for m in burst]
    assert _outboxes_of(stack, alice) == []


def _a_burst_remembering_bob(
    stack: LocalStack, llm: OpenAIStandIn, monkeypatch: pytest.MonkeyPatch, called: str = ""
) -> tuple[str, dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Alice's three messages (each starting with ``called``) in a new always channel, where Bob spoke
    before (no turn of his: a participant of hers), and a model that saves a memory about Bob first:
    the channel, Alice, Bob and her messages."""
    channel, alice = new_channel_and_person(stack)
    bob = stack.discord.seed_user("bob", global_name="Bob")
    stack.discord.seed_member(GUILD, bob)
    stack.discord.seed_message(channel, bob, "I only drink coffee")
    make_always(stack, channel)
    monkeypatch.setattr(llm, "_responder", _remembering_bob(llm))
    return channel, alice, bob, [relay_message(stack, channel, alice, called + text) for text in BURST]


def _remembering_bob(llm: OpenAIStandIn):
    """The model saves a memory about Bob first, then answers, each answer its own words."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][-1]["role"] == "tool":
            return completion_body(f"{ANSWER} (answer {len(llm.bodies)})")
        save = {
            "memory_content": "{user} only drinks coffee",
            "memory_scope": "target_user",
            "target_user": "Bob",
        }
        return completion_body(tool_calls=[("create_long_term_memory", save)])

    return respond


def _records_of(
    stack: LocalStack, messages: list[dict[str, Any]], persona: str | None = None
) -> dict[str, dict[str, Any]]:
    """The records that the turns of ``messages`` spoken by ``persona`` (None: the main one) are done,
    by message id: those there are."""
    done = {i["pk"]["S"]: i for i in _table_items(stack) if i["sk"]["S"] == "DONE"}
    keys = {m["id"]: turn_record_key("message", record_id_of(m["id"], persona)).pk for m in messages}
    return {message_id: done[pk] for message_id, pk in keys.items() if pk in done}


def _reply_ids(record: dict[str, Any] | None) -> list[str]:
    """The replies a turn's record names (none: no record, or a mark with none yet)."""
    return [value["S"] for value in (record or {}).get("reply_ids", {}).get("L", [])]


def _outboxes_of(stack: LocalStack, person: dict[str, Any]) -> list[dict[str, Any]]:
    """The outboxes, and pointers to outboxes, in ``person``'s partition."""
    return [
        i
        for i in _table_items(stack)
        if i["pk"]["S"] == f"USER#{person['id']}" and i["sk"]["S"].startswith("OUTBOX#")
    ]


def _numbered(llm: OpenAIStandIn):
    """The module's model, each answer ending with the number of the request that asked for it."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][-1]["role"] == "tool":
            return completion_body(f"{ANSWER} (answer {len(llm.bodies)})")
        return answer(body)

    return respond


def _dead_letter_the_head(stack: LocalStack, first: dict[str, Any]) -> dict[str, Any]:
    """What SQS does with a message whose receives are spent: moved to the dead-letter queue."""
    queue = stack.resources.turn_queue_url
    (head,) = stack.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=1, AttributeNames=["All"])[
        "Messages"
    ]
    assert TurnJob.from_json(head["Body"]).turn_id == first["id"]
    stack.sqs.send_message(
        QueueUrl=stack.resources.dead_letter_queue_url,
        MessageBody=head["Body"],
        MessageGroupId=head["Attributes"]["MessageGroupId"],
        MessageDeduplicationId=head["MessageId"],
    )
    stack.sqs.delete_message(QueueUrl=queue, ReceiptHandle=head["ReceiptHandle"])
    (dead,) = dead_letters(stack)
    return dead
