"""The real relay (``kioku relay`` in a subprocess, on hikari) against a simulated Discord.

``FakeDiscord`` answers REST and speaks the v10 gateway (JSON, zlib-stream) on 127.0.0.1;
``RelayReceiver`` stands in for RelayFunction and verifies every signature. The relay finds both
through its environment (``DISCORD_API_BASE_URL``, ``RELAY_URL``), as an operator would set it.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from kioku.clock import parse_time
from tests.conftest import KeyPair
from tests.e2e.fake_gateway import (
    CLOSE_SESSION_TIMED_OUT,
    CLOSE_UNKNOWN_ERROR,
    GATEWAY_PATH,
    RESUME_GATEWAY_PATH,
    CannedAnswer,
    FakeDiscord,
    LoopbackLoop,
    shard_of,
    wait_until,
)
from tests.e2e.relay_process import EXIT_TIMEOUT, RelayProcess, start_relay_process
from tests.e2e.relay_receiver import Answer, RelayReceiver

pytestmark = pytest.mark.e2e

BOT_TOKEN: Final = "MTAwMDAwMDAwMDAwMDAwMDAx.GabCdE.not-a-real-token-just-the-right-shape"
OTHER_TOKEN: Final = "MTAwMDAwMDAwMDAwMDAwMDAy.HijKlM.a-token-this-fake-discord-never-issued"
BOT_USER_ID: Final = "100000000000000001"  # the user id the token's first part encodes
ALICE: Final = "200000000000000002"
GUILD: Final = "400000000000000004"
CHANNEL: Final = "500000000000000005"
THREAD: Final = "510000000000000005"
FIRST_MESSAGE_ID: Final = 600000000000000000

# Discord's gateway intent bits, spelled out here so the test checks the wire, not hikari's names.
INTENT_GUILDS: Final = 1 << 0
INTENT_GUILD_MESSAGES: Final = 1 << 9
INTENT_DM_MESSAGES: Final = 1 << 12
INTENT_MESSAGE_CONTENT: Final = 1 << 15

EXIT_OK: Final = 0
EXIT_TRANSIENT: Final = 1
EXIT_CONFIGURATION: Final = 2
EXIT_REFUSED: Final = 3

READY_TIMEOUT: Final = 20.0
DELIVERY_TIMEOUT: Final = 10.0


# -- the relay process -----------------------------------------------------------------------------


@pytest.fixture
def loop() -> Iterator[LoopbackLoop]:
    with LoopbackLoop() as running:
        yield running


@pytest.fixture
def discord(loop: LoopbackLoop) -> Iterator[FakeDiscord]:
    fake = FakeDiscord(loop, token=BOT_TOKEN, bot_user_id=BOT_USER_ID)
    yield fake
    fake.close()


@pytest.fixture
def receiver(loop: LoopbackLoop, relay_keys: KeyPair) -> Iterator[RelayReceiver]:
    stand_in = RelayReceiver(loop, relay_keys.public_hex)
    yield stand_in
    stand_in.close()


@pytest.fixture
def start_relay(
    tmp_path: Path, discord: FakeDiscord, receiver: RelayReceiver, relay_keys: KeyPair
) -> Iterator[Callable[..., RelayProcess]]:
    """Start ``python -m kioku.cli relay`` pointed at the fakes; extra variables override the defaults."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str, **variables: str) -> RelayProcess:
        defaults = {
            "DISCORD_BOT_TOKEN": BOT_TOKEN,
            "RELAY_SIGNING_KEY": relay_keys.signing_hex,
            "RELAY_URL": receiver.url,
            "DISCORD_API_BASE_URL": discord.api_base_url,
        }
        process = start_relay_process(tmp_path / f"relay-{len(started)}.log", *args, **(defaults | variables))
        started.append(process.process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(EXIT_TIMEOUT)


@pytest.fixture
def relay(start_relay: Callable[..., RelayProcess], discord: FakeDiscord) -> Callable[..., RelayProcess]:
    """Start the relay and wait until its gateway session is READY."""

    def start_connected(*args: str, **variables: str) -> RelayProcess:
        running = start_relay(*args, **variables)
        wait_until(
            lambda: discord.connected or discord.unsupported or running.process.poll() is not None,
            "the relay's gateway session",
            timeout=READY_TIMEOUT,
        )
        assert not discord.unsupported, f"the fake gateway cannot speak {discord.unsupported[0].query}"
        assert discord.connected, running.log()
        return running

    return start_connected


# -- gateway payloads ------------------------------------------------------------------------------


def message(number: int, content: str = "hello", *, author_id: str = ALICE) -> dict[str, Any]:
    return {
        "id": str(FIRST_MESSAGE_ID + number),
        "channel_id": CHANNEL,
        "guild_id": GUILD,
        "type": 0,
        "content": content,
        "author": {"id": author_id, "username": "alice", "global_name": "Alice", "bot": False},
        "member": {"nick": "Ali", "roles": []},
        "mentions": [],
        "timestamp": "2026-11-30T12:00:00.000000+00:00",
    }


def channel(channel_id: str, name: str) -> dict[str, Any]:
    return {
        "id": channel_id,
        "type": 0,
        "guild_id": GUILD,
        "name": name,
        "position": 1,
        "parent_id": None,
        "permission_overwrites": [{"id": GUILD, "type": 0, "allow": "0", "deny": "1024"}],
    }


def envelope(event_name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"t": event_name, "d": data}


def exact_body(event_name: str, data: dict[str, Any]) -> bytes:
    """The bytes RelayFunction receives: compact UTF-8 JSON, non-ASCII unescaped."""
    return json.dumps(envelope(event_name, data), separators=(",", ":"), ensure_ascii=False).encode()


def message_ids(receiver: RelayReceiver) -> list[str]:
    return [delivery.envelope["d"]["id"] for delivery in receiver.deliveries]


def wait_for_accepted(receiver: RelayReceiver, count: int, timeout: float = DELIVERY_TIMEOUT) -> None:
    wait_until(lambda: len(receiver.accepted) >= count, f"{count} accepted deliveries", timeout=timeout)


# -- delivery ----------------------------------------------------------------------------------------


def test_messages_arrive_once_in_order_as_the_signed_envelope_of_the_gateway_object(relay, discord, receiver):
    # Given a relay connected to the gateway
    running = relay()
    messages = [message(1, "記憶さん、おはよう"), message(2, "<@100000000000000001> hi"), message(3)]

    # When the gateway dispatches three messages
    for item in messages:
        discord.dispatch("MESSAGE_CREATE", item)
    wait_for_accepted(receiver, 3)
    exit_code = running.terminate()

    # Then each arrived once, in order, byte for byte the envelope of what the gateway sent, signed
    assert [d.body for d in receiver.deliveries] == [exact_body("MESSAGE_CREATE", m) for m in messages]
    assert all(d.verified for d in receiver.deliveries)
    assert {d.content_type for d in receiver.deliveries} == {"application/json"}
    # ...the relay found the gateway through DISCORD_API_BASE_URL, with its token, as v10 JSON zlib-stream
    assert [(r.path, r.authorization) for r in discord.rest_requests] == [
        ("/api/v10/gateway/bot", f"Bot {BOT_TOKEN}")
    ]
    assert discord.connections[0].path == GATEWAY_PATH
    assert discord.connections[0].query == {"v": "10", "encoding": "json", "compress": "zlib-stream"}
    assert discord.heartbeats >= 1
    # ...and it stopped cleanly, its log free of per-request lines
    assert exit_code == EXIT_OK
    assert "HTTP Request" not in running.log()
    assert "forwarded=3" in running.log()


def test_channel_and_thread_events_arrive_under_their_own_names(relay, discord, receiver):
    # Given a relay connected to the gateway
    relay()
    thread_update = {
        "id": THREAD,
        "type": 11,
        "guild_id": GUILD,
        "parent_id": CHANNEL,
        "name": "plans",
        "thread_metadata": {"archived": True, "locked": False},
    }
    thread_delete = {"id": THREAD, "guild_id": GUILD, "parent_id": CHANNEL, "type": 11}
    forwarded = [
        ("CHANNEL_UPDATE", channel(CHANNEL, "general")),
        ("CHANNEL_DELETE", channel("500000000000000006", "old")),
        ("THREAD_UPDATE", thread_update),
        ("THREAD_DELETE", thread_delete),
    ]
    not_forwarded = [
        ("TYPING_START", {"channel_id": CHANNEL, "user_id": ALICE, "timestamp": 1}),
        ("MESSAGE_UPDATE", message(1, "edited")),
        ("MESSAGE_DELETE", {"id": message(1)["id"], "channel_id": CHANNEL, "guild_id": GUILD}),
        ("CHANNEL_CREATE", channel("500000000000000007", "new")),
        ("THREAD_CREATE", {**thread_update, "id": "510000000000000006"}),
    ]

    # When the gateway dispatches channel events, events the relay ignores, then a message
    for event_name, data in forwarded + not_forwarded:
        discord.dispatch(event_name, data)
    discord.dispatch("MESSAGE_CREATE", message(2))
    wait_for_accepted(receiver, len(forwarded) + 1)

    # Then the relay identified with the GUILDS intent channel events need
    assert discord.identifies[0]["intents"] == (
        INTENT_GUILDS | INTENT_GUILD_MESSAGES | INTENT_DM_MESSAGES | INTENT_MESSAGE_CONTENT
    )
    # ...and exactly the channel events and the message arrived, each under its own event name
    bodies = [d.body for d in receiver.deliveries]
    for body, (name, data) in zip(bodies, forwarded, strict=False):
        # each channel event says when the relay received it, so a late one never overrides a newer look
        sent = json.loads(body)
        assert parse_time(sent.pop("received_at")) <= datetime.now(UTC)
        assert json.dumps(sent, separators=(",", ":"), ensure_ascii=False).encode() == exact_body(name, data)
    assert bodies[len(forwarded) :] == [exact_body("MESSAGE_CREATE", message(2))]
    assert all(d.verified for d in receiver.deliveries)


def test_a_guild_delete_arrives_in_the_same_envelope(relay, discord, receiver):
    # Given a relay connected to the gateway
    relay()
    # When Discord says the bot was removed from the guild, then that another guild is in an outage
    removed, outage = {"id": GUILD}, {"id": "400000000000000009", "unavailable": True}
    discord.dispatch("GUILD_DELETE", removed)
    discord.dispatch("GUILD_DELETE", outage)
    wait_for_accepted(receiver, 2)
    # Then both reached RelayFunction, signed, each in the envelope of its event name
    for delivery, data in zip(receiver.deliveries, (removed, outage), strict=True):
        sent = json.loads(delivery.body)
        assert parse_time(sent.pop("received_at")) <= datetime.now(UTC)
        assert json.dumps(sent, separators=(",", ":"), ensure_ascii=False).encode() == exact_body(
            "GUILD_DELETE", data
        )
        assert delivery.verified


def test_the_bots_own_messages_are_not_forwarded(relay, discord, receiver):
    # Given a relay whose READY named the bot's user id
    running = relay()

    # When the gateway dispatches a message, the bot's own reply, and another message
    discord.dispatch("MESSAGE_CREATE", message(1))
    discord.dispatch("MESSAGE_CREATE", message(2, "Happy to help.", author_id=BOT_USER_ID))
    discord.dispatch("MESSAGE_CREATE", message(3))
    wait_for_accepted(receiver, 2)
    exit_code = running.terminate()

    # Then the reply never reached RelayFunction, and the relay counted it as skipped
    assert message_ids(receiver) == [message(1)["id"], message(3)["id"]]
    assert exit_code == EXIT_OK
    assert "forwarded=2, skipped_own=1" in running.log()


def test_a_dispatch_split_across_websocket_messages_arrives_whole(relay, discord, receiver):
    # Given a relay connected to the gateway, and a long message
    relay()
    long_message = message(2, "長い話です。" * 400)

    # When its compressed frame arrives in five websocket messages, between two ordinary ones
    discord.dispatch("MESSAGE_CREATE", message(1))
    discord.dispatch("MESSAGE_CREATE", long_message, parts=5)
    discord.dispatch("MESSAGE_CREATE", message(3))
    wait_for_accepted(receiver, 3)

    # Then it is forwarded intact, in its place
    assert [d.body for d in receiver.deliveries] == [
        exact_body("MESSAGE_CREATE", m) for m in (message(1), long_message, message(3))
    ]


def test_a_resumed_session_replays_what_was_missed_once_and_in_order(relay, discord, receiver):
    # Given a relay that has forwarded two messages
    relay()
    discord.dispatch("MESSAGE_CREATE", message(1))
    last_seen = discord.dispatch("MESSAGE_CREATE", message(2))
    wait_for_accepted(receiver, 2)

    # When the gateway drops the connection (4000, resumable) and two messages come while it is down
    discord.close_connection(CLOSE_UNKNOWN_ERROR)
    discord.dispatch("MESSAGE_CREATE", message(3))
    discord.dispatch("MESSAGE_CREATE", message(4))
    wait_until(lambda: discord.connected, "the resumed session", timeout=READY_TIMEOUT)
    discord.dispatch("MESSAGE_CREATE", message(5))
    wait_for_accepted(receiver, 5)

    # Then the relay resumed the same session at the resume URL from READY, with no new IDENTIFY
    assert len(discord.identifies) == 1
    assert [(r["session_id"], r["seq"]) for r in discord.resumes] == [("fake-session-1", last_seen)]
    assert discord.connections[-1].path == RESUME_GATEWAY_PATH
    # ...and every message arrived exactly once, in order
    assert message_ids(receiver) == [message(n)["id"] for n in range(1, 6)]


def discord_guild(*, secret_hidden: bool) -> dict[str, Any]:
    """The guild as Discord's GUILD_CREATE carries it, members, presences and all."""
    everyone = {"id": GUILD, "type": 0, "allow": "0", "deny": "1024" if secret_hidden else "0"}
    return {
        "id": GUILD,
        "name": "the server",
        "roles": [{"id": GUILD, "name": "@everyone", "permissions": "1024", "tags": {}}],
        "channels": [
            {**channel(CHANNEL, "general"), "permission_overwrites": []},
            {**channel("500000000000000006", "secret"), "permission_overwrites": [everyone]},
        ],
        "threads": [{"id": THREAD, "type": 11, "guild_id": GUILD, "parent_id": CHANNEL, "name": "plans"}],
        "members": [{"user": {"id": ALICE, "username": "alice"}, "roles": []}],
        "presences": [{"user": {"id": ALICE}, "status": "online"}],
        "voice_states": [],
        "emojis": [{"id": "1", "name": "smile"}],
        "stickers": [],
    }


def test_each_new_session_forwards_its_guilds_channel_lists(relay, discord, receiver):
    # Given a bot in one guild, and a relay that connected (READY, then GUILD_CREATE for the guild)
    discord.guilds = [discord_guild(secret_hidden=False)]
    relay()
    wait_for_accepted(receiver, 1)

    # When the secret channel turns private while the session is lost for good (its CHANNEL_UPDATE with
    # it), and the relay identifies anew
    discord.guilds = [discord_guild(secret_hidden=True)]
    discord.close_connection(CLOSE_SESSION_TIMED_OUT, resumable=False)
    wait_for_accepted(receiver, 2)
    discord.dispatch("MESSAGE_CREATE", message(1))
    wait_for_accepted(receiver, 3)

    # Then the new session's GUILD_CREATE reached RelayFunction, channels, threads and roles only, with
    # the secret channel now hidden and when the relay received it; and chat went on
    assert len(discord.identifies) == 2 and len(discord.resumes) == 1
    first, second, chat = (delivery.envelope for delivery in receiver.deliveries)
    assert first["t"] == second["t"] == "GUILD_CREATE" and chat["d"]["id"] == message(1)["id"]
    assert set(second["d"]) == {"id", "channels", "threads", "roles"}
    hidden = next(c for c in second["d"]["channels"] if c["name"] == "secret")
    assert hidden["permission_overwrites"][0]["deny"] == "1024"
    assert second["d"]["threads"][0]["id"] == THREAD
    assert abs(datetime.fromisoformat(second["received_at"]) - datetime.now(UTC)) < timedelta(minutes=1)
    assert all(d.verified for d in receiver.deliveries)


def test_a_rate_limited_gateway_lookup_is_retried(relay, discord, receiver):
    # Given Discord's REST answering the first GET /gateway/bot with 429
    discord.rest_script = [
        CannedAnswer(
            429,
            {"message": "You are being rate limited.", "retry_after": 0.3, "global": False},
            {"Retry-After": "1"},
        )
    ]

    # When the relay starts
    relay()
    discord.dispatch("MESSAGE_CREATE", message(1))
    wait_for_accepted(receiver, 1)

    # Then it waited, asked again, connected and forwarded
    assert len(discord.rest_requests) == 2
    assert message_ids(receiver) == [message(1)["id"]]


def test_relay_function_answering_500_is_retried_until_it_accepts(relay, discord, receiver):
    # Given RelayFunction failing once
    receiver.script = [Answer(500)]
    relay()

    # When two messages are dispatched
    discord.dispatch("MESSAGE_CREATE", message(1))
    discord.dispatch("MESSAGE_CREATE", message(2))
    wait_for_accepted(receiver, 2)

    # Then the first went twice (500, then 202), both signed, and the second followed it
    assert message_ids(receiver) == [message(1)["id"], message(1)["id"], message(2)["id"]]
    assert [d.status for d in receiver.deliveries] == [500, 202, 202]
    assert all(d.verified for d in receiver.deliveries)


def test_relay_function_answering_429_is_retried_after_its_retry_after(relay, discord, receiver):
    # Given RelayFunction answering 429 with Retry-After: 1 (longer than the first backoff, 0.5 s at most)
    receiver.script = [Answer(429, {"Retry-After": "1"})]
    relay()

    # When a message is dispatched
    discord.dispatch("MESSAGE_CREATE", message(1))
    wait_for_accepted(receiver, 1)

    # Then it was sent again, no sooner than Retry-After said
    first, second = receiver.deliveries
    assert first.body == second.body
    assert [first.status, second.status] == [429, 202]
    assert second.arrived_at - first.arrived_at >= 0.95


def test_delivery_settings_come_from_the_environment(relay, discord, receiver):
    # Given a relay allowed two attempts per message, and RelayFunction failing twice
    receiver.script = [Answer(500), Answer(500)]
    running = relay(RELAY_MAX_ATTEMPTS="2", RELAY_MAX_DELAY_SECONDS="0.05")

    # When two messages are dispatched
    discord.dispatch("MESSAGE_CREATE", message(1))
    discord.dispatch("MESSAGE_CREATE", message(2))
    wait_for_accepted(receiver, 1)
    exit_code = running.terminate()

    # Then the first was given up after two attempts and the second delivered
    assert message_ids(receiver) == [message(1)["id"], message(1)["id"], message(2)["id"]]
    assert exit_code == EXIT_OK
    assert "forwarded=1, skipped_own=0, dropped=0, failed=1" in running.log()


def test_a_burst_of_500_messages_arrives_complete_and_in_order(relay, discord, receiver):
    # Given a relay connected to the gateway
    relay()
    burst = [message(number, f"message {number}") for number in range(1, 501)]

    # When 500 messages are dispatched back to back
    for item in burst:
        discord.dispatch("MESSAGE_CREATE", item)
    wait_for_accepted(receiver, len(burst), timeout=30)

    # Then all of them arrived, once each, in order, signed
    assert message_ids(receiver) == [item["id"] for item in burst]
    assert all(d.verified for d in receiver.deliveries)


# -- stopping ----------------------------------------------------------------------------------------


def test_sigterm_drains_the_buffer_before_exiting(relay, discord, receiver):
    # Given a slow RelayFunction (0.2 s a message) and five messages on their way
    receiver.default = Answer(delay=0.2)
    running = relay()
    for number in range(1, 6):
        discord.dispatch("MESSAGE_CREATE", message(number))
    wait_until(lambda: len(receiver.deliveries) >= 1, "the first delivery")

    # When the relay is asked to stop while most are still buffered
    exit_code = running.terminate()

    # Then it delivered every one of them before exiting 0
    assert exit_code == EXIT_OK
    assert message_ids(receiver) == [message(n)["id"] for n in range(1, 6)]
    assert "forwarded=5, skipped_own=0, dropped=0, failed=0" in running.log()


def test_when_the_drain_gives_up_every_abandoned_message_is_counted(relay, discord, receiver):
    # Given RelayFunction failing for good, a 0.5 s drain, one message retrying and one buffered
    receiver.default = Answer(500)
    running = relay(RELAY_DRAIN_TIMEOUT_SECONDS="0.5")
    discord.dispatch("MESSAGE_CREATE", message(1))
    discord.dispatch("MESSAGE_CREATE", message(2))
    wait_until(lambda: len(receiver.deliveries) >= 2, "the first message's retry")

    # When the relay is asked to stop
    started = time.monotonic()
    exit_code = running.terminate()
    stopping_took = time.monotonic() - started

    # Then it gave up after the configured drain (not the default 10 s) and counted both as failed
    assert exit_code == EXIT_OK
    assert stopping_took < 8
    assert set(message_ids(receiver)) == {message(1)["id"]}
    log = running.log()
    assert "2 undelivered dispatch(es) (1 in flight, 1 buffered)" in log
    assert "forwarded=0, skipped_own=0, dropped=0, failed=2" in log


# -- refusals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("close_code", "cause", "exit_code"),
    [
        (4004, "authentication failed", EXIT_REFUSED),
        (4010, "invalid shard", EXIT_REFUSED),
        (4011, "sharding required", EXIT_REFUSED),
        (4012, "invalid API version", EXIT_REFUSED),
        (4013, "invalid intents", EXIT_REFUSED),
        (4014, "disallowed intents", EXIT_REFUSED),
        (4005, "Server closed connection with code 4005", EXIT_TRANSIENT),
    ],
)
def test_a_gateway_refusal_exits_with_the_code_a_supervisor_acts_on(
    start_relay, discord, close_code, cause, exit_code
):
    # Given a gateway that closes the connection with ``close_code`` on IDENTIFY
    discord.close_on_identify = close_code

    # When the relay starts
    running = start_relay()

    # Then it exits at once (3: permanent, do not restart; 1: worth restarting), naming the cause
    assert running.wait() == exit_code, running.log()
    assert len(discord.identifies) == 1
    error = [line for line in running.log().splitlines() if line.startswith("kioku relay: ")]
    assert len(error) == 1
    assert cause in error[0]
    assert BOT_TOKEN not in running.log()


