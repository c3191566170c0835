"""Cold start of the sam-built artifact, run the way Lambda runs it: ``python3.13 -I`` with only the
function's directory, the layer's ``python/`` and the runtime's boto3 on ``sys.path``, next to a bare
``python3.13 -I -c pass`` in the same run.

``make bench`` builds the artifact for this host (``.aws-sam/bench-<arch>``) and sets
``BENCH_BUILD_DIR``; boto3 for the runtime's place is pip-installed once beside it (the Lambda
runtime provides it; the layer does not bundle it). ``/chat`` and the relay event reach SQS (and
DynamoDB) on a local moto server.

The embedded model is measured the same way, with the turn worker's two layers on the path: its load
(imports, tokenizer, ONNX session) and one query, in CPU seconds of the process as well as wall-clock
(``cold.artifact.embedded_model_*``; docs/memory.md).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kioku.playground.aws import MotoServer, create_local_resources
from kioku.playground.events import ping, signed_event, slash_command
from kioku.playground.stack import gateway_dispatch
from kioku.playground.standins import DiscordStandIn
from kioku.signatures import new_key_pair

RUNS = 7
APPLICATION_ID = "100000000000000001"
TARGET_MS = {"ping": 150, "chat": 300, "relay": 300, "relay_read": 300}
"""Over the bare interpreter, on a quiet machine (issue 41 item 6: a PING 150 ms, the rest 300)."""
# What runs inside the cold interpreter: Lambda's path order (/var/task, /opt/python, /var/runtime).
DRIVER = """
import json, sys, time
started = time.perf_counter()
sys.path[:0] = json.loads(sys.argv[1])
event = json.loads(sys.stdin.read())
import app
class Context:
    function_name = "kioku-bench"; function_version = "$LATEST"; memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:kioku-bench"
    aws_request_id = "bench"
    def get_remaining_time_in_millis(self): return 30_000
