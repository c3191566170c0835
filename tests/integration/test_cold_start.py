"""What a cold PING (and a cold rejection) imports, measured in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kioku.discord.interactions import ResponseType
from tests.conftest import APPLICATION_ID

COLD_PING = Path(__file__).resolve().parents[2] / "bench" / "cold_ping.py"


def function_env(discord_keys, **extra_env: str) -> dict[str, str]:
    """The environment a function of the stack starts with, and ``extra_env``."""
    return {
        **os.environ,
        "TABLE_NAME": "kioku-table",
        "TURN_QUEUE_URL": "https://sqs.local/000000000000/kioku.fifo",
        "DISCORD_APPLICATION_ID": APPLICATION_ID,
        "DISCORD_PUBLIC_KEY": discord_keys.public_hex,
        "RELAY_PUBLIC_KEY": discord_keys.public_hex,
        **extra_env,
    }


def last_line(command: list[str], env: dict[str, str], stdin: str | None = None) -> dict:
    """What ``command``, run in a fresh interpreter, printed last (a JSON object)."""
    result = subprocess.run(command, env=env, input=stdin, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_cold(discord_keys, **extra_env) -> dict:
    env = function_env(discord_keys, BENCH_SIGNING_KEY=discord_keys.signing_hex, **extra_env)
    return last_line([sys.executable, str(COLD_PING)], env)


def test_a_cold_ping_imports_only_the_standard_library_and_pynacl(discord_keys):
    outcome = run_cold(discord_keys)
    assert outcome["status"] == 200 and json.loads(outcome["body"]) == {"type": 1}
    assert outcome["loaded"] == []


@pytest.mark.parametrize("tamper", ["1"])
def test_a_cold_rejection_imports_neither(discord_keys, tamper):
    outcome = run_cold(discord_keys, BENCH_TAMPER=tamper)
    assert outcome["status"] == 401
    assert outcome["loaded"] == []


def test_the_interactions_endpoint_takes_only_the_interaction_types_of_kioku_discord():
    # a PING needs two enums; the rest of Discord's protocol (and the message models) waits for a command
    script = (
        "import sys, kioku.entrypoints.interactions; print(sorted(m for m in sys.modules if 'discord' in m))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout.replace("'", '"')) == ["kioku.discord", "kioku.discord.interactions"]


def test_the_turn_worker_imports_no_model_runtime_before_it_first_embeds(discord_keys):
    # A fresh turn worker, its container's turn service and embedder built (nothing set: the
    # embedded model): onnxruntime, tokenizers and numpy wait for the first text embedded
    script = (
        "import sys, kioku.entrypoints.turn_worker;"
        "from kioku.entrypoints.composition import container;"
        "parts = container(); parts.turn_service; parts.embedder;"
        "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'numpy', 'kioku.adapters.embedded_model')"
        " if m in sys.modules))"
    )
    env = function_env(
        discord_keys, DISCORD_BOT_TOKEN="test-bot-token", LLM_API_KEY="test-llm-key", LLM_MODEL="test-model"
    )
    env.pop("EMBEDDINGS_MODEL", None)
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "path",
    [
        # /chat: the interactions endpoint, its router with every command, the queue it enqueues on
        "kioku.entrypoints.interactions, kioku.services.commands.router, kioku.adapters.turn_queue",
        # the relay's message: its entry point, the job it queues, the config it may read
        "kioku.entrypoints.relay, kioku.domain.turn_jobs, kioku.adapters.turn_queue,"
        " kioku.adapters.dynamodb.config_store",
    ],
)
def test_chat_and_the_relays_message_import_no_http_client(path):
    # Neither makes an HTTP request of its own: httpx waits for a command that calls Discord
    script = f"import sys, {path}; print('httpx' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


CHAT_DISPATCH = """
import json, sys
from types import SimpleNamespace
from kioku.playground.events import slash_command
from kioku.services.commands.router import route_interaction
queued = []
context = SimpleNamespace(turn_queue=SimpleNamespace(enqueue=queued.append))
answer = route_interaction(slash_command("100000000000000001", "chat", None, {"message": "hi"}), context)
loaded = sorted(
    m for m in sys.modules
    if m.startswith(("kioku.domain.ltm", "kioku.adapters.dynamodb")) or m.startswith("kioku.services.commands.")
)
domain = sorted(m for m in sys.modules if m.startswith("kioku.domain."))
print(json.dumps({"type": answer["type"], "queued": len(queued), "loaded": loaded, "domain": domain}))
"""


def test_a_chat_loads_only_its_own_command_module_and_no_memory_rules():
    # Given a fresh interpreter, When a /chat is routed, Then it is queued having loaded the chat
    # command's module alone: no other command, no long-term memory rules, no DynamoDB store
    result = subprocess.run([sys.executable, "-c", CHAT_DISPATCH], capture_output=True, text=True, check=True)
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["type"] == ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE and outcome["queued"] == 1
    assert outcome["loaded"] == [
        "kioku.services.commands.base",
        "kioku.services.commands.chat",
        "kioku.services.commands.context",
        "kioku.services.commands.custom_ids",
        "kioku.services.commands.error_replies",
        "kioku.services.commands.guild_admin",
        "kioku.services.commands.registry",
        "kioku.services.commands.router",
    ]


def test_a_chat_reads_the_persona_name_limit_without_the_settings_rules():
    # /chat's persona: option takes its length from a leaf: the settings rules (and the server's
    # models, short-term memory entries, text rules behind them) wait for a command that edits
    result = subprocess.run([sys.executable, "-c", CHAT_DISPATCH], capture_output=True, text=True, check=True)
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["queued"] == 1
    assert outcome["domain"] == ["kioku.domain.persona_limits", "kioku.domain.turn_jobs"]


def test_the_turn_queue_makes_its_client_without_boto3():
    # /chat and the relay's message reach only SQS: botocore makes the client, boto3 and s3transfer
    # (what only the DynamoDB stores need) are not imported
    script = (
        "import sys; from kioku.adapters.turn_queue import TurnQueue;"
        "TurnQueue('https://sqs.us-east-1.amazonaws.com/000000000000/kioku.fifo');"
        "print(sorted(m for m in ('boto3', 's3transfer', 'botocore') if m in sys.modules))"
    )
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "['botocore']"


def test_the_relays_addressing_and_persona_rules_load_no_turn_or_memory_rules():
    # Who a relayed message calls is decided with domain.addressing and domain.personas; the turn's
    # context and the long-term memory rules wait for the turn worker
    script = (
        "import sys, kioku.entrypoints.relay, kioku.domain.personas, kioku.domain.turn_jobs;"
        "print(sorted(m for m in sys.modules if m.startswith(('kioku.domain.ltm', 'kioku.domain.turn.'))"
        " or m == 'kioku.domain.turn'))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


RELAY_MESSAGE = """
import json, sys
from types import SimpleNamespace
from kioku.entrypoints import composition, relay
queued = []
composition.container().__dict__["turn_queue"] = SimpleNamespace(enqueue=queued.append)
response = relay.handle(json.loads(sys.stdin.read()))
loaded = {name: name in sys.modules for name in ("pydantic", "importlib.resources")}
print(json.dumps({"status": response["statusCode"], "queued": len(queued), **loaded}))
"""


def test_a_relayed_message_is_queued_without_pydantic(discord_keys):
    # Given a DM to the bot, signed by the relay, in a fresh interpreter with the container's queue
    # in hand: its settings are read and checked with the standard library (kioku.config), and the
    # message is parsed into kioku.discord's dataclasses, so pydantic is never imported; nor is
    # importlib.resources, which only the look-alike table (read when text is compared) needs
    from kioku.playground.events import signed_event
    from kioku.playground.stack import gateway_dispatch

    message = {
        "id": "300000000000000009",
        "channel_id": "300000000000000001",
        "author": {"id": "400000000000000001", "username": "alice"},
        "content": "hello",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "type": 0,
    }
    event = signed_event(gateway_dispatch(message, None, None), discord_keys.signing_hex)
    env = function_env(discord_keys, POWERTOOLS_METRICS_DISABLED="true")
    outcome = last_line([sys.executable, "-c", RELAY_MESSAGE], env, json.dumps(event))
    assert outcome == {"status": 202, "queued": 1, "pydantic": False, "importlib.resources": False}


CHAT_COLD = """
import json, sys
from types import SimpleNamespace
from kioku.entrypoints import composition, interactions
queued = []
composition.container().__dict__["turn_queue"] = SimpleNamespace(enqueue=queued.append)
responses = [interactions.handle(json.loads(line)) for line in sys.stdin]
answers = [[response["statusCode"], json.loads(response["body"])] for response in responses]
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("pydantic", "pydantic_core"))
print(json.dumps({"answers": answers, "queued": len(queued), "pydantic": loaded}))
"""


def test_a_cold_chat_imports_no_pydantic(discord_keys):
    # Given a fresh interactions function, its container's queue in hand: a /chat, then a /chat whose
    # member is malformed (a user id in Arabic-Indic digits). The interaction is parsed with the
    # standard library (kioku.discord.interaction) and the settings too (kioku.config), so neither the
    # queued turn nor the 400 ever imports pydantic
    from kioku.playground.events import signed_event, slash_command

    chat = slash_command(APPLICATION_ID, "chat", None, {"message": "hi"})
    malformed = slash_command(APPLICATION_ID, "chat", None, {"message": "hi"}, user_id="١٢٣")
    events = [signed_event(payload, discord_keys.signing_hex) for payload in (chat, malformed)]
    env = function_env(discord_keys, POWERTOOLS_METRICS_DISABLED="true")
    stdin = "".join(json.dumps(event) + "\n" for event in events)
    outcome = last_line([sys.executable, "-c", CHAT_COLD], env, stdin)
    assert outcome == {
        "answers": [
            [200, {"type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE}],
            [400, {"error": "body is not a valid Discord interaction"}],
        ],
        "queued": 1,
        "pydantic": [],
    }


@pytest.mark.parametrize(
    ("made", "service"),
    [
        ("TurnQueue('https://sqs.us-east-1.amazonaws.com/000000000000/kioku.fifo')._client", "sqs"),
        ("KiokuTable('kioku-table').client", "dynamodb"),
    ],
)
def test_the_queue_and_the_table_make_their_clients_without_listing_every_service(made, service):
    # botocore checks a service's name against every service's directories (about 850 listings,
    # twice: the model, then its endpoint rules); each client is made by a loader told its service
    script = (
        "import os, sys; from kioku.adapters.turn_queue import TurnQueue;"
        "from kioku.adapters.dynamodb.table import KiokuTable;"
        "listed = []; real = os.listdir;"
        "os.listdir = lambda path='.': listed.append(path) or real(path);"
        f"client = {made};"
        "print(len(listed), client.meta.service_model.service_name, client.meta.region_name)"
    )
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    listings, named, region = result.stdout.split()
    assert int(listings) < 20 and (named, region) == (service, "us-east-1")


def test_where_lambda_runs_the_turn_queue_loads_no_botocore():
    # A function Lambda runs, its role's credentials in the environment: the queue's two calls are
    # signed with the standard library (adapters/sqs_http.py), so botocore is never imported
    script = (
        "import sys; from kioku.adapters.turn_queue import TurnQueue;"
        "queue = TurnQueue('https://sqs.us-east-1.amazonaws.com/000000000000/kioku.fifo');"
        "print(type(queue._client).__name__, sorted(m for m in ('boto3', 'botocore') if m in sys.modules))"
    )
    env = {
        **os.environ,
        "AWS_LAMBDA_FUNCTION_NAME": "kioku-RelayFunction",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "key",
        "AWS_SECRET_ACCESS_KEY": "secret",
    }
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "SqsHttp []"


RELAY_READING_CONFIG = """
import json, sys
from types import SimpleNamespace
from kioku.entrypoints import composition, relay
queued = []
composition.container().__dict__["turn_queue"] = SimpleNamespace(enqueue=queued.append)
response = relay.handle(json.loads(sys.stdin.read()))
loaded = sorted(m for m in ("boto3", "botocore.session", "botocore.client") if m in sys.modules)
print(json.dumps({"status": response["statusCode"], "queued": len(queued), "loaded": loaded}))
"""


def test_where_lambda_runs_a_relayed_message_reads_the_configuration_without_botocore(discord_keys):
    # Given a server whose trigger word is "kioku", stored in moto's server, and a message there
    # naming no one but the word: whether it calls kioku is the configuration's to say, so the relay
    # reads it (one GetItem). Where Lambda runs, that read is signed with the standard library
    # (adapters/dynamodb/lambda_client.py): neither boto3 nor botocore's client is ever made
    import boto3

    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.adapters.dynamodb.table import KiokuTable
    from kioku.domain.models import ServerConfig
    from kioku.playground.aws import MotoServer, create_table, load_template
    from kioku.playground.events import signed_event
    from kioku.playground.stack import gateway_dispatch

    guild = "200000000000000001"
    message = {
        "id": "300000000000000009",
        "channel_id": "300000000000000001",
        "author": {"id": "400000000000000001", "username": "alice"},
        "content": "kioku, hello",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "type": 0,
    }
    event = signed_event(gateway_dispatch(message, guild, None), discord_keys.signing_hex)
    credentials = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}
    with MotoServer() as moto:
        client = boto3.client(
            "dynamodb",
            endpoint_url=moto.url,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        create_table(client, load_template(), "kioku-table")
        outcomes = []
        for trigger_words in ((), ("kioku",)):
            ConfigStore(KiokuTable("kioku-table", client)).save_server_config(
                ServerConfig(guild_id=guild, trigger_words=trigger_words, version=len(outcomes))
            )
            env = function_env(
                discord_keys,
                **credentials,
                AWS_LAMBDA_FUNCTION_NAME="kioku-RelayFunction",
                AWS_ENDPOINT_URL_DYNAMODB=moto.url,
                POWERTOOLS_METRICS_DISABLED="true",
            )
            outcomes.append(last_line([sys.executable, "-c", RELAY_READING_CONFIG], env, json.dumps(event)))
    # the stored word, read over HTTP, is what called kioku
    assert outcomes == [
        {"status": 204, "queued": 0, "loaded": []},
        {"status": 202, "queued": 1, "loaded": []},
    ]
