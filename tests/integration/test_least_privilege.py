"""Least privilege, proven: every function runs its real code paths on moto, every AWS call it makes
is recorded, and each call must be allowed by that function's own IAM statements in the
SAM-transformed template; each statement must in turn be used by some call, so the policy grants
nothing the code never asks for."""

from __future__ import annotations

import fnmatch
import io
import json
import os
import re
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import boto3
import httpx
import pytest
from aws_lambda_powertools.utilities.parameters.base import DEFAULT_PROVIDERS
from botocore.client import BaseClient
from scripts.sam_template import evaluate, transform

from kioku.config import get_settings
from kioku.playground import stack as stack_module
from kioku.playground.session import Playground
from kioku.playground.stack import PLAYGROUND_BOT_TOKEN, LocalStack
from kioku.playground.standins import OpenAIStandIn, completion_body
from kioku.signatures import sign_request

FUNCTIONS: Final = {
    "interactions": "InteractionsFunction",
    "relay": "RelayFunction",
    "turn": "TurnFunction",
    "janitor": "JanitorFunction",
}
TRANSACT_ACTIONS: Final = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}

# Everything a person can do in the playground: chat (relay → queue → turn), every command group,
# forms, buttons, privacy changes, /chat, export and forgetting.
SESSION: Final = [
    "hello everyone",
    "@kioku remember that I love green tea",
    "@kioku what do I like?",
    "/help stm",
    "/server stm parameters refresh_cadence=3",
    "/server stm prompt-edit",
    ':submit update_nudge="Refresh your notes on {category_labels}"',
    "/server stm categories-edit",
    ":submit",
    "/server privacy view",
    "/server privacy bypass enabled=false",
    "/persona stm view",
    "/persona stm edit",
    ":submit",
    "/personal stm",
    "/capabilities manage",
    "/persona view",
    "/persona edit",
    ':submit name="Mimi"',
    "/server addressing trigger_words=kioku,mimi answer_other_bots=false",
    ":in secret",
    "kioku, the vault code is okapi",
    ":in general",
    ":public #secret",
    ":in secret",
    "kioku, it is public now",
    ":in general",
    ":private #secret",
    "/server memories moderation mode=approval",
    ":as bob",
    "kioku, remember that the book club meets on Fridays",
    ":as alice",
    "/server memories review",
    ":click Approve",
    "/server memories list",
    "/server memories forget memory_id=1",
    ":in dm",
    "hi in private",
    '/chat message="how are you?"',
    ":in general",
    "/personal memories list",
    "/personal memories export",
    "/personal memories forget memory_id=2",
    "/personal memories forget-all",
    ":click Forget everything",
]


