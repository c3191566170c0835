"""What the end-to-end tests share: a stand-in model and the local stack it answers for, and the
signed POSTs Discord and the relay make."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Final

import httpx
import pytest

from kioku import clock
from kioku.playground.events import component_click, slash_command
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.playground.standins import OpenAIStandIn, completion_body
from kioku.signatures import sign_request

STAND_IN_KEY: Final = "stand-in-key"
STAND_IN_REPLY: Final = "Sure."


@pytest.fixture
def llm() -> Iterator[OpenAIStandIn]:
    """An OpenAI-compatible model on 127.0.0.1 answering "Sure." unless told otherwise."""
    with OpenAIStandIn(
        api_key=STAND_IN_KEY, responder=lambda body: completion_body(STAND_IN_REPLY)
    ) as server:
        yield server


GUILD: Final = "200000000000000001"
GENERAL: Final = "300000000000000001"


@pytest.fixture
def stack(llm: OpenAIStandIn) -> Iterator[LocalStack]:
    """The local stack talking to ``llm``, with one guild channel, #general (a module may define its own)."""
    with running_stack(llm) as running:
        running.discord.seed_channel(GENERAL, name="general", guild_id=GUILD)
        yield running


@contextmanager
def running_stack(llm: OpenAIStandIn, **env: str) -> Iterator[LocalStack]:
    """The local stack talking to ``llm``, with ``env`` over its environment."""
    with LocalStack(llm_base_url=llm.base_url, extra_env={"LLM_API_KEY": STAND_IN_KEY, **env}) as stack:
        yield stack


def signed_post(stack: LocalStack, endpoint: str, body: bytes, signing_key: str) -> httpx.Response:
    """POST ``body`` to one of the stack's Function URLs, signed as Discord or the relay signs."""
    headers = {"content-type": "application/json", **sign_request(signing_key, body)}
    return httpx.post(stack.urls[endpoint], content=body, headers=headers, timeout=10)


def interact(stack: LocalStack, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` posted to the interactions endpoint as Discord signs it: its answer."""
    response = signed_post(stack, "interactions", json.dumps(payload).encode(), stack.signing_key)
    response.raise_for_status()
    return response.json()


def forget_all_as(stack: LocalStack, person: dict[str, Any], channel: str = GENERAL) -> None:
    """``person`` runs ``/personal memories forget-all`` in ``channel`` and confirms it, as Discord
    sends both."""
    command = slash_command(
        stack.application_id,
        "personal",
        "memories forget-all",
        guild_id=GUILD,
        channel_id=channel,
        user_id=person["id"],
        interaction_id=stack.discord.new_id(),
    )
    asked = interact(stack, command)
    (confirm,) = [b for row in asked["data"]["components"] for b in row["components"] if b["style"] == 4]
    done = interact(stack, component_click({**command, "id": stack.discord.new_id()}, confirm["custom_id"]))
    assert done["data"]["embeds"][0]["title"] == "Done"


def relay_post(
    stack: LocalStack, message: dict[str, Any], guild_id: str | None, member: dict[str, Any] | None = None
) -> httpx.Response:
    """What the gateway relay does with a MESSAGE_CREATE (``member``: the author's, as the gateway
    attaches it)."""
    body = gateway_dispatch(message, guild_id, member or {"nick": None, "roles": []})
    return signed_post(stack, "relay", body, stack.relay_signing_key)


@pytest.fixture
def inspector_url() -> Iterator[str]:
    """The web inspector (``kioku playground --web``) in this process on a free 127.0.0.1 port."""
    import io
    import threading

    from kioku.playground.http_server import SHUTDOWN_POLL_SECONDS
    from kioku.playground.session import Playground
    from kioku.playground.web.inspector import Inspector
    from kioku.playground.web.server import make_server

    with LocalStack(extra_env={"POWERTOOLS_METRICS_DISABLED": "true"}) as stack:
        server = make_server(Inspector(Playground(stack, io.StringIO())), 0)
        thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL_SECONDS,), daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


def same_minute() -> None:
    """The rate counts per minute (of a message's id): move the stack's clock, which Discord's ids
    follow, to the start of the next minute, so what follows is well inside one (no sleeping)."""
    now = clock.now()
    clock.advance(timedelta(seconds=60 - now.second, microseconds=-now.microsecond))
