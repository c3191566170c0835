"""The bot's invite asks for exactly the permissions its code uses, derived from Discord's named bits."""

from __future__ import annotations

import re
from pathlib import Path

from kioku.services.registration import BOT_PERMISSIONS, invite_url

# Discord's permission bits (developer docs, "Permissions"), by name
DISCORD_BITS = {
    "VIEW_CHANNEL": 10,
    "SEND_MESSAGES": 11,
    "EMBED_LINKS": 14,
    "ATTACH_FILES": 15,
    "READ_MESSAGE_HISTORY": 16,
    "ADD_REACTIONS": 6,
    "SEND_MESSAGES_IN_THREADS": 38,
    "MANAGE_WEBHOOKS": 29,
}
README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_permissions_integer_is_the_sum_of_the_named_bits():
    expected = sum(
        1 << DISCORD_BITS[name]
        for name in (
            "VIEW_CHANNEL",
            "SEND_MESSAGES",
            "SEND_MESSAGES_IN_THREADS",
            "READ_MESSAGE_HISTORY",
            "EMBED_LINKS",
            "MANAGE_WEBHOOKS",
        )
    )
    assert int(BOT_PERMISSIONS) == expected
    assert {p.name: p.value.bit_length() - 1 for p in BOT_PERMISSIONS}.items() <= DISCORD_BITS.items()


def test_no_reactions_or_files_are_asked_for_since_the_code_uses_none():
    assert not BOT_PERMISSIONS & (1 << DISCORD_BITS["ADD_REACTIONS"] | 1 << DISCORD_BITS["ATTACH_FILES"])
    source = (Path(__file__).resolve().parents[2] / "layers/kioku/kioku/adapters/discord_rest.py").read_text()
    assert "/reactions" not in source


def test_the_readme_invite_uses_that_integer():
    assert f"permissions={int(BOT_PERMISSIONS)}" in README.read_text()
    assert f"permissions={int(BOT_PERMISSIONS)}" in invite_url("100000000000000001")
    assert re.search(r"scope=bot\+applications\.commands", invite_url("1"))
