"""A channel changed or went away: stored short-term memory follows at once.

A channel made private is re-stamped private (with its threads) before any later turn can recall
it elsewhere; a deleted channel's or thread's rows are deleted. Long-term memories keep the privacy
their channel had when they were written (see docs/privacy.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from kioku import clock as kioku_clock
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.domain.channel_events import ChannelEvent

logger = logging.getLogger(__name__)


def apply_channel_event(
    event: ChannelEvent, store: StmStore, clock: Callable[[], datetime] = kioku_clock.now
) -> int:
    """Apply ``event`` to the rows of its channel (and its threads); returns the rows changed."""
    if event.guild_id is None:
        return 0  # DM channels have no server rows; a DM row belongs to its user, not to a channel
    if event.kind.deletes:
        changed = event_count = store.delete_channel(event.guild_id, event.channel_id)
    else:
        changed = event_count = store.restamp_channel(
            event.guild_id, event.channel_id, private=event.private, name=event.name, now=clock()
        )
    logger.info(
        "%s for channel %s: %d short-term memory rows changed", event.kind, event.channel_id, event_count
    )
    return changed
