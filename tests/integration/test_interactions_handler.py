"""InteractionsFunction's lambda_handler with Function URL events, on moto, signed with real keys."""

from __future__ import annotations

import json
import time

import pytest

from kioku.playground.events import function_url_event, ping, signed_event, slash_command
from kioku.playground.functions import LambdaContext, load_handler
from tests.conftest import APPLICATION_ID


@pytest.fixture
def invoke(env):
    handler = load_handler("interactions")
    return lambda event: handler(event, LambdaContext())


def table_items(resources):
    import boto3

    return boto3.client("dynamodb").scan(TableName=resources.table_name)["Items"]


def test_ping_answers_pong(invoke, discord_keys):
    response = invoke(signed_event(ping(APPLICATION_ID), discord_keys.signing_hex))
    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"type": 1}


def test_base64_bodies_are_decoded_before_verification(invoke, discord_keys):
    response = invoke(signed_event(ping(APPLICATION_ID), discord_keys.signing_hex, base64_body=True))
    assert json.loads(response["body"]) == {"type": 1}


def test_help_stm_answers_an_ephemeral_embed(invoke, discord_keys):
    response = invoke(signed_event(slash_command(APPLICATION_ID, "help", "stm"), discord_keys.signing_hex))
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert body["type"] == 4
    assert body["data"]["flags"] == 64
    embed = body["data"]["embeds"][0]
    assert "Short-term memory" in embed["title"]
    field_text = " ".join(f["name"] + f["value"] for f in embed["fields"])
    for surface in ("crude_summary", "supersede", "cadence", "/server stm parameters", "/persona stm view"):
        assert surface in field_text


def test_help_works_in_direct_messages(invoke, discord_keys):
    payload = slash_command(APPLICATION_ID, "help", "stm", guild_id=None)
    body = json.loads(invoke(signed_event(payload, discord_keys.signing_hex))["body"])
    assert body["data"]["embeds"][0]["title"].startswith("Short-term memory")


def test_unknown_command_gets_an_ephemeral_message_not_an_error(invoke, discord_keys):
    response = invoke(
        signed_event(slash_command(APPLICATION_ID, "no-such-command"), discord_keys.signing_hex)
    )
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert body["type"] == 4 and body["data"]["flags"] == 64
    assert "don't know that command" in body["data"]["content"]


def test_unknown_autocomplete_answers_no_choices(invoke, discord_keys):
    payload = {**slash_command(APPLICATION_ID, "nothing"), "type": 4}
    body = json.loads(invoke(signed_event(payload, discord_keys.signing_hex))["body"])
    assert body == {"type": 8, "data": {"choices": []}}


def test_unrouted_component_gets_an_ephemeral_message(invoke, discord_keys):
    payload = {
        **slash_command(APPLICATION_ID, "x"),
        "type": 3,
        "data": {"custom_id": "gone:1", "component_type": 2},
    }
    body = json.loads(invoke(signed_event(payload, discord_keys.signing_hex))["body"])
    assert body["data"]["flags"] == 64


def _tampered_events(keys):
    good = signed_event(ping(APPLICATION_ID), keys.signing_hex)
    body = good["body"]
    yield "unsigned", {**good, "headers": {"content-type": "application/json"}}
    yield "body-changed", {**good, "body": body.replace('"type":1', '"type":2')}
    yield "re-serialised", {**good, "body": json.dumps(json.loads(body), indent=1)}
    yield "stale", signed_event(ping(APPLICATION_ID), keys.signing_hex, timestamp=str(int(time.time()) - 600))
    headers = dict(good["headers"])
    headers["x-signature-ed25519"] = "g" * 128
    yield "non-hex", {**good, "headers": headers}
    headers = dict(good["headers"])
    headers["x-signature-ed25519"] = headers["x-signature-ed25519"][:-4]
    yield "short", {**good, "headers": headers}
    yield "bad-base64", {**good, "body": "@@not base64@@", "isBase64Encoded": True}


@pytest.mark.parametrize("case", range(7))
def test_unsigned_tampered_or_stale_requests_get_401_and_change_nothing(
    invoke, discord_keys, resources, case
):
    name, event = list(_tampered_events(discord_keys))[case]
    before = table_items(resources)
    response = invoke(event)
    assert response["statusCode"] == 401, name
    assert table_items(resources) == before


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2, 3]",
        b'{"no": "type"}',
        b'{"type": "1"}',
        json.dumps({"type": 2, "id": "x", "application_id": "1", "token": "t"}).encode(),
        json.dumps({"type": 99, "id": "1", "application_id": "1", "token": "t"}).encode(),
        json.dumps({"type": 2, "id": "1", "application_id": "1", "token": ""}).encode(),
    ],
    ids=["not-json", "array", "no-type", "string-type", "bad-id", "unknown-type", "empty-token"],
)
def test_verified_malformed_bodies_get_400(invoke, discord_keys, body):
    response = invoke(signed_event(body, discord_keys.signing_hex))
    assert response["statusCode"] == 400
    assert "error" in json.loads(response["body"])


