"""Our Discord schema (tests/discord_contract.py) refuses what Discord's docs say Discord refuses, so
the contract checks in the REST and persona tests can fail."""

from __future__ import annotations

import pytest
from jsonschema import ValidationError

from kioku.discord.ui import embed
from tests.discord_contract import validator

MESSAGES = "/channels/{channel_id}/messages"
WEBHOOKS = "/channels/{channel_id}/webhooks"
EXECUTE = "/webhooks/{webhook_id}/{webhook_token}"
MESSAGE = {
    "content": "x" * 2000,
    "allowed_mentions": {"parse": [], "replied_user": True},
    "nonce": "n" * 25,
    "enforce_nonce": True,
    "embeds": [embed("t" * 256, "d" * 4096, color=0xFFFFFF, footer="f")] * 10,
    "message_reference": {"message_id": "123456789012345678", "fail_if_not_exists": False},
}
EXECUTED = {
    "content": "hi",
    "username": "L" * 80,
    "avatar_url": "https://example.com/l.png",
    "allowed_mentions": {"parse": []},
}


def test_bodies_as_kioku_sends_them_at_discord_s_limits_pass():
    validator(MESSAGES).validate(MESSAGE)
    validator(WEBHOOKS).validate({"name": "kioku personas"})
    validator(EXECUTE).validate(EXECUTED)
    validator(EXECUTE).validate({"content": "", "username": "Luna", "embeds": [embed("t", "d", color=1)]})


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (MESSAGES, MESSAGE | {"content": "x" * 2001}),
        (MESSAGES, MESSAGE | {"embeds": MESSAGE["embeds"] * 2}),
        (MESSAGES, MESSAGE | {"embeds": [embed("t" * 257, "d", color=1)]}),
        (MESSAGES, MESSAGE | {"embeds": [embed("t", "d" * 4097, color=1)]}),
        (MESSAGES, MESSAGE | {"embeds": [embed("t", "d", color=0x1000000)]}),
        (MESSAGES, MESSAGE | {"allowed_mentions": {"parse": ["here"]}}),
        (MESSAGES, MESSAGE | {"message_reference": {"fail_if_not_exists": False}}),
        (MESSAGES, MESSAGE | {"nonce": "n" * 26}),
        (MESSAGES, MESSAGE | {"allowed_mention": {"parse": []}}),
        (MESSAGES, {"content": "", "allowed_mentions": {"parse": []}}),
        (WEBHOOKS, {"name": ""}),
        (WEBHOOKS, {"name": "n" * 81}),
        (EXECUTE, EXECUTED | {"username": "L" * 81}),
        (EXECUTE, EXECUTED | {"username": ""}),
        (EXECUTE, EXECUTED | {"content": "x" * 2001}),
        (EXECUTE, EXECUTED | {"avatar_url": "javascript:alert(1)"}),
    ],
)
def test_a_body_past_a_documented_limit_is_refused(path, body):
    with pytest.raises(ValidationError):
        validator(path).validate(body)
