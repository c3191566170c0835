"""Shared fixtures: fake AWS credentials, moto (in-process and over HTTP), generated keys, settings."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto import mock_aws

from kioku.adapters.dynamodb.table import KiokuTable
from kioku.config import Settings
from kioku.playground.aws import LocalResources, MotoServer, create_local_resources
from kioku.signatures import new_key_pair
from tests.botocore_models import share_builtin_handlers, share_service_models
from tests.embedded_model_once import load_embedded_model_once
from tests.moto_expressions import parse_expressions_once
from tests.shared_tls import share_tls_context

pytest_plugins = ("tests.slow_first",)  # the slowest tests start first on every worker

REGION = "us-east-1"
APPLICATION_ID = "100000000000000001"


share_service_models()  # tests/botocore_models.py: each test's sessions, one parse of AWS's models
share_builtin_handlers()  # and one registration of botocore's built-in handlers, copied into each
parse_expressions_once()  # tests/moto_expressions.py: moto parses each DynamoDB expression once
share_tls_context()  # tests/shared_tls.py: httpx's clients share one default TLS context
load_embedded_model_once()  # tests/embedded_model_once.py: the ONNX session read once, then handed out


@pytest.fixture(autouse=True)
def _isolated_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test ever reaches real AWS: fake credentials, a fixed region, no endpoint overrides."""
    for name in list(os.environ):
        if name.startswith("AWS_ENDPOINT_URL") or name in {"AWS_PROFILE", "AWS_SESSION_TOKEN"}:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@dataclass(frozen=True)
class KeyPair:
    signing_hex: str
    public_hex: str


@pytest.fixture(scope="session")
def discord_keys() -> KeyPair:
    return KeyPair(*new_key_pair())


@pytest.fixture(scope="session")
def relay_keys() -> KeyPair:
    return KeyPair(*new_key_pair())


@pytest.fixture
def aws() -> Iterator[None]:
    """moto in-process; started before any client is made."""
    with mock_aws():
        yield


@pytest.fixture
def resources(aws) -> LocalResources:
    """The template's table and queues on in-process moto."""
    return create_local_resources(boto3.client("dynamodb"), boto3.client("sqs"))


@pytest.fixture
def table(resources: LocalResources) -> KiokuTable:
    return KiokuTable(resources.table_name)


@pytest.fixture
def env(monkeypatch, resources: LocalResources, discord_keys: KeyPair, relay_keys: KeyPair) -> dict[str, str]:
    """The environment a deployed function would see, pointing at in-process moto."""
    values = {
        "TABLE_NAME": resources.table_name,
        "TURN_QUEUE_URL": resources.turn_queue_url,
        "TURN_DEAD_LETTER_QUEUE_URL": resources.dead_letter_queue_url,
        "DISCORD_APPLICATION_ID": APPLICATION_ID,
        "DISCORD_PUBLIC_KEY": discord_keys.public_hex,
        "RELAY_PUBLIC_KEY": relay_keys.public_hex,
        "DISCORD_BOT_TOKEN": "test-bot-token",
        "LLM_PROVIDER": "scripted",
        "LLM_API_KEY": "test-llm-key",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.fixture
def settings(env: dict[str, str]) -> Settings:
    return Settings.from_environ(env)


@dataclass(frozen=True)
class RemoteAws:
    """moto over real HTTP (single-threaded), with the template's resources created on it."""

    url: str
    resources: LocalResources

    def dynamodb_client(self):
        return boto3.client("dynamodb", endpoint_url=self.url)

    def table(self) -> KiokuTable:
        """A fresh client per call: two tables are two Lambda containers."""
        return KiokuTable(self.resources.table_name, client=self.dynamodb_client())


@pytest.fixture
def moto_server() -> Iterator[RemoteAws]:
    with MotoServer() as server:
        dynamodb = boto3.client("dynamodb", endpoint_url=server.url)
        sqs = boto3.client("sqs", endpoint_url=server.url)
        yield RemoteAws(url=server.url, resources=create_local_resources(dynamodb, sqs))


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    """Each test reads the environment it set up and makes its own clients, as a cold start would."""
    from kioku.config import get_settings
    from kioku.entrypoints import composition

    get_settings.cache_clear()
    composition.forget()
    _forget_metrics()
    yield
    get_settings.cache_clear()
    composition.forget()
    _forget_metrics()


def _forget_metrics() -> None:
    """Powertools keeps one process-wide set of metrics: one a test added outside a Lambda
    invocation (a record handler called directly) would be printed with the next test's."""
    import sys

    observability = sys.modules.get("kioku.observability")
    if observability is not None:
        observability.metrics.clear_metrics()


@pytest.fixture
def interact(env, discord_keys):
    """Send a signed interaction payload through InteractionsFunction; the decoded response body."""
    import json

    from kioku.playground.events import signed_event
    from kioku.playground.functions import LambdaContext, load_handler

    handler = load_handler("interactions")

    def send(payload: dict) -> dict:
        response = handler(signed_event(payload, discord_keys.signing_hex), LambdaContext())
        assert response["statusCode"] == 200, response["body"]
        return json.loads(response["body"])

    return send


@pytest.fixture
def relay_event(env, relay_keys):
    """Send ``{"t": kind, "d": data, **envelope}`` to RelayFunction, signed by the relay; the HTTP status."""
    from kioku.playground.events import signed_event
    from kioku.playground.functions import LambdaContext, load_handler

    handler = load_handler("relay")

    def send(kind: str, data, **envelope) -> int:
        return handler(
            signed_event({"t": kind, "d": data, **envelope}, relay_keys.signing_hex), LambdaContext()
        )["statusCode"]

    return send
