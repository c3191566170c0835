"""Short-term memory row identities for the store-level tests, and the size DynamoDB gives an item."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kioku.domain.stm.capture import StmRowIdentity
from kioku.domain.stm.entries import StmAddress
from kioku.domain.turn_read import TurnMemoryQuery
from tests.unit.stm_builders import CHANNEL, SERVER, USER

MAX_ITEM_BYTES: Final = 400 * 1024


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


def turn_read(store, guild_id: str, channel_id: str, now, parent: str | None = None):
    """What a turn in ``channel_id`` reads of short-term memory (its row and other channels' rows)."""
    from datetime import timedelta

    return store.load_turn(
        TurnMemoryQuery(
            guild_id=guild_id,
            channel_id=channel_id,
            user_id=USER,
            parent_channel_id=parent,
            persona_hint="kioku",
            active_since=now - timedelta(days=1),
            other_limit=10,
        )
    )


def seen_from(store, guild_id: str, channel_id: str, now, parent: str | None = None) -> str:
    """Every raw line a turn in ``channel_id`` is given from other channels' rows."""
    loaded = turn_read(store, guild_id, channel_id, now, parent)
    return " ".join(message.text for entry in loaded.state.others for message in entry.crude)


def item_size_bytes(item: Mapping[str, Any]) -> int:
    """DynamoDB's item size: attribute names plus values, strings in UTF-8 bytes."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int | float) or hasattr(value, "as_tuple"):
        return len(str(value).lstrip("-").replace(".", "")) // 2 + 2
    if isinstance(value, Mapping):
        return 3 + sum(1 + len(str(k).encode()) + _value_size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return 3 + sum(1 + _value_size(v) for v in value)
    raise TypeError(f"unexpected attribute type {type(value).__name__}")
