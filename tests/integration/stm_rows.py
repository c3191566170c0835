"""Short-term memory row identities for the store-level tests."""

from __future__ import annotations

from kioku.adapters.dynamodb.stm_store import StmRowIdentity
from kioku.domain.stm.entries import StmAddress
from tests.unit.stm_builders import CHANNEL, SERVER, USER


def identity(
    channel_id: str = CHANNEL,
    *,
    server_id: str | None = SERVER,
    persona: str = "kioku",
    lineage=1,
    private: bool = False,
    parent: str | None = None,
    described_at=None,
    private_thread: bool = False,
) -> StmRowIdentity:
    """A row's identity; public unless ``private``."""
    return StmRowIdentity(
        address=StmAddress.of(server_id, USER, channel_id, persona),
        lineage_id=lineage,
        parent_channel_id=parent,
        private=private,
        private_thread=private_thread,
        described_at=described_at,
    )
