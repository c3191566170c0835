"""Redelivery holes that fault injection found beyond the crash points (issue 27), each held here.

The same harness as ``test_turn_crash_points`` (TurnFunction in a child process, killed or its
request's answer lost at a chosen point; moto, Discord, the model and embeddings behind proxies and
stand-ins): a malformed 200 from the model, a memory notice (of a save, a rewrite or a delete)
whose attempt did not finish, answered turns coming back, redriven dead letters and the rate
limiter, two workers on one message, a reply larger than a DynamoDB item, a busy channel; then a
kill during a 429 wait, a channel deleted mid-turn, and a rollback across job formats with turns in
flight. Each case counts what matters: the posts per chunk, the captures, the notices, the
memories, and the later turns answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import pytest

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import ScopeKind
from kioku.domain.models import Persona
from kioku.domain.stm.entries import StmAddress
from kioku.domain.turn_jobs import TurnJob
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.playground.standins import OpenAIStandIn, RecordedRequest, completion_body
from kioku.services.turn import APOLOGY, RATE_NOTICE
from tests.e2e.crash_harness import (
    ROOT,
    Containers,
    CrashWorld,
    Fault,
    crash_world,
    dynamodb_refusal,
    twin_of,
)
from tests.e2e.test_turn_crash_points import (
    GUILD,
    _is_commit,
    _table_items,
    answer,
    assert_delivered_and_captured_once,
    chunk_post,
    dynamodb_write,
    memory_guards,
    new_channel_and_person,
    queue_message,
    redrive,
    save_transaction,
)
from tests.e2e.test_turn_crash_points import (
    dead_letters as all_dead_letters,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def running() -> Iterator[CrashWorld]:
    """One stack for the module (each test takes a channel and a person of its own)."""
    with crash_world(answer) as world:
        yield world


@pytest.fixture
def world(running: CrashWorld, monkeypatch: pytest.MonkeyPatch) -> CrashWorld:
    """The module's stack, its environment set again (every test starts from a bare one)."""
    return running.entered(monkeypatch)


# -- what a turn left -------------------------------------------------------------------------------


def bot_posts(stack: LocalStack, channel: str) -> list[dict[str, Any]]:
    return [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]


def captured_lines(stack: LocalStack, channel: str) -> list[tuple[str, str]]:
    """The channel's short-term lines, (text, message id) each; and the row's turn count."""
    row = StmStore(KiokuTable(stack.resources.table_name)).get(
        StmAddress.of(GUILD, "", channel, Persona().persona_id)
    )
    return [] if row is None else [(line.text, line.message_id) for line in row.crude]


def turns_counted(stack: LocalStack, channel: str) -> int:
    row = StmStore(KiokuTable(stack.resources.table_name)).get(
        StmAddress.of(GUILD, "", channel, Persona().persona_id)
    )
    return 0 if row is None else row.turns_since_refresh


def outboxes(stack: LocalStack, person: dict[str, Any]) -> list[dict[str, Any]]:
    """What is kept in ``person``'s outbox (the stack is the module's: others' tests keep theirs)."""
    return [
        i
        for i in _table_items(stack)
        if i["sk"]["S"].startswith("OUTBOX#") and i["pk"]["S"] == f"USER#{person['id']}"
    ]


def dead_letters(stack: LocalStack, channel: str) -> list[dict[str, Any]]:
    """The dead letters of ``channel``'s turns (the stack is the module's: another test's dead letter
    comes back once its receive's visibility ends)."""
    return [m for m in all_dead_letters(stack) if m["Attributes"]["MessageGroupId"] == channel]


def model_calls(llm: OpenAIStandIn, since: int) -> int:
    return len(llm.bodies) - since


# -- 2. a malformed 200 from the model -------------------------------------------------------------


