"""Delivery of gateway dispatches to RelayFunction: select, buffer, sign, POST, retry.

No hikari here: the gateway adapter hands over every ``(event_name, data)`` and this module does the
rest. The only Discord knowledge is which dispatches RelayFunction takes (``FORWARDED_EVENTS``) and
the bot's own user id, read from ``READY``, so that its own messages are not sent back to it, and
its managed role in each guild (``ROLE_EVENTS``), so a mention of that role addresses it. A
``GUILD_CREATE`` goes out stripped to what privacy needs (``guild_channel_list``). One worker
delivers in arrival order; a full buffer sheds its oldest chat message, because a stale chat
message is worth less than a fresh one and a lost channel event leaves memory stamped wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import httpx

from kioku import __version__
from kioku.discord.protocol import GatewayEvent
from kioku.domain.addressing import MAX_GUILD_BODY_BYTES
from kioku.signatures import sign_request

ROLE_EVENTS: Final = frozenset(
    {GatewayEvent.GUILD_CREATE, GatewayEvent.GUILD_ROLE_CREATE, GatewayEvent.GUILD_ROLE_UPDATE}
)
"""Where the relay learns each guild's managed role of the bot (``tags.bot_id``): mentioning that
role addresses the bot, and only the gateway tells the relay which role it is without a request."""
FORWARDED_EVENTS: Final = frozenset(
    {
        GatewayEvent.MESSAGE_CREATE,
        GatewayEvent.GUILD_CREATE,
        GatewayEvent.GUILD_DELETE,  # kioku removed from a guild: its memory is deleted after a grace
        GatewayEvent.CHANNEL_UPDATE,
        GatewayEvent.CHANNEL_DELETE,
        GatewayEvent.THREAD_UPDATE,
        GatewayEvent.THREAD_DELETE,
    }
)
CHANNEL_FIELDS: Final = ("id", "type", "name", "parent_id", "permission_overwrites")
THREAD_FIELDS: Final = ("id", "type", "name", "parent_id", "guild_id")
ROLE_FIELDS: Final = ("id", "permissions")
HTTP_REQUEST_TIMEOUT: Final = 408
HTTP_TOO_MANY_REQUESTS: Final = 429
HTTP_SERVER_ERROR_FLOOR: Final = 500
RETRYABLE_CLIENT_STATUSES: Final = frozenset({HTTP_REQUEST_TIMEOUT, HTTP_TOO_MANY_REQUESTS})

DEFAULT_BUFFER_SIZE: Final = 1000
DEFAULT_MAX_ATTEMPTS: Final = 5
DEFAULT_BASE_DELAY_SECONDS: Final = 0.5
DEFAULT_MAX_DELAY_SECONDS: Final = 30.0
DEFAULT_DRAIN_TIMEOUT_SECONDS: Final = 10.0
DEFAULT_REQUEST_TIMEOUT_SECONDS: Final = 10.0

USER_AGENT: Final = f"kioku-relay/{__version__}"

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class ForwarderCounters:
    """What happened to the dispatches the forwarder took or skipped so far.

    ``skipped_own``: the bot's own messages, never sent. ``dropped``: shed by a full buffer or
    arriving while stopping. ``failed``: refused, out of attempts, or still undelivered when the
    drain timeout ended.
    """

    forwarded: int = 0
    skipped_own: int = 0
    dropped: int = 0
    failed: int = 0


class Forwarder:
    """Forwards the ``FORWARDED_EVENTS`` dispatches to ``relay_url``, signed with the relay's Ed25519 seed.

    ``submit`` never blocks (it is called from the gateway's event loop); ``run`` delivers until
    ``stop`` is awaited, which drains what is buffered for at most ``drain_timeout`` seconds.
    """

    def __init__(
        self,
        relay_url: str,
        signing_key_hex: str,
        *,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        base_delay: float = DEFAULT_BASE_DELAY_SECONDS,
        max_delay: float = DEFAULT_MAX_DELAY_SECONDS,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT_SECONDS,
        http_client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if buffer_size < 1 or max_attempts < 1:
            raise ValueError("buffer_size and max_attempts must be at least 1")
        self._relay_url = relay_url
        self._signing_key_hex = signing_key_hex
        self._max_attempts = max_attempts
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._drain_timeout = drain_timeout
        self._http_client = http_client
        self._clock = clock
        self._buffer = _DispatchBuffer(maxsize=buffer_size)
        self._stop_requested = asyncio.Event()
        self._stopped = asyncio.Event()
        self._running = False
        self._in_flight = False
        self.own_user_id: str | None = None
        self._bot_roles: dict[str, set[str]] = {}
        self.counters = ForwarderCounters()

    def submit(self, event_name: str, data: Mapping[str, Any]) -> bool:
        """Buffer one gateway dispatch; True if it was taken (only ``FORWARDED_EVENTS`` are)."""
        if event_name == GatewayEvent.READY:
            self._learn_own_user_id(data)
            return False
        if event_name in ROLE_EVENTS:
            self._learn_bot_roles(data)
        if event_name == GatewayEvent.GUILD_DELETE and data.get("unavailable") is not True:
            self._bot_roles.pop(str(data.get("id")), None)
        if event_name not in FORWARDED_EVENTS:
            return False
        if event_name == GatewayEvent.MESSAGE_CREATE and self._is_own_message(data):
            self.counters.skipped_own += 1
            return False
        # when the relay saw a channel's state: a late event never stamps an older privacy over a newer look
        extra: dict[str, Any] = {}
        if event_name != GatewayEvent.MESSAGE_CREATE:
            extra["received_at"] = datetime.fromtimestamp(self._clock(), UTC).isoformat()
        if event_name == GatewayEvent.GUILD_CREATE:
            channel_list = self._guild_channel_list(data)
            if channel_list is None:
                return False
            data = channel_list
        if event_name == GatewayEvent.MESSAGE_CREATE:
            mentioned = self._bot_roles.get(str(data.get("guild_id")), set()) & set(
                data.get("mention_roles") or []
            )
            if mentioned:
                extra["bot_role_ids"] = sorted(mentioned)
        if self._stop_requested.is_set():
            self.counters.dropped += 1
            logger.warning("relay is stopping; dropped %s %s", event_name, data.get("id"))
            return False
        try:
            body = encode_dispatch(event_name, data, extra)
        except (TypeError, ValueError):
            self.counters.failed += 1
            logger.error("%s %s cannot be encoded as JSON; dropped", event_name, data.get("id"))
            return False
        if event_name == GatewayEvent.GUILD_CREATE and len(body) > MAX_GUILD_BODY_BYTES:
            self.counters.failed += 1
            logger.error(
                "GUILD_CREATE of guild %s is %d bytes even stripped, over RelayFunction's %d; not forwarded "
                "(its memory keeps its stamps until each channel's next turn)",
                data.get("id"),
                len(body),
                MAX_GUILD_BODY_BYTES,
            )
            return False
        if self._buffer.full():
            shed = self._buffer.shed_oldest()
            self.counters.dropped += 1
            logger.warning(
                "relay buffer full (%d); dropped the oldest %s (%d dropped so far)",
                self._buffer.maxsize,
                shed,
                self.counters.dropped,
            )
        self._buffer.put_nowait((event_name, str(data.get("guild_id") or data.get("id")), body))
        return True

    async def run(self) -> None:
        """Deliver buffered messages until ``stop`` is called, then drain for a bounded time."""
        self._running = True
        client = self._http_client or httpx.AsyncClient(timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS)
        worker = asyncio.create_task(self._deliver_forever(client), name="kioku-relay-delivery")
        try:
            await self._stop_requested.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._buffer.join(), self._drain_timeout)
        finally:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
            self._count_abandoned()
            if self._http_client is None:
                await client.aclose()
            self._stopped.set()
            logger.info("relay forwarder stopped: %s", self.counters)

    @property
    def buffered(self) -> int:
        """Dispatches taken and not yet delivered (the one in flight excluded)."""
        return self._buffer.qsize()

    async def stop(self) -> None:
        """Stop taking messages and wait until ``run`` has drained and returned (if it is running)."""
        self._stop_requested.set()
        if self._running:
            await self._stopped.wait()

    def _learn_own_user_id(self, ready: Mapping[str, Any]) -> None:
        user = ready.get("user")
        self.own_user_id = str(user["id"]) if isinstance(user, Mapping) and "id" in user else None

    def _guild_channel_list(self, guild: Mapping[str, Any]) -> dict[str, Any] | None:
        """What RelayFunction reconciles memory with; None for a guild in an outage (no channels)."""
        if guild.get("unavailable") is True or not isinstance(guild.get("channels"), list):
            return None
        channel_list = guild_channel_list(guild)
        if len(encode_dispatch(GatewayEvent.GUILD_CREATE, channel_list)) > MAX_GUILD_BODY_BYTES:
            channel_list = guild_channel_list(guild, everyone_overwrites_only=True)
        return channel_list

    def _learn_bot_roles(self, data: Mapping[str, Any]) -> None:
        guild_id = str(data.get("guild_id") or data.get("id") or "")
        roles: list[Any] = data["roles"] if isinstance(data.get("roles"), list) else [data.get("role")]
        for role in roles:
            if not isinstance(role, Mapping) or self.own_user_id is None:
                continue
            tags: Mapping[str, Any] = role["tags"] if isinstance(role.get("tags"), Mapping) else {}
            if str(tags.get("bot_id")) == self.own_user_id:
                self._bot_roles.setdefault(guild_id, set()).add(str(role.get("id")))

    def _is_own_message(self, message: Mapping[str, Any]) -> bool:
        """The bot's own messages, its application's webhooks included, never go back to it."""
        author = message.get("author")
        return self.own_user_id is not None and (
            (isinstance(author, Mapping) and str(author.get("id")) == self.own_user_id)
            or str(message.get("application_id")) == self.own_user_id
        )

    def _count_abandoned(self) -> None:
        """After the worker is cancelled: what it was sending and what is still buffered are lost."""
        in_flight = int(self._in_flight)
        buffered = self._buffer.qsize()
        if in_flight + buffered:
            self.counters.failed += in_flight + buffered
            logger.warning(
                "relay stopped with %d undelivered dispatch(es) (%d in flight, %d buffered); counted as failed",
                in_flight + buffered,
                in_flight,
                buffered,
            )

    async def _deliver_forever(self, client: httpx.AsyncClient) -> None:
        while True:
            _, _, body = await self._buffer.get()
            self._in_flight = True
            try:
                await self._deliver(client, body)
            except Exception:
                # One bad message must not kill the worker and silently stall the relay.
                self.counters.failed += 1
                logger.exception("unexpected error while forwarding; message dropped")
            finally:
                self._buffer.task_done()
            # Not reached when cancelled mid-delivery: _count_abandoned then counts this one.
            self._in_flight = False

    async def _deliver(self, client: httpx.AsyncClient, body: bytes) -> None:
        for attempt in range(1, self._max_attempts + 1):
            # Signed per attempt: a retry must not carry a timestamp that has aged toward the replay window.
            headers = {
                "content-type": "application/json",
                "user-agent": USER_AGENT,
                **sign_request(self._signing_key_hex, body, str(int(self._clock()))),
            }
            retry_after = None
            try:
                response = await client.post(self._relay_url, content=body, headers=headers)
            except httpx.TransportError as exc:
                problem = f"transport error ({type(exc).__name__})"
            else:
                if response.is_success:
                    self.counters.forwarded += 1
                    return
                if not _is_retryable(response.status_code):
                    self.counters.failed += 1
                    logger.error(
                        "RelayFunction rejected a message with HTTP %d; dropped (retrying cannot help)",
                        response.status_code,
                    )
                    return
                problem = f"HTTP {response.status_code}"
                retry_after = _retry_after_seconds(response)
            if attempt == self._max_attempts:
                break
            delay = min(self._max_delay, retry_after if retry_after is not None else self._backoff(attempt))
            logger.warning(
                "forwarding failed: %s; attempt %d of %d, retrying in %.2fs",
                problem,
                attempt,
                self._max_attempts,
                delay,
            )
            await asyncio.sleep(delay)
        self.counters.failed += 1
        logger.error("forwarding failed %d times (%s); message dropped", self._max_attempts, problem)

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self._max_delay, self._base_delay * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


class _DispatchBuffer(asyncio.Queue[tuple[str, str, bytes]]):
    """The bounded buffer of (event name, guild id, body); when full, every chat message goes before
    any channel or guild event: a stale message is worth little, a lost channel event leaves a
    channel that turned private stamped public."""

    _queue: deque[tuple[str, str, bytes]]  # asyncio.Queue's own, which typeshed leaves out

    def shed_oldest(self) -> str:
        """Drop the oldest chat message; when there is none, the oldest channel or guild event that a
        later ``GUILD_CREATE`` of its guild makes redundant (not a ``THREAD_DELETE``: the list holds
        only active threads, so a thread missing from it is kept); else the oldest dispatch. Its
        event name."""
        queued = self._queue  # asyncio.Queue's own deque, there for subclasses
        index = next(
            (i for i, (name, _, _) in enumerate(queued) if name == GatewayEvent.MESSAGE_CREATE), None
        )
        if index is None:
            listed_later: set[str] = set()
            for i in range(len(queued) - 1, -1, -1):
                name, guild_id, _ = queued[i]
                if guild_id in listed_later and name != GatewayEvent.THREAD_DELETE:
                    index = i  # the last one found is the oldest
                if name == GatewayEvent.GUILD_CREATE:
                    listed_later.add(guild_id)
        name, _, _ = queued[index or 0]
        del queued[index or 0]
        self.task_done()
        return name


def guild_channel_list(guild: Mapping[str, Any], *, everyone_overwrites_only: bool = False) -> dict[str, Any]:
    """A ``GUILD_CREATE`` cut to what deciding privacy needs: its channels, active threads and roles
    (members, presences, voice states, emojis, stickers and the rest left out). A guild too large
    even so keeps only each channel's overwrite of @everyone (the role whose id is the guild's), the
    only one the privacy rule reads."""
    guild_id = str(guild.get("id"))

    def kept(item: Any, fields: tuple[str, ...]) -> Any:
        if not isinstance(item, Mapping):
            return item  # RelayFunction refuses it, as it would the whole event
        cut = {name: item[name] for name in fields if name in item}
        if everyone_overwrites_only and isinstance(cut.get("permission_overwrites"), list):
            cut["permission_overwrites"] = [
                overwrite
                for overwrite in cut["permission_overwrites"]
                if isinstance(overwrite, Mapping) and str(overwrite.get("id")) == guild_id
            ]
        return cut

    def each(name: str, fields: tuple[str, ...]) -> list[Any]:
        items = guild.get(name)
        return [kept(item, fields) for item in items] if isinstance(items, list) else []

    return {
        "id": guild.get("id"),
        "channels": each("channels", CHANNEL_FIELDS),
        "threads": each("threads", THREAD_FIELDS),
        "roles": each("roles", ROLE_FIELDS),
    }


def encode_dispatch(
    event_name: str, data: Mapping[str, Any], extra: Mapping[str, Any] | None = None
) -> bytes:
    """The request body for one dispatch: ``{"t": event_name, "d": data}`` (plus ``extra`` envelope
    fields, such as ``bot_role_ids``) as compact UTF-8 JSON (non-ASCII unescaped, half the bytes).

    ``dict()`` because hikari hands payloads over as read-only mapping proxies, which json rejects.
    """
    envelope = {"t": event_name, "d": dict(data), **(extra or {})}
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()


def _is_retryable(status: int) -> bool:
    return status in RETRYABLE_CLIENT_STATUSES or status >= HTTP_SERVER_ERROR_FLOOR


def _retry_after_seconds(response: httpx.Response) -> float | None:
    """Retry-After in seconds when the server gave it as a number (the HTTP-date form is ignored)."""
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