def test_oversized_bodies_are_401_unsigned_and_400_signed(invoke, discord_keys):
    oversized = signed_event(b"{" + b" " * 300_000 + b"}", discord_keys.signing_hex)
    assert invoke(oversized)["statusCode"] == 400
    assert invoke({**oversized, "headers": {"content-type": "application/json"}})["statusCode"] == 401


def test_an_unsigned_get_fails_verification_like_anything_else(invoke):
    event = function_url_event(b"", {}, method="GET")
    assert invoke(event)["statusCode"] == 401


def test_missing_configuration_is_a_clear_503_not_a_crash(invoke, discord_keys, monkeypatch, caplog):
    monkeypatch.delenv("DISCORD_PUBLIC_KEY")
    response = invoke(signed_event(ping(APPLICATION_ID), discord_keys.signing_hex))
    assert response["statusCode"] == 503
    assert "DISCORD_PUBLIC_KEY is required but not set" in caplog.text


def test_chat_defers_and_queues_the_turn_with_its_interaction_token(invoke, discord_keys, resources):
    import boto3

    from kioku.domain.turn_jobs import TurnJob, TurnSource

    payload = slash_command(APPLICATION_ID, "chat", options={"message": "hello there"}, token="tok-abc")
    response = invoke(signed_event(payload, discord_keys.signing_hex))
    assert json.loads(response["body"]) == {"type": 5}
    messages = boto3.client("sqs").receive_message(QueueUrl=resources.turn_queue_url)["Messages"]
    job = TurnJob.from_json(messages[0]["Body"])
    assert job.source is TurnSource.SLASH_COMMAND
    assert (job.content, job.interaction_token, job.application_id) == (
        "hello there",
        "tok-abc",
        APPLICATION_ID,
    )


@pytest.mark.parametrize("text", ["", "   ", "x" * 2001])
def test_chat_refuses_empty_or_oversized_messages_ephemerally(invoke, discord_keys, resources, text):
    import boto3

    payload = slash_command(APPLICATION_ID, "chat", options={"message": text})
    body = json.loads(invoke(signed_event(payload, discord_keys.signing_hex))["body"])
    assert body["type"] == 4 and body["data"]["flags"] == 64
    assert "Messages" not in boto3.client("sqs").receive_message(QueueUrl=resources.turn_queue_url)


def test_chat_answers_ephemerally_when_the_queue_is_gone(invoke, discord_keys, resources, monkeypatch):
    monkeypatch.setenv("TURN_QUEUE_URL", resources.turn_queue_url + "-missing")
    payload = slash_command(APPLICATION_ID, "chat", options={"message": "hi"})
    body = json.loads(invoke(signed_event(payload, discord_keys.signing_hex))["body"])
    assert body["type"] == 4 and "try again" in body["data"]["embeds"][0]["description"]


GROUP_DM, OTHER_DM = 3, 1


@pytest.mark.parametrize(
    ("context", "channel_type", "queued"),
    [
        (1, OTHER_DM, True),  # the bot's own DM
        (2, GROUP_DM, False),  # a group DM, through a user install
        (2, OTHER_DM, False),  # someone else's DM
        (None, GROUP_DM, False),  # no context given: the channel type decides
        (None, None, False),  # nothing to tell: not a DM with the bot
    ],
)
def test_chat_outside_a_server_works_only_in_the_bots_own_dm(
    invoke, discord_keys, resources, context, channel_type, queued
):
    import boto3

    # Given /chat invoked outside any server, where Discord says it was
    payload = slash_command(
        APPLICATION_ID, "chat", options={"message": "what do you know about me?"}, guild_id=None
    )
    payload["context"] = context
    payload["channel"] = {"id": payload["channel_id"], "type": channel_type} if channel_type else None
    # When
    body = json.loads(invoke(signed_event(payload, discord_keys.signing_hex))["body"])
    # Then only the bot's own DM gets a turn; elsewhere an ephemeral refusal and nothing queued
    sent = boto3.client("sqs").receive_message(QueueUrl=resources.turn_queue_url)
    assert ("Messages" in sent) is queued
    assert body["type"] == (5 if queued else 4)


def test_every_command_is_installed_to_servers_and_usable_only_in_servers_or_the_bots_dm():
    from kioku.services.commands.registry import definitions

    for definition in definitions():
        assert definition["integration_types"] == [0]
        expected = [0, 1] if definition["dm_permission"] else [0]
        assert definition["contexts"] == expected, definition["name"]


@pytest.mark.parametrize(
    ("depth", "answer"), [(900, "not a valid Discord interaction"), (100_000, "not JSON")]
)
def test_deeply_nested_json_is_a_400_not_a_crash(invoke, discord_keys, depth, answer):
    # Given a signed body nested deep (within the size limit), or deeper than the parser goes
    nested = "[" * depth + "]" * depth
    body = f'{{"type":2,"id":"1","application_id":"{APPLICATION_ID}","token":"t","data":{nested}}}'.encode()
    # When
    response = invoke(signed_event(body, discord_keys.signing_hex))
    # Then a clear 400
    assert response["statusCode"] == 400
    assert answer in response["body"]
