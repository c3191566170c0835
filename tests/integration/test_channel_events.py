"""Channel events through RelayFunction: privacy re-stamped at once, deleted channels' memory gone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.domain.models import ServerConfig
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmLimits
from kioku.domain.stm.update_tool import StmUpdate
from tests.integration import stm_rows
from tests.integration.stm_rows import identity
from tests.unit.stm_builders import USER

GUILD = "900"
GENERAL, SECRET, THREAD, PRIVATE_THREAD, OTHER = "100", "200", "250", "260", "300"
VIEW_CHANNEL = 1 << 10
NOW = datetime.now(UTC)
LIMITS = StmLimits()


def channel(channel_id: str, *, deny: int = 0, allow: int = 0, kind: int = 0, parent: str | None = None):
    overwrites = [{"id": GUILD, "type": 0, "allow": str(allow), "deny": str(deny)}] if deny or allow else []
    data = {"id": channel_id, "guild_id": GUILD, "type": kind, "name": f"chan-{channel_id}"}
    if parent:
        data["parent_id"] = parent
    return data | {"permission_overwrites": overwrites}


@pytest.fixture
def store(table) -> StmStore:
    return StmStore(table)


def remember(store: StmStore, channel_id: str, text: str, **identity_fields) -> None:
    stm_rows.remember(
        store, GUILD, channel_id, text, NOW, described_at=NOW - timedelta(seconds=1), **identity_fields
    )


def seen_from(store: StmStore, channel_id: str, parent: str | None = None) -> str:
    return stm_rows.seen_from(store, GUILD, channel_id, NOW, parent)


def row(store: StmStore, channel_id: str):
    return store.get(StmAddress.of(GUILD, USER, channel_id, "kioku"))


def test_a_channel_made_private_is_recalled_nowhere_else_at_once(relay_event, store):
    # Given a public channel and its thread with memory that #other recalls
    remember(store, SECRET, "the vault code is okapi")
    remember(store, THREAD, "the thread agrees", parent=SECRET)
    assert "okapi" in seen_from(store, OTHER) and "thread agrees" in seen_from(store, OTHER)
    # When an admin makes the channel private (Discord sends CHANNEL_UPDATE with @everyone denied)
    status = relay_event("CHANNEL_UPDATE", channel(SECRET, deny=VIEW_CHANNEL))
    # Then the channel and its thread are re-stamped private, and #other sees neither
    assert status == 204
    assert row(store, SECRET).private is True and row(store, THREAD).private is True
    assert seen_from(store, OTHER) == ""
    # while the thread still recalls its own channel
    assert "okapi" in seen_from(store, THREAD, parent=SECRET)


def test_a_channel_made_public_again_is_recalled_again(relay_event, store):
    remember(store, SECRET, "plans for the party", private=True)
    assert seen_from(store, OTHER) == ""
    assert relay_event("CHANNEL_UPDATE", channel(SECRET, allow=VIEW_CHANNEL)) == 204
    assert "party" in seen_from(store, OTHER)


def test_a_late_channel_update_never_stamps_an_older_privacy_over_a_newer_look(relay_event, store):
    # Given a channel a turn has just described as private (the update that made it private was lost)
    remember(store, SECRET, "the vault code is okapi", private=True)
    # When an older update, received by the relay before that look and held in its buffer, says public
    earlier = (NOW - timedelta(minutes=5)).isoformat()
    assert relay_event("CHANNEL_UPDATE", channel(SECRET, allow=VIEW_CHANNEL), received_at=earlier) == 204
    # Then the channel stays private: #other recalls nothing of it
    assert row(store, SECRET).private is True
    assert seen_from(store, OTHER) == ""
    # while an update received after the look applies
    assert (
        relay_event("CHANNEL_UPDATE", channel(SECRET, allow=VIEW_CHANNEL), received_at=NOW.isoformat()) == 204
    )
    assert "okapi" in seen_from(store, OTHER)


def test_a_channel_update_with_a_received_at_that_is_not_a_time_is_malformed(relay_event, store):
    remember(store, SECRET, "plans", private=True)
    assert relay_event("CHANNEL_UPDATE", channel(SECRET, allow=VIEW_CHANNEL), received_at="yesterday") == 400
    assert row(store, SECRET).private is True


def test_an_update_that_cannot_tell_the_privacy_changes_only_the_name(relay_event, store):
    # Given a private channel's memory
    remember(store, SECRET, "still secret", private=True)
    # When it is renamed and its @everyone overwrite no longer decides (the role's permissions would)
    assert relay_event("CHANNEL_UPDATE", channel(SECRET)) == 204
    # Then it stays private until a turn there describes it in full
    assert row(store, SECRET).private is True
    assert row(store, SECRET).channel_name == f"chan-{SECRET}"
    assert seen_from(store, OTHER) == ""


def test_a_private_thread_stays_private_whatever_its_parent_becomes(relay_event, store):
    remember(store, PRIVATE_THREAD, "just us two", parent=GENERAL, private=True, private_thread=True)
    assert relay_event("CHANNEL_UPDATE", channel(GENERAL, allow=VIEW_CHANNEL)) == 204
    assert row(store, PRIVATE_THREAD).private is True
    assert relay_event("THREAD_UPDATE", channel(PRIVATE_THREAD, kind=12, parent=GENERAL)) == 204
    assert "just us two" not in seen_from(store, OTHER)


def test_deleting_a_channel_deletes_its_and_its_threads_memory_only(relay_event, store):
    remember(store, SECRET, "in secret")
    remember(store, THREAD, "in its thread", parent=SECRET)
    remember(store, GENERAL, "in general")
    assert relay_event("CHANNEL_DELETE", channel(SECRET)) == 204
    assert row(store, SECRET) is None and row(store, THREAD) is None
    assert row(store, GENERAL) is not None


def test_deleting_a_channel_deletes_its_persona_webhook_and_its_token(relay_event, table):
    from kioku.adapters.dynamodb.webhook_store import WebhookStore
    from kioku.domain.personas import ChannelWebhook

    # Given the persona webhooks kioku keeps for two channels
    webhooks = WebhookStore(table)
    for channel_id in (SECRET, GENERAL):
        webhooks.keep(GUILD, channel_id, ChannelWebhook(f"7{channel_id}", "tok-en"))
    # When one channel is deleted
    assert relay_event("CHANNEL_DELETE", channel(SECRET)) == 204
    # Then its webhook item (and token) went with it; the other channel's stays
    assert webhooks.get(GUILD, SECRET) is None
    assert webhooks.channels(GUILD) == [GENERAL]


def test_deleting_a_thread_deletes_only_the_thread(relay_event, store):
    remember(store, SECRET, "in secret")
    remember(store, THREAD, "in its thread", parent=SECRET)
    # THREAD_DELETE's d carries only id, guild_id, parent_id and type
    assert (
        relay_event("THREAD_DELETE", {"id": THREAD, "guild_id": GUILD, "parent_id": SECRET, "type": 11})
        == 204
    )
    assert row(store, THREAD) is None and row(store, SECRET) is not None


@pytest.mark.parametrize(
    "data",
    [
        {"id": "not-a-snowflake", "guild_id": GUILD, "type": 0},
        {"id": SECRET, "guild_id": GUILD, "type": "0"},
        {"id": SECRET, "guild_id": GUILD, "type": 0, "permission_overwrites": "deny everything"},
        {"id": SECRET, "guild_id": GUILD, "type": 0, "permission_overwrites": [{"id": GUILD, "deny": 1024}]},
        {"id": SECRET, "guild_id": GUILD, "type": 0, "name": "x" * 101},
        "CHANNEL",
    ],
)
def test_a_malformed_channel_event_is_400_and_changes_nothing(relay_event, store, data):
    remember(store, SECRET, "kept")
    before = row(store, SECRET)
    assert relay_event("CHANNEL_DELETE", data) == 400
    assert row(store, SECRET) == before


def test_an_event_of_a_channel_outside_any_guild_changes_nothing(relay_event, store):
    remember(store, SECRET, "kept")
    assert relay_event("CHANNEL_DELETE", {"id": SECRET, "type": 1}) == 204
    assert row(store, SECRET) is not None


def test_a_capture_that_looked_before_the_channel_turned_private_cannot_make_it_public_again(
    relay_event, store
):
    # Given a turn that described the channel as public, then the channel turned private
    remember(store, SECRET, "first")
    looked = datetime.now(UTC)
    relay_event("CHANNEL_UPDATE", channel(SECRET, deny=VIEW_CHANNEL))
    # When the turn's capture lands afterwards with its public description
    stale = identity(SECRET, guild_id=GUILD, private=False, described_at=looked - timedelta(seconds=1))
    said = CrudeMessage("Alice", USER, CrudeRole.USER, "second", NOW, "x2")
    store.capture(stale, row(store, SECRET), [said], NOW, LIMITS)
    # Then the row keeps the newer, private description, and nothing of it is recalled elsewhere
    assert row(store, SECRET).private is True
    assert seen_from(store, OTHER) == ""
    # And a turn that looked later describes it again
    fresh = identity(
        SECRET, guild_id=GUILD, private=False, described_at=datetime.now(UTC) + timedelta(seconds=1)
    )
    store.capture(
        fresh, row(store, SECRET), [CrudeMessage("Alice", USER, CrudeRole.USER, "t", NOW, "x3")], NOW, LIMITS
    )
    assert row(store, SECRET).private is False


def test_the_summary_tool_never_changes_a_rows_privacy(store):
    remember(store, SECRET, "first", private=True)
    store.write_memory(
        identity(SECRET, guild_id=GUILD, private=False), StmUpdate(summary="sum"), (), NOW, LIMITS.retention
    )
    assert row(store, SECRET).private is True


def test_bypass_and_public_overrides_read_the_private_partition(store, table):
    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.domain.privacy import PrivacyMode

    remember(store, SECRET, "private words", private=True)
    assert seen_from(store, OTHER) == ""
    ConfigStore(table).save_server_config(
        ServerConfig(guild_id=GUILD, channel_privacy={SECRET: PrivacyMode.PUBLIC})
    )
    assert "private words" in seen_from(store, OTHER)
