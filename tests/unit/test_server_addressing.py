"""The ``/server addressing`` embed's list of always channels fits one embed field."""

from __future__ import annotations

import re
from dataclasses import replace

from kioku.discord.ui import MAX_EMBED_FIELD_VALUE_CHARS
from kioku.domain.models import ServerConfig
from kioku.services.commands.server_addressing import MAX_ALWAYS_CHANNELS, always_channels_text

LUNA_ID = "600000000000000001"


def _server_with_always_channels(count: int, persona_name: str) -> ServerConfig:
    luna = replace(ServerConfig().persona, persona_id=LUNA_ID, name=persona_name, alter=True)
    channels = {str(700000000000000000 + n): LUNA_ID for n in range(count)}
    return replace(ServerConfig(guild_id="100000000000000001"), alters=(luna,), always_channels=channels)


def test_every_always_channel_is_listed_when_they_fit():
    # Given a server with three always channels
    config = _server_with_always_channels(3, "Luna")

    # When the addressing embed lists them
    text = always_channels_text(config)

    # Then each is a whole line, answered by its persona
    assert text.splitlines() == [
        f"<#{channel}>: every member's message, answered by **Luna**"
        for channel in sorted(config.always_channels)
    ]


def test_the_most_always_channels_with_long_names_fit_one_embed_field_and_the_rest_are_counted():
    # Given the most always channels a server may have, answered by a persona with a long name
    config = _server_with_always_channels(MAX_ALWAYS_CHANNELS, "L" * 32)

    # When the addressing embed lists them
    text = always_channels_text(config)

    # Then Discord's field limit holds, no channel mention is cut, and the rest are counted
    assert len(text) <= MAX_EMBED_FIELD_VALUE_CHARS
    *listed, rest = text.splitlines()
    assert all(
        re.fullmatch(r"<#\d+>: every member's message, answered by \*\*L{32}\*\*", line) for line in listed
    )
    assert rest == f"…and {MAX_ALWAYS_CHANNELS - len(listed)} more"
    assert 0 < len(listed) < MAX_ALWAYS_CHANNELS
