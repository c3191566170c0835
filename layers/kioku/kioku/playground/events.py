"""Builders for signed Function URL events and sample interactions (tests, events/, the playground)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from kioku.signatures import sign_request

INTERACTION_PING = 1
INTERACTION_APPLICATION_COMMAND = 2
SUB_COMMAND = 1


def function_url_event(
    body: bytes,
    headers: dict[str, str],
    *,
    base64_body: bool = False,
    method: str = "POST",
    path: str = "/",
) -> dict[str, Any]:
    """A Lambda Function URL payload 2.0 event, as AWS delivers it."""
    now = time.time()
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", **{k.lower(): v for k, v in headers.items()}},
        "requestContext": {
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": f"local-{int(now * 1000)}",
            "timeEpoch": int(now * 1000),
        },
        "body": base64.b64encode(body).decode() if base64_body else body.decode("utf-8"),
        "isBase64Encoded": base64_body,
    }


def signed_event(
    payload: dict[str, Any] | bytes,
    signing_key_hex: str,
    *,
    timestamp: str | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
    return function_url_event(body, sign_request(signing_key_hex, body, timestamp), base64_body=base64_body)


def ping(application_id: str) -> dict[str, Any]:
    return {
        "id": "1",
        "application_id": application_id,
        "type": INTERACTION_PING,
        "token": "ping",
        "version": 1,
    }


def slash_command(
    application_id: str,
    name: str,
    subcommand: str | None = None,
    options: dict[str, Any] | None = None,
    *,
    guild_id: str | None = "200000000000000001",
    channel_id: str = "300000000000000001",
    user_id: str = "400000000000000001",
    username: str = "playground-user",
    global_name: str | None = None,
    interaction_id: str = "500000000000000001",
    token: str = "interaction-token",
) -> dict[str, Any]:
    """An APPLICATION_COMMAND interaction as Discord sends it for ``/name [subcommand] [options]``."""
    leaf = [{"name": k, "value": v, "type": 3} for k, v in (options or {}).items()]
    data_options = [{"name": subcommand, "type": SUB_COMMAND, "options": leaf}] if subcommand else leaf
    user = {"id": user_id, "username": username, "global_name": global_name}
    payload: dict[str, Any] = {
        "id": interaction_id,
        "application_id": application_id,
        "type": INTERACTION_APPLICATION_COMMAND,
        "token": token,
        "version": 1,
        "channel_id": channel_id,
        "data": {"id": "600000000000000001", "name": name, "type": 1, "options": data_options},
    }
    if guild_id:
        payload["guild_id"] = guild_id
        payload["member"] = {"user": user, "nick": None, "permissions": "0", "roles": []}
    else:
        payload["user"] = user
    return payload