response = app.lambda_handler(event, Context())
# botocore.client, not botocore: Powertools imports botocore's package (its user agent hook) alone
heavy = sorted(m for m in ("boto3", "botocore.client", "pydantic", "aws_lambda_powertools", "httpx") if m in sys.modules)
print(json.dumps({"status": response["statusCode"], "heavy": heavy, "in_process": time.perf_counter() - started}))
"""


def python313() -> str:
    found = shutil.which("python3.13")
    if not found:
        raise SystemExit("python3.13 not found: install it (pyenv install 3.13) or put it on PATH")
    return found


def runtime_boto3(build_dir: Path, python: str) -> Path:
    """boto3 where the Lambda runtime keeps it (/var/runtime), installed once per build dir."""
    target = build_dir.parent / (build_dir.name + "-runtime")
    if not (target / "boto3").is_dir():
        subprocess.run(
            [
                python,
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--target",
                str(target),
                "boto3",
            ],
            check=True,
        )
    return target


def _wall(command: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, input=stdin, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the artifact failed:\n{done.stderr}")
    return elapsed, done.stdout


@contextmanager
def artifact_setup() -> Iterator[tuple[dict[str, str], dict[str, tuple[str, Callable[[int], dict]]]]]:
    """A moto server with the stack's table and queue, the functions' environment, and the cases:
    each a function and the ``i``-th event to send it (every event its own id)."""
    signing, public = new_key_pair()
    relay_signing, relay_public = new_key_pair()
    with MotoServer() as moto:
        os.environ.update(
            AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
        )
        import boto3

        resources = create_local_resources(
            boto3.client("dynamodb", endpoint_url=moto.url), boto3.client("sqs", endpoint_url=moto.url)
        )
        env = {
            "PATH": os.environ["PATH"],
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_DYNAMODB": moto.url,
            "AWS_ENDPOINT_URL_SQS": moto.url,
            "TABLE_NAME": resources.table_name,
            "TURN_QUEUE_URL": resources.turn_queue_url,
            "DISCORD_APPLICATION_ID": APPLICATION_ID,
            "DISCORD_PUBLIC_KEY": public,
            "RELAY_PUBLIC_KEY": relay_public,
            # as Lambda sets it: the turn queue's calls then go by adapters/sqs_http.py, as deployed
            # (neither function makes a model, so the provider is left at its default)
            "AWS_LAMBDA_FUNCTION_NAME": "kioku-bench",
            # as template.yaml sets them
            "PYDANTIC_DISABLE_PLUGINS": "__all__",
            "POWERTOOLS_SERVICE_NAME": "kioku",
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }
        with DiscordStandIn(
            token="bench", bot_user_id=APPLICATION_ID, bot_username="kioku", application_id=APPLICATION_ID
        ) as discord:
            author = discord.seed_user("alice", global_name="Alice")
            message = discord.seed_message("300000000000000001", author, f"<@{APPLICATION_ID}> hello")
        message["mentions"] = [{"id": APPLICATION_ID, "username": "kioku", "bot": True}]
        unaddressed = {**message, "content": "kioku, hello", "mentions": []}
        yield (
            env,
            {
                "ping": ("InteractionsFunction", lambda i: signed_event(ping(APPLICATION_ID), signing)),
                "chat": (
                    "InteractionsFunction",
                    lambda i: signed_event(
                        slash_command(APPLICATION_ID, "chat", None, {"message": "hi"}, token=f"t{i}"), signing
                    ),
                ),
                "relay": (
                    "RelayFunction",
                    lambda i: relay_event({**message, "id": f"{message['id']}{i}"}, relay_signing),
                ),
                # a message that names no one: whether a trigger word calls kioku is the server's to say,
                # so the relay reads its configuration (one GetItem; none is stored: not for the bot)
                "relay_read": (
                    "RelayFunction",
                    lambda i: relay_event({**unaddressed, "id": f"{message['id']}{i}"}, relay_signing),
                ),
            },
        )


def main() -> None:
    build_dir = Path(os.environ.get("BENCH_BUILD_DIR", ".aws-sam/bench"))
    layer = build_dir / "KiokuLayer" / "python"
    if not (layer / "kioku").is_dir():
        print(f"cold.artifact=missing (no {layer}/kioku: run make bench, which builds it)")
        return
    python = python313()
    runtime = runtime_boto3(build_dir, python)
    with artifact_setup() as (env, cases):
        bare = [_wall([python, "-I", "-c", "pass"], env)[0] for _ in range(RUNS)]
        bare_ms = statistics.median(bare) * 1000
        print(f"cold.bare_interpreter_seconds={bare_ms / 1000:.4f} (median of {RUNS}, {python} -I -c pass)")
        for name, (function, make_event) in cases.items():
            paths = json.dumps([str(build_dir / function), str(layer), str(runtime)])
            command = [python, "-I", "-c", DRIVER, paths]
            runs = [_wall(command, env, json.dumps(make_event(i))) for i in range(RUNS)]
            outcome = json.loads(runs[-1][1].strip().splitlines()[-1])
            cold_ms = statistics.median(r[0] for r in runs) * 1000
            print(
                f"cold.artifact.{name}_seconds={cold_ms / 1000:.4f} (median of {RUNS}, HTTP {outcome['status']})"
            )
            print(
                f"cold.artifact.{name}_over_bare_ms={cold_ms - bare_ms:.1f}"
                + (f" target<={TARGET_MS[name]}" if name in TARGET_MS else "")
            )
            print(f"cold.artifact.{name}_heavy_modules={','.join(outcome['heavy']) or 'none'}")

    embeddings_layer = build_dir / "EmbeddingsLayer" / "python"
    if embeddings_layer.is_dir():
        embedded_model(python, [str(embeddings_layer), str(layer)])


MODEL_DRIVER = """
import json, sys, time
sys.path[:0] = json.loads(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
from kioku.adapters.embedded_model import EmbeddedModel
model = EmbeddedModel.load()
loaded = (time.perf_counter() - wall, time.process_time() - cpu)
wall, cpu = time.perf_counter(), time.process_time()
model.embed(["What activities does Melanie partake in?"])
print(json.dumps({"load": loaded, "query": (time.perf_counter() - wall, time.process_time() - cpu)}))
"""


def embedded_model(python: str, paths: list[str]) -> None:
    """The embedded model's cold load and first query from the built layers (median of ``RUNS``)."""
    runs = [
        json.loads(
            _wall([python, "-I", "-c", MODEL_DRIVER, json.dumps(paths)], {})[1].strip().splitlines()[-1]
        )
        for _ in range(RUNS)
    ]
    for step in ("load", "query"):
        wall, cpu = (statistics.median(run[step][i] for run in runs) for i in (0, 1))
        print(f"cold.artifact.embedded_model_{step}_seconds={wall:.4f} cpu={cpu:.4f} (median of {RUNS})")


def relay_event(message: dict, signing: str) -> dict:
    return signed_event(gateway_dispatch(message, "200000000000000001", {"nick": None, "roles": []}), signing)


if __name__ == "__main__":
    sys.exit(main())
