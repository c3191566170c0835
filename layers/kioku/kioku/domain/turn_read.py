"""A turn's one read, as the turn asks for it and gets it back: what to read of short-term memory
(``TurnMemoryQuery``), the memory it found (``TurnMemoryLoad``) and the turn's own items beside it
(``TurnRead``: whether it is done, its outbox, its author's forget-all). The turn store
(``adapters/dynamodb/turn_repository.py``) reads it in one BatchGetItem; the turn's port
(``services/turn_ports.py``) and its fakes speak these types."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kioku.domain.models import ServerConfig, UserProfile
from kioku.domain.personas import ChannelWebhook
from kioku.domain.stm.context import StmState
from kioku.domain.turn import Outbox, TurnOutcome


@dataclass(frozen=True, slots=True)
class TurnMemoryQuery:
    """What a turn's read of its short-term memory needs: where the turn is and who speaks, the persona
    whose row to guess (``persona_hint``), how far back other channels' rows count
    (``active_since``) and how many of them (``other_limit``), and since when a raw line counts as
    something to show (``crude_since``, by default ``active_since``)."""

    guild_id: str | None
    channel_id: str
    user_id: str
    parent_channel_id: str | None
    persona_hint: str
    active_since: datetime
    other_limit: int
    crude_since: datetime | None = None
    speaking: str | None = None
    """The persona the turn speaks as (None: the main one): its row, its lineage, its other rows."""


@dataclass(frozen=True, slots=True)
class TurnMemoryLoad:
    config: ServerConfig
    profile: UserProfile
    state: StmState
    extra: Mapping[Any, Any] = field(default_factory=dict)
    """The store's items of ``extra_keys`` that rode in the same BatchGetItem, by key: the store's
    own shapes, read back only by the store (the turn's record, outbox and memory books)."""
    persona_gone: bool = False
    """The persona the turn was to speak as is no longer in the configuration (removed)."""


@dataclass(frozen=True, slots=True)
class TurnRead:
    """The turn's one read: its memory (the short-term memory, the configuration and the profile),
    whether it is done, its outbox, when its author last asked to forget everything, and what its
    recall was read for (see ``TurnRepository.recall``)."""

    memory: TurnMemoryLoad
    done: TurnOutcome | None
    outbox: Outbox | None
    author_forgotten_at: datetime | None
    query: TurnMemoryQuery
    recall_lineage: int
    recall_people: tuple[str, ...]
    webhook: ChannelWebhook | None = None
    """The channel's persona webhook, when the read asked for it (an alter persona's turn)."""
    later_done: frozenset[str] = frozenset()
    """Of the later turns the read asked about (a burst's, by record id), those another turn answered
    or is answering: recorded done (but as covered by this turn: an attempt of it kept its answer),
    or keeping an outbox of their own."""
    later_marked: frozenset[str] = frozenset()
    """Of those later turns, the ones an earlier attempt of this turn marked covered when it kept its
    answer (``later_done`` leaves them out): what that answer covers, posted or not."""
