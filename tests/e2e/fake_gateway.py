"""A simulated Discord for the relay, on 127.0.0.1: REST under ``/api/v10`` and a v10 gateway.

The gateway speaks what hikari speaks: JSON over a websocket with ``compress=zlib-stream`` (one
zlib stream per connection, each payload flushed with Z_SYNC_FLUSH), HELLO → IDENTIFY → READY,
heartbeats, dispatches with sequence numbers, RESUME with replay of what the session missed (or
INVALID_SESSION for a session it no longer holds), and close codes. As Discord does, every new session (an IDENTIFY, not a RESUME) is followed by a
``GUILD_CREATE`` for each guild of its shard, as ``guilds`` holds them at that moment. A test drives
it from its own thread: ``dispatch`` (optionally one payload cut across several websocket messages),
``close_connection``, ``close_on_identify``, ``refuse_connections``, ``guilds`` and ``rest_script``
(canned REST answers, e.g. a 429, before the real one).

Sharding as Discord does it: each IDENTIFY's ``shard: [id, count]`` starts a session of its own, a
guild's dispatches go to the session of shard ``(guild_id >> 22) % count`` and direct messages to
shard 0; ``GET /gateway/bot`` recommends ``recommended_shards``.

``RelayReceiver`` (in ``relay_receiver.py``) stands in for RelayFunction; both run on
``LoopbackLoop``, an asyncio loop in a daemon thread.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import zlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Final, Self, TypeVar

from aiohttp import WSMsgType, web

LOOPBACK: Final = "127.0.0.1"
API_PREFIX: Final = "/api/v10"
GATEWAY_PATH: Final = "/gateway"
RESUME_GATEWAY_PATH: Final = "/resume-gateway"
GATEWAY_VERSION: Final = "10"
ZLIB_SUFFIX: Final = b"\x00\x00\xff\xff"

OP_DISPATCH: Final = 0
OP_HEARTBEAT: Final = 1
OP_IDENTIFY: Final = 2
OP_RESUME: Final = 6
OP_INVALID_SESSION: Final = 9
OP_HELLO: Final = 10
OP_HEARTBEAT_ACK: Final = 11

CLOSE_UNKNOWN_ERROR: Final = 4000
CLOSE_DECODE_ERROR: Final = 4002
CLOSE_AUTHENTICATION_FAILED: Final = 4004
CLOSE_INVALID_SEQ: Final = 4007
CLOSE_SESSION_TIMED_OUT: Final = 4009
CLOSE_INVALID_SHARD: Final = 4010

SNOWFLAKE_TIMESTAMP_SHIFT: Final = 22
DM_SHARD: Final = 0

DEFAULT_HEARTBEAT_INTERVAL_MS: Final = 1000
CONTROL_TIMEOUT_SECONDS: Final = 10.0

T = TypeVar("T")


def wait_until(condition: Callable[[], bool], what: str, *, timeout: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.01)


class LoopbackLoop:
    """An asyncio event loop in a daemon thread, for aiohttp servers a synchronous test talks to."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="loopback-loop", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(CONTROL_TIMEOUT_SECONDS)
        self.loop.close()

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait (bounded) for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(CONTROL_TIMEOUT_SECONDS)

    def serve(self, app: web.Application) -> tuple[web.AppRunner, int]:
        """Serve ``app`` on an ephemeral loopback port; returns the runner (for cleanup) and the port."""

        async def start() -> tuple[web.AppRunner, int]:
            runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1)
            await runner.setup()
            site = web.TCPSite(runner, LOOPBACK, 0)
            await site.start()
            return runner, runner.addresses[0][1]

        return self.call(start())


@dataclass(frozen=True, slots=True)
class CannedAnswer:
    """One scripted REST answer: a JSON body, a status and headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RestRequest:
    method: str
    path: str
    authorization: str | None


@dataclass(frozen=True, slots=True)
class GatewayConnection:
    """How the relay connected: the path (gateway or resume URL) and the query it asked for."""

    path: str
    query: dict[str, str]


def shard_of(guild_id: str | int, shard_count: int) -> int:
    """The shard Discord sends a guild's events to."""
    return (int(guild_id) >> SNOWFLAKE_TIMESTAMP_SHIFT) % shard_count


class _Session:
    """A gateway session of one shard: the numbered dispatches Discord keeps for a RESUME."""

    def __init__(self, session_id: str, shard_id: int, shard_count: int) -> None:
        self.session_id = session_id
        self.shard_id = shard_id
        self.shard_count = shard_count
        self.sent: list[dict[str, Any]] = []

    def next_payload(self, event_name: str, data: dict[str, Any]) -> dict[str, Any]:
        payload = {"op": OP_DISPATCH, "s": len(self.sent) + 1, "t": event_name, "d": data}
        self.sent.append(payload)
        return payload

    def after(self, sequence: int) -> list[dict[str, Any]]:
        return [payload for payload in self.sent if payload["s"] > sequence]


