"""The Discord interactions endpoint: verify, then parse, then route.

Only the standard library, PyNaCl and the settings are imported up front; the command router
(and with it boto3 and httpx, when a command needs them) is imported on the first real command,
so a PING or a rejected request never pays for them.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from kioku.config import ConfigurationError, get_settings
from kioku.entrypoints.function_url import (
    UnreadableBody,
    error_response,
    header,
    json_response,
    raw_body,
)
from kioku.signatures import SIGNATURE_HEADER, TIMESTAMP_HEADER, RequestVerifier, SignatureRejected

logger = logging.getLogger(__name__)

INTERACTION_PING: Final = 1
RESPONSE_PONG: Final = 1
MAX_BODY_BYTES: Final = 256 * 1024

_verifiers: dict[str, RequestVerifier] = {}


def verifier() -> RequestVerifier:
    public_key = get_settings().DISCORD_PUBLIC_KEY
    if public_key not in _verifiers:
        _verifiers[public_key] = RequestVerifier(public_key)
    return _verifiers[public_key]


def handle(event: dict[str, Any]) -> dict[str, Any]:
    """Answer one Function URL event; never raises."""
    try:
        return _handle(event)
    except ConfigurationError as exc:
        logger.error("interactions endpoint is misconfigured: %s", exc)
        return error_response(503, "the bot is misconfigured; the operator has been told in the logs")
    except Exception:
        logger.exception("unexpected error while answering an interaction")
        return error_response(500, "internal error")


def _handle(event: dict[str, Any]) -> dict[str, Any]:
    if (event.get("requestContext") or {}).get("http", {}).get("method", "POST") != "POST":
        return error_response(405, "interactions are POSTed")
    try:
        body = raw_body(event)
    except UnreadableBody:
        return error_response(401, "invalid request signature")
    if len(body) > MAX_BODY_BYTES:
        return error_response(413, "request body too large")
    try:
        verifier().verify(body, header(event, SIGNATURE_HEADER), header(event, TIMESTAMP_HEADER))
    except SignatureRejected as exc:
        logger.info("rejected an interaction: %s", exc.reason)
        return error_response(401, "invalid request signature")
    try:
        payload = json.loads(body)
    except ValueError:
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