def test_a_token_discord_rejects_exits_3(start_relay, discord):
    # Given a token this Discord does not know
    # When the relay starts with it
    running = start_relay(DISCORD_BOT_TOKEN=OTHER_TOKEN)

    # Then REST refused it (401), the relay never opened the gateway, and it exits 3 saying why
    assert running.wait() == EXIT_REFUSED, running.log()
    assert [r.authorization for r in discord.rest_requests] == [f"Bot {OTHER_TOKEN}"]
    assert discord.connections == []
    assert "kioku relay: Discord rejected DISCORD_BOT_TOKEN (401 Unauthorized)" in running.log()
    assert OTHER_TOKEN not in running.log()


# -- sharding ----------------------------------------------------------------------------------------


def guild_on_shard(shard_id: int, shard_count: int) -> str:
    """A guild id Discord routes to ``shard_id`` of ``shard_count``: ``(guild_id >> 22) % count``."""
    guild_id = int(GUILD)
    while shard_of(guild_id, shard_count) != shard_id:
        guild_id += 1 << 22
    return str(guild_id)


def in_guild(number: int, guild_id: str | None) -> dict[str, Any]:
    item = message(number, f"message {number}")
    if guild_id is None:  # a direct message: no guild, no member
        del item["guild_id"], item["member"]
    else:
        item["guild_id"] = guild_id
    return item


