"""Write ``events/``: signed sample events for ``sam local invoke`` and ``events/env.json``.

The events are signed with a documented THROW-AWAY key (derived from a public phrase, so it is
no secret and must never be used for a real application). Signatures carry a timestamp and the
endpoint refuses ones older than five minutes: run ``make events`` right before invoking.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kioku.discord.models import parse_message
from kioku.discord.protocol import GatewayEvent, MessageType
from kioku.domain.turn_jobs import TurnJob
from kioku.playground.events import ping, signed_event, slash_command
from kioku.signatures import public_key_of

THROWAWAY_PHRASE = b"kioku throw-away test key - never use for a real application"
THROWAWAY_SIGNING_KEY = hashlib.sha256(THROWAWAY_PHRASE).hexdigest()
THROWAWAY_PUBLIC_KEY = public_key_of(THROWAWAY_SIGNING_KEY)
APPLICATION_ID = "100000000000000001"
EVENTS_DIR = Path(__file__).resolve().parents[4] / "events"


LOCAL_AWS = "http://host.docker.internal:5000"
FUNCTIONS = ("InteractionsFunction", "RelayFunction", "TurnFunction", "JanitorFunction")


def sam_local_env() -> dict:
    """``--env-vars events/env.json``: sam local only overrides variables the template declares."""
    declared = {
        "TABLE_NAME": "kioku-KiokuTable",
        "TURN_QUEUE_URL": f"{LOCAL_AWS}/000000000000/kioku-TurnQueue.fifo",
        "DISCORD_APPLICATION_ID": APPLICATION_ID,
        "DISCORD_PUBLIC_KEY": THROWAWAY_PUBLIC_KEY,
        "RELAY_PUBLIC_KEY": THROWAWAY_PUBLIC_KEY,
        "KIOKU_SECRET_ARN": "",
    }
    return {function: dict(declared) for function in FUNCTIONS}


def sam_local_container_env() -> dict:
    """``--container-env-vars events/container-env.json``: what the template leaves out on purpose
    (secrets, endpoint overrides) for a local run against ``moto_server -p 5000``."""
    return {
        "DISCORD_BOT_TOKEN": "local-bot-token",
        # the layer has no scripted model (a function refuses LLM_PROVIDER=scripted): a turn asks
        # the template's LlmBaseUrl, or the OpenAI-compatible server env.json's LLM_BASE_URL names
        "LLM_API_KEY": "local-llm-key",
        "AWS_ENDPOINT_URL_DYNAMODB": LOCAL_AWS,
        "AWS_ENDPOINT_URL_SQS": LOCAL_AWS,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
    }


def relay_dispatch() -> dict:
    """A message mentioning the bot, as the relay forwards it."""
    return {
        "t": GatewayEvent.MESSAGE_CREATE,
        "d": {
            "id": "700000000000000001",
            "channel_id": "300000000000000001",
            "guild_id": "200000000000000001",
            "author": {"id": "400000000000000001", "username": "alice", "global_name": "Alice", "bot": False},
            "member": {"nick": None, "roles": []},
            "content": f"<@{APPLICATION_ID}> hello!",
            "timestamp": "2026-11-30T00:00:00.000000+00:00",
            "type": MessageType.DEFAULT,
            "mentions": [{"id": APPLICATION_ID, "username": "kioku", "bot": True}],
            "attachments": [],
            "embeds": [],
        },
    }


def turn_queue_event() -> dict:
    """What Lambda hands TurnFunction for one queued turn (SQS FIFO)."""
    job = TurnJob.from_message(parse_message(relay_dispatch()["d"]))
    return {
        "Records": [
            {
                "messageId": "00000000-0000-0000-0000-000000000001",
                "receiptHandle": "local-receipt-handle",
                "body": job.to_json(),
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "MessageGroupId": job.channel_id,
                    "MessageDeduplicationId": f"message-{job.turn_id}",
                },
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:kioku-TurnQueue.fifo",
                "awsRegion": "us-east-1",
            }
        ]
    }


def write_events(directory: Path = EVENTS_DIR) -> list[Path]:
    directory.mkdir(exist_ok=True)
    signed = {
        "interactions-ping.json": ping(APPLICATION_ID),
        "interactions-help-stm.json": slash_command(APPLICATION_ID, "help", "stm"),
        "relay-mention.json": relay_dispatch(),
    }
    files = {name: signed_event(payload, THROWAWAY_SIGNING_KEY) for name, payload in signed.items()}
    files["turn-sqs.json"] = turn_queue_event()
    files["janitor-schedule.json"] = {
        "source": "aws.scheduler",
        "detail-type": "Scheduled Event",
        "detail": {},
    }
    files["env.json"] = sam_local_env()
    files["container-env.json"] = sam_local_container_env()
    written = []
    for name, content in files.items():
        path = directory / name
        path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n")
        written.append(path)
    return written


def run(argv: list[str] | None = None) -> int:
    for path in write_events():
        print(f"wrote {path.relative_to(EVENTS_DIR.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
