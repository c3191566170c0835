"""Memory items, their scopes, the personal-limit ledger, and the errors a store may raise."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from kioku.domain.models import PrivacyLevel
from kioku.domain.privacy import (
    Origin,
    Place,
    PrivacyPolicy,
    effective_private,
    may_recall,
    may_recall_personal,
)
from kioku.domain.text import normalize_for_comparison

GLOBAL_LINEAGE: Final = 0
"""Personal memories in lineage 0 belong to the user whatever the persona; they count in every lineage."""

NO_AUTHOR: Final = ""
"""The author of a server memory whose author asked kioku to forget them: it stays, linked to nobody."""

MAX_MEMORY_VERSIONS: Final = 10
"""Earlier texts a memory keeps as its history: the newest ten, so its item stays far below
DynamoDB's 400 KB (ten of ``MAX_MEMORY_LENGTH`` characters at four bytes each is 40 KB)."""

MEMORY_ID_DIGITS: Final = 5
_MEMORY_ID_LOW: Final = 10 ** (MEMORY_ID_DIGITS - 1)
_MEMORY_ID_SPAN: Final = 9 * _MEMORY_ID_LOW


class ScopeKind(StrEnum):
    SERVER = "server"
    PERSONAL = "personal"


class MemoryStatus(StrEnum):
    """A server memory saved by a non-manager on a server that reviews memories waits as ``pending``:
    counted against the limit, never recalled, until a manager approves it."""

    ACTIVE = "active"
    PENDING = "pending"


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """Where a memory lives: a server's or a user's memories within one persona lineage."""

    kind: ScopeKind
    owner_id: str
    lineage: int

    @classmethod
    def server(cls, guild_id: str, lineage: int) -> MemoryScope:
        return cls(ScopeKind.SERVER, guild_id, lineage)

    @classmethod
    def personal(cls, user_id: str, lineage: int) -> MemoryScope:
        return cls(ScopeKind.PERSONAL, user_id, lineage)


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A memory about to be saved; the store gives it its id.

    ``author_id`` is the speaker whose turn saved it, ``origin`` where that turn was, ``subject_id``
    the person the fact is about (a personal memory's owner; for a server memory, the speaker or the
    bridged user it names), ``said_at`` when the words it comes from were sent: the save is refused
    if its author, or a personal memory's owner, asked to forget everything since.
    """

    scope: MemoryScope
    content: str
    author_id: str
    created_at: datetime
    origin: Origin = field(default_factory=Origin.unknown)
    subject_id: str | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    said_at: datetime | None = None
    embedding: bytes | None = field(default=None, repr=False)
    """The content's quantised embedding (``vectors``), when embeddings are on and answered."""
    turn_id: str | None = None
    """The turn whose tool saves it: a retry of that turn (its first attempt died after the save)
    knows the save as its own, and owes its notice again."""
    expires_at: datetime | None = None
    """When the memory stops being true (a plan, a passing state); None: it does not expire."""

    @property
    def duplicate_domain(self) -> str:
        return duplicate_domain(self.scope, self.author_id, self.origin)

    def said(self, memory_id: str = "") -> SaidFact:
        return SaidFact(memory_id, self.origin, self.author_id, self.status)

    def saved_as(self, memory_id: str) -> Memory:
        return Memory(
            self.scope,
            memory_id,
            self.content,
            self.author_id,
            self.created_at,
            self.created_at,
            origin=self.origin,
            subject_id=self.subject_id,
            status=self.status,
            embedding=self.embedding,
            expires_at=self.expires_at,
        )


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """A text a memory said before an edit: said from ``since`` until ``until``, written by
    ``author_id``, replaced by ``changed_by``."""

    content: str
    since: datetime
    until: datetime
    author_id: str
    changed_by: str
    expires_at: datetime | None = None
    """When the memory was to expire while it said this (None: it was not to)."""


@dataclass(frozen=True, slots=True)
class ExpiryChange:
    """An edit's new expiry: ``expires_at``, or None to clear it (no change: no ``ExpiryChange``)."""

    expires_at: datetime | None

    @classmethod
    def in_days(cls, now: datetime, days: int) -> ExpiryChange:
        """``days`` from ``now``; 0 clears the expiry."""
        return cls(expiry_after(now, days) if days else None)