class CallLog:
    """The AWS calls made while a function's handler runs, per function (one thread per invocation)."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[str, str, dict[str, Any]]]] = defaultdict(list)
        self._local = threading.local()

    @contextmanager
    def acting_as(self, function: str) -> Iterator[None]:
        self._local.function = function
        try:
            yield
        finally:
            self._local.function = None

    def wrap(self, function: str, handler):
        def invoke(event, context):
            with self.acting_as(function):
                return handler(event, context)

        return invoke

    def record(self, service: str, operation: str, params: dict[str, Any]) -> None:
        function = getattr(self._local, "function", None)
        if function is not None:
            self.calls[function].append((service, operation, params))


@pytest.fixture
def call_log(monkeypatch) -> CallLog:
    log = CallLog()
    make_api_call = BaseClient._make_api_call

    def recording(client, operation_name, api_params):
        log.record(client.meta.service_model.service_name, operation_name, dict(api_params))
        return make_api_call(client, operation_name, api_params)

    monkeypatch.setattr(BaseClient, "_make_api_call", recording)
    load_handler = stack_module.load_handler
    monkeypatch.setattr(
        stack_module, "load_handler", lambda name: log.wrap(FUNCTIONS[name], load_handler(name))
    )
    return log


@contextmanager
def secret_in(stack: LocalStack) -> Iterator[str]:
    """The deployed way: no token in the environment, the secret named by KIOKU_SECRET_ARN."""
    secrets = boto3.client("secretsmanager", endpoint_url=stack.moto_url)
    arn = secrets.create_secret(
        Name="kioku", SecretString=json.dumps({"DISCORD_BOT_TOKEN": PLAYGROUND_BOT_TOKEN})
    )["ARN"]
    values = {"KIOKU_SECRET_ARN": arn, "AWS_ENDPOINT_URL_SECRETS_MANAGER": stack.moto_url}
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    get_settings.cache_clear()
    DEFAULT_PROVIDERS.clear()  # a cold start: Powertools makes its Secrets Manager client afresh
    try:
        yield arn
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        get_settings.cache_clear()
        DEFAULT_PROVIDERS.clear()


def seed_memory_without_vector(stack: LocalStack) -> None:
    from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
    from kioku.adapters.dynamodb.table import KiokuTable
    from kioku.domain.ltm.memory import MemoryDraft, MemoryScope
    from kioku.domain.privacy import Origin

    draft = MemoryDraft(
        scope=MemoryScope.server("200000000000000099", 1),
        content="The picnic is on Saturday",
        author_id="100000000000000099",
        created_at=datetime.now(UTC),
        origin=Origin("200000000000000099", "300000000000000099", private=False),
    )
    DynamoMemoryStore(KiokuTable(stack.resources.table_name)).create(draft, limit=100)


def run_everything(log: CallLog) -> dict[str, str]:
    """Drive all four functions over their paths; the ARNs of the resources they were given."""
    with LocalStack(extra_env={"DISCORD_BOT_TOKEN": ""}) as stack, secret_in(stack) as secret_arn:
        out = io.StringIO()
        playground = Playground(stack, out)
        for line in SESSION:
            playground.handle_line(line)
        assert playground.failures == 0, out.getvalue()

        # the relay also forwards deletions: the channel's memory goes with it
        channel = stack.discord.set_permission_overwrites(playground.channel.channel_id, [])
        body = json.dumps({"t": "CHANNEL_DELETE", "d": channel}).encode()
        headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
        assert httpx.post(stack.urls["relay"], content=body, headers=headers).status_code < 300
        # ...and the bot's removal from the server, whose data the janitor deletes after the grace,
        # a personal memory said there among it
        personal_memory_said_in(stack, playground.channel.guild_id)
        body = json.dumps({"t": "GUILD_DELETE", "d": {"id": playground.channel.guild_id}}).encode()
        headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
        assert httpx.post(stack.urls["relay"], content=body, headers=headers).status_code < 300

        # a memory saved to last a day, which the janitor deletes with its guard, counter and book entry
        from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
        from kioku.adapters.dynamodb.table import KiokuTable
        from kioku.domain.ltm.memory import MemoryDraft, MemoryScope
        from kioku.entrypoints.janitor import handle as janitor

        seed_memory_without_vector(stack)  # saved before embeddings were on: the janitor embeds it
        now = datetime.now(UTC)
        plan = MemoryDraft(
            MemoryScope.server("1", 1), "a sale today", "2", now, expires_at=now + timedelta(days=1)
        )
        DynamoMemoryStore(KiokuTable(stack.resources.table_name)).create(plan, limit=100)
        with log.acting_as("JanitorFunction"):
            report = janitor({}, now=datetime.now(UTC) + timedelta(days=400))
        assert report["deleted"] > 0 and report["servers_erased"] == 1 and report["vectors_written"] > 0
        assert report["expired_deleted"] == 1

        dynamodb = boto3.client("dynamodb")
        queue_arn, dead_letter_arn = (
            stack.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            for url in (stack.resources.turn_queue_url, stack.resources.dead_letter_queue_url)
        )
        arns = {
            "KiokuTable.Arn": dynamodb.describe_table(TableName=stack.resources.table_name)["Table"][
                "TableArn"
            ],
            "TurnQueue.Arn": queue_arn,
            "TurnDeadLetterQueue.Arn": dead_letter_arn,
            "SecretArn": secret_arn,
            "table_name": stack.resources.table_name,
            "queue_url": stack.resources.turn_queue_url,
            "dead_letter_queue_url": stack.resources.dead_letter_queue_url,
        }
    model_tools_and_a_broken_job()
    return arns


def personal_memory_said_in(stack: LocalStack, guild_id: str) -> None:
    """A personal memory said in ``guild_id`` (the offline model saves none there)."""
    from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
    from kioku.adapters.dynamodb.table import KiokuTable
    from kioku.domain.ltm.memory import MemoryDraft, MemoryScope
    from kioku.domain.privacy import Origin

    said = datetime.now(UTC) - timedelta(days=1)
    draft = MemoryDraft(
        MemoryScope.personal("1", 1), "likes tea", "1", said, origin=Origin(guild_id, "1"), subject_id="1"
    )
    DynamoMemoryStore(KiokuTable(stack.resources.table_name)).create(draft, limit=100)


def model_tools_and_a_broken_job() -> None:
    """What the offline model never does: save a personal memory and delete it again (both checked
    against the person's privacy); a reply Discord refuses once, which comes back soon; and a job the worker
    cannot read, which it moves to the dead-letter queue."""
    with (
        OpenAIStandIn(api_key="k", responder=lambda body: completion_body("Sure.")) as llm,
        LocalStack(llm_base_url=llm.base_url, extra_env={"LLM_API_KEY": "k"}) as stack,
    ):
        out = io.StringIO()
        playground = Playground(stack, out)
        save = {"memory_content": "{user} likes tea", "memory_scope": "target_user", "target_user": "Alice"}
        llm.enqueue(
            completion_body(tool_calls=[("create_long_term_memory", save)]), completion_body("Noted.")
        )
        playground.handle_line("@kioku remember I like tea")
        memory_id = re.search(r"Personal memory #([0-9]+)", out.getvalue())[1]
        forget = {"memory_id": memory_id, "memory_content": "", "target_user": "Alice"}
        llm.enqueue(
            completion_body(tool_calls=[("update_long_term_memory", forget)]), completion_body("Gone.")
        )
        playground.handle_line("@kioku forget that I like tea")
        assert playground.failures == 0 and "Memory forgotten" in out.getvalue(), out.getvalue()
        stack.discord.fail_post(1, 500, {"message": "500: Internal Server Error", "code": 0})
        playground.handle_line("@kioku are you there?")

        stack.sqs.send_message(
            QueueUrl=stack.resources.turn_queue_url,
            MessageBody="not a turn",
            MessageGroupId="broken",
            MessageDeduplicationId="broken",
        )
        (response,) = stack.deliver_turns(max_batches=1)
        assert response["batchItemFailures"] == []


def iam_requests(call: tuple[str, str, dict[str, Any]], arns: dict[str, str]) -> list[tuple[str, str]]:
    """The (action, resource ARN) pairs IAM authorises for one API call."""
    service, operation, params = call

    def table(name: str, index: str | None = None) -> str:
        assert name == arns["table_name"], f"{operation} on an unknown table {name}"
        return arns["KiokuTable.Arn"] + (f"/index/{index}" if index else "")

    if service == "dynamodb":
        if operation == "TransactWriteItems":
            return [
                (f"dynamodb:{TRANSACT_ACTIONS[kind]}", table(spec["TableName"]))
                for item in params["TransactItems"]
                for kind, spec in item.items()
            ]
        if operation == "TransactGetItems":
            return [("dynamodb:GetItem", table(item["Get"]["TableName"])) for item in params["TransactItems"]]
        if operation in {"BatchGetItem", "BatchWriteItem"}:
            return [(f"dynamodb:{operation}", table(name)) for name in params["RequestItems"]]
        return [(f"dynamodb:{operation}", table(params["TableName"], params.get("IndexName")))]
    if service == "sqs":
        queue_name = params["QueueUrl"].rsplit("/", 1)[-1]  # each local stack has its own host
        queues = {
            arns["queue_url"].rsplit("/", 1)[-1]: arns["TurnQueue.Arn"],
            arns.get("dead_letter_queue_url", "").rsplit("/", 1)[-1]: arns.get("TurnDeadLetterQueue.Arn"),
        }
        assert queues.get(queue_name), f"{operation} on an unknown queue"
        action = "SendMessage" if operation == "SendMessageBatch" else operation
        return [(f"sqs:{action}", queues[queue_name])]
    if service == "secretsmanager" and operation == "GetSecretValue":
        return [("secretsmanager:GetSecretValue", params["SecretId"])]
    raise AssertionError(f"no IAM mapping for {service}:{operation}: add one here")


def resolve(value: Any, arns: dict[str, str], template: dict[str, Any]) -> str:
    """A policy Resource, with the template's references filled in (conditions at their defaults)."""
    if isinstance(value, str):
        return value
    if "Fn::If" in value:
        return resolve(evaluate(value, template, {}), arns, template)
    if "Fn::GetAtt" in value:
        return arns[".".join(value["Fn::GetAtt"])]
    if "Ref" in value:
        return arns[value["Ref"]]
    if "Fn::Sub" in value:
        text = value["Fn::Sub"]
        for name, arn in arns.items():
            text = text.replace("${" + name + "}", arn)
        assert "${" not in text, text
        return text
    raise AssertionError(f"unexpected policy resource {value}")


def grants(template: dict[str, Any], function: str, arns: dict[str, str]) -> list[tuple[str, str]]:
    """(action, resource pattern) for every Allow of the function's inline policies."""
    role = template["Resources"][f"{function}Role"]["Properties"]
    pairs = []
    for policy in role.get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Allow" and "NotAction" not in statement
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = (
                statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            )
            pairs.extend(
                (action, resolve(resource, arns, template)) for action in actions for resource in resources
            )
    return pairs


def allowed(request: tuple[str, str], granted: list[tuple[str, str]]) -> bool:
    action, resource = request
    return any(fnmatch.fnmatchcase(action, a) and fnmatch.fnmatchcase(resource, r) for a, r in granted)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return transform()


def test_each_function_is_granted_exactly_the_aws_calls_its_code_makes(call_log, template):
    # Given every function driven over its real paths on moto
    arns = run_everything(call_log)

    for function in FUNCTIONS.values():
        granted = grants(template, function, arns)
        requests = {request for call in call_log.calls[function] for request in iam_requests(call, arns)}
        # Then every call it made is allowed by its own policy
        denied = sorted(request for request in requests if not allowed(request, granted))
        assert not denied, f"{function} would be denied {denied}"
        # and its policy allows nothing it never asked for
        unused = sorted(grant for grant in granted if not any(allowed(r, [grant]) for r in requests))
        assert not unused, f"{function} is granted {unused} but never uses it"


def test_a_call_outside_the_policy_is_caught(template):
    # Given the relay's real grants
    arns = {
        "KiokuTable.Arn": "arn:aws:dynamodb:us-east-1:123456789012:table/t",
        "TurnQueue.Arn": "arn:aws:sqs:us-east-1:123456789012:q.fifo",
        "SecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:kioku-abc",
        "table_name": "t",
        "queue_url": "https://sqs/q.fifo",
    }
    granted = grants(template, "RelayFunction", arns)

    # When it would read the secret or query an index it has no business with, it is denied
    secret = iam_requests(("secretsmanager", "GetSecretValue", {"SecretId": arns["SecretArn"]}), arns)
    recency = iam_requests(("dynamodb", "Query", {"TableName": "t", "IndexName": "Recency"}), arns)
    assert not allowed(secret[0], granted)
    assert not allowed(recency[0], granted)
    # while what it does is allowed
    send = iam_requests(("sqs", "SendMessage", {"QueueUrl": "https://sqs/q.fifo"}), arns)
    assert allowed(send[0], granted)
