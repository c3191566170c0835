"""The slice of Discord's REST API a turn and the command registration need, over a sync httpx client."""

from __future__ import annotations

import json as json_module
import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from kioku import __version__
from kioku.discord.guild import Channel, parse_channel
from kioku.discord.models import Member, Message, parse_guild_member, parse_history
from kioku.discord.protocol import JsonErrorCode
from kioku.discord.snowflake import is_snowflake
from kioku.domain.conditions import DiscordRefused

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)
# httpx logs every request URL at INFO, and an interaction webhook URL carries its token.
logging.getLogger("httpx").setLevel(logging.WARNING)

HTTP_NO_CONTENT: Final = 204
HTTP_TOO_MANY_REQUESTS: Final = 429
HTTP_CLIENT_ERROR: Final = 400
HTTP_NOT_FOUND: Final = 404
MAX_MESSAGES_PER_FETCH: Final = 100
MAX_MEMBER_SEARCH_RESULTS: Final = 1000
USER_AGENT: Final = f"DiscordBot (kioku, {__version__})"
# Pings stay with the person we answer: no @everyone, no roles, no users named in the reply text.
ALLOWED_MENTIONS: Final = {"parse": [], "replied_user": True}

_INTERACTION_TOKEN = re.compile(r"[A-Za-z0-9_.\-]{1,500}")


MAX_NONCE_LENGTH = 25


class DiscordError(DiscordRefused):
    """Discord refused a request (the domain's ``DiscordRefused``, raised by this client)."""


