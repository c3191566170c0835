"""The live short-term memory row of a channel, its limits, and what of it is still alive."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

from kioku.domain.privacy import Origin, Place, PrivacyPolicy, may_recall
from kioku.domain.text import shorten

MAX_CRUDE_TEXT_CHARS: Final = 2000
MAX_SPEAKER_CHARS: Final = 100
MAX_ID_CHARS: Final = 32
# Every capture rewrites the crude list and DynamoDB bills an update on the whole item's size, so
# the list is kept small: 48 KB is 50 messages of ~900 ASCII characters. With up to 10 categories of
# 4,000 four-byte characters beside it, a row stays near 230 KB at worst, well under the 400 KB limit.
MAX_CRUDE_LIST_BYTES: Final = 48_000
_CRUDE_MESSAGE_OVERHEAD_BYTES: Final = 64


class CrudeRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True)
class CrudeMessage:
    """One raw line of a conversation, kept with the time it was sent (not the time it was stored)."""

    speaker: str
    user_id: str
    role: CrudeRole
    text: str
    ts: datetime
    message_id: str | None = None

    def bounded(self) -> CrudeMessage:
        """This message with every field cut to what a row may hold."""
        return CrudeMessage(
            speaker=shorten(self.speaker.strip() or "unknown", MAX_SPEAKER_CHARS),
            user_id=self.user_id[:MAX_ID_CHARS],
            role=CrudeRole(self.role),
            text=shorten(self.text.strip(), MAX_CRUDE_TEXT_CHARS),
            ts=self.ts,
            message_id=self.message_id[:MAX_ID_CHARS] if self.message_id else None,
        )

    def stored_bytes(self) -> int:
        texts = (self.speaker, self.user_id, self.role.value, self.text, self.message_id or "")
        return sum(len(text.encode()) for text in texts) + _CRUDE_MESSAGE_OVERHEAD_BYTES


@dataclass(frozen=True, slots=True)
class StmAddress:
    """Which live row: a server's in a guild, a user's in a DM; always one channel and one persona."""

    channel_id: str
    persona_id: str
    guild_id: str | None = None
    user_id: str | None = None

    def __post_init__(self) -> None:
        if (self.guild_id is None) == (self.user_id is None):
            raise ValueError("an STM row belongs to exactly one of a server or a user")

    @property
    def is_dm(self) -> bool:
        return self.guild_id is None

    @classmethod
    def of(cls, guild_id: str | None, user_id: str, channel_id: str, persona_id: str) -> StmAddress:
        """The row a turn in ``channel_id`` reads and writes: the server's in a guild, else the user's."""
        if guild_id:
            return cls(channel_id=channel_id, persona_id=persona_id, guild_id=guild_id)
        return cls(channel_id=channel_id, persona_id=persona_id, user_id=user_id)


@dataclass(frozen=True, slots=True)
class StmEntry:
    """One live row as stored; nothing here is filtered for expiry (see ``live_*``)."""

    address: StmAddress
    lineage_id: int
    last_updated: datetime | None = None
    parent_channel_id: str | None = None
    channel_name: str | None = None
    summary: str | None = None
    summary_updated_at: datetime | None = None
    categories: Mapping[str, str] = field(default_factory=dict)
    category_labels: tuple[tuple[str, str], ...] = ()
    categories_updated_at: datetime | None = None
    crude: tuple[CrudeMessage, ...] = ()
    turns_since_refresh: int = 0
    version: int = 0
    private: bool | None = None
    """Discord's privacy of the channel when it was last described; None (never described) is private."""
    private_thread: bool = False
    described_at: datetime | None = None

    @property
    def channel_id(self) -> str:
        return self.address.channel_id

    @property
    def origin(self) -> Origin:
        if self.address.is_dm:
            return Origin.direct_message(self.channel_id)
        return Origin(
            guild_id=self.address.guild_id,
            channel_id=self.channel_id,
            parent_channel_id=self.parent_channel_id,
            private=self.private is not False,
            # a row never described does not follow its parent's overrides either
            private_thread=self.private_thread or self.private is None,
        )


