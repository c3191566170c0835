"""The whole of kioku on one machine: moto over HTTP, the template's resources, each function
served on a localhost Function URL, and a freshly generated application key pair."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass, field

from kioku.playground.aws import LocalResources, MotoServer, create_local_resources
from kioku.playground.function_urls import FunctionUrlServer
from kioku.playground.functions import load_handler
from kioku.signatures import new_key_pair

APPLICATION_ID = "100000000000000001"
HTTP_FUNCTIONS = ("interactions",)


@dataclass
class LocalStack:
    """Start with ``with LocalStack() as stack:``; ``stack.urls["interactions"]`` is the endpoint."""

    extra_env: dict[str, str] = field(default_factory=dict)
    application_id: str = APPLICATION_ID
    urls: dict[str, str] = field(default_factory=dict)
    resources: LocalResources | None = None
    moto_url: str = ""

    def __post_init__(self) -> None:
        self.signing_key, self.public_key = new_key_pair()
        self.relay_signing_key, self.relay_public_key = new_key_pair()
        self._exit = ExitStack()
        self._saved_env: dict[str, str | None] = {}

    def __enter__(self) -> LocalStack:
        moto = self._exit.enter_context(MotoServer())
        self.moto_url = moto.url
        self._set_env(
            {
                "AWS_ACCESS_KEY_ID": "playground",
                "AWS_SECRET_ACCESS_KEY": "playground",
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ENDPOINT_URL_DYNAMODB": moto.url,
                "AWS_ENDPOINT_URL_SQS": moto.url,
            }
        )
        import boto3

        self.resources = create_local_resources(boto3.client("dynamodb"), boto3.client("sqs"))
        self._set_env(
            {
                "TABLE_NAME": self.resources.table_name,
                "TURN_QUEUE_URL": self.resources.turn_queue_url,
                "DISCORD_APPLICATION_ID": self.application_id,
                "DISCORD_PUBLIC_KEY": self.public_key,
                "RELAY_PUBLIC_KEY": self.relay_public_key,
                "DISCORD_BOT_TOKEN": os.environ.get("DISCORD_BOT_TOKEN") or "playground-bot-token",
                "LLM_PROVIDER": os.environ.get("LLM_PROVIDER") or "scripted",
                **self.extra_env,
            }
        )
        from kioku.config import get_settings

        get_settings.cache_clear()
        for name in HTTP_FUNCTIONS:
            server = self._exit.enter_context(FunctionUrlServer(load_handler(name)))
            self.urls[name] = server.url
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._exit.close()
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _set_env(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self._saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value