class DiscordRest:
    """``Authorization: Bot <token>`` REST calls; 429s are waited out when the wait is short enough."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_seconds: float = 10.0,
        max_retries: int = 3,
        max_retry_after_seconds: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx  # here, not at the top: a command that only names this client never loads httpx

        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"User-Agent": USER_AGENT},
            timeout=httpx.Timeout(timeout_seconds),
        )
        self._auth = {"Authorization": f"Bot {token}"}
        self._max_retries = max_retries
        self._max_retry_after = max_retry_after_seconds
        self._sleep = sleep

    def close(self) -> None:
        self._client.close()

    def get_channel_messages(
        self, channel_id: str, limit: int, *, before: str | None = None, after: str | None = None
    ) -> list[Message]:
        """Up to ``limit`` messages, newest first as Discord returns them: the latest, or those
        ``before`` / ``after`` a message id. One that cannot be read (no id, no author) is left out."""
        if not 1 <= limit <= MAX_MESSAGES_PER_FETCH:
            raise ValueError(f"limit must be between 1 and {MAX_MESSAGES_PER_FETCH}")
        params: dict[str, Any] = {"limit": limit}
        if before is not None:
            params["before"] = _id(before)
        if after is not None:
            params["after"] = _id(after)
        messages = self._request("GET", f"/channels/{_id(channel_id)}/messages", params=params)
        if not isinstance(messages, list):
            raise DiscordError(200, None, "channel messages were not a list")
        parsed = parse_history(messages)
        if len(parsed) < len(messages):
            logger.warning("%d channel message(s) could not be read; left out", len(messages) - len(parsed))
        return parsed

    def get_channel(self, channel_id: str) -> Channel:
        """The channel: its name, type, overwrites and, for a thread, ``parent_id``."""
        channel = self._request("GET", f"/channels/{_id(channel_id)}")
        if not isinstance(channel, dict):
            raise DiscordError(200, None, "the channel was not an object")
        return parse_channel(channel)

    def trigger_typing(self, channel_id: str) -> None:
        self._request("POST", f"/channels/{_id(channel_id)}/typing")

    def create_message(
        self,
        channel_id: str,
        content: str,
        *,
        reply_to: str | None = None,
        embeds: list[dict[str, Any]] | None = None,
        nonce: str | None = None,
    ) -> dict[str, Any]:
        """Post a message, as a reply to ``reply_to`` when given (still sent if that message is gone).

        With a ``nonce`` Discord enforces uniqueness: a retried post returns the message already
        created instead of creating a second one.
        """
        body: dict[str, Any] = {"content": content, "allowed_mentions": ALLOWED_MENTIONS}
        if nonce is not None:
            if len(nonce) > MAX_NONCE_LENGTH:
                raise ValueError("a nonce is at most 25 characters")
            body["nonce"] = nonce
            body["enforce_nonce"] = True
        if embeds:
            body["embeds"] = embeds
        if reply_to is not None:
            body["message_reference"] = {"message_id": _id(reply_to), "fail_if_not_exists": False}
        return self._request("POST", f"/channels/{_id(channel_id)}/messages", json=body)

    def edit_original_response(
        self,
        application_id: str,
        interaction_token: str,
        content: str,
        embeds: list[dict[str, Any]] | None = None,
        *,
        file: tuple[str, bytes, str] | None = None,
    ) -> dict[str, Any]:
        """Fill in a deferred interaction response, with ``file`` (name, bytes, media type) attached
        when given. The token in the path is the credential."""
        if not _INTERACTION_TOKEN.fullmatch(interaction_token):
            raise ValueError("interaction token has unexpected characters")
        body: dict[str, Any] = {"content": content, "allowed_mentions": {"parse": []}}
        if embeds is not None:
            body["embeds"] = embeds
        path = f"/webhooks/{_id(application_id)}/{interaction_token}/messages/@original"
        if file is None:
            return self._request("PATCH", path, json=body, authorize=False)
        name, data, media_type = file
        body["attachments"] = [{"id": 0, "filename": name}]
        return self._request(
            "PATCH",
            path,
            data={"payload_json": json_text(body)},
            files={"files[0]": (name, data, media_type)},
            authorize=False,
        )

    def create_webhook(self, channel_id: str, name: str) -> dict[str, Any]:
        """Create an incoming webhook in the channel (needs Manage Webhooks); the answer holds its token."""
        return self._request("POST", f"/channels/{_id(channel_id)}/webhooks", json={"name": name})

    def execute_webhook(
        self,
        webhook_id: str,
        token: str,
        content: str,
        *,
        username: str,
        avatar_url: str | None = None,
        embeds: list[dict[str, Any]] | None = None,
        thread_id: str | None = None,
    ) -> dict[str, Any]:
        """Post through a webhook as ``username`` (with ``avatar_url``), waiting for the message; no
        mass mentions. The token in the path is the credential: only the method is ever logged."""
        if not _INTERACTION_TOKEN.fullmatch(token):
            raise ValueError("webhook token has unexpected characters")
        body: dict[str, Any] = {"content": content, "username": username, "allowed_mentions": {"parse": []}}
        if avatar_url:
            body["avatar_url"] = avatar_url
        if embeds:
            body["embeds"] = embeds
        params: dict[str, Any] = {"wait": "true"}
        if thread_id is not None:
            params["thread_id"] = _id(thread_id)
        return self._request(
            "POST", f"/webhooks/{_id(webhook_id)}/{token}", params=params, json=body, authorize=False
        )

    def search_guild_members(self, guild_id: str, query: str, limit: int = 10) -> list[Member]:
        """Members whose username or nickname starts with ``query`` (those that are no object left out)."""
        if not 1 <= limit <= MAX_MEMBER_SEARCH_RESULTS:
            raise ValueError(f"limit must be between 1 and {MAX_MEMBER_SEARCH_RESULTS}")
        params = {"query": query, "limit": limit}
        members = self._request("GET", f"/guilds/{_id(guild_id)}/members/search", params=params)
        if not isinstance(members, list):
            raise DiscordError(200, None, "member search results were not a list")
        return [member for member in map(parse_guild_member, members) if member is not None]

    def get_guild(self, guild_id: str) -> dict[str, Any]:
        """The guild object: its ``owner_id`` among the rest."""
        guild = self._request("GET", f"/guilds/{_id(guild_id)}")
        if not isinstance(guild, dict):
            raise DiscordError(200, None, "the guild was not an object")
        return guild

    def get_guild_roles(self, guild_id: str) -> list[dict[str, Any]]:
        """Every role of the guild; the @everyone role's id is the guild's."""
        roles = self._request("GET", f"/guilds/{_id(guild_id)}/roles")
        if not isinstance(roles, list):
            raise DiscordError(200, None, "guild roles were not a list")
        return roles

    def get_guild_channels(self, guild_id: str) -> list[dict[str, Any]]:
        """Every channel of the guild the bot can see, threads aside, with their permission overwrites."""
        channels = self._request("GET", f"/guilds/{_id(guild_id)}/channels")
        if not isinstance(channels, list):
            raise DiscordError(200, None, "guild channels were not a list")
        return channels

    def get_guild_member(self, guild_id: str, user_id: str) -> Member | None:
        """The guild member, or None when the user is not (or no longer) a member of the guild."""
        try:
            member = self._request("GET", f"/guilds/{_id(guild_id)}/members/{_id(user_id)}")
        except DiscordError as exc:
            if exc.status == HTTP_NOT_FOUND and exc.code in (
                JsonErrorCode.UNKNOWN_MEMBER,
                JsonErrorCode.UNKNOWN_USER,
            ):
                return None
            raise
        if not isinstance(member, dict):
            raise DiscordError(200, None, "the guild member was not an object")
        return parse_guild_member(member)

    def bulk_overwrite_commands(
        self, application_id: str, commands: list[dict[str, Any]], guild_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Replace every global (or one guild's) application command in one PUT."""
        path = f"/applications/{_id(application_id)}"
        path += f"/guilds/{_id(guild_id)}/commands" if guild_id is not None else "/commands"
        return self._request("PUT", path, json=commands)

    def get_commands(self, application_id: str, guild_id: str | None = None) -> list[dict[str, Any]]:
        """The application's registered global (or one guild's) commands."""
        path = f"/applications/{_id(application_id)}"
        path += f"/guilds/{_id(guild_id)}/commands" if guild_id is not None else "/commands"
        return self._request("GET", path)

    GUILDS_PAGE: Final = 200

    def get_current_user_guilds(self, after: str | None = None) -> list[dict[str, Any]]:
        """One page of the servers the bot is in, each with its ``permissions`` there (guild-wide)."""
        params: dict[str, Any] = {"limit": self.GUILDS_PAGE}
        if after is not None:
            params["after"] = _id(after)
        return self._request("GET", "/users/@me/guilds", params=params)

    def get_current_application(self) -> dict[str, Any]:
        """The bot's application: its ``flags`` (gateway intents), ``verify_key``, endpoint URL, owner."""
        return self._request("GET", "/applications/@me")

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        data: dict[str, str] | None = None,
        files: dict[str, tuple[str, bytes, str]] | None = None,
        authorize: bool = True,
    ) -> Any:
        import httpx

        headers = self._auth if authorize else None
        retries = 0
        while True:
            try:
                response = self._client.request(
                    method, path, params=params, json=json, data=data, files=files, headers=headers
                )
            except httpx.TransportError as exc:
                raise DiscordError(0, None, f"could not reach Discord ({type(exc).__name__})") from exc
            if response.status_code != HTTP_TOO_MANY_REQUESTS:
                return _result(response)
            wait = _retry_after(response)
            if wait is None or wait > self._max_retry_after or retries >= self._max_retries:
                raise _error(response)
            retries += 1
            # Only the method is logged: paths can hold interaction tokens.
            logger.warning("Discord rate limited a %s; waiting %.2fs", method, wait)
            self._sleep(wait)


def json_text(value: Any) -> str:
    return json_module.dumps(value, separators=(",", ":"))


def _result(response: httpx.Response) -> Any:
    if response.status_code >= HTTP_CLIENT_ERROR:
        raise _error(response)
    if response.status_code == HTTP_NO_CONTENT or not response.content:
        return None
    try:
        return response.json()
    except ValueError as exc:
        raise DiscordError(response.status_code, None, "response was not JSON") from exc


def _error(response: httpx.Response) -> DiscordError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        code = body.get("code") if isinstance(body.get("code"), int) else None
        return DiscordError(response.status_code, code, str(body.get("message", "")))
    return DiscordError(response.status_code, None, response.reason_phrase)


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait: the JSON ``retry_after`` (precise), else the ``Retry-After`` header."""
    try:
        body = response.json()
        candidate = body.get("retry_after") if isinstance(body, dict) else None
    except ValueError:
        candidate = None
    if candidate is None:
        candidate = response.headers.get("retry-after")
    try:
        seconds = float(candidate)
    except (TypeError, ValueError):
        return None
    return seconds if 0 <= seconds < float("inf") else None


def _id(value: str) -> str:
    if not is_snowflake(value):
        raise ValueError("Discord ids are 1-20 digit snowflakes")
    return value
