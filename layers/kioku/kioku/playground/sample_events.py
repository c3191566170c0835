"""Write ``events/``: signed sample events for ``sam local invoke`` and ``events/env.json``.

The events are signed with a documented THROW-AWAY key (derived from a public phrase, so it is
no secret and must never be used for a real application). Signatures carry a timestamp and the
endpoint refuses ones older than five minutes: run ``make events`` right before invoking.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nacl.signing import SigningKey

from kioku.playground.events import ping, signed_event, slash_command

THROWAWAY_PHRASE = b"kioku throw-away test key - never use for a real application"
THROWAWAY_SIGNING_KEY = hashlib.sha256(THROWAWAY_PHRASE).hexdigest()
THROWAWAY_PUBLIC_KEY = bytes(SigningKey(bytes.fromhex(THROWAWAY_SIGNING_KEY)).verify_key).hex()
APPLICATION_ID = "100000000000000001"
EVENTS_DIR = Path(__file__).resolve().parents[4] / "events"


def sam_local_env() -> dict:
    """``sam local invoke --env-vars events/env.json``: point the functions at a local moto_server."""
    common = {
        "TABLE_NAME": "kioku-KiokuTable",
        "TURN_QUEUE_URL": "http://host.docker.internal:5000/000000000000/kioku-TurnQueue.fifo",
        "DISCORD_APPLICATION_ID": APPLICATION_ID,
        "DISCORD_PUBLIC_KEY": THROWAWAY_PUBLIC_KEY,
        "RELAY_PUBLIC_KEY": THROWAWAY_PUBLIC_KEY,
        "DISCORD_BOT_TOKEN": "local-bot-token",
        "LLM_PROVIDER": "scripted",
        "LLM_API_KEY": "local-llm-key",
        "KIOKU_SECRET_ARN": "",
        "AWS_ENDPOINT_URL_DYNAMODB": "http://host.docker.internal:5000",
        "AWS_ENDPOINT_URL_SQS": "http://host.docker.internal:5000",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
    }
    return {"InteractionsFunction": common}


def write_events(directory: Path = EVENTS_DIR) -> list[Path]:
    directory.mkdir(exist_ok=True)
    samples = {
        "interactions-ping.json": ping(APPLICATION_ID),
        "interactions-help-stm.json": slash_command(APPLICATION_ID, "help", "stm"),
    }
    written = []
    for name, payload in samples.items():
        path = directory / name
        path.write_text(json.dumps(signed_event(payload, THROWAWAY_SIGNING_KEY), indent=2) + "\n")
        written.append(path)
    env_path = directory / "env.json"
    env_path.write_text(json.dumps(sam_local_env(), indent=2) + "\n")
    written.append(env_path)
    return written


def run(argv: list[str] | None = None) -> int:
    for path in write_events():
        print(f"wrote {path.relative_to(EVENTS_DIR.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