def may_recall_row(
    entry: StmEntry, place: Place, policy: PrivacyPolicy, *, user_id: str, cross_server_opt_in: bool
) -> bool:
    """Whether a turn of ``user_id`` at ``place`` may be shown ``entry``: a server's row under the
    channel rules of ``kioku.domain.privacy``; a user's DM row only to that user, in their DMs or,
    when they opted in to cross-server memory, in a server."""
    if entry.address.is_dm:
        return entry.address.user_id == user_id and (place.guild_id is None or cross_server_opt_in)
    return may_recall(entry.origin, place, policy)


@dataclass(frozen=True, slots=True)
class StmLimits:
    """The seed's environment limits, as the domain uses them."""

    default_crude_message_count: int = 6
    max_other_channels: int = 3
    crude_ttl: timedelta = timedelta(hours=12)
    summary_ttl: timedelta = timedelta(hours=24)
    max_summary_length: int = 1500
    max_messages_per_channel: int = 10
    max_categories: int = 5
    retention: timedelta = timedelta(days=90)
    fresh_window: timedelta = timedelta(minutes=60)
    fresh_injection_depth: int = 2

    @classmethod
    def from_settings(cls, settings: Any) -> StmLimits:
        """Limits from a ``kioku.config.Settings`` (read by attribute, so the domain needs no pydantic)."""
        return cls(
            default_crude_message_count=settings.SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT,
            max_other_channels=settings.SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS,
            crude_ttl=timedelta(hours=settings.SHORT_TERM_MEMORY_TTL_HOURS),
            summary_ttl=timedelta(hours=settings.SHORT_TERM_MEMORY_SUMMARY_TTL_HOURS),
            max_summary_length=settings.SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH,
            max_messages_per_channel=settings.SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL,
            max_categories=settings.STM_MAX_CATEGORIES,
            retention=timedelta(days=settings.STM_JANITOR_RETENTION_DAYS),
            fresh_window=timedelta(minutes=settings.STM_FRESH_WINDOW_MINUTES),
            fresh_injection_depth=settings.STM_FRESH_INJECTION_DEPTH,
        )


def live_crude(entry: StmEntry, now: datetime, limits: StmLimits) -> tuple[CrudeMessage, ...]:
    """Raw lines younger than ``SHORT_TERM_MEMORY_TTL_HOURS``: they expire."""
    cutoff = now - limits.crude_ttl
    return tuple(message for message in entry.crude if message.ts > cutoff)


def live_summary(entry: StmEntry) -> str | None:
    """The summary, however old: seed 000's summary TTL is the lifetime of a cache in front of the
    durable row, so a summary (an admin's hand-written one too) lasts until the janitor removes the
    row; its age only decides where it is placed (the freshness override)."""
    return entry.summary or None


def live_categories(entry: StmEntry) -> Mapping[str, str]:
    """The non-empty category sections, however old (as ``live_summary``)."""
    return {slug: text for slug, text in entry.categories.items() if text}


def has_live_content(entry: StmEntry, crude_since: datetime) -> bool:
    """Whether ``entry`` holds anything to show: a summary, a section, or a raw line sent after
    ``crude_since`` (a row last updated before it can hold none)."""
    recent = entry.last_updated is not None and entry.last_updated > crude_since
    return bool(live_summary(entry) or live_categories(entry) or (recent and entry.crude))


def merge_crude(
    existing: Iterable[CrudeMessage], new: Iterable[CrudeMessage], now: datetime, limits: StmLimits
) -> tuple[CrudeMessage, ...]:
    """The crude list after appending ``new``: deduplicated by message id, expired lines dropped,
    in send order, the newest ``max_messages_per_channel`` within the row's byte budget."""
    cutoff = now - limits.crude_ttl
    seen: set[str] = set()
    merged: list[CrudeMessage] = []
    for message in (*existing, *(m.bounded() for m in new)):
        if message.ts <= cutoff or (message.message_id and message.message_id in seen):
            continue
        if message.message_id:
            seen.add(message.message_id)
        merged.append(message)
    merged.sort(key=lambda message: message.ts)
    kept = merged[-limits.max_messages_per_channel :]
    return _within_budget(kept)


def _within_budget(messages: Sequence[CrudeMessage]) -> tuple[CrudeMessage, ...]:
    total = 0
    start = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        total += messages[index].stored_bytes()
        if total > MAX_CRUDE_LIST_BYTES:
            break
        start = index
    return tuple(messages[start:])