def test_two_processes_each_identify_with_their_own_shard_and_forward_only_their_guilds(
    start_relay, loop, discord, receiver, relay_keys
):
    # Given two relays of a two-shard bot, one configured by flags, one by variables, each with its
    # own RelayFunction stand-in so that who forwarded what shows
    second_receiver = RelayReceiver(loop, relay_keys.public_hex)
    try:
        first = start_relay("--shard-count", "2", "--shard-ids", "0")
        second = start_relay(RELAY_SHARD_COUNT="2", RELAY_SHARD_IDS="1", RELAY_URL=second_receiver.url)
        wait_until(lambda: discord.connected_shards == {0, 1}, "both shards' sessions", timeout=READY_TIMEOUT)

        # When messages arrive in a guild of each shard, and a direct message
        guild_0, guild_1 = guild_on_shard(0, 2), guild_on_shard(1, 2)
        sent = [in_guild(1, guild_0), in_guild(2, guild_1), in_guild(3, guild_1), in_guild(4, None)]
        for item in sent:
            discord.dispatch("MESSAGE_CREATE", item)
        wait_for_accepted(receiver, 2)
        wait_for_accepted(second_receiver, 2)
        exit_codes = (first.terminate(), second.terminate())

        # Then each process identified once, with its own shard of two
        assert sorted(discord.identified_shards) == [[0, 2], [1, 2]]
        # ...and each forwarded exactly its own guilds' messages (direct messages are shard 0's)
        assert message_ids(receiver) == [sent[0]["id"], sent[3]["id"]]
        assert message_ids(second_receiver) == [sent[1]["id"], sent[2]["id"]]
        assert exit_codes == (EXIT_OK, EXIT_OK)
        assert "sharding: shard count 2, shard ids 0" in first.log()
        assert "sharding: shard count 2, shard ids 1" in second.log()
    finally:
        second_receiver.close()