@dataclass(frozen=True, slots=True)
class Memory:
    scope: MemoryScope
    memory_id: str
    content: str
    author_id: str
    created_at: datetime
    updated_at: datetime
    origin: Origin = field(default_factory=Origin.unknown)
    subject_id: str | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    book_shard: int = field(default=0, compare=False)
    """Which item of its scope's recall book holds it (the store's bookkeeping)."""
    embedding: bytes | None = field(default=None, compare=False, repr=False)
    """Its content's quantised embedding (``vectors``); None when embeddings were off or failed."""
    review_tag: str | None = field(default=None, compare=False, repr=False)
    """The random tag its review buttons carry while it awaits review (never anything of its text)."""
    holds_guard: bool = field(default=True, compare=False)
    """Whether its duplicate guard is its own: a save the guard would have refused, were this memory
    recalled wherever that save is, takes the guard over (the store's bookkeeping)."""
    expires_at: datetime | None = None
    """After this time the memory is gone for recall, search, lists and limits, and the janitor
    deletes it (``expired``)."""
    history: tuple[MemoryVersion, ...] = field(default=(), compare=False, repr=False)
    """The texts it said before its edits, oldest first (the newest ``MAX_MEMORY_VERSIONS``); read
    only from its own item, never from the book recall reads."""
    changes: int = field(default=0, compare=False)
    """How many times its text was changed (its history keeps only the newest of them)."""
    last_shown: datetime | None = field(default=None, compare=False)
    """When a turn was last shown it, as far as the janitor has folded the turns' records into it
    (``ltm_usage``); read only from its own item."""

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def fingerprint(self) -> str:
        return content_fingerprint(self.content)

    @property
    def duplicate_domain(self) -> str:
        return duplicate_domain(self.scope, self.author_id, self.origin)

    def said(self) -> SaidFact:
        return SaidFact(self.memory_id, self.origin, self.author_id, self.status)

    @property
    def about(self) -> str | None:
        """Whom the memory is about: a personal memory's owner, or the person a server memory names."""
        return self.scope.owner_id if self.scope.kind is ScopeKind.PERSONAL else self.subject_id

    def written_by(self, user_id: str) -> bool:
        """Whether ``user_id`` wrote its text or one of its earlier texts, or changed one."""
        return self.author_id == user_id or any(
            user_id in (version.author_id, version.changed_by) for version in self.history
        )

    def edited(
        self, content: str, now: datetime, changed_by: str, expiry: ExpiryChange | None = None
    ) -> tuple[MemoryVersion, ...]:
        """Its history once ``changed_by`` replaces its text with ``content`` (and its expiry, given
        ``expiry``) at ``now``: the text it says now kept with its expiry, within the bound; the same
        text and expiry again keep nothing (a retried edit)."""
        same_expiry = expiry is None or expiry.expires_at == self.expires_at
        if content == self.content and same_expiry:
            return self.history
        version = MemoryVersion(
            self.content, self.updated_at, now, self.author_id, changed_by, expires_at=self.expires_at
        )
        return (*self.history, version)[-MAX_MEMORY_VERSIONS:]

    def rewritten(
        self,
        content: str,
        now: datetime,
        changed_by: str,
        *,
        origin: Origin | None = None,
        author_id: str | None = None,
        subject_id: str | None = None,
        embedding: bytes | None = None,
        expiry: ExpiryChange | None = None,
    ) -> Memory:
        """It saying ``content`` from ``now`` (written where, by whom, about whom given; its new
        expiry given ``expiry``; ``embedding`` the new text's), what it replaces kept (``edited``)."""
        history = self.edited(content, now, changed_by, expiry)
        return replace(
            self,
            history=history,
            changes=self.changes + (history != self.history),
            content=content,
            updated_at=now,
            origin=origin or self.origin,
            author_id=author_id or self.author_id,
            subject_id=subject_id or self.subject_id,
            embedding=embedding,
            expires_at=expiry.expires_at if expiry else self.expires_at,
        )

    def recallable_at(self, place: Place, policy: PrivacyPolicy) -> bool:
        """Whether a turn at ``place`` may be shown this memory (``kioku.domain.privacy``'s rules);
        a memory awaiting review is shown nowhere."""
        if self.status is not MemoryStatus.ACTIVE:
            return False
        if self.scope.kind is ScopeKind.SERVER:
            return self.scope.owner_id == place.guild_id and may_recall(self.origin, place, policy)
        return may_recall_personal(
            self.origin, subject_id=self.scope.owner_id, author_id=self.author_id, place=place, policy=policy
        )


