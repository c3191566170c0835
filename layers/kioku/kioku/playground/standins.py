"""Stand-ins for Discord's REST API and an OpenAI-compatible endpoint: real HTTP servers on 127.0.0.1.

Both record every request, so tests (and the playground) can see exactly what kioku sent. They
implement only what kioku calls, but answer it the way the real services do, errors included.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from email import policy as email_policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler
from typing import Any, Final, Self
from urllib.parse import parse_qs, urlsplit

from kioku import clock
from kioku.discord.protocol import (
    ApplicationFlag,
    ChannelType,
    JsonErrorCode,
    MessageFlag,
    MessageReferenceType,
    MessageType,
    Permission,
)
from kioku.discord.snowflake import SNOWFLAKE_DIGITS
from kioku.domain.forgetting import first_snowflake_at
from kioku.domain.ltm.stemming import stem, terms
from kioku.domain.text import USER_MENTION
from kioku.playground.http_server import SHUTDOWN_POLL_SECONDS, LoopbackHTTPServer
from kioku.playground.standin_webhooks import DISCORD_MESSAGE_LIMIT, WebhookRoutes

LOOPBACK: Final = "127.0.0.1"
DISCORD_API_PREFIX: Final = "/api/v10"
DEFAULT_EVERYONE_PERMISSIONS: Final = (
    Permission.VIEW_CHANNEL
    | Permission.SEND_MESSAGES
    | Permission.READ_MESSAGE_HISTORY
    | Permission.ADD_REACTIONS
)
"""@everyone's permissions in a new Discord server include View Channel (and Send Messages, Read
Message History, Add Reactions); the stand-in's guilds start with them."""
_MENTIONED_ROLE: Final = re.compile(f"<@&({SNOWFLAKE_DIGITS})>")
APPLICATION_OWNER_ID: Final = "1100000000000000001"
STANDIN_NATIVE_DIMENSIONS: Final = 1536
"""What the embeddings stand-in answers when not asked for ``dimensions`` (as text-embedding-3-small)."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    raw_body: bytes


@dataclass(frozen=True, slots=True)
class CannedResponse:
    """What a stand-in answers: a dict or list is sent as JSON, str or bytes as they are."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    """Of a bytes body (default ``application/octet-stream``): a file the CDN stand-in serves."""

    def encode(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, self.content_type or "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode(), "application/json"
        if self.body is None:
            return b"", "application/json"
        return json.dumps(self.body).encode(), "application/json"


class DropConnection(Exception):
    """Raised by an interceptor: close the connection without an answer (a response lost on the
    way back; the request itself was applied or not, as the interceptor chose)."""


Interceptor = Callable[[str, "RecordedRequest"], None]
"""Called with ``"before"`` and ``"after"`` around each request a stand-in applies: fault injection."""


class _StandInServer:
    """A threaded HTTP server on an ephemeral loopback port; subclasses answer in ``_answer``."""

    def __init__(self) -> None:
        self.interceptor: Interceptor | None = None
        self._lock = threading.RLock()
        self._requests: list[RecordedRequest] = []
        self._server: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._server = LoopbackHTTPServer((LOOPBACK, 0), _handler_class(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(SHUTDOWN_POLL_SECONDS,),
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, method: str, path_pattern: str) -> list[RecordedRequest]:
        """Recorded requests with this method whose path fully matches the regular expression."""
        return [r for r in self.requests if r.method == method and re.fullmatch(path_pattern, r.path)]

    def _serve(self, request: RecordedRequest) -> CannedResponse:
        with self._lock:
            self._requests.append(request)
            if self.interceptor is not None:
                self.interceptor("before", request)
            response = self._answer(request)
            if self.interceptor is not None:
                self.interceptor("after", request)
            return response

    def _answer(self, request: RecordedRequest) -> CannedResponse:
        raise NotImplementedError


def _handler_class(stand_in: _StandInServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in separate writes

        def do_GET(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw_body = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            try:
                body = json.loads(raw_body) if raw_body else None
            except ValueError:
                body = None
            request = RecordedRequest(
                method=self.command,
                path=url.path,
                query=parse_qs(url.query),
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body,
                raw_body=raw_body,
            )
            try:
                response = stand_in._serve(request)
            except DropConnection:
                self.close_connection = True
                return
            except Exception as exc:  # a stand-in bug must show up as a 500, not a hung client
                response = CannedResponse(500, {"message": f"stand-in error: {exc!r}"})
            payload, content_type = response.encode()
            self.send_response(response.status)
            self.send_header("Content-Type", content_type)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

        def log_message(self, format: str, *args: Any) -> None:
            """Silence the per-request access log."""

    return Handler


def _multipart(request: RecordedRequest) -> tuple[dict[str, Any] | None, dict[str, tuple[str, bytes]]]:
    """A multipart/form-data body as Discord reads it: ``payload_json`` and ``files[n]`` parts."""
    parsed = BytesParser(policy=email_policy.HTTP).parsebytes(
        b"Content-Type: " + request.headers["content-type"].encode() + b"\r\n\r\n" + request.raw_body
    )
    payload: dict[str, Any] | None = None
    files: dict[str, tuple[str, bytes]] = {}
    for part in parsed.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload_bytes = part.get_payload(decode=True)
        data = payload_bytes if isinstance(payload_bytes, bytes) else b""
        if name == "payload_json":
            try:
                payload = json.loads(data)
            except ValueError:
                return None, {}
        elif isinstance(name, str) and name.startswith("files["):
            files[name] = (str(part.get_filename() or name), data)
    return payload, files


def _discord_error(status: int, code: int, message: str) -> CannedResponse:
    return CannedResponse(status, {"code": code, "message": message})


class DiscordStandIn(WebhookRoutes, _StandInServer):
    """Discord's REST subset kioku uses, in memory: channels, messages, typing, interaction
    webhooks, channel webhooks (``WebhookRoutes``), guild member search and command bulk overwrite."""

    def __init__(
        self,
        *,
        token: str = "playground-bot-token",
        bot_user_id: str = "1200000000000000001",
        bot_username: str = "kioku",
        application_id: str | None = None,
    ) -> None:
        super().__init__()
        self.token = token
        self.application_id = application_id or bot_user_id
        self.bot_user = {"id": bot_user_id, "username": bot_username, "global_name": None, "bot": True}
        self._last_id = 0
        self.ahead = timedelta(0)
        """How far Discord's clock runs ahead of kioku's (negative: behind): its ids and timestamps."""
        self._users: dict[str, dict[str, Any]] = {bot_user_id: self.bot_user}
        self._members: dict[str, dict[str, dict[str, Any]]] = {}
        self._channels: dict[str, list[dict[str, Any]]] = {}
        self._interaction_responses: dict[str, dict[str, Any]] = {}
        self._commands: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
        self._failures: deque[CannedResponse] = deque()
        self._post_failures: dict[int, CannedResponse] = {}
        self._posts_seen = 0
        self._nonces: dict[tuple[str, str], dict[str, Any]] = {}
        self._channel_info: dict[str, dict[str, Any]] = {}
        self._roles: dict[str, list[dict[str, Any]]] = {}
        self._owners: dict[str, str] = {}
        self._attachments: dict[str, dict[str, bytes]] = {}
        # the Developer Portal's side of the application, as GET /applications/@me shows it
        self.application_flags = ApplicationFlag.GATEWAY_MESSAGE_CONTENT
        self.verify_key: str | None = None
        self.interactions_endpoint_url: str | None = None
        self.bot_guild_permissions: dict[str, int] = {}
        self.owner = {"id": APPLICATION_OWNER_ID, "username": "owner", "global_name": None, "bot": False}
        self._users[APPLICATION_OWNER_ID] = self.owner
        self._init_webhooks()
        self._routes: tuple[tuple[str, re.Pattern[str], Callable[..., CannedResponse]], ...] = (
            ("GET", re.compile(r"/channels/(\d+)"), self._get_channel),
            ("GET", re.compile(r"/channels/(\d+)/messages"), self._get_messages),
            ("POST", re.compile(r"/channels/(\d+)/messages"), self._post_message),
            ("POST", re.compile(r"/channels/(\d+)/typing"), self._typing),
            ("POST", re.compile(r"/channels/(\d+)/webhooks"), self._create_webhook),
            ("GET", re.compile(r"/guilds/(\d+)/members/search"), self._search_members),
            ("GET", re.compile(r"/guilds/(\d+)/members/(\d+)"), self._get_member),
            ("GET", re.compile(r"/guilds/(\d+)/roles"), self._get_roles),
            ("GET", re.compile(r"/guilds/(\d+)/channels"), self._get_guild_channels),
            ("GET", re.compile(r"/guilds/(\d+)"), self._get_guild),
            ("GET", re.compile(r"/applications/@me"), self._get_application),
            ("GET", re.compile(r"/users/@me/guilds"), self._get_own_guilds),
            ("GET", re.compile(r"/applications/(\d+)/commands"), self._get_commands),
            ("GET", re.compile(r"/applications/(\d+)/guilds/(\d+)/commands"), self._get_commands),
            ("PUT", re.compile(r"/applications/(\d+)/commands"), self._put_commands),
            ("PUT", re.compile(r"/applications/(\d+)/guilds/(\d+)/commands"), self._put_commands),
        )

    @property
    def base_url(self) -> str:
        """What ``DISCORD_API_BASE_URL`` should be set to."""
        return self.url + DISCORD_API_PREFIX

    @staticmethod
    def _reply(status: int, body: Any = None) -> CannedResponse:
        return CannedResponse(status, body)

    @staticmethod
    def _refuse(status: int, code: int, message: str) -> CannedResponse:
        return _discord_error(status, code, message)

    # Seeding -----------------------------------------------------------------------------------

    def _now(self) -> str:
        return (clock.now() + self.ahead).isoformat()

    def new_id(self) -> str:
        """A snowflake of now by the stack's clock (and Discord's ``ahead`` of it), as Discord makes them: its time is when it was
        made, and each is larger than the one before."""
        with self._lock:
            self._last_id = max(self._last_id + 1, first_snowflake_at(clock.now() + self.ahead))
            return str(self._last_id)

    def seed_user(
        self, username: str, *, user_id: str | None = None, global_name: str | None = None, bot: bool = False
    ) -> dict[str, Any]:
        user: dict[str, Any] = {
            "id": user_id or self.new_id(),
            "username": username,
            "global_name": global_name,
            "bot": bot,
        }
        with self._lock:
            self._users[user["id"]] = user
        return dict(user)

    def seed_member(
        self, guild_id: str, user: dict[str, Any], *, nick: str | None = None, roles: list[str] | None = None
    ) -> dict[str, Any]:
        member = {"user": dict(user), "nick": nick, "roles": list(roles or []), "joined_at": self._now()}
        with self._lock:
            self._members.setdefault(guild_id, {})[user["id"]] = member
        return dict(member)

    def seed_channel(
        self,
        channel_id: str,
        *,
        name: str | None = None,
        guild_id: str | None = None,
        parent_id: str | None = None,
        permission_overwrites: list[dict[str, Any]] | None = None,
        private_thread: bool = False,
    ) -> None:
        """A channel (a thread when ``parent_id`` is given); ``GET /channels/{id}`` describes it."""
        with self._lock:
            self._channels.setdefault(channel_id, [])
            described = self._channel_info.setdefault(
                channel_id, {"id": channel_id, "type": ChannelType.GUILD_TEXT}
            )
            if guild_id is None and name is None and parent_id is None:
                return
            thread_type = ChannelType.PRIVATE_THREAD if private_thread else ChannelType.PUBLIC_THREAD
            described.update(
                {
                    "name": name or described.get("name") or f"channel-{channel_id[-4:]}",
                    "guild_id": guild_id,
                    "parent_id": parent_id,
                    "type": thread_type if parent_id else ChannelType.GUILD_TEXT,
                    "permission_overwrites": list(permission_overwrites or []),
                }
            )

    def set_permission_overwrites(self, channel_id: str, overwrites: list[dict[str, Any]]) -> dict[str, Any]:
        """Change a channel's overwrites as a server admin would; returns the channel object now."""
        with self._lock:
            described = self._channel_info[channel_id]
            described["permission_overwrites"] = list(overwrites)
            return json.loads(json.dumps(described))

    def seed_role(self, guild_id: str, role_id: str, *, permissions: int, name: str = "role") -> None:
        """A role; the @everyone role's id is the guild's (every guild has it with the default permissions)."""
        with self._lock:
            roles = self._roles.setdefault(guild_id, [self._everyone(guild_id)])
            roles[:] = [role for role in roles if role["id"] != role_id]
            roles.append(
                {"id": role_id, "name": name, "permissions": str(permissions), "position": len(roles)}
            )

    def seed_owner(self, guild_id: str, owner_id: str) -> None:
        """Who owns the guild (``GET /guilds/{id}`` says so): Discord lets the owner manage it."""
        with self._lock:
            self._owners[guild_id] = owner_id

    def channel_info(self, channel_id: str) -> dict[str, Any]:
        with self._lock:
            return json.loads(json.dumps(self._channel_info[channel_id]))

    @staticmethod
    def _everyone(guild_id: str) -> dict[str, Any]:
        return {
            "id": guild_id,
            "name": "@everyone",
            "permissions": str(DEFAULT_EVERYONE_PERMISSIONS),
            "position": 0,
        }

    def seed_message(
        self,
        channel_id: str,
        author: dict[str, Any],
        content: str = "",
        *,
        attachments: list[dict[str, Any]] | None = None,
        reply_to: str | None = None,
        webhook_id: str | None = None,
        timestamp: str | None = None,
    ) -> dict[str, Any]:
        """Add a message as if ``author`` had posted it; returns the stored message."""
        with self._lock:
            self.seed_channel(channel_id)
            message = self._new_message(channel_id, author, content, reply_to=reply_to, timestamp=timestamp)
            message["attachments"] = list(attachments or [])
            if webhook_id:
                message["webhook_id"] = webhook_id
            self._channels[channel_id].append(message)
            return json.loads(json.dumps(message))

    def forward_message(
        self, channel_id: str, author: dict[str, Any], original: dict[str, Any]
    ) -> dict[str, Any]:
        """``author`` forwards ``original``: an empty message carrying a snapshot of it."""
        with self._lock:
            message = self._new_message(channel_id, author, "")
            message["message_reference"] = {
                "type": MessageReferenceType.FORWARD,
                "message_id": original["id"],
                "channel_id": channel_id,
            }
            kept = ("content", "attachments", "embeds", "timestamp", "type")
            message["message_snapshots"] = [{"message": {k: original[k] for k in kept if k in original}}]
            self._channels[channel_id].append(message)
            return json.loads(json.dumps(message))

    def delete_message(self, channel_id: str, message_id: str) -> None:
        """Delete a message as its author would; replies to it keep a null ``referenced_message``."""
        with self._lock:
            messages = self._channels[channel_id]
            messages[:] = [m for m in messages if m["id"] != message_id]
            for message in messages:
                if (message.get("message_reference") or {}).get("message_id") == message_id:
                    message["referenced_message"] = None

    def fail_next(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        """Answer the next request (whatever it is) with this response instead."""
        with self._lock:
            self._failures.append(CannedResponse(status, body, headers or {}))

    def forget_nonces(self) -> None:
        """Discord's nonce window (a few minutes) has passed: a post with a nonce seen before is new."""
        with self._lock:
            self._nonces.clear()

    def fail_post(self, nth: int, status: int, body: Any = None) -> None:
        """Answer the ``nth`` message post from now (1 the next one) with this response instead."""
        with self._lock:
            self._post_failures[self._posts_seen + nth] = CannedResponse(status, body, {})

    # Inspection --------------------------------------------------------------------------------

    def channel_messages(self, channel_id: str) -> list[dict[str, Any]]:
        """The channel's messages, oldest first."""
        with self._lock:
            return json.loads(json.dumps(self._channels.get(channel_id, [])))

    def interaction_response(self, interaction_token: str) -> dict[str, Any] | None:
        with self._lock:
            return self._interaction_responses.get(interaction_token)

    def interaction_attachments(self, interaction_token: str) -> dict[str, bytes]:
        """The files attached to an interaction's response, by file name."""
        with self._lock:
            return dict(self._attachments.get(interaction_token, {}))

    def commands(self, guild_id: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._commands.get((self.application_id, guild_id), []))

    # Serving -----------------------------------------------------------------------------------

    def _answer(self, request: RecordedRequest) -> CannedResponse:
        if self._failures:
            return self._failures.popleft()
        if not request.path.startswith(DISCORD_API_PREFIX):
            return _discord_error(404, 0, "404: Not Found")
        path = request.path[len(DISCORD_API_PREFIX) :]
        webhook = re.fullmatch(r"/webhooks/(\d+)/([^/]+)/messages/@original", path)
        if webhook and request.method == "PATCH":
            return self._edit_original(request, *webhook.groups())  # the token in the path authorises
        if webhook and request.method == "GET":
            return self._get_original(*webhook.groups())
        execute = re.fullmatch(r"/webhooks/(\d+)/([^/]+)", path)
        if execute and request.method == "POST":
            return self._execute_webhook(request, *execute.groups())  # the token in the path authorises
        if request.headers.get("authorization") != f"Bot {self.token}":
            return _discord_error(401, 0, "401: Unauthorized")
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if match and method == request.method:
                return handler(request, *match.groups())
        return _discord_error(404, 0, "404: Not Found")

    def _get_channel(self, request: RecordedRequest, channel_id: str) -> CannedResponse:
        if channel_id not in self._channel_info:
            return _discord_error(404, JsonErrorCode.UNKNOWN_CHANNEL, "Unknown Channel")
        return CannedResponse(200, dict(self._channel_info[channel_id]))

    def _get_messages(self, request: RecordedRequest, channel_id: str) -> CannedResponse:
        if channel_id not in self._channels:
            return _discord_error(404, JsonErrorCode.UNKNOWN_CHANNEL, "Unknown Channel")
        limit = _int_param(request, "limit", default=50)
        before = _int_param(request, "before", default=0)
        after = _int_param(request, "after", default=0)
        if limit is None or not 1 <= limit <= 100 or before is None or after is None:
            return _discord_error(400, JsonErrorCode.INVALID_FORM_BODY, "Invalid Form Body")
        messages = self._channels[channel_id]
        if after:
            later = [m for m in messages if int(m["id"]) > after][:limit]
            return CannedResponse(200, list(reversed(later)))
        if before:
            messages = [m for m in messages if int(m["id"]) < before]
        return CannedResponse(200, list(reversed(messages))[:limit])

    def _post_message(self, request: RecordedRequest, channel_id: str) -> CannedResponse:
        if channel_id not in self._channels:
            return _discord_error(404, JsonErrorCode.UNKNOWN_CHANNEL, "Unknown Channel")
        self._posts_seen += 1
        failure = self._post_failures.pop(self._posts_seen, None)
        if failure is not None:
            return failure
        body = request.body if isinstance(request.body, dict) else {}
        content = body.get("content") or ""
        embeds = body.get("embeds") or []
        if (
            not isinstance(content, str)
            or len(content) > DISCORD_MESSAGE_LIMIT
            or not isinstance(embeds, list)
        ):
            return _discord_error(400, JsonErrorCode.INVALID_FORM_BODY, "Invalid Form Body")
        if not content.strip() and not embeds:
            return _discord_error(
                400, JsonErrorCode.CANNOT_SEND_EMPTY_MESSAGE, "Cannot send an empty message"
            )
        nonce = body.get("nonce")
        if nonce is not None and body.get("enforce_nonce"):
            created = self._nonces.get((channel_id, str(nonce)))
            if created is not None:
                return CannedResponse(200, created)
        reference = body.get("message_reference") or {}
        reply_to = reference.get("message_id")
        if reply_to and not self._find(channel_id, reply_to):
            if reference.get("fail_if_not_exists", True):
                return _discord_error(400, JsonErrorCode.INVALID_FORM_BODY, "Invalid Form Body")
            reply_to = None
        message = self._new_message(channel_id, self.bot_user, content, reply_to=reply_to)
        message["embeds"] = embeds
        self._channels[channel_id].append(message)
        if nonce is not None and body.get("enforce_nonce"):
            self._nonces[(channel_id, str(nonce))] = message
        return CannedResponse(200, message)

    def _typing(self, request: RecordedRequest, channel_id: str) -> CannedResponse:
        if channel_id not in self._channels:
            return _discord_error(404, JsonErrorCode.UNKNOWN_CHANNEL, "Unknown Channel")
        return CannedResponse(204)

    def _edit_original(self, request: RecordedRequest, application_id: str, token: str) -> CannedResponse:
        if application_id != self.application_id:
            return _discord_error(404, JsonErrorCode.UNKNOWN_WEBHOOK, "Unknown Webhook")
        body: dict[str, Any] = request.body if isinstance(request.body, dict) else {}
        files: dict[str, tuple[str, bytes]] = {}
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            sent, files = _multipart(request)
            if sent is None:
                return _discord_error(400, JsonErrorCode.INVALID_FORM_BODY, "Invalid Form Body")
            body = sent
        message = {
            "id": self._interaction_responses.get(token, {}).get("id") or self.new_id(),
            "content": body.get("content") or "",
            "embeds": body.get("embeds") or [],
            "attachments": [
                {"id": str(index), "filename": name, "size": len(data)}
                for index, (name, data) in enumerate(files.values())
            ],
            "author": self.bot_user,
            "timestamp": self._now(),
        }
        self._interaction_responses[token] = message
        self._attachments[token] = {name: data for name, data in files.values()}
        return CannedResponse(200, message)

    def _get_original(self, application_id: str, token: str) -> CannedResponse:
        if application_id != self.application_id:
            return _discord_error(404, JsonErrorCode.UNKNOWN_WEBHOOK, "Unknown Webhook")
        if token in self._interaction_responses:
            return CannedResponse(200, self._interaction_responses[token])
        thinking = {"id": self.new_id(), "content": "", "embeds": [], "flags": MessageFlag.LOADING}
        return CannedResponse(200, {**thinking, "author": self.bot_user, "timestamp": self._now()})

    def _search_members(self, request: RecordedRequest, guild_id: str) -> CannedResponse:
        query = (request.query.get("query") or [""])[0].lower()
        limit = _int_param(request, "limit", default=1)
        if not query or limit is None or not 1 <= limit <= 1000:
            return _discord_error(400, JsonErrorCode.INVALID_FORM_BODY, "Invalid Form Body")
        found = [
            member
            for member in self._members.get(guild_id, {}).values()
            if any(
                (name or "").lower().startswith(query)
                for name in (
                    member["user"]["username"],
                    member["user"].get("global_name"),
                    member.get("nick"),
                )
            )
        ]
        return CannedResponse(200, found[:limit])

    def _get_member(self, request: RecordedRequest, guild_id: str, user_id: str) -> CannedResponse:
        member = self._members.get(guild_id, {}).get(user_id)
        if member is None:
            return _discord_error(404, JsonErrorCode.UNKNOWN_MEMBER, "Unknown Member")
        return CannedResponse(200, member)

    def _get_guild(self, request: RecordedRequest, guild_id: str) -> CannedResponse:
        owner = self._owners.get(guild_id, self.bot_user["id"])  # someone, never a test's member by chance
        return CannedResponse(200, {"id": guild_id, "name": f"guild-{guild_id[-4:]}", "owner_id": owner})

    def _get_roles(self, request: RecordedRequest, guild_id: str) -> CannedResponse:
        return CannedResponse(200, list(self._roles.get(guild_id) or [self._everyone(guild_id)]))

    def _get_guild_channels(self, request: RecordedRequest, guild_id: str) -> CannedResponse:
        listed = [
            dict(channel)
            for channel in self._channel_info.values()
            if channel.get("guild_id") == guild_id
            and channel.get("type") not in (ChannelType.PUBLIC_THREAD, ChannelType.PRIVATE_THREAD)
        ]  # threads are listed by other routes in Discord too
        return CannedResponse(200, listed)

    def _get_own_guilds(self, request: RecordedRequest) -> CannedResponse:
        """The servers the bot is in (every guild seeded here), with its guild-wide permissions:
        those of kioku's invite link unless ``bot_guild_permissions`` says otherwise."""
        from kioku.services.registration import BOT_PERMISSIONS

        known = (
            {c.get("guild_id") for c in self._channel_info.values()} | set(self._roles) | set(self._members)
        )
        known |= set(self.bot_guild_permissions)
        after = int(request.query.get("after", ["0"])[0])
        limit = int(request.query.get("limit", ["200"])[0])
        ids = sorted((g for g in known if g and int(g) > after), key=int)[:limit]
        return CannedResponse(
            200,
            [
                {
                    "id": g,
                    "name": f"guild-{g[-4:]}",
                    "permissions": str(self.bot_guild_permissions.get(g, int(BOT_PERMISSIONS))),
                }
                for g in ids
            ],
        )

    def _get_application(self, request: RecordedRequest) -> CannedResponse:
        return CannedResponse(
            200,
            {
                "id": self.application_id,
                "name": self.bot_user["username"],
                "flags": self.application_flags,
                "verify_key": self.verify_key,
                "interactions_endpoint_url": self.interactions_endpoint_url,
                "owner": dict(self.owner),
                "bot": dict(self.bot_user),
            },
        )

    def _get_commands(
        self, request: RecordedRequest, application_id: str, guild_id: str | None = None
    ) -> CannedResponse:
        with self._lock:
            return CannedResponse(200, list(self._commands.get((application_id, guild_id), [])))

    def _put_commands(
        self, request: RecordedRequest, application_id: str, guild_id: str | None = None
    ) -> CannedResponse:
        if not isinstance(request.body, list) or not all(
            isinstance(c, dict) and c.get("name") for c in request.body
        ):
            return _discord_error(400, JsonErrorCode.INVALID_FORM_BODY, "Invalid Form Body")
        stored = [
            {**command, "id": self.new_id(), "application_id": application_id, "version": self.new_id()}
            for command in request.body
        ]
        self._commands[(application_id, guild_id)] = stored
        return CannedResponse(200, stored)

    def _new_message(
        self,
        channel_id: str,
        author: dict[str, Any],
        content: str,
        *,
        reply_to: str | None = None,
        timestamp: str | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "id": self.new_id(),
            "channel_id": channel_id,
            "type": MessageType.DEFAULT,
            "content": content,
            "author": dict(author),
            "timestamp": timestamp or self._now(),
            "edited_timestamp": None,
            "attachments": [],
            "embeds": [],
            "mentions": [
                dict(self._users[i]) for i in dict.fromkeys(USER_MENTION.findall(content)) if i in self._users
            ],
            "mention_roles": list(dict.fromkeys(_MENTIONED_ROLE.findall(content))),
            "pinned": False,
            "tts": False,
        }
        referenced = self._find(channel_id, reply_to) if reply_to else None
        if referenced is not None:
            message["type"] = MessageType.REPLY
            message["message_reference"] = {"message_id": reply_to, "channel_id": channel_id}
            message["referenced_message"] = {k: v for k, v in referenced.items() if k != "referenced_message"}
        return message

    def _find(self, channel_id: str, message_id: str) -> dict[str, Any] | None:
        return next((m for m in self._channels.get(channel_id, []) if m["id"] == message_id), None)


Responder = Callable[[dict[str, Any]], "CannedResponse | dict[str, Any]"]


class OpenAIStandIn(_StandInServer):
    """``POST /v1/chat/completions`` answering from a queue of canned responses, else a responder."""

    def __init__(self, *, api_key: str | None = None, responder: Responder | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self._responder = responder
        self._queue: deque[CannedResponse] = deque()

    @property
    def base_url(self) -> str:
        """What ``LLM_BASE_URL`` should be set to."""
        return self.url + "/v1"

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of every chat-completions request, in order."""
        return [r.body for r in self.requests_to("POST", "/v1/chat/completions")]

    def enqueue(self, *responses: CannedResponse | dict[str, Any]) -> None:
        """Queue answers; a dict is a 200 response body."""
        with self._lock:
            self._queue.extend(_canned(response) for response in responses)

    def _answer(self, request: RecordedRequest) -> CannedResponse:
        if request.method != "POST" or request.path != "/v1/chat/completions":
            return CannedResponse(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return CannedResponse(401, {"error": {"message": "Incorrect API key provided", "type": "auth"}})
        if not isinstance(request.body, dict):
            return CannedResponse(
                400, {"error": {"message": "body must be a JSON object", "type": "invalid"}}
            )
        if self._queue:
            return self._queue.popleft()
        if self._responder is not None:
            return _canned(self._responder(request.body))
        return CannedResponse(500, {"error": {"message": "OpenAIStandIn has no canned response left"}})


class EmbeddingsStandIn(_StandInServer):
    """``POST /v1/embeddings``: deterministic vectors, a hashed bag of the text's words where a few
    groups of English synonyms share one slot (``standin_embedding``), so a paraphrase lands near
    what it rewords, as a real model's would. ``supports_dimensions=False`` answers a request for
    ``dimensions`` as OpenAI does for a model that cannot (HTTP 400); ``answer_with`` makes it
    answer every request with one canned response instead (a failure, a malformed body)."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        supports_dimensions: bool = True,
        native_dimensions: int = STANDIN_NATIVE_DIMENSIONS,
    ) -> None:
        super().__init__()
        self.api_key = api_key
        self.supports_dimensions = supports_dimensions
        self.native_dimensions = native_dimensions
        self._canned: CannedResponse | None = None

    def answer_with(self, response: CannedResponse | None) -> None:
        """Answer every request with ``response`` from now on (None: embed again)."""
        with self._lock:
            self._canned = response

    @property
    def base_url(self) -> str:
        """What ``EMBEDDINGS_BASE_URL`` (or ``LLM_BASE_URL``) should be set to."""
        return self.url + "/v1"

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests_to("POST", "/v1/embeddings")]

    def _answer(self, request: RecordedRequest) -> CannedResponse:
        if request.method != "POST" or request.path != "/v1/embeddings":
            return _openai_error(404, "not found")
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _openai_error(401, "Incorrect API key provided")
        if self._canned is not None:
            return self._canned
        body = request.body
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("model"), str)
            or not isinstance(texts, list)
            or not texts
            or not all(isinstance(text, str) and text for text in texts)
        ):
            return _openai_error(
                400, "'input' must be a non-empty string or array of strings, with a 'model'"
            )
        dimensions = body.get("dimensions")
        if dimensions is not None and not self.supports_dimensions:
            return _openai_error(400, "This model does not support specifying dimensions.")
        if dimensions is not None and (not isinstance(dimensions, int) or dimensions < 1):
            return _openai_error(400, "'dimensions' must be a positive integer")
        size = dimensions or self.native_dimensions
        return CannedResponse(
            200,
            {
                "object": "list",
                "model": body["model"],
                "data": [
                    {"object": "embedding", "index": index, "embedding": standin_embedding(text, size)}
                    for index, text in enumerate(texts)
                ],
                "usage": {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0},
            },
        )


