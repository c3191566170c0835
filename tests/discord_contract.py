"""What Discord documents for the bodies kioku POSTs (``contracts/discord_requests.schema.json``, our
own schema written from Discord's public API docs): every body a test sees kioku send to the stand-in
is checked against it.

When ``KIOKU_DISCORD_OPENAPI`` names a local copy of Discord's published OpenAPI document, the same
bodies are checked against it too (never fetched here: a developer points at a copy they have)."""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator

SCHEMA: Final = json.loads(
    (Path(__file__).resolve().parent / "contracts" / "discord_requests.schema.json").read_text()
)
UPSTREAM_ENV: Final = "KIOKU_DISCORD_OPENAPI"
_PATHS: Final = [
    (re.compile(r"/api/v10/channels/\d+/messages"), "/channels/{channel_id}/messages"),
    (re.compile(r"/api/v10/channels/\d+/webhooks"), "/channels/{channel_id}/webhooks"),
    (re.compile(r"/api/v10/webhooks/\d+/[^/]+"), "/webhooks/{webhook_id}/{webhook_token}"),
]


def validator(path: str) -> Draft202012Validator:
    """The validator for POST ``path`` (as Discord's docs write it, e.g. ``/channels/{channel_id}/messages``)."""
    return Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{SCHEMA['endpoints'][path]}"})


@cache
def upstream_validator(path: str) -> Draft202012Validator | None:
    """The request-body schema of POST ``path`` in the OpenAPI document ``KIOKU_DISCORD_OPENAPI``
    names, or None when it names none."""
    location = os.environ.get(UPSTREAM_ENV)
    if not location:
        return None
    spec = json.loads(Path(location).read_text())
    schema = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return Draft202012Validator({**schema, "components": spec["components"]})


def checked_posts(requests: list[Any]) -> list[str]:
    """Validate every POST body among ``requests`` (a stand-in's) whose endpoint the schema here
    covers; the paths checked, in order."""
    checked = []
    for request in requests:
        if request.method != "POST":
            continue
        path = next((path for pattern, path in _PATHS if pattern.fullmatch(request.path)), None)
        if path is None:
            continue
        validator(path).validate(request.body)
        if (upstream := upstream_validator(path)) is not None:
            upstream.validate(request.body)
        checked.append(path)
    return checked
