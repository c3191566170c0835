"""The Discord stand-in's channel webhooks: ``POST /channels/{id}/webhooks`` (Manage Webhooks, which
a channel can be made to lack) and ``POST /webhooks/{id}/{token}`` (``wait``, ``thread_id``), whose
messages carry the webhook as author under the username sent, and the application's id."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, Final

from kioku.discord.protocol import JsonErrorCode

DISCORD_MESSAGE_LIMIT: Final = 2000
MISSING_PERMISSIONS: Final = 50013
MAX_WEBHOOKS_PER_CHANNEL: Final = 15


class WebhookRoutes:
    """Mixed into ``DiscordStandIn``: its channels, ids, messages and answers (``_reply``,
    ``_refuse``) are this class's."""

    # the host's, which these routes read and write
    application_id: str
    bot_user: dict[str, Any]
    _channels: dict[str, list[dict[str, Any]]]
    _channel_info: dict[str, dict[str, Any]]

    if TYPE_CHECKING:

        def new_id(self) -> str: ...

        @staticmethod
        def _reply(status: int, body: Any = None) -> Any: ...  # the host's CannedResponse

        @staticmethod
        def _refuse(status: int, code: int, message: str) -> Any: ...  # the host's CannedResponse

        def _new_message(
            self,
            channel_id: str,
            author: dict[str, Any],
            content: str,
            *,
            reply_to: str | None = None,
            timestamp: str | None = None,
        ) -> dict[str, Any]: ...

    def _init_webhooks(self) -> None:
        self._webhooks: dict[str, dict[str, Any]] = {}
        self._no_webhooks: set[str] = set()

    # seeding -----------------------------------------------------------------------------------

    def forbid_webhooks(self, channel_id: str, forbidden: bool = True) -> None:
        """The bot lacks Manage Webhooks in ``channel_id`` (or has it again)."""
        (self._no_webhooks.add if forbidden else self._no_webhooks.discard)(channel_id)

    def delete_webhook(self, webhook_id: str) -> None:
        """Someone in the server deleted the webhook."""
        self._webhooks.pop(webhook_id, None)

    def webhooks_of(self, channel_id: str) -> list[dict[str, Any]]:
        return [dict(hook) for hook in self._webhooks.values() if hook["channel_id"] == channel_id]

    # routes ------------------------------------------------------------------------------------

    def _create_webhook(self, request: Any, channel_id: str) -> Any:
        if channel_id not in self._channels:
            return self._refuse(404, JsonErrorCode.UNKNOWN_CHANNEL, "Unknown Channel")
        if channel_id in self._no_webhooks:
            return self._refuse(403, MISSING_PERMISSIONS, "Missing Permissions")
        body = request.body if isinstance(request.body, dict) else {}
        name = body.get("name")
        if (
            not isinstance(name, str)
            or not 1 <= len(name) <= 80
            or len(self.webhooks_of(channel_id)) >= MAX_WEBHOOKS_PER_CHANNEL
        ):
            return self._refuse(400, JsonErrorCode.INVALID_FORM_BODY, "Invalid Form Body")
        hook: dict[str, Any] = {
            "id": self.new_id(),
            "type": 1,
            "channel_id": channel_id,
            "guild_id": self._channel_info.get(channel_id, {}).get("guild_id"),
            "name": name,
            "avatar": None,
            "token": secrets.token_urlsafe(48),
            "application_id": self.application_id,
            "user": dict(self.bot_user),
        }
        self._webhooks[hook["id"]] = hook
        return self._reply(200, dict(hook))

    def _execute_webhook(self, request: Any, webhook_id: str, token: str) -> Any:
        hook = self._webhooks.get(webhook_id)
        if hook is None or hook["token"] != token:
            return self._refuse(404, JsonErrorCode.UNKNOWN_WEBHOOK, "Unknown Webhook")
        body = request.body if isinstance(request.body, dict) else {}
        content, embeds = body.get("content") or "", body.get("embeds") or []
        username = body.get("username") or hook["name"]
        if (
            not isinstance(content, str)
            or len(content) > DISCORD_MESSAGE_LIMIT
            or not isinstance(embeds, list)
        ):
            return self._refuse(400, JsonErrorCode.INVALID_FORM_BODY, "Invalid Form Body")
        if not content.strip() and not embeds:
            return self._refuse(400, JsonErrorCode.CANNOT_SEND_EMPTY_MESSAGE, "Cannot send an empty message")
        channel_id = (request.query.get("thread_id") or [hook["channel_id"]])[0]
        if channel_id not in self._channels:
            return self._refuse(404, JsonErrorCode.UNKNOWN_CHANNEL, "Unknown Channel")
        author = {"id": webhook_id, "username": username, "global_name": None, "bot": True}
        if body.get("avatar_url"):
            author["avatar_url"] = body["avatar_url"]  # Discord shows it; the avatar hash is not ours to make
        message = self._new_message(channel_id, author, content)
        message.update(embeds=embeds, webhook_id=webhook_id, application_id=self.application_id)
        self._channels[channel_id].append(message)
        wait = (request.query.get("wait") or ["false"])[0] == "true"
        return self._reply(200, message) if wait else self._reply(204)
