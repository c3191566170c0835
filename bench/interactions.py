"""Cold start and warm PING of the interactions function."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nacl.signing import VerifyKey

from kioku.playground.events import ping, signed_event
from kioku.playground.functions import LambdaContext, load_handler
from kioku.signatures import SIGNATURE_HEADER, TIMESTAMP_HEADER, new_key_pair

COLD_RUNS = 9
WARM_CALLS = 2000
APPLICATION_ID = "100000000000000001"
COLD_PING = Path(__file__).with_name("cold_ping.py")


def _environment(signing_hex: str, public_hex: str) -> dict[str, str]:
    return {
        "TABLE_NAME": "kioku-bench",
        "TURN_QUEUE_URL": "https://sqs.local/000000000000/kioku.fifo",
        "DISCORD_APPLICATION_ID": APPLICATION_ID,
        "DISCORD_PUBLIC_KEY": public_hex,
        "RELAY_PUBLIC_KEY": public_hex,
        "BENCH_SIGNING_KEY": signing_hex,
        "AWS_DEFAULT_REGION": "us-east-1",
        "PYDANTIC_DISABLE_PLUGINS": "__all__",  # as template.yaml sets it
    }


def _wall(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def cold_start(env: dict[str, str]) -> None:
    full_env = {**os.environ, **env}
    bare = [_wall([sys.executable, "-c", "pass"], full_env) for _ in range(COLD_RUNS)]
    cold = [_wall([sys.executable, str(COLD_PING)], full_env) for _ in range(COLD_RUNS)]
    outcome = json.loads(
        subprocess.run(
            [sys.executable, str(COLD_PING)], env=full_env, capture_output=True, check=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    bare_ms, cold_ms = statistics.median(bare) * 1000, statistics.median(cold) * 1000
    print(f"interactions.cold_ping_ms median={cold_ms:.1f} (runs={COLD_RUNS})")
    print(f"interactions.bare_interpreter_ms median={bare_ms:.1f}")
    print(f"interactions.cold_ping_overhead_ms={cold_ms - bare_ms:.1f} target<=150")
    print(f"interactions.cold_ping_heavy_modules={outcome['loaded'] or 'none'}")


def warm_ping(env: dict[str, str]) -> None:
    os.environ.update(env)
    handler = load_handler("interactions")
    context = LambdaContext()
    events = [signed_event(ping(APPLICATION_ID), env["BENCH_SIGNING_KEY"]) for _ in range(WARM_CALLS)]
    key = VerifyKey(bytes.fromhex(env["DISCORD_PUBLIC_KEY"]))
    handler(events[0], context)

    handler_times = []
    for event in events:
        started = time.perf_counter()
        response = handler(event, context)
        handler_times.append(time.perf_counter() - started)
        assert response["statusCode"] == 200
    verify_times = []
    for event in events:
        message = event["headers"][TIMESTAMP_HEADER].encode() + event["body"].encode()
        signature = bytes.fromhex(event["headers"][SIGNATURE_HEADER])
        started = time.perf_counter()
        key.verify(message, signature)
        verify_times.append(time.perf_counter() - started)
    handler_us = statistics.median(handler_times) * 1e6
    verify_us = statistics.median(verify_times) * 1e6
    print(f"interactions.warm_ping_us median={handler_us:.1f} (calls={WARM_CALLS})")
    print(f"interactions.raw_verify_us median={verify_us:.1f}")
    print(f"interactions.warm_ping_ratio={handler_us / verify_us:.2f}x target<=2x")


def main() -> None:
    signing_hex, public_hex = new_key_pair()
    env = _environment(signing_hex, public_hex)
    cold_start(env)
    warm_ping(env)
