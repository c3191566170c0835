"""``/server privacy channel|bypass|view`` through the real interactions handler, on moto."""

from __future__ import annotations

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.domain.models import ServerConfig
from kioku.domain.privacy import MAX_PRIVACY_OVERRIDES, PrivacyMode
from tests.integration.test_server_commands import GUILD, NOT_MANAGER, assert_ephemeral_error, command, fields

SECRET = "300000000000000003"


@pytest.fixture
def store(table) -> ConfigStore:
    return ConfigStore(table)


def test_a_manager_overrides_a_channel_and_sets_it_back_to_auto(interact, store):
    # When a manager makes #secret public, then private, then auto again
    public = interact(command("server", "privacy", "channel", channel=SECRET, mode="public"))
    assert store.get_server_config(GUILD).channel_privacy == {SECRET: PrivacyMode.PUBLIC}
    interact(command("server", "privacy", "channel", channel=SECRET, mode="private"))
    assert store.get_server_config(GUILD).channel_privacy == {SECRET: PrivacyMode.PRIVATE}
    auto = interact(command("server", "privacy", "channel", channel=SECRET, mode="auto"))
    # Then each answer is ephemeral and says what now holds; auto leaves no override behind
    assert public["data"]["flags"] == 64
    assert f"<#{SECRET}>" in public["data"]["embeds"][0]["title"]
    assert store.get_server_config(GUILD).channel_privacy == {}
    assert fields(auto)["Overrides"] == "None"


def test_the_bypass_is_switched_and_shown(interact, store):
    on = interact(command("server", "privacy", "bypass", enabled=True))
    assert store.get_server_config(GUILD).stm_privacy_bypass is True
    assert "**On**" in fields(on)["Bypass"]
    interact(command("server", "privacy", "bypass", enabled=False))
    assert store.get_server_config(GUILD).stm_privacy_bypass is False


def test_view_lists_the_overrides(interact, store):
    store.save_server_config(ServerConfig(guild_id=GUILD, channel_privacy={SECRET: PrivacyMode.PRIVATE}))
    shown = fields(interact(command("server", "privacy", "view")))
    assert f"<#{SECRET}>: private" in shown["Overrides"]
    assert "**Off**" in shown["Bypass"]


@pytest.mark.parametrize(
    "payload",
    [
        command("server", "privacy", "channel", channel=SECRET, mode="public", permissions=NOT_MANAGER),
        command("server", "privacy", "bypass", enabled=True, permissions=NOT_MANAGER),
        command("server", "privacy", "channel", channel=SECRET, mode="public", guild_id=None),
        command("server", "privacy", "channel", channel="#secret", mode="public"),
        command("server", "privacy", "channel", channel="３００", mode="public"),
        command("server", "privacy", "channel", channel=SECRET, mode="hidden"),
        command("server", "privacy", "bypass", enabled="yes"),
    ],
    ids=[
        "not a manager",
        "bypass not a manager",
        "in a DM",
        "not an id",
        "unicode digits",
        "bad mode",
        "bad bool",
    ],
)
def test_refusals_change_nothing(interact, store, payload):
    before = store.get_server_config(GUILD)
    body = interact(payload)
    assert_ephemeral_error(body)
    assert store.get_server_config(GUILD) == before


def test_overrides_are_capped(interact, store):
    full = {str(10**17 + n): PrivacyMode.PRIVATE for n in range(MAX_PRIVACY_OVERRIDES)}
    store.save_server_config(ServerConfig(guild_id=GUILD, channel_privacy=full))
    body = interact(command("server", "privacy", "channel", channel=SECRET, mode="public"))
    assert_ephemeral_error(body, "overrides")
    assert SECRET not in store.get_server_config(GUILD).channel_privacy
    # an existing override can still be changed
    existing = next(iter(full))
    interact(command("server", "privacy", "channel", channel=existing, mode="public"))
    assert store.get_server_config(GUILD).channel_privacy[existing] is PrivacyMode.PUBLIC
