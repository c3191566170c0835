"""The whole of kioku on one machine: moto over HTTP, the template's resources, each HTTP function
on a localhost Function URL, the turn worker fed from the queue like Lambda's poller, a Discord
REST stand-in, and freshly generated application and relay key pairs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kioku import clock
from kioku.discord.protocol import ChannelType
from kioku.playground.aws import LocalResources, MotoServer, create_local_resources
from kioku.playground.cdn_standin import CdnStandIn
from kioku.playground.function_urls import FunctionUrlServer
from kioku.playground.functions import LambdaContext, load_handler
from kioku.playground.standins import DiscordStandIn
from kioku.signatures import new_key_pair

if TYPE_CHECKING:
    from kioku.services.turn import TurnRecord

APPLICATION_ID = "100000000000000001"
BOT_USERNAME = "kioku"
HTTP_FUNCTIONS = ("interactions", "relay")
PLAYGROUND_BOT_TOKEN = "playground-bot-token"


@dataclass
class LocalStack:
    """Start with ``with LocalStack() as stack:``; ``stack.urls["interactions"]`` is the endpoint.

    ``llm_base_url`` points the worker at an OpenAI-compatible server; without it (and without
    ``LLM_BASE_URL`` + ``LLM_API_KEY`` in the environment) the offline scripted model answers.
    ``turn_timeout_seconds`` is TurnFunction's time per invocation (short here, so a hung stand-in
    fails a test quickly; a real model on a CPU wants the deployed function's).
    """

    extra_env: dict[str, str] = field(default_factory=dict)
    llm_base_url: str | None = None
    turn_timeout_seconds: float = 30.0
    application_id: str = APPLICATION_ID
    urls: dict[str, str] = field(default_factory=dict)
    moto_url: str = ""
    _resources: LocalResources | None = field(default=None, init=False, repr=False)

    @property
    def resources(self) -> LocalResources:
        """The table and queues, made when the stack starts (``with LocalStack() as stack``)."""
        if self._resources is None:
            raise RuntimeError("the stack is not started: use it as `with LocalStack() as stack:`")
        return self._resources

    def __post_init__(self) -> None:
        self.signing_key, self.public_key = new_key_pair()
        self.relay_signing_key, self.relay_public_key = new_key_pair()
        self._exit = ExitStack()
        self._saved_env: dict[str, str | None] = {}

    def __enter__(self) -> LocalStack:
        if not self.moto_url:  # else a moto server of the caller's (the load test runs its own process)
            self.moto_url = self._exit.enter_context(MotoServer()).url
        self._set_env(
            {
                "AWS_ACCESS_KEY_ID": "playground",
                "AWS_SECRET_ACCESS_KEY": "playground",
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ENDPOINT_URL_DYNAMODB": self.moto_url,
                "AWS_ENDPOINT_URL_SQS": self.moto_url,
            }
        )
        import boto3

        self.sqs = boto3.client("sqs")
        self._resources = create_local_resources(boto3.client("dynamodb"), self.sqs)
        self.discord = self._exit.enter_context(
            DiscordStandIn(
                token=PLAYGROUND_BOT_TOKEN,
                bot_user_id=self.application_id,
                bot_username=BOT_USERNAME,
                application_id=self.application_id,
            )
        )
        self.cdn = self._exit.enter_context(CdnStandIn())
        self._set_env(
            {
                "TABLE_NAME": self.resources.table_name,
                "TURN_QUEUE_URL": self.resources.turn_queue_url,
                "TURN_DEAD_LETTER_QUEUE_URL": self.resources.dead_letter_queue_url,
                "DISCORD_APPLICATION_ID": self.application_id,
                "DISCORD_PUBLIC_KEY": self.public_key,
                "RELAY_PUBLIC_KEY": self.relay_public_key,
                "DISCORD_BOT_TOKEN": PLAYGROUND_BOT_TOKEN,
                "DISCORD_API_BASE_URL": self.discord.base_url,
                "DISCORD_CDN_BASE_URL": self.cdn.url,
                **self._llm_env(),
                **self.extra_env,
            }
        )
        from kioku.config import get_settings

        get_settings.cache_clear()
        _forget_warm_containers()
        for name in HTTP_FUNCTIONS:
            server = self._exit.enter_context(FunctionUrlServer(load_handler(name)))
            self.urls[name] = server.url
        self.discord.verify_key = self.public_key
        self.discord.interactions_endpoint_url = self.urls["interactions"]
        self.turn_handler = load_handler("turn")
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self._exit.close()
        finally:  # a server slow to stop must not leave this stack's environment to the next one
            clock.reset()  # a :wait of this stack must not age the next one
            for name, value in self._saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            from kioku.config import get_settings

            get_settings.cache_clear()

    def observe_turns(self, observer: Callable[[TurnRecord], None]) -> None:
        """Tell ``observer`` of every turn TurnFunction finishes until the stack stops (the worker's
        ``turn_observers``, which a deployed worker leaves empty)."""
        from kioku.entrypoints import turn_worker

        turn_worker.turn_observers.append(observer)
        self._exit.callback(turn_worker.turn_observers.remove, observer)

    def deliver_turns(self, *, max_batches: int = 10) -> list[dict[str, Any]]:
        """Do what Lambda's SQS poller does until the queue is empty: receive a batch, invoke
        TurnFunction, delete what succeeded, and make failures visible again (at once, here)."""
        responses = []
        for _ in range(max_batches):
            received = self.sqs.receive_message(
                QueueUrl=self.resources.turn_queue_url,
                MaxNumberOfMessages=10,
                AttributeNames=["All"],
                WaitTimeSeconds=0,
            ).get("Messages", [])
            if not received:
                break
            response = self.turn_handler(self.sqs_event(received), LambdaContext(self.turn_timeout_seconds))
            responses.append(response)
            failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
            for message in received:
                if message["MessageId"] in failed:
                    self.sqs.change_message_visibility(
                        QueueUrl=self.resources.turn_queue_url,
                        ReceiptHandle=message["ReceiptHandle"],
                        VisibilityTimeout=0,
                    )
                else:
                    self.sqs.delete_message(
                        QueueUrl=self.resources.turn_queue_url, ReceiptHandle=message["ReceiptHandle"]
                    )
        return responses

    @staticmethod
    def sqs_event(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The event Lambda builds for TurnFunction from received SQS messages."""
        return {
            "Records": [
                {
                    "messageId": message["MessageId"],
                    "receiptHandle": message["ReceiptHandle"],
                    "body": message["Body"],
                    "attributes": {k: str(v) for k, v in message.get("Attributes", {}).items()},
                    "messageAttributes": {},
                    "md5OfBody": message.get("MD5OfBody", ""),
                    "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:kioku-TurnQueue.fifo",
                    "awsRegion": "us-east-1",
                }
                for message in messages
            ]
        }

    def _llm_env(self) -> dict[str, str]:
        if self.llm_base_url:
            return {
                "LLM_PROVIDER": "openai",
                "LLM_BASE_URL": self.llm_base_url,
                "LLM_MODEL": "stand-in",
                "LLM_API_KEY": "stand-in-key",
            }
        return chat_model_choice(os.environ).env

    def _set_env(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self._saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value


class ModelChoice(NamedTuple):
    env: dict[str, str]
    """The worker's model settings."""
    sentence: str
    """Which model answers, and why."""
    half_set: bool
    """One of LLM_BASE_URL and LLM_API_KEY is set without the other: said at start, always."""


def chat_model_choice(environ: Mapping[str, str]) -> ModelChoice:
    """The model ``make run`` answers with in this environment: a real one needs both LLM_BASE_URL
    and LLM_API_KEY, else the offline scripted one."""
    url, key = environ.get("LLM_BASE_URL", "").strip(), environ.get("LLM_API_KEY", "").strip()
    if url and key:
        model = environ.get("LLM_MODEL") or "gpt-4o-mini"
        return ModelChoice(
            {"LLM_PROVIDER": "openai", "LLM_MODEL": model}, f"The bot answers with {model} at {url}.", False
        )
    if url:
        why = (
            f"LLM_BASE_URL is set but LLM_API_KEY is not, so the offline scripted model answers, not {url}:"
            " set LLM_API_KEY too (any value, for a server that needs none)."
        )
    elif key:
        why = (
            "LLM_API_KEY is set but LLM_BASE_URL is not, so the offline scripted model answers:"
            " set LLM_BASE_URL too (https://api.openai.com/v1 for OpenAI)."
        )
    else:
        why = "The offline scripted model answers (LLM_BASE_URL and LLM_API_KEY choose a real one)."
    return ModelChoice({"LLM_PROVIDER": "scripted"}, why, bool(url or key))


def _forget_warm_containers() -> None:
    """A new stack is a new deployment: drop the clients the functions kept warm for an earlier
    stack in this process, which point at that stack's (stopped) moto server and queue."""
    from kioku.entrypoints import composition

    composition.forget()


def gateway_dispatch(message: dict[str, Any], guild_id: str | None, member: dict[str, Any] | None) -> bytes:
    """What the relay forwards for a message: the gateway's MESSAGE_CREATE with guild and member."""
    data = dict(message)
    if guild_id:
        data["guild_id"] = guild_id
        data["member"] = member or {"nick": None, "roles": []}
    else:
        data.setdefault("channel_type", ChannelType.DM)
    return json.dumps({"t": "MESSAGE_CREATE", "d": data}, separators=(",", ":")).encode()
