"""The Discord interactions endpoint: verify, then parse, then route.

Only the standard library and PyNaCl are imported up front; the logger and metrics (Powertools),
the settings, the composition root and the command router (pydantic for the interaction, botocore
for the queue) are imported on the first real command, so a PING or a rejected request never pays for them.
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


class NotAnInteraction(ValueError):
    """A signed body that is no Discord interaction (not JSON, or no ``type``)."""


def _answer(body: bytes, context: Any) -> dict[str, Any]:
    try:
        return _route(body, context)
    except Exception as exc:
        response = _error_response(exc)
        if response is None:
            raise  # handle_signed logs it and answers 500
        return response


def _error_response(exc: Exception) -> dict[str, Any] | None:
    """The interactions endpoint's one map from what stopped a request to its HTTP answer: 400 for
    a body that is no interaction, or one the router cannot take; None for anything else (a command's
    own failures are answered in the channel, by ``services/commands/error_replies.py``)."""
    if isinstance(exc, NotAnInteraction):
        return error_response(400, str(exc))
    from kioku.services.commands.router import InvalidInteraction  # only on this path: a PING never loads it

    if isinstance(exc, InvalidInteraction):
        return error_response(400, str(exc))
    return None


def _route(body: bytes, context: Any) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        raise NotAnInteraction("body is not JSON") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), int):
        raise NotAnInteraction("body is not a Discord interaction")
    if payload["type"] == InteractionType.PING:
        return json_response(200, {"type": ResponseType.PONG})

    from kioku.entrypoints.composition import container
    from kioku.observability import Metric, count, invocation
    from kioku.services.commands.router import route_interaction

    with invocation(context, **_correlation_keys(payload)):
        count(Metric.COMMANDS)
        return json_response(200, route_interaction(payload, container()))


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
