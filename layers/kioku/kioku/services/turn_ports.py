"""What a turn needs from outside, as the turn and its delivery call it: Discord, the guild
directory, the turn's own items, the short-term memory row's writes and the rate ledger.

The composition root hands the turn the adapters (``DiscordRest``, ``GuildDirectory``,
``TurnRepository``, ``StmStore``, ``RateLedger``); ``tests/unit/test_turn_service.py`` hands it
in-memory fakes. The model (``ChatModel``), the long-term memory store (``MemoryStore``) and the
embeddings endpoint (``Embedder``) have their ports already.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from kioku.discord.guild import Channel, Role
from kioku.discord.models import Member, Message
from kioku.domain.forgetting import Said
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.models import StmCategory
from kioku.domain.personas import ChannelWebhook
from kioku.domain.privacy import ChannelDescription, Place, PrivacyPolicy
from kioku.domain.stm.capture import StmRowIdentity, TurnCapture
from kioku.domain.stm.update_tool import StmUpdate
from kioku.domain.turn import Outbox, RateTaken, TurnKey, TurnOutcome
from kioku.domain.turn_read import TurnMemoryQuery, TurnRead

_T = TypeVar("_T")


class DeliveryDiscord(Protocol):
    """What posting an outbox asks of Discord. Each call raises ``DiscordRefused`` when Discord
    refuses or cannot answer."""

    def get_channel_messages(
        self, channel_id: str, limit: int, *, before: str | None = None, after: str | None = None
    ) -> list[Message]:
        """Up to ``limit`` messages, newest first: the latest, or those ``before`` / ``after`` an id."""
        ...

    def create_message(
        self,
        channel_id: str,
        content: str,
        *,
        reply_to: str | None = None,
        embeds: list[dict[str, Any]] | None = None,
        nonce: str | None = None,
    ) -> dict[str, Any]:
        """The message posted (or the one a ``nonce`` already posted)."""
        ...

    def edit_original_response(
        self,
        application_id: str,
        interaction_token: str,
        content: str,
        embeds: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A deferred interaction response filled in."""
        ...

    def create_webhook(self, channel_id: str, name: str) -> dict[str, Any]:
        """A new webhook in the channel (its ``id`` and ``token``), for a persona's voice."""
        ...

    def execute_webhook(
        self,
        webhook_id: str,
        token: str,
        content: str,
        *,
        username: str,
        avatar_url: str | None = None,
        embeds: list[dict[str, Any]] | None = None,
        thread_id: str | None = None,
    ) -> dict[str, Any]:
        """The message posted through the webhook, as ``username``."""
        ...


class TurnDiscord(DeliveryDiscord, Protocol):
    """What a turn asks of Discord: its delivery's calls, the typing indicator, the channel and a
    member search for the memory tools."""

    def trigger_typing(self, channel_id: str) -> None: ...

    def get_channel(self, channel_id: str) -> Channel:
        """The channel: its name, type, overwrites and, for a thread, ``parent_id``."""
        ...

    def search_guild_members(self, guild_id: str, query: str, limit: int = 10) -> list[Member]: ...


class WebhookKeeper(Protocol):
    """Where the channel webhooks are kept (``WebhookStore``)."""

    def keep(
        self,
        guild_id: str,
        channel_id: str,
        webhook: ChannelWebhook,
        *,
        replacing: ChannelWebhook | None = None,
    ) -> ChannelWebhook:
        """The webhook now kept for the channel (another attempt's, if it kept one first)."""
        ...


class GuildLookup(Protocol):
    """What a turn asks about its guild (``GuildDirectory``)."""

    def describe_channel(self, guild_id: str, channel: Channel) -> ChannelDescription: ...

    def guild_roles(self, guild_id: str) -> tuple[Role, ...] | None: ...

    def channel_names(self, guild_id: str, place: Place, policy: PrivacyPolicy) -> dict[str, str]: ...

    def manages_server(self, guild_id: str, user_id: str, member: Member | None) -> bool: ...

    def member(self, guild_id: str, user_id: str) -> Member | None:
        """The member, None for someone not in the guild; raises ``DiscordRefused`` when Discord fails."""
        ...


class TurnStore(Protocol):
    """The turn's own items (``TurnRepository``): its one read, its outbox and its commit."""

    def read(
        self,
        key: TurnKey,
        memory: TurnMemoryQuery,
        *,
        recall_lineage: int,
        recall_people: Sequence[str] = (),
        webhook_of: tuple[str, str] | None = None,
        later: Sequence[str] = (),
    ) -> TurnRead:
        """``webhook_of`` (guild, channel): read that channel's persona webhook too; ``later``: the
        records and outboxes of these later turns (a burst's, by record id), ``TurnRead.later_done``."""
        ...

    def done(self, key: TurnKey) -> TurnOutcome | None: ...

    def recall(
        self,
        read: TurnRead,
        lineage: int,
        *,
        place: Place,
        policy: PrivacyPolicy,
        now: datetime | None = None,
    ) -> RecallSet:
        """Raises ``MemoryStoreFailed`` when the memories cannot be read; none expired by ``now``."""
        ...

    def keep(self, key: TurnKey, outbox: Outbox, now: datetime, taking_from: str | None = None) -> bool:
        """Put the outbox; False, nothing kept, if someone it answers or quotes forgot everything since;
        with a claim, raises ``TurnClaimed`` (another attempt, not ``taking_from``, holds the outbox)
        or ``TurnAlreadyRecorded`` (the turn is done), keeping nothing."""
        ...

    def write_announced(
        self,
        key: TurnKey,
        outbox: Outbox,
        now: datetime,
        write: Callable[[Sequence[dict[str, Any]]], _T],
        taking_from: str | None = None,
    ) -> tuple[_T, bool]:
        """What ``write`` returned, made with ``outbox`` kept in its transaction; False: nothing kept.
        With a claim, as ``keep``: ``TurnClaimed`` or ``TurnAlreadyRecorded``, nothing written."""
        ...

    def drop(self, key: TurnKey, outbox: Outbox) -> None: ...

    def record_posted(self, key: TurnKey, outbox: Outbox, taking_from: str | None = None) -> bool:
        """Note what ``outbox`` posted while it is kept and its claim's (or ``taking_from``'s):
        False once forget-all deleted it; raises ``TurnClaimed`` if another attempt took it over."""
        ...

    def wait_for(self, key: TurnKey, claim: str, waiter: str) -> None:
        """Mark the outbox ``claim`` holds as waited out by ``waiter`` (nothing if it changed)."""
        ...

    def commit(self, key: TurnKey, outcome: TurnOutcome, now: datetime, capture: TurnCapture | None) -> None:
        """Record the turn as done, drop its outbox and write ``capture``, together; raises
        ``TurnAlreadyRecorded``, ``SpeakerForgotten`` or ``TurnCommitFailed``, writing nothing."""
        ...


class ShortTermMemoryWrites(Protocol):
    """What the short-term memory tool writes (``StmStore``); raises ``SpeakerForgotten``,
    ``NewerMemoryExists`` or ``StoreFailed``, writing nothing."""

    def write_memory(
        self,
        identity: StmRowIdentity,
        update: StmUpdate,
        categories: Sequence[StmCategory],
        now: datetime,
        retention: timedelta,
        *,
        said: Said | None = None,
    ) -> None: ...


class TurnRates(Protocol):
    """Turns per person per minute (``RateLedger``); raises ``StoreFailed`` when it cannot count."""

    def take(self, user_id: str, turn_id: str, sent_at: datetime, limit: int) -> RateTaken:
        """The turn's number within its minute (None once past ``limit + 1``), and whether it was
        counted before."""
        ...
