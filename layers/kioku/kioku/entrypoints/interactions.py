"""The Discord interactions endpoint: verify, then parse, then route.

Only the standard library, PyNaCl and the settings are imported up front; the command router
(and with it boto3 and httpx, when a command needs them) is imported on the first real command,
so a PING or a rejected request never pays for them.
"""

from __future__ import annotations

import json
from typing import Any, Final

from kioku.config import get_settings
from kioku.entrypoints.function_url import error_response, json_response
from kioku.entrypoints.signed_endpoint import handle_signed

INTERACTION_PING: Final = 1
RESPONSE_PONG: Final = 1
MAX_BODY_BYTES: Final = 256 * 1024


def handle(event: dict[str, Any]) -> dict[str, Any]:
    """Answer one Function URL event; never raises."""
    return handle_signed(
        event, lambda: get_settings().DISCORD_PUBLIC_KEY, _answer, max_body_bytes=MAX_BODY_BYTES
    )


def _answer(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return error_response(400, "body is not JSON")
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), int):
        return error_response(400, "body is not a Discord interaction")
    if payload["type"] == INTERACTION_PING:
        return json_response(200, {"type": RESPONSE_PONG})

    from kioku.services.commands.router import InvalidInteraction, route_interaction

    try:
        return json_response(200, route_interaction(payload))
    except InvalidInteraction as exc:
        return error_response(400, str(exc))
