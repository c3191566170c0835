"""The Discord interactions endpoint: verify, then parse, then route.

Only the standard library and PyNaCl are imported up front; the logger and metrics (Powertools),
the settings (pydantic), the composition root and the command router (boto3, httpx) are imported
on the first real command, so a PING or a rejected request never pays for them.
"""

from __future__ import annotations

import json
from typing import Any, Final

from kioku.discord.interactions import InteractionType, ResponseType
from kioku.entrypoints.function_url import error_response, json_response
from kioku.entrypoints.signed_endpoint import handle_signed
from kioku.public_keys import public_key_from_env

MAX_BODY_BYTES: Final = 256 * 1024
MAX_KEY_LENGTH: Final = 100


def handle(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """Answer one Function URL event; never raises."""
    return handle_signed(
        event,
        lambda: public_key_from_env("DISCORD_PUBLIC_KEY"),
        lambda body: _answer(body, context),
        max_body_bytes=MAX_BODY_BYTES,
    )


def _answer(body: bytes, context: Any) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return error_response(400, "body is not JSON")
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), int):
        return error_response(400, "body is not a Discord interaction")
    if payload["type"] == InteractionType.PING:
        return json_response(200, {"type": ResponseType.PONG})

    from kioku.entrypoints.composition import container
    from kioku.observability import Metric, count, invocation
    from kioku.services.commands.router import InvalidInteraction, route_interaction

    with invocation(context, **_correlation_keys(payload)):
        count(Metric.COMMANDS)
        try:
            return json_response(200, route_interaction(payload, container()))
        except InvalidInteraction as exc:
            return error_response(400, str(exc))


def _correlation_keys(payload: dict[str, Any]) -> dict[str, str | None]:
    """The ids a log line of this interaction is found by; the body is verified, not yet validated."""
    data = payload.get("data")
    channel = payload.get("channel")
    return {
        "interaction_id": _key(payload.get("id")),
        "guild_id": _key(payload.get("guild_id")),
        "channel_id": _key(
            payload.get("channel_id") or (channel.get("id") if isinstance(channel, dict) else None)
        ),
        "command": _key(data.get("name") or data.get("custom_id")) if isinstance(data, dict) else None,
    }


def _key(value: object) -> str | None:
    return str(value)[:MAX_KEY_LENGTH] if isinstance(value, str | int) else None
