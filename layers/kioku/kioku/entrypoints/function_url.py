"""Lambda Function URL (payload 2.0) events in, responses out. Standard library only: cold path."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

JSON_HEADERS = {"content-type": "application/json"}


class UnreadableBody(Exception):
    """The event claims a base64 body that does not decode."""


def raw_body(event: dict[str, Any]) -> bytes:
    """The request body exactly as the client sent it (base64 bodies decoded first)."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise UnreadableBody("body is not valid base64") from None
    return body.encode("utf-8")


def header(event: dict[str, Any], name: str) -> str | None:
    """A request header; Function URLs lower-case header names, local callers may not."""
    headers = event.get("headers") or {}
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    return value


def json_response(status: int, payload: Any) -> dict[str, Any]:
    return {"statusCode": status, "headers": dict(JSON_HEADERS), "body": json.dumps(payload)}


def error_response(status: int, message: str) -> dict[str, Any]:
    return json_response(status, {"error": message})


def empty_response(status: int) -> dict[str, Any]:
    return {"statusCode": status, "headers": {}, "body": ""}
