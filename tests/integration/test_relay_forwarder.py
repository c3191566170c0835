"""The relay forwarder against a real HTTP server on 127.0.0.1 that verifies every signature."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from kioku.playground.http_server import LoopbackHTTPServer
from kioku.relay.forwarder import Forwarder
from kioku.signatures import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    RequestVerifier,
    SignatureRejected,
    new_key_pair,
    sign_request,
)

QUICK = 0.01
"""Backoff base for tests: retries happen, but without real waiting."""
DROP_CONNECTION = -1
"""A scripted 'status' meaning: close the socket without answering (a transport error)."""
FAKE_BOT_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAx.GabCdE.not-a-real-token-just-the-right-shape"
"""Shaped like a bot token (base64 user id first), so hikari accepts it offline."""


@dataclass
class Received:
    body: bytes
    timestamp: str
    verified: bool
    content_type: str | None


@dataclass
class RelayEndpoint:
    """A stand-in for RelayFunction: verifies, records, answers the scripted statuses, then 202."""

    verifier: RequestVerifier
    script: list[int] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    url: str = ""

    def next_status(self) -> int:
        return self.script.pop(0) if self.script else 202


@pytest.fixture
def key_pair() -> tuple[str, str]:
    return new_key_pair()


@pytest.fixture
def endpoint(key_pair) -> Iterator[RelayEndpoint]:
    relay = RelayEndpoint(verifier=RequestVerifier(key_pair[1]))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            try:
                relay.verifier.verify(
                    body, self.headers.get(SIGNATURE_HEADER), self.headers.get(TIMESTAMP_HEADER)
                )
                verified = True
            except SignatureRejected:
                verified = False
            with lock:
                relay.received.append(
                    Received(
                        body,
                        self.headers.get(TIMESTAMP_HEADER, ""),
                        verified,
                        self.headers.get("content-type"),
                    )
                )
                status = relay.next_status() if verified else 401
            if status == DROP_CONNECTION:
                self.close_connection = True
                return
            self.send_response(status)
            for name, value in relay.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    relay.url = f"http://127.0.0.1:{server.server_address[1]}/"
    yield relay
    server.shutdown()
    server.server_close()
    thread.join()


def message(number: int, content: str = "hello") -> dict[str, Any]:
    return {
        "id": str(600000000000000000 + number),
        "channel_id": "500000000000000005",
        "guild_id": "400000000000000004",
        "type": 0,
        "content": content,
        "author": {"id": "200000000000000002", "username": "alice"},
        "member": {"nick": "Ali", "roles": []},
        "mentions": [],
    }


async def deliver_all(forwarder: Forwarder, *, timeout: float = 5.0) -> None:
    """Run the forwarder until everything submitted so far is delivered or given up, then stop it."""
    runner = asyncio.create_task(forwarder.run())
    await asyncio.wait_for(forwarder._buffer.join(), timeout)
    await forwarder.stop()
    await asyncio.wait_for(runner, timeout)


def test_delivers_signed_message_create_bodies_that_verify(endpoint, key_pair):
    async def scenario() -> Forwarder:
        # Given a forwarder and three gateway dispatches, one of which is not a message
        forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)
        taken = [
            forwarder.submit("MESSAGE_CREATE", message(1, "記憶さん、おはよう")),
            forwarder.submit("TYPING_START", {"channel_id": "500000000000000005"}),
            forwarder.submit("MESSAGE_CREATE", message(2)),
        ]
        assert taken == [True, False, True]
        # When it runs
        await deliver_all(forwarder)
        return forwarder

    forwarder = asyncio.run(scenario())

    # Then exactly the two messages arrive, in order, verified, as the JSON of the dispatch
    assert [r.verified for r in endpoint.received] == [True, True]
    assert [json.loads(r.body) for r in endpoint.received] == [
        {"t": "MESSAGE_CREATE", "d": message(1, "記憶さん、おはよう")},
        {"t": "MESSAGE_CREATE", "d": message(2)},
    ]
    assert (
        endpoint.received[1].body
        == json.dumps({"t": "MESSAGE_CREATE", "d": message(2)}, separators=(",", ":")).encode()
    )
    assert endpoint.received[0].content_type == "application/json"
    assert (forwarder.counters.forwarded, forwarder.counters.dropped, forwarder.counters.failed) == (2, 0, 0)


def test_channel_and_thread_events_are_forwarded_under_their_own_names(endpoint, key_pair):
    # Given the four channel events RelayFunction applies to memory, and two it does not take
    channel = {"id": "500000000000000005", "guild_id": "400000000000000004", "type": 0, "name": "general"}
    thread_delete = {
        "id": "510000000000000005",
        "guild_id": "400000000000000004",
        "parent_id": "1",
        "type": 11,
    }
    forwarded = [
        ("CHANNEL_UPDATE", channel),
        ("CHANNEL_DELETE", channel),
        ("THREAD_UPDATE", {**thread_delete, "name": "plans"}),
        ("THREAD_DELETE", thread_delete),
    ]
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK, clock=lambda: RECEIVED)

    # When they are submitted with a CHANNEL_CREATE and an unavailable guild's GUILD_CREATE among them
    taken = [forwarder.submit(name, data) for name, data in forwarded]
    unavailable = {"id": "1", "unavailable": True}
    ignored = [forwarder.submit("CHANNEL_CREATE", channel), forwarder.submit("GUILD_CREATE", unavailable)]
    asyncio.run(deliver_all(forwarder))

    # Then exactly the four arrived, each in the envelope of its own event name
    assert taken == [True] * 4
    assert ignored == [False, False]
    assert [json.loads(r.body) for r in endpoint.received] == [
        {"t": n, "d": d, "received_at": "2025-12-01T12:00:00+00:00"} for n, d in forwarded
    ]


def test_a_guild_delete_is_forwarded_in_the_same_envelope_removal_or_outage(endpoint, key_pair):
    # Given the bot removed from one guild, and another guild in an outage
    removed, outage = {"id": "400000000000000004"}, {"id": "400000000000000005", "unavailable": True}
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK, clock=lambda: RECEIVED)
    # When both GUILD_DELETEs are submitted
    taken = [forwarder.submit("GUILD_DELETE", removed), forwarder.submit("GUILD_DELETE", outage)]
    asyncio.run(deliver_all(forwarder))
    # Then both arrive, signed, as they came, with when the relay received them (RelayFunction tells
    # the two apart, and a late removal from a guild re-added since)
    assert taken == [True, True]
    assert [json.loads(r.body) for r in endpoint.received] == [
        {"t": "GUILD_DELETE", "d": d, "received_at": "2025-12-01T12:00:00+00:00"} for d in (removed, outage)
    ]


def test_the_bots_own_messages_are_skipped_once_ready_names_the_bot(endpoint, key_pair):
    # Given a forwarder that has seen READY for bot user 100000000000000001
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)
    assert forwarder.submit("READY", {"user": {"id": "100000000000000001"}, "session_id": "s"}) is False
    own = {**message(2, "Happy to help."), "author": {"id": "100000000000000001", "bot": True}}

    # When a person's message and the bot's own reply are submitted
    taken = [forwarder.submit("MESSAGE_CREATE", message(1)), forwarder.submit("MESSAGE_CREATE", own)]
    asyncio.run(deliver_all(forwarder))

    # Then only the person's message went out, and the reply was counted as skipped
    assert taken == [True, False]
    assert [json.loads(r.body)["d"]["id"] for r in endpoint.received] == [message(1)["id"]]
    assert (forwarder.counters.forwarded, forwarder.counters.skipped_own) == (1, 1)


def test_a_mention_of_the_bots_managed_role_is_forwarded_with_that_role_and_its_webhooks_are_not(
    endpoint, key_pair
):
    # Given a forwarder that learned the bot's managed role of a guild from GUILD_CREATE
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)
    forwarder.submit("READY", {"user": {"id": "100000000000000001"}, "session_id": "s"})
    roles = [
        {"id": "810000000000000001", "name": "Mods"},
        {"id": "810000000000000002", "name": "kioku", "tags": {"bot_id": "100000000000000001"}},
    ]
    assert forwarder.submit("GUILD_CREATE", {"id": "200000000000000001", "roles": roles}) is False
    to_role = {**message(1), "guild_id": "200000000000000001", "mention_roles": ["810000000000000002"]}
    to_mods = {**message(2), "guild_id": "200000000000000001", "mention_roles": ["810000000000000001"]}
    own_webhook = {
        **message(3),
        "author": {"id": "900000000000000009"},
        "application_id": "100000000000000001",
    }

    # When messages mentioning each role, and one of the bot's own webhook posts, are submitted
    taken = [forwarder.submit("MESSAGE_CREATE", m) for m in (to_role, to_mods, own_webhook)]
    asyncio.run(deliver_all(forwarder))

    # Then the bot's role rides in the envelope, the other role does not, and its own post stays home
    assert taken == [True, True, False]
    bodies = [json.loads(r.body) for r in endpoint.received]
    assert [body.get("bot_role_ids") for body in bodies] == [["810000000000000002"], None]


def test_a_request_signed_with_another_key_is_refused_by_the_endpoint(endpoint):
    # Given a forwarder holding a seed that does not match the endpoint's public key
    forwarder = Forwarder(endpoint.url, new_key_pair()[0], base_delay=QUICK)
    forwarder.submit("MESSAGE_CREATE", message(1))

    # When it runs
    asyncio.run(deliver_all(forwarder))

    # Then the endpoint refused it (401) and the forwarder did not retry
    assert [r.verified for r in endpoint.received] == [False]
    assert (forwarder.counters.forwarded, forwarder.counters.failed) == (0, 1)


def test_retries_server_errors_and_delivers_once_with_a_fresh_signature_each_time(endpoint, key_pair):
    # Given an endpoint that fails twice, and a clock that moves on between attempts
    endpoint.script = [500, 503]
    start = time.time() - 250
    ticks = iter([start, start + 100, start + 200])
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK, clock=lambda: next(ticks))
    forwarder.submit("MESSAGE_CREATE", message(1))

    # When it runs
    asyncio.run(deliver_all(forwarder))

    # Then the same body went three times, each re-signed with its own, valid timestamp
    assert len(endpoint.received) == 3
    assert len({r.body for r in endpoint.received}) == 1
    assert [r.verified for r in endpoint.received] == [True, True, True]
    assert [int(r.timestamp) for r in endpoint.received] == [int(start), int(start) + 100, int(start) + 200]
    assert (forwarder.counters.forwarded, forwarder.counters.failed) == (1, 0)


def test_retries_after_a_dropped_connection(endpoint, key_pair):
    endpoint.script = [DROP_CONNECTION]
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)
    forwarder.submit("MESSAGE_CREATE", message(1))

    asyncio.run(deliver_all(forwarder))

    assert len(endpoint.received) == 2
    assert (forwarder.counters.forwarded, forwarder.counters.failed) == (1, 0)


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_does_not_retry_client_errors(endpoint, key_pair, status):
    # Given an endpoint that refuses the message
    endpoint.script = [status]
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)
    forwarder.submit("MESSAGE_CREATE", message(1))
    forwarder.submit("MESSAGE_CREATE", message(2))

    # When it runs
    asyncio.run(deliver_all(forwarder))

    # Then the refused message is sent once and dropped; the next one still goes through
    assert [json.loads(r.body)["d"]["id"] for r in endpoint.received] == [message(1)["id"], message(2)["id"]]
    assert (forwarder.counters.forwarded, forwarder.counters.failed) == (1, 1)


def test_honours_retry_after_on_429(endpoint, key_pair):
    # Given a backoff far longer than the test's patience, and an endpoint saying "retry now"
    endpoint.script = [429]
    endpoint.headers = {"retry-after": "0"}
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=60.0)
    forwarder.submit("MESSAGE_CREATE", message(1))

    # When it runs (deliver_all times out after 5 s, so the 60 s backoff cannot have been used)
    asyncio.run(deliver_all(forwarder))

    # Then the retry followed Retry-After
    assert len(endpoint.received) == 2
    assert forwarder.counters.forwarded == 1


def test_gives_up_after_max_attempts(endpoint, key_pair):
    endpoint.script = [500] * 10
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK, max_attempts=3)
    forwarder.submit("MESSAGE_CREATE", message(1))

    asyncio.run(deliver_all(forwarder))

    assert len(endpoint.received) == 3
    assert (forwarder.counters.forwarded, forwarder.counters.failed) == (0, 1)


def test_a_full_buffer_drops_the_oldest_messages(endpoint, key_pair):
    # Given a buffer of three and five messages arriving before delivery starts
    forwarder = Forwarder(endpoint.url, key_pair[0], buffer_size=3, base_delay=QUICK)
    for number in range(1, 6):
        assert forwarder.submit("MESSAGE_CREATE", message(number)) is True

    # When it runs
    asyncio.run(deliver_all(forwarder))

    # Then the two oldest were dropped and the three freshest delivered in order
    assert [json.loads(r.body)["d"]["id"] for r in endpoint.received] == [message(n)["id"] for n in (3, 4, 5)]
    assert (forwarder.counters.forwarded, forwarder.counters.dropped) == (3, 2)


def test_a_full_buffer_sheds_chat_messages_before_channel_events(endpoint, key_pair):
    # Given a buffer of three: a channel event, then chat messages, then another channel event
    forwarder = Forwarder(endpoint.url, key_pair[0], buffer_size=3, base_delay=QUICK)
    private = {"id": "500000000000000005", "guild_id": "400000000000000004", "type": 0}
    forwarder.submit("CHANNEL_UPDATE", private)
    for number in range(1, 4):
        forwarder.submit("MESSAGE_CREATE", message(number))
    forwarder.submit("CHANNEL_DELETE", {**private, "id": "500000000000000006"})
    # When it runs
    asyncio.run(deliver_all(forwarder))
    # Then the two oldest chat messages were shed, and both channel events delivered in order
    delivered = [(json.loads(r.body)["t"], json.loads(r.body)["d"]["id"]) for r in endpoint.received]
    assert delivered == [
        ("CHANNEL_UPDATE", private["id"]),
        ("MESSAGE_CREATE", message(3)["id"]),
        ("CHANNEL_DELETE", "500000000000000006"),
    ]
    assert forwarder.counters.dropped == 2


def test_stop_drains_what_is_buffered(endpoint, key_pair):
    async def scenario() -> Forwarder:
        # Given a running forwarder with messages still buffered when the relay is asked to stop
        forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)
        runner = asyncio.create_task(forwarder.run())
        await asyncio.sleep(0)
        for number in range(1, 4):
            forwarder.submit("MESSAGE_CREATE", message(number))
        # When it stops
        await forwarder.stop()
        # Then run() has returned, and nothing more is taken
        assert runner.done()
        assert forwarder.submit("MESSAGE_CREATE", message(4)) is False
        return forwarder

    forwarder = asyncio.run(scenario())

    assert len(endpoint.received) == 3
    assert (forwarder.counters.forwarded, forwarder.counters.dropped) == (3, 1)


def test_stop_gives_up_draining_after_the_drain_timeout_and_counts_what_it_abandoned(
    endpoint, key_pair, caplog
):
    async def scenario() -> tuple[Forwarder, float]:
        # Given an endpoint that keeps failing, a long backoff, one message retrying and two buffered
        endpoint.script = [500] * 10
        forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=30.0, drain_timeout=0.2)
        runner = asyncio.create_task(forwarder.run())
        for number in range(1, 4):
            forwarder.submit("MESSAGE_CREATE", message(number))
        await asyncio.wait_for(_first_request(endpoint), 5)
        # When it stops
        started = time.monotonic()
        await asyncio.wait_for(forwarder.stop(), 5)
        assert runner.done()
        return forwarder, time.monotonic() - started

    forwarder, stopping_took = asyncio.run(scenario())

    # Then it stopped within the drain timeout's reach instead of waiting out the backoff,
    # and every message it abandoned (the one in flight and the two buffered) counts as failed
    assert stopping_took < 5
    assert (forwarder.counters.forwarded, forwarder.counters.failed) == (0, 3)
    assert "3 undelivered dispatch(es) (1 in flight, 2 buffered)" in caplog.text


async def _first_request(endpoint: RelayEndpoint) -> None:
    while not endpoint.received:
        await asyncio.sleep(0.01)


def test_endpoint_fixture_rejects_a_tampered_body(endpoint, key_pair):
    """Guard for the tests above: the stand-in endpoint really verifies signatures."""
    body = json.dumps({"t": "MESSAGE_CREATE", "d": message(1)}).encode()
    headers = sign_request(key_pair[0], body)

    with pytest.raises(SignatureRejected):
        endpoint.verifier.verify(
            body.replace(b"hello", b"HELLO"), headers[SIGNATURE_HEADER], headers[TIMESTAMP_HEADER]
        )


def test_raw_gateway_payloads_from_hikari_reach_the_endpoint_unchanged(endpoint, key_pair):
    hikari = pytest.importorskip("hikari")
    from kioku.relay.cli import DEFAULT_API_BASE_URL
    from kioku.relay.gateway import RELAY_INTENTS, build_bot

    async def scenario() -> Forwarder:
        # Given the relay's hikari bot (never connected) wired to a forwarder
        forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)
        bot = build_bot(FAKE_BOT_TOKEN, forwarder, rest_url=DEFAULT_API_BASE_URL)
        runner = asyncio.create_task(forwarder.run())
        # When the shard hands hikari two raw dispatches, as it does for every gateway event
        shard = object()
        bot.event_manager.consume_raw_event("TYPING_START", shard, {"channel_id": "500000000000000005"})
        bot.event_manager.consume_raw_event("MESSAGE_CREATE", shard, message(1, "<@100000000000000001> hi"))
        await asyncio.sleep(0.05)
        await forwarder.stop()
        await runner
        return forwarder

    forwarder = asyncio.run(scenario())

    # Then only the message went out, as the very object the gateway sent (guild_id and member included)
    assert [json.loads(r.body) for r in endpoint.received] == [
        {"t": "MESSAGE_CREATE", "d": message(1, "<@100000000000000001> hi")}
    ]
    assert forwarder.counters.forwarded == 1
    assert RELAY_INTENTS & hikari.Intents.MESSAGE_CONTENT
    assert RELAY_INTENTS & hikari.Intents.GUILDS


# -- GUILD_CREATE: a guild's channel list, for RelayFunction to repair what lost channel events left ----

GUILD_ID = "400000000000000004"
RECEIVED = 1_764_590_400.0  # 2025-12-01T12:00:00Z


def discord_guild(
    channels: int, *, overwrites: int = 3, threads: int = 0, members: int = 0
) -> dict[str, Any]:
    """A GUILD_CREATE as Discord sends it: every second channel hidden from @everyone, each with
    ``overwrites`` other role and member overwrites, and the bulk that privacy does not need."""

    def overwrite(target: int, kind: int) -> dict[str, Any]:
        return {"id": str(700000000000000000 + target), "type": kind, "allow": "3072", "deny": "8192"}

    return {
        "id": GUILD_ID,
        "name": "a big server",
        "owner_id": "200000000000000002",
        "roles": [
            {"id": GUILD_ID, "name": "@everyone", "permissions": "1071698660929", "color": 0, "tags": {}},
            {"id": "810000000000000002", "name": "kioku", "permissions": "8", "tags": {"bot_id": "1"}},
        ],
        "channels": [
            {
                "id": str(500000000000000000 + n),
                "type": 0,
                "name": f"channel-{n:03d}-with-a-longer-name",
                "parent_id": "510000000000000000",
                "position": n,
                "topic": "what this channel is about, as channels say at some length",
                "rate_limit_per_user": 0,
                "nsfw": False,
                "last_message_id": "600000000000000000",
                "permission_overwrites": [
                    {"id": GUILD_ID, "type": 0, "allow": "0", "deny": "1024" if n % 2 else "0"},
                    *(overwrite(n * 100 + o, o % 2) for o in range(overwrites)),
                ],
            }
            for n in range(channels)
        ],
        "threads": [
            {
                "id": str(520000000000000000 + t),
                "guild_id": GUILD_ID,
                "parent_id": str(500000000000000000 + t % max(channels, 1)),
                "type": 11,
                "name": f"thread-{t}",
                "thread_metadata": {"archived": False, "auto_archive_duration": 1440},
                "member_count": 3,
            }
            for t in range(threads)
        ],
        "members": [
            {
                "user": {"id": str(200000000000000000 + m), "username": f"member{m}"},
                "roles": [],
                "joined_at": "x",
            }
            for m in range(members)
        ],
        "presences": [
            {"user": {"id": str(200000000000000000 + m)}, "status": "online"} for m in range(members)
        ],
        "voice_states": [],
        "emojis": [{"id": "1", "name": "smile"}],
        "stickers": [],
        "member_count": members,
    }


def test_a_channel_update_goes_out_with_when_the_relay_received_it(endpoint, key_pair):
    # Given a channel update, received at a known time
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK, clock=lambda: RECEIVED)
    update = {"id": "300000000000000009", "guild_id": GUILD_ID, "type": 0, "permission_overwrites": []}
    # When it is forwarded
    assert forwarder.submit("CHANNEL_UPDATE", update) is True
    asyncio.run(deliver_all(forwarder))
    # Then the envelope says when, so a late delivery never overrides a newer look at the channel
    envelope = json.loads(endpoint.received[0].body)
    assert envelope["t"] == "CHANNEL_UPDATE" and envelope["received_at"] == "2025-12-01T12:00:00+00:00"


def test_a_guild_create_goes_out_with_its_channels_threads_and_roles_only(endpoint, key_pair):
    # Given a guild as Discord sends it on a new session
    guild = discord_guild(3, threads=2, members=50)
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK, clock=lambda: RECEIVED)

    # When it is submitted
    assert forwarder.submit("GUILD_CREATE", guild) is True
    asyncio.run(deliver_all(forwarder))

    # Then RelayFunction gets the channels, threads and roles, with what privacy reads of them, and
    # when the relay received it; members, presences, emojis and the rest stay behind
    envelope = json.loads(endpoint.received[0].body)
    assert envelope["t"] == "GUILD_CREATE" and envelope["received_at"] == "2025-12-01T12:00:00+00:00"
    assert set(envelope["d"]) == {"id", "channels", "threads", "roles"}
    assert envelope["d"]["roles"] == [
        {"id": GUILD_ID, "permissions": "1071698660929"},
        {"id": "810000000000000002", "permissions": "8"},
    ]
    first = guild["channels"][0]
    assert envelope["d"]["channels"][0] == {
        name: first[name] for name in ("id", "type", "name", "parent_id", "permission_overwrites")
    }
    assert envelope["d"]["threads"][1] == {
        name: guild["threads"][1][name] for name in ("id", "type", "name", "parent_id", "guild_id")
    }


def test_a_500_channel_guild_fits_and_is_read_as_discord_describes_it(endpoint, key_pair):
    from kioku.domain.addressing import MAX_GUILD_BODY_BYTES, MAX_RELAY_BODY_BYTES, parse_relay_body

    # Given the largest guild Discord allows (500 channels), with 1,000 active threads and 5,000 members
    guild = discord_guild(500, overwrites=5, threads=1000, members=5000)
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)

    assert forwarder.submit("GUILD_CREATE", guild) is True
    asyncio.run(deliver_all(forwarder))

    # Then its channel list goes out whole, larger than a message may be and within a guild's limit,
    # and RelayFunction's parser describes every channel and thread (odd channels hidden, and their threads)
    body = endpoint.received[0].body
    assert MAX_RELAY_BODY_BYTES < len(body) < MAX_GUILD_BODY_BYTES, len(body)
    snapshot = parse_relay_body(body)
    assert len(snapshot.channels) == 1500
    assert [snapshot.channels[str(500000000000000000 + n)].private for n in range(4)] == [False, True] * 2
    assert snapshot.channels["520000000000000001"].private is True


def test_a_guild_too_large_even_stripped_keeps_only_the_everyone_overwrites(endpoint, key_pair):
    from kioku.domain.addressing import MAX_GUILD_BODY_BYTES, parse_relay_body

    # Given 500 channels with 90 overwrites each (about 4 MB of channel list)
    guild = discord_guild(500, overwrites=90)
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)

    assert forwarder.submit("GUILD_CREATE", guild) is True
    asyncio.run(deliver_all(forwarder))

    # Then each channel keeps only its overwrite of @everyone, which is all the privacy rule reads
    body = endpoint.received[0].body
    assert len(body) < MAX_GUILD_BODY_BYTES
    channels = json.loads(body)["d"]["channels"]
    assert all([o["id"] for o in c["permission_overwrites"]] == [GUILD_ID] for c in channels)
    snapshot = parse_relay_body(body)
    assert [snapshot.channels[str(500000000000000000 + n)].private for n in range(2)] == [False, True]


def test_a_guild_too_large_for_relayfunction_in_any_form_is_not_sent(endpoint, key_pair):
    # Given a channel list RelayFunction could not take even cut down (12,000 active threads)
    guild = discord_guild(10, threads=12_000)
    forwarder = Forwarder(endpoint.url, key_pair[0], base_delay=QUICK)
    # When it is submitted, it is refused at once and counted as failed (no request that must fail)
    assert forwarder.submit("GUILD_CREATE", guild) is False
    asyncio.run(deliver_all(forwarder))
    assert endpoint.received == [] and forwarder.counters.failed == 1


def test_a_full_buffer_sheds_every_chat_message_before_a_guild_create(endpoint, key_pair):
    # Given a buffer of three holding a guild's channel list, then chat messages
    forwarder = Forwarder(endpoint.url, key_pair[0], buffer_size=3, base_delay=QUICK)
    forwarder.submit("GUILD_CREATE", discord_guild(2))
    for number in range(1, 5):
        forwarder.submit("MESSAGE_CREATE", message(number))
    # When it runs
    asyncio.run(deliver_all(forwarder))
    # Then only chat messages were shed
    delivered = [(json.loads(r.body)["t"], json.loads(r.body)["d"]["id"]) for r in endpoint.received]
    assert delivered == [("GUILD_CREATE", GUILD_ID), *(("MESSAGE_CREATE", message(n)["id"]) for n in (3, 4))]
    assert forwarder.counters.dropped == 2


def test_a_buffer_full_of_channel_events_sheds_those_a_later_guild_create_repeats(endpoint, key_pair):
    # Given a buffer of three: another guild's channel event, an update of this guild, this guild's list
    forwarder = Forwarder(endpoint.url, key_pair[0], buffer_size=3, base_delay=QUICK)
    elsewhere = {"id": "500000000000000009", "guild_id": "410000000000000004", "type": 0}
    here = {"id": "500000000000000001", "guild_id": GUILD_ID, "type": 0}
    forwarder.submit("CHANNEL_UPDATE", elsewhere)
    forwarder.submit("CHANNEL_UPDATE", here)
    forwarder.submit("GUILD_CREATE", discord_guild(2))
    # When one more channel event arrives
    forwarder.submit("CHANNEL_DELETE", here)
    asyncio.run(deliver_all(forwarder))
    # Then the update the guild's list already covers went, and the other guild's event was kept
    delivered = [(json.loads(r.body)["t"], json.loads(r.body)["d"]["id"]) for r in endpoint.received]
    assert delivered == [
        ("CHANNEL_UPDATE", elsewhere["id"]),
        ("GUILD_CREATE", GUILD_ID),
        ("CHANNEL_DELETE", here["id"]),
    ]
    assert forwarder.counters.dropped == 1


def test_a_thread_delete_is_not_shed_for_a_later_guild_create(endpoint, key_pair):
    # Given a full buffer: another guild's update, a THREAD_DELETE of this guild, this guild's list
    forwarder = Forwarder(endpoint.url, key_pair[0], buffer_size=3, base_delay=QUICK)
    elsewhere = {"id": "500000000000000009", "guild_id": "410000000000000004", "type": 0}
    deleted = {
        "id": "510000000000000001",
        "guild_id": GUILD_ID,
        "parent_id": "500000000000000001",
        "type": 11,
    }
    forwarder.submit("CHANNEL_UPDATE", elsewhere)
    forwarder.submit("THREAD_DELETE", deleted)
    forwarder.submit("GUILD_CREATE", discord_guild(2))
    # When one more event arrives
    forwarder.submit("CHANNEL_DELETE", elsewhere)
    asyncio.run(deliver_all(forwarder))
    # Then the THREAD_DELETE stays (the list would take the missing thread for an archived one and
    # keep its memory): the oldest event went instead
    delivered = [json.loads(r.body)["t"] for r in endpoint.received]
    assert delivered == ["THREAD_DELETE", "GUILD_CREATE", "CHANNEL_DELETE"]
