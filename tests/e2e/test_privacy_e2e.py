"""Privacy across the whole path: a simulated gateway, the real relay, RelayFunction, the queue,
TurnFunction, and what reaches the model.

A channel's privacy comes from its Discord permission overwrites (served by the Discord stand-in)
and changes through the CHANNEL_UPDATE the gateway sends; nothing is configured by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.stm.entries import StmAddress
from kioku.playground.stack import LocalStack
from kioku.playground.standins import OpenAIStandIn, completion_body
from tests.e2e.fake_gateway import FakeDiscord, LoopbackLoop, wait_until
from tests.e2e.relay_process import RelayProcess, start_relay_process

pytestmark = pytest.mark.e2e

BOT_TOKEN: Final = "MTAwMDAwMDAwMDAwMDAwMDAx.GabCdE.not-a-real-token-just-the-right-shape"
GUILD: Final = "200000000000000001"
GENERAL, SECRET, PLANS = "300000000000000001", "300000000000000003", "300000000000000004"
VIEW_CHANNEL: Final = 1 << 10
PRIVATE: Final = [{"id": GUILD, "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}]
TIMEOUT: Final = 20.0


@pytest.fixture
def llm() -> Iterator[OpenAIStandIn]:
    with OpenAIStandIn(api_key="stand-in-key", responder=lambda body: completion_body("Sure.")) as server:
        yield server


@pytest.fixture
def stack(llm: OpenAIStandIn) -> Iterator[LocalStack]:
    with LocalStack(llm_base_url=llm.base_url, extra_env={"LLM_API_KEY": "stand-in-key"}) as running:
        discord = running.discord
        discord.seed_channel(GENERAL, name="general", guild_id=GUILD)
        discord.seed_channel(SECRET, name="secret", guild_id=GUILD)
        discord.seed_channel(PLANS, name="plans", guild_id=GUILD, parent_id=SECRET)
        yield running


@pytest.fixture
def gateway() -> Iterator[FakeDiscord]:
    with LoopbackLoop() as loop:
        fake = FakeDiscord(loop, token=BOT_TOKEN, bot_user_id="100000000000000001")
        yield fake
        fake.close()


@pytest.fixture
def relay(tmp_path: Path, stack: LocalStack, gateway: FakeDiscord) -> Iterator[RelayProcess]:
    running = start_relay_process(
        tmp_path / "relay.log",
        DISCORD_BOT_TOKEN=BOT_TOKEN,
        RELAY_SIGNING_KEY=stack.relay_signing_key,
        RELAY_URL=stack.urls["relay"],
        DISCORD_API_BASE_URL=gateway.api_base_url,
        RELAY_DRAIN_TIMEOUT_SECONDS="2",
    )
    wait_until(lambda: gateway.connected or running.process.poll() is not None, "READY", timeout=TIMEOUT)
    assert gateway.connected, running.log()
    yield running
    running.terminate()


def member(stack: LocalStack, username: str) -> dict[str, Any]:
    user = stack.discord.seed_user(username, global_name=username.title())
    stack.discord.seed_member(GUILD, user)
    return user


def say(stack: LocalStack, gateway: FakeDiscord, channel_id: str, author: dict, text: str) -> None:
    """``author`` says ``text`` to the bot in ``channel_id``; the gateway dispatches it, the relay
    forwards it, and the queued turn runs."""
    message = stack.discord.seed_message(channel_id, author, f"<@{stack.application_id}> {text}")
    gateway.dispatch("MESSAGE_CREATE", message | {"guild_id": GUILD, "member": {"nick": None, "roles": []}})
    results: list[dict] = []
    wait_until(
        lambda: bool(results.extend(stack.deliver_turns()) or results), "the queued turn", timeout=TIMEOUT
    )
    assert results == [{"batchItemFailures": []}], results


def last_request_text(llm: OpenAIStandIn) -> str:
    return str(llm.bodies[-1]["messages"])


def stm_row(stack: LocalStack, channel_id: str):
    return StmStore(KiokuTable(stack.resources.table_name)).get(StmAddress.of(GUILD, "", channel_id, "kioku"))


def test_a_channel_made_private_through_the_gateway_is_no_longer_recalled_elsewhere(
    stack, gateway, relay, llm
):
    alice, bob = member(stack, "alice"), member(stack, "bob")
    # Given Alice spoke in #secret while it was public, and #general recalled it
    say(stack, gateway, SECRET, alice, "the vault code is 4711")
    say(stack, gateway, GENERAL, bob, "what is new?")
    assert "4711" in last_request_text(llm)
    # When an admin makes #secret private: Discord changes its overwrites and sends CHANNEL_UPDATE
    updated = stack.discord.set_permission_overwrites(SECRET, PRIVATE)
    gateway.dispatch("CHANNEL_UPDATE", updated)
    wait_until(lambda: stm_row(stack, SECRET).private is True, "the row re-stamped private", timeout=TIMEOUT)
    say(stack, gateway, GENERAL, bob, "anything else?")
    # Then #general's next model request holds nothing of #secret
    assert "4711" not in last_request_text(llm)
    # while #secret's own thread still recalls it
    say(stack, gateway, PLANS, alice, "what was the code again?")
    assert "4711" in last_request_text(llm)


def test_a_private_channel_is_private_from_its_first_turn(stack, gateway, relay, llm):
    alice, bob = member(stack, "alice"), member(stack, "bob")
    stack.discord.set_permission_overwrites(SECRET, PRIVATE)
    say(stack, gateway, SECRET, alice, "my salary is 4242")
    assert stm_row(stack, SECRET).private is True
    say(stack, gateway, GENERAL, bob, "hello")
    assert "4242" not in last_request_text(llm)


def test_a_deleted_channel_takes_its_memory_and_its_threads_with_it(stack, gateway, relay, llm):
    alice = member(stack, "alice")
    say(stack, gateway, SECRET, alice, "in the channel")
    say(stack, gateway, PLANS, alice, "in the thread")
    assert stm_row(stack, SECRET) is not None and stm_row(stack, PLANS) is not None
    gateway.dispatch("CHANNEL_DELETE", stack.discord.channel_info(SECRET))
    wait_until(
        lambda: stm_row(stack, SECRET) is None and stm_row(stack, PLANS) is None,
        "the rows gone",
        timeout=TIMEOUT,
    )
    assert relay.process.poll() is None