def test_no_shard_options_open_every_shard_discord_recommends_in_one_process(relay, discord):
    # Given Discord recommending one shard (as the fake does by default)
    # When the relay starts without shard options
    relay()

    # Then it identified as the only shard, as before sharding existed
    assert discord.identified_shards == [[0, 1]]


def test_shard_count_auto_takes_discords_recommended_count(relay, discord):
    # Given Discord recommending three shards
    discord.recommended_shards = 3

    # When the relay opens shard 2 of 'auto'
    running = relay("--shard-count", "auto", "--shard-ids", "2")

    # Then it asked Discord for the count and identified as shard 2 of 3
    assert discord.identified_shards == [[2, 3]]
    assert {r.path for r in discord.rest_requests} == {"/api/v10/gateway/bot"}
    assert "Discord recommends 3 shard(s)" in running.log()


def test_a_shard_id_outside_discords_recommended_count_exits_2(start_relay, discord):
    # Given Discord recommending two shards
    discord.recommended_shards = 2

    # When the relay is told to open shard 2 of 'auto'
    running = start_relay(RELAY_SHARD_COUNT="auto", RELAY_SHARD_IDS="2")

    # Then it never connects and stops as misconfigured, saying why
    assert running.wait() == EXIT_CONFIGURATION, running.log()
    assert discord.connections == []
    assert (
        "kioku relay: shard id 2 is outside Discord's recommended shard count (auto): ids run from 0 to 1"
        in running.log()
    )