def expiry_after(now: datetime, days: int | None) -> datetime | None:
    """When a memory saved at ``now`` to last ``days`` days expires (None: it lasts)."""
    return now + timedelta(days=days) if days is not None else None


def personal_lineages(lineage: int) -> tuple[int, ...]:
    """A person's memories shown with a persona of ``lineage``: its lineage's and their global ones."""
    return tuple(dict.fromkeys((lineage, GLOBAL_LINEAGE)))


@dataclass(frozen=True, slots=True)
class RecallReach:
    """The rule of what a turn's recall shows, and so of every view that says what recall would show:
    memories of the persona's ``lineage`` (a person's global ones too) that may be recalled at
    ``place`` (``Memory.recallable_at``); personal ones only of ``people``, the turn's recall
    subjects (``recall.recall_subjects``) whose privacy level allows them (``allows_personal_memories``)."""

    place: Place
    policy: PrivacyPolicy
    lineage: int
    people: frozenset[str] = frozenset()
    now: datetime | None = None
    """The turn's time: a memory expired by then is shown nowhere (None: expiry not checked)."""

    def shows(self, memory: Memory) -> bool:
        if self.now is not None and memory.expired(self.now):
            return False
        scope = memory.scope
        if scope.kind is ScopeKind.SERVER:
            held = scope.lineage == self.lineage
        else:
            held = scope.owner_id in self.people and scope.lineage in (self.lineage, GLOBAL_LINEAGE)
        return held and memory.recallable_at(self.place, self.policy)


@dataclass(frozen=True, slots=True)
class SaveOutcome:
    """The id the model can quote; ``created`` is False when the same fact was already saved (by
    another turn: a save of this very turn, by an attempt that died, counts as created)."""

    memory_id: str
    created: bool


@dataclass(frozen=True, slots=True)
class PersonalLedger:
    """How many personal memories a user holds per lineage, and the version that guards the counts."""

    counts: Mapping[int, int] = field(default_factory=dict)
    version: int = 0

    def used_by(self, lineage: int) -> int:
        """Memories counting toward the limit of ``lineage``: its own plus the user's global ones.

        A global memory counts in every lineage, so adding one must fit the fullest lineage.
        """
        globals_held = self.counts.get(GLOBAL_LINEAGE, 0)
        if lineage == GLOBAL_LINEAGE:
            others = (n for held, n in self.counts.items() if held != GLOBAL_LINEAGE)
            return globals_held + max(others, default=0)
        return globals_held + self.counts.get(lineage, 0)

    def has_room(self, lineage: int, limit: int) -> bool:
        return self.used_by(lineage) < limit


@dataclass(frozen=True, slots=True)
class PersonalTarget:
    """What a personal save needs to know about its user, read in one request."""

    user_id: str
    privacy_level: PrivacyLevel
    ledger: PersonalLedger


def duplicate_domain(scope: MemoryScope, author_id: str, origin: Origin) -> str:
    """Which memories of its scope a new one is checked against (``refuses_as_duplicate`` decides):
    those said where it is said, public or private as that place was when they were written.

    A fact said in a private channel is another memory than the same fact said in public, and what
    one person said about someone is another memory than what someone else said.
    """
    where = f"c{origin.channel_id}" if origin.private or origin.channel_id is None else None
    if scope.kind is ScopeKind.SERVER:
        return where or "s"
    if author_id == scope.owner_id:
        return where or "self"
    return f"a{author_id}:" + (where or f"g{origin.guild_id}")


@dataclass(frozen=True, slots=True)
class SaidFact:
    """What the duplicate check reads of a memory: where and by whom it was said, and its status."""

    memory_id: str
    origin: Origin
    author_id: str
    status: MemoryStatus = MemoryStatus.ACTIVE


