"""A turn that cannot succeed is moved aside by the worker, and its channel's next turns go on.

The queue is a FIFO queue with one message group per channel: a failing turn holds its channel's
later turns back, and Lambda's poller (``LocalStack.deliver_turns``, ten at a time) returns them to
the queue with it, so their receive counts climb though they were never tried.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kioku.domain.turn_jobs import TurnJob
from kioku.playground.stack import LocalStack
from tests.e2e.conftest import GENERAL, GUILD, STAND_IN_REPLY, relay_post

pytestmark = pytest.mark.e2e

CHANNEL = GENERAL
GARBAGE = '{"not": "a turn"}'
DISCORD_500 = {"message": "500: Internal Server Error", "code": 0}


@pytest.fixture
def log_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The JSON lines the functions' logger writes (Lambda sends its stdout to CloudWatch Logs)."""
    from kioku.observability import logger

    buffer = io.StringIO()
    previous = logger.registered_handler.setStream(buffer)
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]
    logger.registered_handler.setStream(previous)


def say(stack: LocalStack, text: str) -> dict[str, Any]:
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    message = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> {text}")
    assert relay_post(stack, message, GUILD).status_code == 202
    return message


def replies_to(stack: LocalStack, message: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        posted
        for posted in stack.discord.channel_messages(CHANNEL)
        if posted["author"]["id"] == stack.application_id
        and (posted.get("message_reference") or {}).get("message_id") == message["id"]
    ]


def dead_letters(stack: LocalStack) -> list[dict[str, Any]]:
    received = stack.sqs.receive_message(
        QueueUrl=stack.resources.dead_letter_queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )
    return received.get("Messages", [])


def reason_of(dead: dict[str, Any]) -> tuple[str, int]:
    attributes = dead["MessageAttributes"]
    return attributes["DeadLetterReason"]["StringValue"], int(attributes["FailedAttempts"]["StringValue"])


def test_a_garbage_job_is_dead_lettered_at_once_and_the_channels_next_turns_are_answered_once(
    stack, llm, log_lines
):
    # Given garbage at the head of a channel's message group, then two good turns in that channel
    stack.sqs.send_message(
        QueueUrl=stack.resources.turn_queue_url,
        MessageBody=GARBAGE,
        MessageGroupId=CHANNEL,
        MessageDeduplicationId="garbage-1",
    )
    first = say(stack, "first question")
    second = say(stack, "second question")
    # When the worker works the queue off
    responses = stack.deliver_turns()
    # Then nothing went back to the queue, and both turns were answered, once each
    assert all(response == {"batchItemFailures": []} for response in responses)
    assert [m["content"] for m in replies_to(stack, first)] == [STAND_IN_REPLY]
    assert [m["content"] for m in replies_to(stack, second)] == [STAND_IN_REPLY]
    assert len(llm.bodies) == 2
    # and the garbage waits in the dead-letter queue as it was sent, saying why, logged once
    (dead,) = dead_letters(stack)
    assert dead["Body"] == GARBAGE
    reason, attempts = reason_of(dead)
    assert reason.startswith("not a turn job") and attempts == 1
    (error,) = [line for line in log_lines() if line["level"] == "ERROR"]
    assert "dead-lettered on attempt 1 of 3" in error["message"] and "not a turn job" in error["message"]


def test_the_turns_behind_a_transiently_failing_one_wait_in_order_and_are_tried(stack, llm, log_lines):
    # Given three turns in one channel, and Discord failing the first one's reply on every attempt
    held, behind, last = say(stack, "first"), say(stack, "second"), say(stack, "third")
    for nth in (1, 2, 3):
        stack.discord.fail_post(nth, 500, DISCORD_500)
    # When the worker works the queue off, ten messages a receive as Lambda's poller does
    stack.deliver_turns()
    # Then the failing turn was tried three times, then moved aside by the worker
    (dead,) = dead_letters(stack)
    assert TurnJob.from_json(dead["Body"]).turn_id == held["id"]
    reason, attempts = reason_of(dead)
    assert reason.startswith("failed 3 of 3 attempts: DiscordError") and attempts == 3
    assert replies_to(stack, held) == []
    # and the two behind it, returned to the queue with it each time, were answered once, in order
    (second_reply,) = replies_to(stack, behind)
    (third_reply,) = replies_to(stack, last)
    assert int(second_reply["id"]) < int(third_reply["id"])
    # and the log says which attempt each failure was, and "dead-lettered" only when it was
    lines = [line for line in log_lines() if line["level"] in ("WARNING", "ERROR")]
    failures = [
        line for line in lines if "turn failed" in line["message"] or "dead-lettered" in line["message"]
    ]
    assert [(line["level"], "dead-lettered" in line["message"]) for line in failures] == [
        ("WARNING", False),
        ("WARNING", False),
        ("ERROR", True),
    ]
    assert "attempt 1 of 3" in failures[0]["message"] and "attempt 2 of 3" in failures[1]["message"]
    assert "attempt 3 of 3" in failures[2]["message"]
    assert all(line["turn_id"] == held["id"] for line in failures)


def test_a_turn_discord_refuses_as_such_is_dead_lettered_without_retries(stack, llm):
    # Given Discord refusing the reply itself (400: the request is wrong, not Discord)
    refused, behind = say(stack, "first"), say(stack, "second")
    stack.discord.fail_post(1, 400, {"message": "Invalid Form Body", "code": 50035})
    # When the worker works the queue off
    responses = stack.deliver_turns()
    # Then the refused turn is dead-lettered on its first attempt, and the next one answered
    assert all(response == {"batchItemFailures": []} for response in responses)
    (dead,) = dead_letters(stack)
    reason, attempts = reason_of(dead)
    assert TurnJob.from_json(dead["Body"]).turn_id == refused["id"]
    assert reason.startswith("cannot succeed: DiscordError") and "400" in reason and attempts == 1
    assert [m["content"] for m in replies_to(stack, behind)] == [STAND_IN_REPLY]


def test_a_turn_queued_in_format_1_whose_timestamp_has_no_offset_is_answered(stack, llm):
    # Given a turn the previous code queued (format 1: the gateway's message as it was sent), from
    # before the relay refused timestamps without an offset
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    message = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> hello")
    naive = {**message, "timestamp": "2026-11-30T01:00:00.000000", "guild_id": GUILD}
    format_1 = {
        "source": "message",
        "turn_id": message["id"],
        "channel_id": CHANNEL,
        "guild_id": GUILD,
        "author": naive["author"],
        "content": naive["content"],
        "message": naive,
        "member": None,
        "interaction_token": None,
        "application_id": None,
    }
    stack.sqs.send_message(
        QueueUrl=stack.resources.turn_queue_url,
        MessageBody=json.dumps(format_1),
        MessageGroupId=CHANNEL,
        MessageDeduplicationId=f"message-{message['id']}",
    )
    # When the worker takes it
    responses = stack.deliver_turns()
    # Then it is answered, not failed on every attempt comparing naive and aware times
    assert responses == [{"batchItemFailures": []}]
    assert [m["content"] for m in replies_to(stack, message)] == [STAND_IN_REPLY]
    assert dead_letters(stack) == []
