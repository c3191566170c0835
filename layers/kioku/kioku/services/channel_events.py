"""A channel changed or went away: stored short-term memory follows at once.

A channel made private is re-stamped private (with its threads) before any later turn can recall
it elsewhere; a deleted channel's or thread's rows are deleted. A guild's whole channel list
(``GUILD_CREATE``, on every new gateway session) repairs what lost events left behind: every row of
the guild is stamped as the list describes its channel, or deleted when its channel is gone. A
channel's persona webhook (its token a credential) goes with the channel, on either path.
Long-term memories keep the privacy their channel had when they were written (see docs/privacy.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

from kioku import clock as kioku_clock
from kioku.domain.channel_events import ChannelEvent, GuildSnapshot
from kioku.domain.privacy import ChannelDescription
from kioku.domain.stm.entries import StmEntry

MAX_RECONCILED_ROWS: Final = 20_000
"""Rows one GUILD_CREATE reconciles: 500 channels and 1,500 threads with memory, for ten personas."""

logger = logging.getLogger(__name__)


class ChannelRows(Protocol):
    """The short-term rows of a server's channels (``StmStore``)."""

    def restamp_channel(
        self, guild_id: str, channel_id: str, *, private: bool | None, name: str | None, now: datetime
    ) -> int: ...

    def delete_channel(self, guild_id: str, channel_id: str) -> int: ...

    def guild_rows(self, guild_id: str, *, max_rows: int) -> tuple[list[StmEntry], bool]:
        """The server's rows, at most ``max_rows``; False: there were more."""
        ...

    def restamp_described(self, entry: StmEntry, description: ChannelDescription, at: datetime) -> bool: ...

    def delete_described_before(self, entry: StmEntry, at: datetime) -> bool: ...


class ChannelWebhooks(Protocol):
    """The persona webhooks kept per channel (``WebhookStore``)."""

    def forget(self, guild_id: str, channel_id: str) -> None: ...

    def channels(self, guild_id: str) -> list[str]: ...


def apply_channel_event(
    event: ChannelEvent,
    store: ChannelRows,
    webhooks: ChannelWebhooks,
    clock: Callable[[], datetime] = kioku_clock.now,
) -> int:
    """Apply ``event`` to the rows of its channel (and its threads); returns the rows changed. A
    deleted channel's webhook item goes too (Discord deletes the webhook with the channel)."""
    if event.guild_id is None:
        return 0  # DM channels have no server rows; a DM row belongs to its user, not to a channel
    if event.kind.deletes:
        webhooks.forget(event.guild_id, event.channel_id)
        changed = event_count = store.delete_channel(event.guild_id, event.channel_id)
    else:
        now = clock()
        changed = event_count = store.restamp_channel(
            event.guild_id,
            event.channel_id,
            private=event.private,
            name=event.name,
            now=min(event.taken_at or now, now),
        )
    logger.info(
        "%s for channel %s: %d short-term memory rows changed", event.kind, event.channel_id, event_count
    )
    return changed


@dataclass(slots=True)
class GuildReconciliation:
    """What one ``GUILD_CREATE`` did: rows read, re-stamped, deleted; ``complete`` False when the
    guild held more than ``MAX_RECONCILED_ROWS`` and the rest were left as they were."""

    rows: int = 0
    restamped: int = 0
    deleted: int = 0
    complete: bool = True


def reconcile_guild(
    snapshot: GuildSnapshot,
    store: ChannelRows,
    webhooks: ChannelWebhooks,
    clock: Callable[[], datetime] = kioku_clock.now,
    *,
    max_rows: int = MAX_RECONCILED_ROWS,
) -> GuildReconciliation:
    """Stamp every stored row of ``snapshot``'s guild as the channel list describes it (see
    ``GuildSnapshot.fate_of``), as of when the relay received the list (never later than now), and
    delete the webhook items of channels no longer listed."""
    report = GuildReconciliation()
    if not snapshot.available:
        return report  # an outage: Discord lists no channels, which says nothing of them
    for channel_id in webhooks.channels(snapshot.guild_id):
        if snapshot.fate_of(channel_id, None, False).delete:
            webhooks.forget(snapshot.guild_id, channel_id)
    now = clock()
    at = min(snapshot.taken_at or now, now)
    rows, report.complete = store.guild_rows(snapshot.guild_id, max_rows=max_rows)
    report.rows = len(rows)
    for entry in rows:
        fate = snapshot.fate_of(entry.channel_id, entry.parent_channel_id, entry.private_thread)
        if fate.delete:
            report.deleted += store.delete_described_before(entry, at)
        elif fate.description is not None:
            report.restamped += store.restamp_described(entry, fate.description, at)
    if not report.complete:
        logger.warning(
            "guild %s holds more than %d short-term memory rows; the rest were not reconciled",
            snapshot.guild_id,
            max_rows,
        )
    logger.info(
        "GUILD_CREATE for guild %s: %d rows read, %d re-stamped, %d deleted",
        snapshot.guild_id,
        report.rows,
        report.restamped,
        report.deleted,
    )
    return report