@dataclass(frozen=True, slots=True)
class Reach:
    """Where a memory is recalled, the bypass aside: everywhere its subject takes part, every channel
    of one server (no ``channel_id``), or one channel and its threads (``parent_channel_id``: the
    channel's own parent, when it is a thread)."""

    guild_id: str | None = None
    channel_id: str | None = None
    parent_channel_id: str | None = None
    everywhere: bool = False

    def covers(self, other: Reach) -> bool:
        """Whether everywhere ``other`` is recalled, this is too."""
        if self.everywhere:
            return True
        if other.everywhere or self.guild_id != other.guild_id:
            return False
        if self.channel_id is None:
            return True
        return other.channel_id is not None and self.channel_id in (other.channel_id, other.parent_channel_id)


def reach(scope: MemoryScope, said: SaidFact, policy: PrivacyPolicy) -> Reach | None:
    """Where a memory of ``scope`` said as ``said`` is recalled under ``policy`` today (its
    server's overrides; not the bypass, which widens reading, never where a memory was said); None
    for nowhere. Another server's overrides are not known here, so what someone said about themself
    in public in another server reaches, for sure, this server (and no further)."""
    origin = said.origin
    if origin.channel_id is None:
        return None
    if scope.kind is ScopeKind.PERSONAL and said.author_id == scope.owner_id:
        if origin.guild_id is None:
            return None if origin.private else Reach(everywhere=True)
        if not effective_private(origin, policy):
            if origin.guild_id == policy.guild_id:
                return Reach(everywhere=True)
            return Reach(policy.guild_id) if policy.guild_id else None
    if origin.guild_id is None:
        return None
    if not effective_private(origin, policy):
        return Reach(origin.guild_id)
    return Reach(origin.guild_id, origin.channel_id, origin.parent_channel_id)


def refuses_as_duplicate(
    scope: MemoryScope, existing: SaidFact, new: SaidFact, policy: PrivacyPolicy
) -> bool:
    """Whether ``existing`` (a memory of ``scope`` saying the same text) makes saving ``new``
    needless: it is active and recalled, under today's privacy, wherever ``new`` would be. Only
    then may the save answer "already remembered as #id", so that answer never confirms a memory the
    saving turn cannot see (or one pending review)."""
    if existing.status is not MemoryStatus.ACTIVE or existing.memory_id == new.memory_id:
        return False
    held, wanted = reach(scope, existing, policy), reach(scope, new, policy)
    return held is not None and wanted is not None and held.covers(wanted)


def allows_personal_memories(level: PrivacyLevel) -> bool:
    """Only users who keep the default privacy level get personal memories saved or recalled."""
    return level == PrivacyLevel.NONE


def content_fingerprint(content: str) -> str:
    """The same fact written with other case, width or spacing has the same fingerprint."""
    return hashlib.sha256(normalize_for_comparison(content).encode()).hexdigest()


REVIEW_TAG_CHARS: Final = 12


def new_review_tag() -> str:
    """What a review button carries besides the memory's id: random, so that nothing of the text can
    be guessed from it; a new one whenever the memory changes, so a button shown before is refused."""
    return secrets.token_hex(REVIEW_TAG_CHARS // 2)


def new_memory_id() -> str:
    """A short random id the model can quote; the store retries when it is taken."""
    return str(_MEMORY_ID_LOW + secrets.randbelow(_MEMORY_ID_SPAN))


class LongTermMemoryError(Exception):
    """Base class of what a memory store reports instead of saving."""


class MemoryLimitReached(LongTermMemoryError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the memory limit of {limit} is reached")
        self.limit = limit


class DuplicateMemory(LongTermMemoryError):
    """Another memory of the same scope already says this; ``existing_id`` is that memory."""

    def __init__(self, existing_id: str) -> None:
        super().__init__(f"memory #{existing_id} already says this")
        self.existing_id = existing_id


class MemoryNotFound(LongTermMemoryError):
    """The memory does not exist, or changed since it was read."""


class TargetPrivacyRestricted(LongTermMemoryError):
    """The user's privacy level forbids personal memories (it may have changed since resolution)."""


class MemoryStoreFailed(LongTermMemoryError):
    """The store could not be reached, or kept losing races past its retry budget."""