class _Socket:
    """One websocket with its zlib stream: every payload continues the same compression context."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws
        self._deflate = zlib.compressobj()
        self._lock = asyncio.Lock()

    async def send(self, payload: dict[str, Any], *, parts: int = 1) -> None:
        async with self._lock:
            # Compressed under the lock: the stream's frames must go out in the order they were made.
            data = json.dumps(payload).encode()
            frame = self._deflate.compress(data) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
            for chunk in _split(frame, parts):
                await self.ws.send_bytes(chunk)


def _split(frame: bytes, parts: int) -> list[bytes]:
    """``frame`` in ``parts`` pieces; only the last ends with the zlib flush marker, as on the wire."""
    if parts == 1:
        return [frame]
    body, suffix = frame[: -len(ZLIB_SUFFIX)], frame[-len(ZLIB_SUFFIX) :]
    if len(body) < parts:
        raise ValueError("frame too short to split that many times")
    size = len(body) // parts
    pieces = [body[i * size : (i + 1) * size] for i in range(parts - 1)]
    pieces.append(body[(parts - 1) * size :] + suffix)
    return pieces


class FakeDiscord:
    """Discord's REST ``GET /gateway/bot`` and a v10 gateway, for one bot token."""

    def __init__(
        self,
        loop: LoopbackLoop,
        *,
        token: str,
        bot_user_id: str,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
    ) -> None:
        self._loop = loop
        self.token = token
        self.bot_user_id = bot_user_id
        self._heartbeat_interval_ms = heartbeat_interval_ms
        self.rest_script: list[CannedAnswer] = []
        self.recommended_shards = 1
        self.close_on_identify: int | None = None
        self.refuse_connections = False
        self.guilds: list[dict[str, Any]] = []
        """The bot's guilds as GUILD_CREATE sends them (with ``channels``, ``threads``, ``roles``, …)."""
        self.rest_requests: list[RestRequest] = []
        self.connections: list[GatewayConnection] = []
        self.unsupported: list[GatewayConnection] = []
        self.identifies: list[dict[str, Any]] = []
        self.resumes: list[dict[str, Any]] = []
        self.heartbeats = 0
        self._sessions: dict[int, _Session] = {}
        self._sockets: dict[int, _Socket] = {}
        self._sessions_started = 0
        app = web.Application()
        app.router.add_get(f"{API_PREFIX}/gateway/bot", self._gateway_bot)
        app.router.add_get(GATEWAY_PATH, self._gateway)
        app.router.add_get(RESUME_GATEWAY_PATH, self._gateway)
        self._runner, self.port = loop.serve(app)

    def close(self) -> None:
        self._loop.call(self._runner.cleanup())

    @property
    def api_base_url(self) -> str:
        """What ``DISCORD_API_BASE_URL`` should be set to."""
        return f"http://{LOOPBACK}:{self.port}{API_PREFIX}"

    @property
    def connected(self) -> bool:
        """A session is live: READY or RESUMED was sent on an open websocket."""
        return bool(self._sockets)

    @property
    def connected_shards(self) -> set[int]:
        """The shard ids with a live session."""
        return set(self._sockets)

    @property
    def identified_shards(self) -> list[list[int] | None]:
        """The ``shard`` field of each IDENTIFY, in order (None when it had none)."""
        return [identify.get("shard") for identify in self.identifies]

    # -- what a test does ----------------------------------------------------------------------------

    def dispatch(self, event_name: str, data: dict[str, Any], *, parts: int = 1) -> int:
        """Send one dispatch on the session of the shard its ``guild_id`` belongs to (shard 0 without
        one), kept for replay if nobody is connected; its sequence.

        ``parts`` > 1 cuts its compressed frame across that many websocket messages.
        """

        async def send() -> int:
            session = self._session_for(data.get("guild_id"))
            payload = session.next_payload(event_name, data)
            if (socket := self._sockets.get(session.shard_id)) is not None:
                await socket.send(payload, parts=parts)
            return payload["s"]

        return self._loop.call(send())

    def close_connection(self, code: int, *, shard_id: int | None = None, resumable: bool = True) -> None:
        """Close the live websocket of ``shard_id`` (the only one, if None) with ``code``; the session
        stays resumable (as Discord's does) unless ``resumable`` is False (then a RESUME is refused and
        the relay must identify anew)."""

        async def close() -> None:
            if shard_id is None and len(self._sockets) > 1:
                raise AssertionError(f"several shards are connected ({sorted(self._sockets)}): name one")
            target = shard_id if shard_id is not None else next(iter(self._sockets), None)
            socket = self._sockets.pop(target, None) if target is not None else None
            if socket is None:
                raise AssertionError("no live gateway connection to close")
            if not resumable:
                del self._sessions[target]
            await socket.ws.close(code=code, message=b"closed by the test")

        self._loop.call(close())

    def _session_for(self, guild_id: str | None) -> _Session:
        if not self._sessions:
            raise AssertionError("no gateway session: the relay never identified")
        for session in self._sessions.values():
            wanted = DM_SHARD if guild_id is None else shard_of(guild_id, session.shard_count)
            if session.shard_id == wanted:
                return session
        raise AssertionError(f"no session of the shard guild {guild_id} belongs to: {sorted(self._sessions)}")

    # -- REST ----------------------------------------------------------------------------------------

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        authorization = request.headers.get("Authorization")
        self.rest_requests.append(RestRequest(request.method, request.path, authorization))
        if self.rest_script:
            answer = self.rest_script.pop(0)
            return web.json_response(answer.body, status=answer.status, headers=answer.headers)
        if authorization != f"Bot {self.token}":
            return web.json_response({"message": "401: Unauthorized", "code": 0}, status=401)
        return web.json_response(
            {
                "url": f"ws://{LOOPBACK}:{self.port}{GATEWAY_PATH}",
                "shards": self.recommended_shards,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 14_400_000,
                    "max_concurrency": 1,
                },
            }
        )

    # -- the gateway ---------------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        connection = GatewayConnection(request.path, dict(request.query))
        self.connections.append(connection)
        if self.refuse_connections:
            return web.Response(status=503, text="the gateway is down (refused by the test)")
        if (request.query.get("v"), request.query.get("encoding"), request.query.get("compress")) != (
            GATEWAY_VERSION,
            "json",
            "zlib-stream",
        ):
            # e.g. hikari asks for zstd-stream where zstd is available (Python 3.14, backports.zstd)
            self.unsupported.append(connection)
            return web.Response(status=400, text="this fake speaks v=10, encoding=json, compress=zlib-stream")
        ws = web.WebSocketResponse(compress=False, max_msg_size=0, timeout=2)
        await ws.prepare(request)
        socket = _Socket(ws)
        await socket.send({"op": OP_HELLO, "d": {"heartbeat_interval": self._heartbeat_interval_ms}})
        shard_id: int | None = None
        async for message in ws:
            if message.type not in {WSMsgType.BINARY, WSMsgType.TEXT}:
                break
            payload = json.loads(message.data)
            if payload["op"] == OP_HEARTBEAT:
                self.heartbeats += 1
                await socket.send({"op": OP_HEARTBEAT_ACK})
            elif payload["op"] == OP_IDENTIFY:
                shard_id = await self._identify(socket, payload["d"])
            elif payload["op"] == OP_RESUME:
                shard_id = await self._resume(socket, payload["d"])
            else:
                await ws.close(code=CLOSE_DECODE_ERROR, message=b"unexpected opcode")
        if shard_id is not None and self._sockets.get(shard_id) is socket:
            del self._sockets[shard_id]
        return ws

    async def _identify(self, socket: _Socket, identify: dict[str, Any]) -> int | None:
        """Start a session for the IDENTIFY's shard; the shard id, or None when refused."""
        self.identifies.append(identify)
        if identify.get("token") != self.token:
            await socket.ws.close(code=CLOSE_AUTHENTICATION_FAILED, message=b"Authentication failed.")
            return None
        if self.close_on_identify is not None:
            await socket.ws.close(code=self.close_on_identify, message=b"refused by the test")
            return None
        shard_id, shard_count = identify.get("shard", [0, 1])
        if not 0 <= shard_id < shard_count:
            await socket.ws.close(code=CLOSE_INVALID_SHARD, message=b"Invalid shard.")
            return None
        self._sessions_started += 1
        session = _Session(f"fake-session-{self._sessions_started}", shard_id, shard_count)
        self._sessions[shard_id] = session
        ready = {
            "v": int(GATEWAY_VERSION),
            "user": {
                "id": self.bot_user_id,
                "username": "kioku",
                "discriminator": "0",
                "global_name": None,
                "avatar": None,
                "bot": True,
            },
            "guilds": [
                {"id": guild["id"], "unavailable": True}
                for guild in self.guilds
                if shard_of(guild["id"], shard_count) == shard_id
            ],
            "session_id": session.session_id,
            "resume_gateway_url": f"ws://{LOOPBACK}:{self.port}{RESUME_GATEWAY_PATH}",
            "shard": [shard_id, shard_count],
            "application": {"id": self.bot_user_id, "flags": 0},
        }
        await socket.send(session.next_payload("READY", ready))
        for guild in self.guilds:
            if shard_of(guild["id"], shard_count) == shard_id:
                await socket.send(session.next_payload("GUILD_CREATE", guild))
        self._sockets[shard_id] = socket
        return shard_id

    async def _resume(self, socket: _Socket, resume: dict[str, Any]) -> int | None:
        """Resume a session; its shard id, or None when refused."""
        self.resumes.append(resume)
        if resume.get("token") != self.token:
            await socket.ws.close(code=CLOSE_AUTHENTICATION_FAILED, message=b"Authentication failed.")
            return None
        session = next((s for s in self._sessions.values() if s.session_id == resume.get("session_id")), None)
        if session is None:
            # Discord's answer to a session it no longer holds: INVALID_SESSION, not resumable
            await socket.send({"op": OP_INVALID_SESSION, "d": False})
            return None
        if not isinstance(resume.get("seq"), int) or resume["seq"] > len(session.sent):
            await socket.ws.close(code=CLOSE_INVALID_SEQ, message=b"invalid seq")
            return None
        for payload in session.after(resume["seq"]):
            await socket.send(payload)
        await socket.send(session.next_payload("RESUMED", {}))
        self._sockets[session.shard_id] = socket
        return session.shard_id
