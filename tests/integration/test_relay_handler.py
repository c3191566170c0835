"""RelayFunction's lambda_handler: signed relay events in, turns on the FIFO queue (moto)."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.discord.protocol import ChannelType
from kioku.domain.models import ServerConfig
from kioku.domain.turn_jobs import TurnJob
from kioku.playground.events import signed_event
from kioku.playground.functions import LambdaContext, load_handler
from tests.conftest import APPLICATION_ID

GUILD = "200000000000000001"
CHANNEL = "300000000000000001"
USER = {"id": "400000000000000001", "username": "alice", "global_name": "Alice", "bot": False}


def gateway_message(
    content: str, *, message_id: str = "700000000000000001", guild: str | None = GUILD, author=None
):
    message = {
        "id": message_id,
        "channel_id": CHANNEL,
        "author": author or USER,
        "content": content,
        "timestamp": "2026-11-30T01:00:00.000000+00:00",
        "type": 0,
        "mentions": [],
        "attachments": [],
        "embeds": [],
    }
    if guild:
        message["guild_id"] = guild
        message["member"] = {"nick": None, "roles": []}
    else:
        message["channel_type"] = ChannelType.DM
    return {"t": "MESSAGE_CREATE", "d": message}


@pytest.fixture
def invoke(env):
    handler = load_handler("relay")
    return lambda event: handler(event, LambdaContext())


def queued(resources) -> list[dict]:
    sqs = boto3.client("sqs")
    messages = sqs.receive_message(
        QueueUrl=resources.turn_queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
    )
    return messages.get("Messages", [])


def test_a_mention_is_queued_with_the_channel_as_group_and_the_message_as_dedup_id(
    invoke, relay_keys, resources
):
    event = signed_event(gateway_message(f"<@{APPLICATION_ID}> hello"), relay_keys.signing_hex)
    response = invoke(event)
    assert response["statusCode"] == 202
    [message] = queued(resources)
    assert message["Attributes"]["MessageGroupId"] == CHANNEL
    assert message["Attributes"]["MessageDeduplicationId"] == "message-700000000000000001"
    job = TurnJob.from_json(message["Body"])
    assert job.turn_id == "700000000000000001" and job.content.endswith("hello")


def test_the_same_message_relayed_three_times_is_queued_once(invoke, relay_keys, resources):
    for _ in range(3):
        event = signed_event(gateway_message(f"<@{APPLICATION_ID}> once"), relay_keys.signing_hex)
        assert invoke(event)["statusCode"] == 202
    assert len(queued(resources)) == 1


def test_a_dm_is_answered(invoke, relay_keys, resources):
    assert (
        invoke(signed_event(gateway_message("hi", guild=None), relay_keys.signing_hex))["statusCode"] == 202
    )


@pytest.mark.parametrize(
    "payload",
    [
        gateway_message("just chatting"),
        gateway_message("my own words", author={"id": APPLICATION_ID, "username": "kioku", "bot": True}),
        gateway_message(
            f"<@{APPLICATION_ID}> hi", author={"id": "900000000000000001", "username": "b", "bot": True}
        ),
    ],
    ids=["not-addressed", "own-message", "other-bot"],
)
def test_messages_not_for_the_bot_answer_204_and_queue_nothing(invoke, relay_keys, resources, payload):
    response = invoke(signed_event(payload, relay_keys.signing_hex))
    assert response["statusCode"] == 204
    assert queued(resources) == []


def test_trigger_words_come_from_the_servers_configuration(invoke, relay_keys, resources, table):
    ConfigStore(table).save_server_config(replace(ServerConfig(guild_id=GUILD), trigger_words=("kioku",)))
    assert (
        invoke(signed_event(gateway_message("hey Kioku, what's up"), relay_keys.signing_hex))["statusCode"]
        == 202
    )


def test_discord_signed_events_are_not_relay_events(invoke, discord_keys, resources):
    response = invoke(signed_event(gateway_message(f"<@{APPLICATION_ID}> hi"), discord_keys.signing_hex))
    assert response["statusCode"] == 401
    assert queued(resources) == []


@pytest.mark.parametrize(
    "body",
    [
        b"nope",
        json.dumps({"t": "MESSAGE_DELETE", "d": {}}).encode(),
        json.dumps({"t": "MESSAGE_CREATE", "d": {"id": 1}}).encode(),
    ],
    ids=["not-json", "other-event", "bad-message"],
)
def test_malformed_relay_events_get_400(invoke, relay_keys, resources, body):
    response = invoke(signed_event(body, relay_keys.signing_hex))
    assert response["statusCode"] == 400
    assert queued(resources) == []


@pytest.mark.parametrize(
    "timestamp",
    ["2026-11-30T01:00:00.000000", "2026-11-30", "", None],
    ids=["no-offset", "date", "empty", "null"],
)
def test_a_message_whose_timestamp_has_no_offset_is_malformed_400(invoke, relay_keys, resources, timestamp):
    # Given an addressed message whose time could not be compared with kioku's (aware) clock
    payload = gateway_message(f"<@{APPLICATION_ID}> hello")
    payload["d"]["timestamp"] = timestamp
    # When it is relayed
    response = invoke(signed_event(payload, relay_keys.signing_hex))
    # Then it is refused, saying why, and nothing waits in the queue to fail on every attempt
    assert response["statusCode"] == 400
    assert "timestamp" in json.loads(response["body"])["error"]
    assert queued(resources) == []


def test_an_oversized_signed_event_is_malformed_400(invoke, relay_keys, resources):
    payload = gateway_message(f"<@{APPLICATION_ID}> " + "x" * 70_000)
    response = invoke(signed_event(payload, relay_keys.signing_hex))
    assert response["statusCode"] == 400
    assert queued(resources) == []


def test_a_message_whose_job_would_outgrow_the_queue_is_trimmed_not_failed(invoke, relay_keys, resources):
    # Given a message under the relay's 64 KiB whose escaped job is over SQS's limit: emoji content
    # (three times larger escaped) and emoji-laden embeds
    emoji = "\N{GRINNING FACE}"
    event = gateway_message(f"<@{APPLICATION_ID}> " + emoji * 3900)
    event["d"]["embeds"] = [{"description": emoji * 1100} for _ in range(10)]
    body = json.dumps(event, ensure_ascii=False).encode()
    assert len(body) < 64 * 1024
    # When it is relayed
    response = invoke(signed_event(body, relay_keys.signing_hex))
    # Then the turn is queued whole but for the embeds
    assert response["statusCode"] == 202
    [message] = queued(resources)
    job = TurnJob.from_json(message["Body"])
    assert job.content.endswith(emoji * 10) and job.message.embeds == ()