# -- the health endpoint -----------------------------------------------------------------------------


def health_url(running: RelayProcess) -> str:
    """The /healthz URL the relay logged (it was given port 0: any free port)."""
    found: list[str] = []

    def logged() -> bool:
        found.extend(re.findall(r"health endpoint on (http://\S+/healthz)", running.log()))
        return bool(found) or running.process.poll() is not None

    wait_until(logged, "the health endpoint's address in the log")
    assert found, running.log()
    return found[0]


def health(url: str) -> tuple[int, dict[str, Any]]:
    response = httpx.get(url, timeout=5)
    return response.status_code, response.json()


def test_healthz_follows_the_gateway_session_and_the_forwarded_count(start_relay, discord, receiver):
    # Given a gateway that refuses connections for now, and a relay serving /healthz
    discord.refuse_connections = True
    started = time.monotonic()
    running = start_relay("--health-port", "0", "--shard-count", "1", "--shard-ids", "0")
    url = health_url(running)
    wait_until(lambda: len(discord.connections) >= 1, "a refused connection attempt", timeout=READY_TIMEOUT)

    # Then before READY it is starting: 503
    status, body = health(url)
    assert (status, body["status"], body["shards"]) == (503, "starting", {"0": False})

    # When the gateway lets it in and two messages are forwarded
    discord.refuse_connections = False
    wait_until(lambda: health(url)[0] == 200, "/healthz 200", timeout=READY_TIMEOUT)
    ready_after = time.monotonic() - started
    discord.dispatch("MESSAGE_CREATE", message(1))
    discord.dispatch("MESSAGE_CREATE", message(2, author_id=BOT_USER_ID))
    discord.dispatch("MESSAGE_CREATE", message(3))
    wait_for_accepted(receiver, 2)
    # (the relay counts a forward once it has read RelayFunction's answer, a moment after the receiver took it)
    wait_until(lambda: health(url)[1]["forwarded"] >= 2, "the second forward counted")

    # Then it is ok: 200, the shard connected, the counts moved
    status, body = health(url)
    assert (status, body["status"], body["shards"]) == (200, "ok", {"0": True})
    assert (body["forwarded"], body["skipped_own"], body["failed"], body["dropped"]) == (2, 1, 0, 0)

    # When the gateway drops the connection and refuses it back
    discord.refuse_connections = True
    discord.close_connection(CLOSE_UNKNOWN_ERROR)

    # Then it is disconnected: 503, until the session resumes
    wait_until(lambda: health(url)[0] == 503, "/healthz 503 after the close")
    status, body = health(url)
    assert (body["status"], body["shards"]) == ("disconnected", {"0": False})
    discord.refuse_connections = False
    wait_until(lambda: health(url)[0] == 200, "/healthz 200 after the resume", timeout=READY_TIMEOUT)
    assert len(discord.resumes) == 1
    assert running.terminate() == EXIT_OK
    print(f"relay: /healthz 200 {ready_after:.2f}s after start (gateway refused at first)")