def test_a_malformed_answer_from_the_model_is_apologised_for_once_and_captured(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = model_calls(llm, 0)

    # Given a model that answers 200 with a content part whose text is null
    llm.enqueue({"choices": [{"index": 0, "message": {"role": "assistant", "content": [{"text": None}]}}]})
    trigger = queue_message(stack, channel, alice)

    # When the worker takes the turn
    outcomes = harness.deliver()

    # Then the turn is done at once: the apology posted once, replying to Alice, and captured once
    assert outcomes == ["done"]
    posted = bot_posts(stack, channel)
    assert [m["content"] for m in posted] == [APOLOGY]
    assert posted[0]["message_reference"]["message_id"] == trigger["id"]
    assert [text for text, _ in captured_lines(stack, channel)][1:] == [APOLOGY]
    assert turns_counted(stack, channel) == 1
    # the model asked once (no retry of a shape it cannot read), nothing dead-lettered or left over
    assert model_calls(llm, asked_before) == 1
    assert dead_letters(stack, channel) == [] and outboxes(stack, alice) == []


# -- 1 and 9. a keep refused, or the attempt that saved a memory killed -----------------------------


def outbox_keep_refused(nth: int, refusal: tuple[int, dict[str, Any]], times: int = 1) -> Fault:
    """The ``nth`` keep of the turn's outbox (1: the notice of the memory the tool saved; 2: the
    answer) answered ``refusal``, ``times`` in a row."""

    def matches(request: RecordedRequest) -> bool:
        return (
            request.path == "TransactWriteItems"
            and b"OUTBOX#" in request.raw_body
            and not _is_commit(request)
        )

    return Fault(f"outbox keep {nth} refused", "dynamodb", matches, "refuse", "before", nth, times, refusal)


CONFLICT = dynamodb_refusal("TransactionCanceledException", ["TransactionConflict", "None"])
THROTTLED = dynamodb_refusal("ThrottlingException")
NOTICE_LOST_POINTS = [
    # the attempt that saved the memory dies before it kept the notice: the retry's save is its own
    (save_transaction("after"), ["killed", "done"], 1 + 2),
    # the notice's keep loses a race once: retried in place, the turn goes on
    (outbox_keep_refused(1, CONFLICT), ["done"], 2),
    # the notice's keep throttled six times in a row (past boto3's own retries): the attempt fails,
    # and the retry's save is its own (the model asked once more for it, then for the answer)
    (
        replace(outbox_keep_refused(1, THROTTLED, 6), name="outbox keep 1 throttled 6 times"),
        ["failed", "done"],
        3,
    ),
]


@pytest.mark.parametrize(
    ("fault", "expected", "calls"),
    [pytest.param(fault, outcomes, calls, id=fault.name) for fault, outcomes, calls in NOTICE_LOST_POINTS],
)
def test_a_memory_saved_by_an_attempt_that_did_not_finish_is_still_announced_once(
    world, fault, expected, calls
):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = model_calls(llm, 0)

    # Given Alice's message, whose turn saves a memory and answers in three chunks
    trigger = queue_message(stack, channel, alice)

    # When the attempt that saved the memory is killed, or its notice's keep is refused
    outcomes = harness.deliver(fault)

    # Then every chunk is posted once, the "Memory saved" notice once, the turn captured once and
    # the memory saved once
    assert harness.chaos.fired and outcomes == expected, outcomes
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert len(memory_guards(stack, alice)) == 1
    assert model_calls(llm, asked_before) == calls


def memory_delete(memory_id: int) -> dict[str, Any]:
    """The model forgetting Alice's memory ``memory_id`` (an empty ``memory_content``)."""
    arguments = {"memory_id": memory_id, "memory_content": "", "target_user": "Alice"}
    return completion_body(tool_calls=[("update_long_term_memory", arguments)])


def test_a_memory_deleted_by_an_attempt_that_did_not_finish_is_still_announced_once(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    store = DynamoMemoryStore(KiokuTable(stack.resources.table_name))

    # Given Alice's memory, saved by an earlier turn
    queue_message(stack, channel, alice)
    assert harness.deliver() == ["done"]
    (memory,) = store.memories_of(ScopeKind.PERSONAL, alice["id"])
    posted_before = len(bot_posts(stack, channel))

    # When her next turn's model forgets it, and the attempt is killed right after the delete
    llm.enqueue(memory_delete(memory.memory_id))
    forgetting = queue_message(stack, channel, alice)
    assert harness.deliver(save_transaction("after"), max_deliveries=1) == ["killed"]
    assert store.memories_of(ScopeKind.PERSONAL, alice["id"]) == []
    # and the retry's model, no longer shown the memory, only answers
    llm.enqueue(completion_body("Forgotten."))
    assert harness.deliver() == ["done"]

    # Then the answer is posted once, replying to her, and the "Memory forgotten" notice once
    posted = bot_posts(stack, channel)[posted_before:]
    assert [m["content"] for m in posted] == ["Forgotten.", ""]
    assert posted[0]["message_reference"]["message_id"] == forgetting["id"]
    assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory forgotten"]
    assert outboxes(stack, alice) == [] and memory_guards(stack, alice) == []


def memory_rewrite(memory_id: str, content: str) -> dict[str, Any]:
    """The model rewriting Alice's memory ``memory_id`` to say ``content``."""
    arguments = {"memory_id": memory_id, "memory_content": content, "target_user": "Alice"}
    return completion_body(tool_calls=[("update_long_term_memory", arguments)])


def test_a_memory_rewritten_by_an_attempt_that_did_not_finish_is_still_announced_once(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    store = DynamoMemoryStore(KiokuTable(stack.resources.table_name))

    # Given Alice's memory, saved by an earlier turn
    queue_message(stack, channel, alice)
    assert harness.deliver() == ["done"]
    (memory,) = store.memories_of(ScopeKind.PERSONAL, alice["id"])
    posted_before, lines_before = len(bot_posts(stack, channel)), len(captured_lines(stack, channel))
    counted_before = turns_counted(stack, channel)

    # When her next turn's model rewrites it, and the attempt is killed right after the rewrite
    llm.enqueue(memory_rewrite(memory.memory_id, "{user} loves matcha"))
    rewriting = queue_message(stack, channel, alice)
    assert harness.deliver(save_transaction("after"), max_deliveries=1) == ["killed"]
    (rewritten,) = store.memories_of(ScopeKind.PERSONAL, alice["id"])
    assert rewritten.content == "{user} loves matcha"
    # and the retry's model, shown the memory as it says now, only answers
    llm.enqueue(completion_body("Updated."))
    assert harness.deliver() == ["done"]

    # Then the answer is posted once, replying to her, and the "Memory updated" notice once
    posted = bot_posts(stack, channel)[posted_before:]
    assert [m["content"] for m in posted] == ["Updated.", ""]
    assert posted[0]["message_reference"]["message_id"] == rewriting["id"]
    assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory updated"]
    assert "matcha" in posted[1]["embeds"][0]["description"]
    # the memory says the new text once (one memory, one guard), the turn captured and counted once
    assert [m.content for m in store.memories_of(ScopeKind.PERSONAL, alice["id"])] == ["{user} loves matcha"]
    assert len(memory_guards(stack, alice)) == 1
    assert captured_lines(stack, channel)[lines_before:] == [
        ("@Kioku remember I love green tea", rewriting["id"]),
        ("Updated.", posted[0]["id"]),
    ]
    assert turns_counted(stack, channel) == counted_before + 1
    assert outboxes(stack, alice) == []


REWRITE_FAULTS = [
    # the fault, and whether the worker dies there (its retry's model asks for the rewrite again)
    (save_transaction("before"), True),
    (save_transaction("after"), True),
    (dynamodb_write("TransactWriteItems", having=b"LTM#"), False),
]


@pytest.mark.parametrize(
    ("fault", "killed"), [pytest.param(f, k, id=f"{f.action} at {f.name}") for f, k in REWRITE_FAULTS]
)
def test_a_rewrite_interrupted_around_its_write_keeps_one_version_of_history(world, fault, killed):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    store = DynamoMemoryStore(KiokuTable(stack.resources.table_name))

    # Given Alice's memory, saved by an earlier turn
    queue_message(stack, channel, alice)
    assert harness.deliver() == ["done"]
    (memory,) = store.memories_of(ScopeKind.PERSONAL, alice["id"])
    posted_before = len(bot_posts(stack, channel))

    # When her next turn's model rewrites it, and the worker dies just before or after the rewrite's
    # transaction (its history with it), or its response is lost; a retry's model asks the same again
    rewrite = memory_rewrite(memory.memory_id, "{user} loves matcha")
    llm.enqueue(*([rewrite] if killed else []), rewrite, completion_body("Updated."))
    queue_message(stack, channel, alice)
    outcomes = harness.deliver(fault)

    # Then the turn is done, the memory says the new text with one version of history (not two),
    # and the "Memory updated" notice is posted once
    assert harness.chaos.fired and outcomes[-1] == "done", outcomes
    (rewritten,) = store.memories_of(ScopeKind.PERSONAL, alice["id"])
    assert rewritten.content == "{user} loves matcha"
    assert [v.content for v in rewritten.history] == ["{user} loves green tea"] and rewritten.changes == 1
    posted = bot_posts(stack, channel)[posted_before:]
    assert [embed["title"] for m in posted for embed in m["embeds"]] == ["Memory updated"]
    assert outboxes(stack, alice) == []


def test_a_conflict_on_the_answers_keep_is_retried_in_place_without_asking_the_model_again(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = model_calls(llm, 0)
    trigger = queue_message(stack, channel, alice)

    # When the keep of the answer loses one race (TransactionConflict)
    outcomes = harness.deliver(outbox_keep_refused(2, CONFLICT))

    # Then the same attempt keeps it and delivers: the model asked twice, not four times
    assert harness.chaos.fired and outcomes == ["done"], outcomes
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert model_calls(llm, asked_before) == 2


# -- 5 and 4. turns that come back, and the rate limiter ------------------------------------------


def send_again(stack: LocalStack, body: str, channel: str) -> None:
    """A copy of a turn's job queued again past SQS's deduplication window (a relay retry, a
    replayed event): a new SQS message, received for the first time."""
    stack.sqs.send_message(
        QueueUrl=stack.resources.turn_queue_url,
        MessageBody=body,
        MessageGroupId=channel,
        MessageDeduplicationId=f"again-{len(body)}-{channel}",
    )


def test_an_answered_turn_back_after_the_dedup_and_nonce_windows_posts_nothing_more(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    env = {"TURN_RATE_LIMIT_PER_MINUTE": "1"}

    # Given Alice's turn answered (her one turn of the minute)
    trigger = queue_message(stack, channel, alice)
    assert harness.deliver(env=env) == ["done"]
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    asked_before = model_calls(llm, 0)

    # When a copy of its job comes back after SQS's deduplication and Discord's nonce windows
    stack.discord.forget_nonces()
    send_again(stack, harness.bodies[harness.message_ids[-1]], channel)
    assert harness.deliver(env=env) == ["done"]

    # Then nothing more is posted (no rate notice on top of the answer), nothing asked or captured
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert RATE_NOTICE not in [m["content"] for m in bot_posts(stack, channel)]
    assert model_calls(llm, asked_before) == 0


def test_redriven_dead_letters_are_counted_against_the_rate_once_and_all_answered(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    env = {"TURN_RATE_LIMIT_PER_MINUTE": "2"}

    # Given two turns of Alice (her limit a minute), answered but their replies refused for good
    # (the bot could not post there then): both dead-lettered with their answers kept
    llm.enqueue(completion_body("Answer one"), completion_body("Answer two"))
    refusal = {"message": "Missing Permissions", "code": 50013}
    stack.discord.fail_post(1, 403, refusal)
    stack.discord.fail_post(2, 403, refusal)
    first, second = queue_message(stack, channel, alice), queue_message(stack, channel, alice)
    assert harness.deliver(env=env) == ["done"]
    dead = dead_letters(stack, channel)
    assert len(dead) == 2 and bot_posts(stack, channel) == []

    # When both are redriven together, once the bot may post again
    for letter in dead:
        redrive(stack, letter)
    assert harness.deliver(env=env) == ["done"]

    # Then each is answered once, replying to its message, with no rate notice; both captured
    posted = bot_posts(stack, channel)
    assert [(m["content"], m["message_reference"]["message_id"]) for m in posted] == [
        ("Answer one", first["id"]),
        ("Answer two", second["id"]),
    ]
    assert turns_counted(stack, channel) == 2 and outboxes(stack, alice) == []


# -- 3. a redriven turn and another turn's identical reply -----------------------------------------


def test_a_redriven_turn_posts_its_own_reply_not_adopting_another_turns_identical_one(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)

    # Given T1, whose reply Discord refuses for good (dead-lettered, its answer kept), and T2 in
    # the same channel answered with the very same words
    llm.enqueue(completion_body("Got it!"), completion_body("Got it!"))
    stack.discord.fail_post(1, 403, {"message": "Missing Permissions", "code": 50013})
    t1, t2 = queue_message(stack, channel, alice), queue_message(stack, channel, alice)
    assert harness.deliver() == ["done"]
    (dead,) = dead_letters(stack, channel)

    # When T1 is redriven
    redrive(stack, dead)
    assert harness.deliver() == ["done"]

    # Then T1 posts its own reply, replying to T1, and its line carries that reply's id
    posted = bot_posts(stack, channel)
    assert [(m["content"], m["message_reference"]["message_id"]) for m in posted] == [
        ("Got it!", t2["id"]),
        ("Got it!", t1["id"]),
    ]
    lines = dict((message_id, text) for text, message_id in captured_lines(stack, channel))
    assert lines[posted[1]["id"]] == "Got it!" and lines[posted[0]["id"]] == "Got it!"
    assert turns_counted(stack, channel) == 2 and outboxes(stack, alice) == []


# -- 8. two workers on one message -----------------------------------------------------------------


@pytest.fixture
def twin(running: CrashWorld) -> Iterator[Containers]:
    """A second TurnFunction, for a message SQS hands out twice at once."""
    with twin_of(running) as containers:
        yield containers


def notices_keep(twin_turn: Callable[[], None]) -> Fault:
    """Just before the worker keeps the notice of the memory its tool saved, ``twin_turn`` runs."""

    def matches(request: RecordedRequest) -> bool:
        return (
            request.path == "TransactWriteItems"
            and b"OUTBOX#" in request.raw_body
            and b"Part 1:" not in request.raw_body
        )

    return Fault(
        "the notice's keep, a twin meanwhile", "dynamodb", matches, "meanwhile", "before", meanwhile=twin_turn
    )


def test_the_worker_that_loses_a_turn_to_its_twin_leaves_no_outbox_behind(world, twin):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    trigger = queue_message(stack, channel, alice)
    twin_outcomes: list[str] = []

    # When a twin worker takes the same message and does the whole turn while the first one is
    # about to keep its first outbox, its notice (so that keep comes after the twin's commit)
    outcomes = harness.deliver(notices_keep(lambda: twin_outcomes.append(harness.run_twin(twin))))

    # Then both end done, the turn delivered and captured once, and no outbox is left behind
    assert harness.chaos.fired and outcomes == ["done"] and twin_outcomes == ["done"]
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert outboxes(stack, alice) == []


# -- 7. a reply larger than a DynamoDB item --------------------------------------------------------

WIDEST = "𠮷"  # four bytes of UTF-8, a surrogate pair (twelve bytes) where JSON escapes it


def test_a_reply_of_the_largest_token_limit_in_the_widest_script_is_posted_cut_not_dead_lettered(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    env = {"LLM_MAX_TOKENS": "32000", "MAX_REPLY_MESSAGES": "10"}  # the most the configuration allows
    asked_before = model_calls(llm, 0)

    # Given a model answering 45,000 characters of a four-byte script
    llm.enqueue(completion_body(WIDEST * 45_000))
    trigger = queue_message(stack, channel, alice)

    # When the worker takes the turn
    assert harness.deliver(env=env) == ["done"]

    # Then ten full messages are posted once, the last cut with a visible " …", and the turn captured
    posted = bot_posts(stack, channel)
    assert len(posted) == 10 and posted[0]["message_reference"]["message_id"] == trigger["id"]
    assert all(set(m["content"]) == {WIDEST} for m in posted[:-1])
    assert posted[-1]["content"].endswith(" …")
    lines = captured_lines(stack, channel)
    assert lines[-1][1] == posted[0]["id"] and lines[-1][0].startswith(WIDEST * 100)
    assert (
        model_calls(llm, asked_before) == 1
        and dead_letters(stack, channel) == []
        and outboxes(stack, alice) == []
    )


# -- 6. a busy channel and a late redelivery -------------------------------------------------------


def test_a_late_redelivery_in_a_busy_channel_posts_each_chunk_once(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    bob = stack.discord.seed_user("bob", global_name="Bob")

    asked_before = model_calls(llm, 0)

    # Given Alice's message, then 120 more in the channel before the worker answers it
    trigger = queue_message(stack, channel, alice)
    for n in range(120):
        stack.discord.seed_message(channel, bob, f"chatter {n}")

    # When the worker dies once chunk 1 is posted, and the redelivery comes after the nonce window
    assert harness.deliver(chunk_post(1), max_deliveries=1) == ["killed"]
    stack.discord.forget_nonces()
    assert harness.deliver() == ["done"]

    # Then every chunk is posted once, in order, the notice once, the turn captured once, and the
    # model was not asked again
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert model_calls(llm, asked_before) == 2


# -- beyond the numbered holes ---------------------------------------------------------------------


def test_a_worker_killed_while_it_waits_out_a_429_delivers_once(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = model_calls(llm, 0)
    trigger = queue_message(stack, channel, alice)

    # Given Discord answering chunk 2's post with a short 429
    stack.discord.fail_post(
        2, 429, {"message": "You are being rate limited.", "retry_after": 0.05, "global": False}
    )

    # When the worker dies waiting it out (just before it posts chunk 2 again)
    retry_of_chunk_2 = replace(chunk_post(2, "kill", "before"), name="chunk 2 retried after its 429", nth=2)
    outcomes = harness.deliver(retry_of_chunk_2)

    # Then the redelivery posts what is missing, each chunk and the notice once
    assert harness.chaos.fired and outcomes == ["killed", "done"], outcomes
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert model_calls(llm, asked_before) == 2


def test_a_channel_deleted_mid_turn_is_dead_lettered_once_with_nothing_posted(world):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = model_calls(llm, 0)

    # Given the channel deleted while the turn was thinking: Discord answers the post 404
    stack.discord.fail_post(1, 404, {"message": "Unknown Channel", "code": 10003})
    queue_message(stack, channel, alice)

    # When the worker takes the turn
    assert harness.deliver() == ["done"]

    # Then it is dead-lettered once (not retried against a channel that is gone), nothing posted,
    # the model asked by the one attempt only
    (dead,) = dead_letters(stack, channel)
    assert "404" in dead["MessageAttributes"]["DeadLetterReason"]["StringValue"]
    assert bot_posts(stack, channel) == []
    assert model_calls(llm, asked_before) == 2


# -- rolling back across job formats with turns in flight ------------------------------------------

FORMAT_2_COMMIT: Final = "50e925a250caba11dbb2503f486183f7945b59e6"
"""The commit that made queued turn bodies format 2: its parent is the last reader of format 1 only."""


@pytest.fixture(scope="module")
def format_1_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release before format 2, as checked out to roll back to (its layer and functions)."""
    release = tmp_path_factory.mktemp("format-1-release")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", f"{FORMAT_2_COMMIT}^", "layers/kioku", "functions"],
        capture_output=True,
    )
    if archive.returncode != 0:
        pytest.skip(f"not a checkout with kioku's history: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(release)], input=archive.stdout, check=True)
    return release


@pytest.fixture
def rolled_back(running: CrashWorld, format_1_release: Path) -> Iterator[Containers]:
    """TurnFunction of the release before format 2, on the same stack."""
    containers = Containers(running.dynamodb_url, running.sqs_url, release=format_1_release)
    try:
        yield containers
    finally:
        containers.close()


def test_a_turn_queued_in_format_2_is_dead_lettered_by_a_rolled_back_worker_and_answered_once_redriven(
    world, rolled_back
):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = model_calls(llm, 0)

    # Given Alice's turn queued by today's relay (a format 2 body)
    trigger = queue_message(stack, channel, alice)
    assert (
        json.loads(
            stack.sqs.receive_message(QueueUrl=stack.resources.turn_queue_url, VisibilityTimeout=0)[
                "Messages"
            ][0]["Body"]
        )["format"]
        == 2
    )

    # When the stack is rolled back to the release before format 2 and its worker takes the turn
    assert harness.deliver(containers=rolled_back) == ["done"]

    # Then the turn is dead-lettered once as unreadable, nothing posted, asked, kept or captured
    (dead,) = dead_letters(stack, channel)
    # (the older reader refuses the unknown key: a TypeError)
    assert dead["MessageAttributes"]["DeadLetterReason"]["StringValue"].endswith("not a turn job: TypeError")
    assert TurnJob.from_json(dead["Body"]).turn_id == trigger["id"]
    assert bot_posts(stack, channel) == [] and captured_lines(stack, channel) == []
    assert model_calls(llm, asked_before) == 0 and outboxes(stack, alice) == []

    # And redriven once today's release is back, it is answered, announced and captured once
    redrive(stack, dead)
    assert harness.deliver() == ["done"]
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert model_calls(llm, asked_before) == 2 and dead_letters(stack, channel) == []


def test_a_turn_an_older_release_queued_in_format_1_is_answered_once_by_todays_worker(
    world, format_1_release
):
    stack, llm, harness = world.stack, world.llm, world.harness
    channel, alice = new_channel_and_person(stack)
    asked_before = model_calls(llm, 0)

    # Given Alice's message queued by the release before format 2 (its own writer, the gateway's
    # message as sent), still waiting when today's release is deployed
    trigger = stack.discord.seed_message(
        channel, alice, f"<@{stack.application_id}> remember I love green tea"
    )
    gateway = json.loads(gateway_dispatch(trigger, GUILD, {"nick": None, "roles": []}))["d"]
    written = subprocess.run(
        [sys.executable, "-c", FORMAT_1_WRITER],
        input=json.dumps(gateway),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(format_1_release / "layers" / "kioku")},
    ).stdout
    assert "format" not in json.loads(written)
    stack.sqs.send_message(
        QueueUrl=stack.resources.turn_queue_url,
        MessageBody=written,
        MessageGroupId=channel,
        MessageDeduplicationId=trigger["id"],
    )

    # When today's worker takes it
    assert harness.deliver() == ["done"]

    # Then it is answered, announced and captured once, as a format 2 turn is
    assert_delivered_and_captured_once(stack, channel, alice, trigger)
    assert model_calls(llm, asked_before) == 2 and dead_letters(stack, channel) == []


FORMAT_1_WRITER: Final = """
import json, sys
from kioku.domain.turn_jobs import TurnJob
print(TurnJob.from_gateway_message(json.load(sys.stdin)).fitted().to_json(), end="")
"""
"""The release before format 2 queueing a relayed message, as its RelayFunction did."""
