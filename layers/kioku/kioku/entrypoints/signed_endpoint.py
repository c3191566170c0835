"""What every signed Function URL endpoint does before its own work: never raise, answer 401 to
anything not signed by the expected key (whatever its method or size, as the contract says), and
400 to a signed body too large to be what the endpoint takes. Interactions and the relay share it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kioku.entrypoints.function_url import UnreadableBody, error_response, header, raw_body
from kioku.public_keys import ConfigurationError
from kioku.signatures import SIGNATURE_HEADER, TIMESTAMP_HEADER, RequestVerifier, SignatureRejected

logger = logging.getLogger(__name__)

_verifiers: dict[str, RequestVerifier] = {}

Handler = Callable[[bytes], dict[str, Any]]


def handle_signed(
    event: dict[str, Any], public_key: Callable[[], str], handler: Handler, *, max_body_bytes: int
) -> dict[str, Any]:
    """Verify ``event`` against ``public_key()``, then answer with ``handler(body)``; never raises."""
    try:
        try:
            body = raw_body(event)
        except UnreadableBody:
            return error_response(401, "invalid request signature")
        try:
            verifier(public_key()).verify(
                body, header(event, SIGNATURE_HEADER), header(event, TIMESTAMP_HEADER)
            )
        except SignatureRejected as exc:
            logger.info("rejected a request: %s", exc.reason)
            return error_response(401, "invalid request signature")
        if len(body) > max_body_bytes:
            return error_response(400, "request body too large")
        return handler(body)
    except ConfigurationError as exc:
        logger.error("the endpoint is misconfigured: %s", exc)
        return error_response(503, "the bot is misconfigured; the operator has been told in the logs")
    except Exception:
        logger.exception("unexpected error while answering a request")
        return error_response(500, "internal error")


def verifier(public_key_hex: str) -> RequestVerifier:
    if public_key_hex not in _verifiers:
        _verifiers[public_key_hex] = RequestVerifier(public_key_hex)
    return _verifiers[public_key_hex]