STANDIN_SYNONYMS: Final = (
    "live lives based reside resides home house city town moved",
    "dog dogs puppy pup pet",
    "job work works working career profession line occupation",
    "favourite favorite love loves like eat food dish",
    "sister brother sibling",
    "hobby hobbies pastime spare free taken",
    "car drive drives vehicle",
    "team club support supports supporter fan",
    "allergic allergy avoid never",
    "instrument music play plays band",
    "learn learning study studying",
    "book read reading novel",
    "went going trip outing visit",
)
"""What the stand-in knows of meaning: words of one line are one concept."""
_STANDIN_CONCEPTS: Final = {stem(word): line.split()[0] for line in STANDIN_SYNONYMS for word in line.split()}


def standin_embedding(text: str, dimensions: int) -> list[float]:
    """A unit vector of ``dimensions``: each of the text's words (as ranking folds and stems them,
    a synonym as its concept) adds ±1 at two places its hash picks. Deterministic, and the first 256
    components alone are as good as the whole (the hash spreads evenly)."""
    vector = [0.0] * dimensions
    for term in terms(text):
        concept = _STANDIN_CONCEPTS.get(term, term)
        digest = hashlib.blake2b(concept.encode(), digest_size=16).digest()
        for offset in (0, 8):
            slot = int.from_bytes(digest[offset : offset + 4], "big") % dimensions
            vector[slot] += 1.0 if digest[offset + 4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    if not any(vector):
        vector[0] = 1.0  # a text of stop words only still has a direction, as a model's would
    return [x / norm for x in vector]


def _openai_error(status: int, message: str) -> CannedResponse:
    return CannedResponse(status, {"error": {"message": message, "type": "invalid_request_error"}})


def completion_body(
    content: str | None = None, *, tool_calls: list[tuple[str, dict[str, Any]]] | None = None
) -> dict[str, Any]:
    """A chat-completions response body with text and/or ``(name, arguments)`` tool calls."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for index, (name, args) in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "model": "stand-in",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}
        ],
    }


def _canned(response: CannedResponse | dict[str, Any]) -> CannedResponse:
    return response if isinstance(response, CannedResponse) else CannedResponse(200, response)


def _int_param(request: RecordedRequest, name: str, *, default: int) -> int | None:
    values = request.query.get(name)
    if not values:
        return default
    try:
        return int(values[0])
    except ValueError:
        return None
