"""Discord's published OpenAPI document, the parts kioku sends bodies to (``contracts/discord_openapi.json``,
verbatim from discord/discord-api-spec: its ``x-source`` says which commit): every body a test sees
kioku send to the stand-in is checked against it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator

SPEC: Final = json.loads((Path(__file__).resolve().parent / "contracts" / "discord_openapi.json").read_text())
_PATHS: Final = [
    (re.compile(r"/api/v10/channels/\d+/messages"), "/channels/{channel_id}/messages"),
    (re.compile(r"/api/v10/channels/\d+/webhooks"), "/channels/{channel_id}/webhooks"),
    (re.compile(r"/api/v10/webhooks/\d+/[^/]+"), "/webhooks/{webhook_id}/{webhook_token}"),
]


def validator(path: str, method: str = "post") -> Draft202012Validator:
    schema = SPEC["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    return Draft202012Validator({**schema, "components": SPEC["components"]})


def checked_posts(requests: list[Any]) -> list[str]:
    """Validate every POST body among ``requests`` (a stand-in's) whose endpoint the document here
    covers; the spec paths checked, in order."""
    checked = []
    for request in requests:
        if request.method != "POST":
            continue
        spec_path = next((spec for pattern, spec in _PATHS if pattern.fullmatch(request.path)), None)
        if spec_path is None:
            continue
        validator(spec_path).validate(request.body)
        checked.append(spec_path)
    return checked
