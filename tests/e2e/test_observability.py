"""What the operator sees of a turn: EMF metrics per invocation, and log lines that name the failed
turn, its cause and its correlation keys."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import kioku
from kioku.playground.functions import LambdaContext
from kioku.playground.stack import LocalStack
from kioku.playground.standins import CannedResponse, completion_body
from tests.e2e.conftest import GENERAL, GUILD, relay_post, signed_post

pytestmark = pytest.mark.e2e

CHANNEL = GENERAL


@pytest.fixture
def log_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The JSON lines the functions' logger writes (Lambda sends its stdout to CloudWatch Logs)."""
    from kioku.observability import logger

    buffer = io.StringIO()
    previous = logger.registered_handler.setStream(buffer)
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]
    logger.registered_handler.setStream(previous)


def emitted_metrics(out: str) -> dict[str, list[float]]:
    """Every metric printed as EMF, values joined across invocations."""
    values: dict[str, list[float]] = {}
    for line in out.splitlines():
        if not line.startswith('{"_aws"'):
            continue
        blob = json.loads(line)
        (directive,) = blob["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "Kioku" and directive["Dimensions"] == [["service"]]
        for metric in directive["Metrics"]:
            values.setdefault(metric["Name"], []).extend(blob[metric["Name"]])
    return values


def say(stack: LocalStack, text: str) -> dict:
    alice = stack.discord.seed_user("alice", global_name="Alice")
    stack.discord.seed_member(GUILD, alice)
    message = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> {text}")
    assert relay_post(stack, message, GUILD).status_code == 202
    return message


def test_a_turn_reports_what_it_did_as_metrics(stack, llm, capsys):
    # Given a model that saves one memory, tries a bad one, then answers
    llm.enqueue(
        completion_body(
            tool_calls=[
                (
                    "create_long_term_memory",
                    {"memory_content": "Alice likes tea", "memory_scope": "server_wide"},
                ),
                ("create_long_term_memory", {"memory_content": "", "memory_scope": "server_wide"}),
            ]
        ),
        completion_body("Noted."),
    )
    capsys.readouterr()
    # When a message is relayed and its turn worked off
    say(stack, "remember that I like tea")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    # Then the relay and the turn each flushed their counts
    metrics = emitted_metrics(capsys.readouterr().out)
    assert metrics["RelayQueued"] == [1]
    assert metrics["Turns"] == [1]
    assert metrics["ModelCalls"] == [2] and len(metrics["ModelLatency"]) == 2
    assert metrics["ToolCalls"] == [2]
    assert metrics["MemoriesSaved"] == [1] and metrics["MemoriesRefused"] == [1]
    assert metrics["ReplyMessages"] == [1]
    assert "Apologies" not in metrics and "FailedTurns" not in metrics


def test_an_apology_and_an_ignored_message_are_counted(stack, llm, capsys):
    llm.enqueue(*[CannedResponse(500, {"error": {"message": "down"}}, {})] * 5)
    capsys.readouterr()
    say(stack, "are you there?")
    stack.deliver_turns()
    alice = stack.discord.seed_user("alice", global_name="Alice")
    chatter = stack.discord.seed_message(CHANNEL, alice, "just chatting, not to the bot")
    assert relay_post(stack, chatter, GUILD).status_code == 204
    metrics = emitted_metrics(capsys.readouterr().out)
    assert metrics["Apologies"] == [1] and metrics["Turns"] == [1]
    assert metrics["RelayIgnored"] == [1]


def test_a_failed_turn_is_logged_with_its_attempt_cause_and_correlation_keys(stack, log_lines, capsys):
    # Given a relayed message, and Discord failing every request the turn makes
    message = say(stack, "hello")
    for _ in range(20):
        stack.discord.fail_next(500, {"message": "internal", "code": 0})
    received = stack.sqs.receive_message(
        QueueUrl=stack.resources.turn_queue_url, AttributeNames=["All"], MaxNumberOfMessages=1
    )["Messages"]
    # When TurnFunction takes it
    response = stack.turn_handler(stack.sqs_event(received), LambdaContext())
    # Then SQS gets it back; the log says which attempt of how many failed and why, with the
    # turn's keys, at WARNING (it is retried, not dead-lettered); and it is counted
    assert response["batchItemFailures"] == [{"itemIdentifier": received[0]["MessageId"]}]
    assert [line for line in log_lines() if line["level"] == "ERROR"] == []
    (failure,) = [line for line in log_lines() if "turn failed" in line["message"]]
    assert failure["level"] == "WARNING"
    assert "attempt 1 of 3" in failure["message"] and "retried" in failure["message"]
    assert "dead-lettered" not in failure["message"]
    assert "DiscordError" in failure["exception_name"] and "500" in failure["exception"]
    assert failure["turn_id"] == message["id"]
    assert failure["channel_id"] == CHANNEL and failure["guild_id"] == GUILD
    assert failure["function_request_id"] == LambdaContext.aws_request_id
    assert failure["release"] == kioku.__version__  # which code wrote it, after a deploy or a roll back
    assert emitted_metrics(capsys.readouterr().out)["FailedTurns"] == [1]


def test_a_later_failure_does_not_carry_the_keys_of_an_earlier_turn(stack, log_lines):
    # Given a turn that went well
    say(stack, "hello")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    # When the next record TurnFunction takes is not a turn job at all
    broken = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": "{not json", "Attributes": {}}
    stack.turn_handler(stack.sqs_event([broken]), LambdaContext())
    # Then its error line names the cause and none of the earlier turn's ids
    (failure,) = [line for line in log_lines() if line["level"] == "ERROR"]
    assert "not a turn job" in failure["message"] and "m-1" in failure["message"]
    assert not {"turn_id", "channel_id", "guild_id"} & failure.keys()


def test_a_command_is_counted_and_a_ping_adds_nothing(stack, capsys):
    capsys.readouterr()
    ping = json.dumps({"type": 1, "id": "1", "application_id": stack.application_id}).encode()
    assert signed_post(stack, "interactions", ping, stack.signing_key).json() == {"type": 1}
    assert emitted_metrics(capsys.readouterr().out) == {}
    command = {
        "type": 2,
        "id": "900000000000000001",
        "application_id": stack.application_id,
        "token": "t",
        "version": 1,
        "channel_id": CHANNEL,
        "guild_id": GUILD,
        "member": {
            "user": {"id": "100000000000000009", "username": "alice"},
            "roles": [],
            "permissions": "0",
        },
        "data": {"id": "1", "name": "help", "type": 1, "options": [{"type": 1, "name": "stm"}]},
    }
    assert (
        signed_post(stack, "interactions", json.dumps(command).encode(), stack.signing_key).status_code == 200
    )
    assert emitted_metrics(capsys.readouterr().out) == {"Commands": [1]}
