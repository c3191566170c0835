"""Short-term memory row identities for the store-level tests."""

from __future__ import annotations

from kioku.adapters.dynamodb.stm_store import StmRowIdentity
from kioku.domain.stm.entries import StmAddress
from tests.unit.stm_builders import CHANNEL, SERVER, USER


def identity(
    channel_id: str = CHANNEL,
    *,
    guild_id: str | None = SERVER,
    persona: str = "kioku",
    lineage=1,
    private: bool = False,
    parent: str | None = None,
    described_at=None,
    private_thread: bool = False,
) -> StmRowIdentity:
    """A row's identity; public unless ``private``."""
    return StmRowIdentity(
        address=StmAddress.of(guild_id, USER, channel_id, persona),
        lineage_id=lineage,
        parent_channel_id=parent,
        private=private,
        private_thread=private_thread,
        described_at=described_at,
    )


def remember(store, guild_id: str, channel_id: str, text: str, now, **identity_fields) -> None:
    """Alice said ``text`` in ``channel_id`` a minute before ``now``, captured as a turn would."""
    from datetime import timedelta

    from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmLimits

    said = CrudeMessage("Alice", USER, CrudeRole.USER, text, now - timedelta(minutes=1), f"{channel_id}1")
    store.capture(identity(channel_id, guild_id=guild_id, **identity_fields), None, [said], now, StmLimits())


def seen_from(store, guild_id: str, channel_id: str, now, parent: str | None = None) -> str:
    """Every raw line a turn in ``channel_id`` is given from other channels' rows."""
    from datetime import timedelta

    loaded = store.load_turn(
        guild_id=guild_id,
        channel_id=channel_id,
        user_id=USER,
        parent_channel_id=parent,
        persona_hint="kioku",
        active_since=now - timedelta(days=1),
        other_limit=10,
    )
    return " ".join(message.text for entry in loaded.state.others for message in entry.crude)
