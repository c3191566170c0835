"""What the memory service needs from outside: the memory store and a guild member search."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from kioku.discord.models import Member
from kioku.domain.ltm.memory import (
    ExpiryChange,
    Memory,
    MemoryDraft,
    PersonalLedger,
    PersonalTarget,
    SaveOutcome,
    ScopeKind,
)
from kioku.domain.privacy import Origin, Place, PrivacyPolicy


class MemberDirectory(Protocol):
    """Who belongs to a guild, as Discord answers: what target resolution (``targets``) asks when
    the conversation alone cannot tell. Both raise ``MemberSearchFailed`` when Discord cannot answer."""

    def search(self, guild_id: str, query: str) -> list[Member]:
        """Guild members whose names start with ``query``, each with its ``user`` and ``nick``;
        none where no search is possible."""
        ...

    def member(self, guild_id: str, user_id: str) -> Member | None:
        """The guild member, or None for someone not in the guild."""
        ...


class MemberSearchFailed(Exception):
    """The guild member search could not answer (Discord unreachable, no permission)."""


class EmbeddingsUnavailable(Exception):
    """The embeddings endpoint could not answer (down, slow, refusing, or answering nonsense)."""


class EmbedderAbsent(EmbeddingsUnavailable):
    """There is no embedder to ask (the embedded model's layer or files are missing): said once, when
    found, and quietly after."""


class Embedder(Protocol):
    """Texts to quantised embeddings (``kioku.domain.ltm.vectors``), one per text, in order.

    Raises ``EmbeddingsUnavailable`` when it cannot."""

    def embed(self, texts: Sequence[str]) -> list[bytes]: ...


@dataclass(frozen=True, slots=True)
class RecallSet:
    """The memories a turn may show: its server's, and those of participants who allow them."""

    server: tuple[Memory, ...] = ()
    personal: Mapping[str, tuple[Memory, ...]] = field(default_factory=dict)


class MemoryStore(Protocol):
    """Limits and duplicates are the store's to enforce, atomically with each write.

    Every method raises ``MemoryStoreFailed`` when the store cannot answer.
    """

    def personal_target(self, user_id: str) -> PersonalTarget:
        """The user's privacy level and personal-memory counts, read together."""
        ...

    def create(
        self,
        draft: MemoryDraft,
        *,
        limit: int,
        ledger: PersonalLedger | None = None,
        policy: PrivacyPolicy | None = None,
    ) -> SaveOutcome:
        """Save ``draft`` unless its scope holds the same fact in a memory that refuses it under
        ``policy`` (``refuses_as_duplicate``); raises ``MemoryLimitReached``,
        ``SpeakerForgotten`` (``draft.said_at``) and, for personal memories,
        ``TargetPrivacyRestricted``. ``ledger`` is the counts already read."""
        ...

    def find(self, kind: ScopeKind, owner_id: str, memory_id: str) -> Memory | None: ...

    def replace_content(
        self,
        memory: Memory,
        content: str,
        now: datetime,
        *,
        origin: Origin | None = None,
        author_id: str | None = None,
        said_at: datetime | None = None,
        subject_id: str | None = None,
        embedding: bytes | None = None,
        policy: PrivacyPolicy | None = None,
        changed_by: str | None = None,
        expiry: ExpiryChange | None = None,
        also: Sequence[Any] = (),
    ) -> Memory:
        """``memory`` with new content (and ``embedding``, its embedding, if any; given ``expiry``,
        a new expiry or none), the text it
        replaces kept in its history (``Memory.edited``), changed by ``changed_by`` (else
        ``author_id``), in the same write; written at
        ``origin`` by ``author_id`` about ``subject_id`` when given; raises ``DuplicateMemory`` (only
        for a memory that refuses it under ``policy``),
        ``MemoryNotFound`` (changed) or, given ``said_at``, ``SpeakerForgotten``. ``also``: as
        for ``delete``."""
        ...

    def delete(self, memory: Memory, *, also: Sequence[Any] = ()) -> None:
        """Remove ``memory`` and give back its slot; raises ``MemoryNotFound`` when it changed.
        ``also``: the caller's writes to make in the same transaction (a turn's outbox, keeping the
        notice the change owes); when one of their conditions fails, nothing is written and
        ``SpeakerForgotten`` is raised (their conditions are forget-all's, and a turn's claim on
        its outbox)."""
        ...

    def recall(
        self,
        guild_id: str | None,
        lineage: int,
        user_ids: Sequence[str],
        *,
        place: Place,
        policy: PrivacyPolicy,
        now: datetime | None = None,
    ) -> RecallSet:
        """The server's memories of ``lineage``, and the personal ones (``lineage`` and global) of the
        users in ``user_ids`` whose privacy level allows them, as far as a turn at ``place`` may see
        them, without those expired by ``now`` (by default the clock's)."""
        ...

    def last_shown(self, user_ids: Sequence[str]) -> Mapping[str, datetime]:
        """When each memory (``why.memory_key_text``) was last shown to a turn, as far as the use
        notes of ``user_ids`` tell (kept 16 days)."""
        ...
