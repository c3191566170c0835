"""Long-term memories in the kioku table; limits and duplicates are enforced by each write's transaction.

One partition per owner (``keys.owner_pk``): a server's own; for a person, their own partition,
beside their profile. An owner's partition holds:

- the memories (``keys.memory_key``: lineage, content, fingerprint, author, times). Ids are unique
  per owner across lineages, so an id and its owner find a memory with one GetItem.
- the duplicate guards of each scope (``keys.guard_key``), holding the id of the memory they guard.
  A guard refuses a save only when its memory is active and recalled, under today's privacy,
  wherever the new one would be (``refuses_as_duplicate``); otherwise the save takes the guard over
  (on the condition that it still holds the memory read, in a state read) and marks that memory
  ``unguarded`` in the same transaction, so its later delete or rewrite knows it has no guard to
  give back. Two saves of a fact both would see still race for one guard: one of them is refused.
- the counter (``keys.counter_key``): ``n_{lineage}`` per lineage; a person's also carries a ``version``.
- on a person, a note per server whose memories name them (``keys.server_note_key``: saved by
  them, or about them), put by every write that names them, so forget-all and the export find a
  person's server memories without a scan; and a note per person they saved a personal memory
  about (``keys.author_note_key``), so forget-all finds the author link it must remove.
- the recall book of each scope, in shards (``keys.book_key``): one top-level attribute ``m{memory_id}`` per memory,
  ``{c: content, u: updated_at, a: author_id, o: origin, s: subject_id, v: embedding}``, and ``k``, the shard's
  number of entries; the origin (``guild/channel/parent/flags``) is what recall's privacy rules
  read, so a book entry without one (written before origins were kept) is never recalled. Recall
  reads books, which have fixed keys, so a turn fetches every shard in the BatchGetItem it already
  makes. Every write to a memory sets or removes its entry in the same transaction, so a book never
  drifts from its memories. Entries keep the whole content; a shard takes an entry only while
  ``k`` is below ``BookLayout.capacity`` (a condition of the save), so a shard full of the longest
  entries stays under DynamoDB's 400 KB item size, and a scope has as many shards as its limit needs.
  The room of an embedding (``v``, 256 bytes, binary) is kept in every entry whether embeddings are
  on or not, so turning them on or off never changes a scope's shards.

A server save is one transaction: ``ADD n_L 1`` if ``n_L < limit``, guard and memory put if absent.
A personal save must fit ``n_L + n_0 < limit``, a sum no condition expression can state, so it reads
the counter (with the profile, in one BatchGetItem) and writes on the condition that ``version`` is
unchanged. A lost race returns the current counter in the cancellation reason, so the retry needs no
read. Deletes only ever lower a count, so they skip the version and stay one transaction.

A save or rewrite given the time its words were said (``said_at``) also checks, in the same
transaction, the forget-all mark of its author and of a personal memory's owner (``forgetting.py``):
what was said before either of them forgot everything is never saved.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from boto3.dynamodb.types import Binary

from kioku.adapters.dynamodb.config_store import user_profile_from_item
from kioku.adapters.dynamodb.errors import ConditionFailed, StoreError, TransactionCancelled
from kioku.adapters.dynamodb.forgetting import op_not_forgotten_since
from kioku.adapters.dynamodb.keys import (
    ItemKey,
    author_note_key,
    author_note_range,
    book_key,
    counter_key,
    guard_key,
    index_by_key,
    memory_key,
    memory_range,
    noted_owner,
    noted_server,
    server_note_key,
    server_note_range,
    user_profile_key,
)
from kioku.adapters.dynamodb.table import Cursor, Item, KiokuTable
from kioku.clock import parse_time
from kioku.domain.forgetting import SpeakerForgotten
from kioku.domain.ltm.memory import (
    NO_AUTHOR,
    DuplicateMemory,
    ForgottenSinceSaid,
    Memory,
    MemoryDraft,
    MemoryLimitReached,
    MemoryNotFound,
    MemoryScope,
    MemoryStatus,
    MemoryStoreFailed,
    PersonalLedger,
    PersonalTarget,
    RecallReach,
    SaidFact,
    SaveOutcome,
    ScopeKind,
    TargetPrivacyRestricted,
    allows_personal_memories,
    content_fingerprint,
    new_memory_id,
    new_review_tag,
    personal_lineages,
    refuses_as_duplicate,
)
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.ltm.vectors import VECTOR_BYTES
from kioku.domain.models import PrivacyLevel
from kioku.domain.privacy import Origin, Place, PrivacyPolicy

MAX_ATTEMPTS: Final = 16
"""Each lost race means another save succeeded, so a caller loses at most as many races as there are slots."""
GUARD_TURN: Final = "turn_id"
"""On a duplicate guard: the turn whose save wrote it (see ``MemoryDraft.turn_id``)."""
_BACKOFF_SECONDS: Final = 0.01
_FORGOTTEN_PARTS: Final = frozenset({"author_not_forgotten", "subject_not_forgotten"})
_ALSO: Final = "also "
"""The name of a caller's part of a write's transaction (``also``), before its number."""
_ENTRY_PREFIX: Final = "m"
_SHARD_COUNT: Final = "k"
BOOK_ITEM_BYTES: Final = 380_000
"""What a book shard may take, under DynamoDB's 400 KB item limit."""
BOOK_ENTRY_OVERHEAD_BYTES: Final = 200 + 4 + VECTOR_BYTES
"""An entry besides its content: its name, time, author, origin and subject (at most ~170 bytes),
and its embedding (``v``: 256 bytes)."""
_MAX_UTF8_BYTES: Final = 4
_PENDING: Final = "p"
_ORIGIN_PRIVATE: Final = "p"
_ORIGIN_PRIVATE_THREAD: Final = "t"
_NAMES: Final = {
    "#version": "version",
    "#fingerprint": "fingerprint",
    "#memory_id": "memory_id",
    "#turn": GUARD_TURN,
    "#content": "content",
    "#updated_at": "updated_at",
    "#privacy": "privacy_level",
    "#status": "status",
    "#origin": "origin",
    "#author_id": "author_id",
    "#subject_id": "subject_id",
    "#embedding": "embedding",
    "#unguarded": "unguarded",
    "#review_tag": "review_tag",
}


def count_attribute(lineage: int) -> str:
    return f"n_{lineage}"


def entry_attribute(memory_id: str) -> str:
    return f"{_ENTRY_PREFIX}{memory_id}"


@dataclass(frozen=True, slots=True)
class GuardHolder:
    """The memory a guard names, and that memory (None when it is gone, or does not hold this guard)."""

    memory_id: str
    memory: Memory | None

    def refuses(self, scope: MemoryScope, new: SaidFact, policy: PrivacyPolicy) -> bool:
        return self.memory is not None and refuses_as_duplicate(scope, self.memory.said(), new, policy)


@dataclass(frozen=True, slots=True)
class BookLayout:
    """How many entries a book shard takes and how many shards a scope has, from the settings: a
    shard holds ``capacity`` entries of ``max_length`` 4-byte characters, and a scope's shards hold
    its whole limit. With the defaults (100 memories of up to 1,000 characters): 90 entries, 2 shards."""

    server_limit: int = 100
    personal_limit: int = 100
    max_length: int = 1000

    @classmethod
    def from_settings(cls, settings: Any) -> BookLayout:
        return cls(settings.MAX_SERVER_MEMORIES, settings.MAX_PERSONAL_MEMORIES, settings.MAX_MEMORY_LENGTH)

    @property
    def capacity(self) -> int:
        return max(1, BOOK_ITEM_BYTES // (_MAX_UTF8_BYTES * self.max_length + BOOK_ENTRY_OVERHEAD_BYTES))

    def shards(self, kind: ScopeKind) -> int:
        limit = self.server_limit if kind is ScopeKind.SERVER else self.personal_limit
        return math.ceil(limit / self.capacity)

    def keys(self, scope: MemoryScope) -> list[ItemKey]:
        return [book_key(scope, shard) for shard in range(self.shards(scope.kind))]


def book_entry(memory: Memory) -> Item:
    """A memory as its book holds it: all of it that recall shows."""
    entry: Item = {
        "c": memory.content,
        "u": memory.updated_at.isoformat(),
        "a": memory.author_id,
        "o": origin_text(memory.origin),
    }
    if memory.subject_id:
        entry["s"] = memory.subject_id
    if memory.status is MemoryStatus.PENDING:
        entry["st"] = _PENDING
    if memory.embedding:
        entry["v"] = memory.embedding
    return entry


def origin_text(origin: Origin) -> str:
    """``guild/channel/parent/flags``: compact, since every book entry carries one."""
    flags = (_ORIGIN_PRIVATE if origin.private else "") + (
        _ORIGIN_PRIVATE_THREAD if origin.private_thread else ""
    )
    return "/".join((origin.guild_id or "", origin.channel_id or "", origin.parent_channel_id or "", flags))


def origin_from_text(text: Any) -> Origin:
    """The origin written by ``origin_text``; anything else (no origin kept) is ``Origin.unknown()``."""
    parts = text.split("/") if isinstance(text, str) else []
    if len(parts) != 4 or not parts[1]:
        return Origin.unknown()
    guild, channel, parent, flags = parts
    return Origin(
        guild_id=guild or None,
        channel_id=channel,
        parent_channel_id=parent or None,
        private=_ORIGIN_PRIVATE in flags,
        private_thread=_ORIGIN_PRIVATE_THREAD in flags,
    )


class DynamoMemoryStore:
    """The ``MemoryStore`` port on DynamoDB; every data-layer error becomes a domain error."""

    def __init__(
        self,
        table: KiokuTable,
        *,
        new_id: Callable[[], str] = new_memory_id,
        sleep: Callable[[float], None] = time.sleep,
        layout: BookLayout | None = None,
    ) -> None:
        self._table = table
        self._new_id = new_id
        self._sleep = sleep
        self.layout = layout or BookLayout()

    def personal_target(self, user_id: str) -> PersonalTarget:
        profile_key, counts_key = user_profile_key(user_id), counter_key(ScopeKind.PERSONAL, user_id)
        items = index_by_key(self._guarded(self._table.batch_get, [profile_key, counts_key]))
        profile = user_profile_from_item(items.get(profile_key), user_id)
        return PersonalTarget(user_id, profile.privacy_level, ledger_from_item(items.get(counts_key)))

    def create(
        self,
        draft: MemoryDraft,
        *,
        limit: int,
        ledger: PersonalLedger | None = None,
        policy: PrivacyPolicy | None = None,
    ) -> SaveOutcome:
        """Save ``draft``, unless a memory recalled wherever it would be, under ``policy`` (the
        saving turn's server's; by default no overrides), already says it."""
        policy = policy or PrivacyPolicy(draft.origin.guild_id)
        personal = draft.scope.kind is ScopeKind.PERSONAL
        if personal and ledger is None:
            ledger = self.personal_target(draft.scope.owner_id).ledger
        fingerprint = content_fingerprint(draft.content)
        shards = self.layout.shards(draft.scope.kind)
        full: set[int] = set()
        taken: GuardHolder | None = None
        attempt = 0
        while attempt < MAX_ATTEMPTS:
            if ledger is not None and not ledger.has_room(draft.scope.lineage, limit):
                return self._existing_or_limit(draft, fingerprint, limit, policy)
            memory_id = self._new_id()
            shard = _shard_with_room(memory_id, shards, full)
            if shard is None:  # every shard full: the limit was raised past the layout's, or lowered
                raise MemoryLimitReached(limit)
            if taken is not None and taken.memory_id == memory_id:
                attempt += 1
                continue
            operations = self._create_operations(draft, memory_id, fingerprint, limit, ledger, shard, taken)
            try:
                self._guarded(self._table.transact_write, list(operations.values()))
                return SaveOutcome(memory_id, created=True)
            except TransactionCancelled as exc:
                reasons = dict(zip(operations, exc.reasons, strict=True))
                failed = {name for name, reason in reasons.items() if reason.condition_failed}
                old = {name: reason.old_item for name, reason in reasons.items()}
                if failed & _FORGOTTEN_PARTS:
                    raise ForgottenSinceSaid(
                        "its author or subject asked to forget everything since"
                    ) from exc
                if "privacy" in failed:
                    raise TargetPrivacyRestricted(
                        "the user's privacy level forbids personal memories"
                    ) from exc
                if "guard" in failed or "displaced" in failed:
                    own = _own_save(old["guard"], draft)
                    if own is not None:
                        return own
                    holder = self._holder_of(old["guard"], draft.scope, fingerprint, draft.duplicate_domain)
                    if holder is not None and holder.refuses(draft.scope, draft.said(memory_id), policy):
                        return SaveOutcome(holder.memory_id, created=False)
                    taken = holder  # the next attempt takes the guard over (or puts it, if it went)
                    attempt += 1
                    continue
                if "counter" in failed and not personal:
                    raise MemoryLimitReached(limit) from exc
                if "counter" in failed:
                    ledger = ledger_from_item(old["counter"])
                elif "book" in failed:
                    full.add(shard)  # not a race: the next attempt takes another shard
                    continue
                elif "memory" not in failed and not exc.conflicted:
                    raise MemoryStoreFailed(str(exc)) from exc
                self._backoff(attempt)
                attempt += 1
        raise MemoryStoreFailed(f"gave up saving after {MAX_ATTEMPTS} lost races")

    def find(self, kind: ScopeKind, owner_id: str, memory_id: str) -> Memory | None:
        item = self._guarded(self._table.get, memory_key(kind, owner_id, memory_id))
        return memory_from_item(item) if item else None

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
        also: Sequence[dict[str, Any]] = (),
    ) -> Memory:
        """``memory`` with new content; given ``origin``, ``author_id`` and ``subject_id`` (where, by
        whom and about whom the new text was written), it belongs there from now on, as new text
        would. Given ``said_at`` (when the new text was said), raises ``ForgottenSinceSaid`` if its
        author, or a personal memory's owner, asked to forget everything since. ``embedding`` is the
        new content's (None: the old one goes, it described the old text). Raises
        ``DuplicateMemory`` only for a memory recalled wherever the rewritten one would be, under
        ``policy``; otherwise it takes that memory's guard over. ``also``: as for ``delete`` (the
        rewrite's own refusals come first)."""
        policy = policy or PrivacyPolicy((origin or memory.origin).guild_id)
        taken: GuardHolder | None = None
        for attempt in range(MAX_ATTEMPTS):
            updated, operations = self._replace_operations(
                memory, content, now, origin, author_id, said_at, subject_id, embedding, taken
            )
            operations.update(_joined(operations, also))
            try:
                self._guarded(self._table.transact_write, list(operations.values()))
                return updated
            except TransactionCancelled as exc:
                reasons = dict(zip(operations, exc.reasons, strict=True))
                failed = {name for name, reason in reasons.items() if reason.condition_failed}
                if failed & _FORGOTTEN_PARTS:
                    raise ForgottenSinceSaid(
                        "its author or subject asked to forget everything since"
                    ) from exc
                if any(name.startswith(_ALSO) for name in failed):
                    raise SpeakerForgotten("someone the notice answers or quotes forgot everything") from exc
                if failed & {"memory", "old_guard"}:
                    memory = self._reread_unchanged(memory, exc)  # its guard may have been taken over
                elif failed & {"new_guard", "displaced"}:
                    holder = self._holder_of(
                        reasons["new_guard"].old_item,
                        memory.scope,
                        updated.fingerprint,
                        updated.duplicate_domain,
                    )
                    if holder is not None and holder.refuses(memory.scope, updated.said(), policy):
                        raise DuplicateMemory(holder.memory_id) from exc
                    taken = holder
                elif failed or not exc.conflicted:
                    raise MemoryStoreFailed(str(exc)) from exc
                else:
                    self._backoff(attempt)
        raise MemoryStoreFailed(f"gave up rewriting after {MAX_ATTEMPTS} lost races")

    def _replace_operations(
        self,
        memory: Memory,
        content: str,
        now: datetime,
        origin: Origin | None,
        author_id: str | None,
        said_at: datetime | None,
        subject_id: str | None,
        embedding: bytes | None,
        taken: GuardHolder | None,
    ) -> tuple[Memory, dict[str, dict[str, Any]]]:
        """The rewritten memory and the transaction that writes it (see ``replace_content``)."""
        updated = replace(
            memory,
            content=content,
            updated_at=now,
            origin=origin or memory.origin,
            author_id=author_id or memory.author_id,
            subject_id=subject_id or memory.subject_id,
            embedding=embedding,
        )
        moves = (updated.fingerprint, updated.duplicate_domain) != (
            memory.fingerprint,
            memory.duplicate_domain,
        )
        updated = replace(updated, holds_guard=updated.holds_guard or moves)
        subject = ", #subject_id = :subject_id" if updated.subject_id else ""
        updated = replace(updated, review_tag=None)  # a review button shown before is out of date
        removed = [
            *(() if embedding else ("#embedding",)),
            *(("#unguarded",) if moves else ()),
            "#review_tag",
        ]
        operations = {
            "memory": self._table.op_update(
                memory_key(memory.scope.kind, memory.scope.owner_id, memory.memory_id),
                "SET #content = :content, #fingerprint = :fingerprint, #updated_at = :updated_at, "
                f"#origin = :origin, #author_id = :author_id{subject}"
                + (", #embedding = :embedding" if embedding else "")
                + (f" REMOVE {', '.join(removed)}" if removed else ""),
                condition=f"#fingerprint = :read_fingerprint AND {_guard_state(memory)}",
                names=_names(
                    "#content",
                    "#fingerprint",
                    "#updated_at",
                    "#origin",
                    "#author_id",
                    "#embedding",
                    "#unguarded",
                    "#review_tag",
                    *(("#subject_id",) if subject else ()),
                ),
                values={
                    ":content": content,
                    ":fingerprint": updated.fingerprint,
                    ":updated_at": now.isoformat(),
                    ":origin": origin_text(updated.origin),
                    ":author_id": updated.author_id,
                    ":read_fingerprint": memory.fingerprint,
                    **({":subject_id": updated.subject_id} if subject else {}),
                    **({":embedding": embedding} if embedding else {}),
                },
            ),
            "book": self._write_entry(updated),
            **self._notes(updated),
        }
        if said_at is not None:
            operations.update(self._not_forgotten(updated.author_id, updated.scope, said_at))
        if moves:
            operations.update(self._release_guard(memory))
            guard = self._guard_operations(
                memory.scope, updated.fingerprint, updated.duplicate_domain, memory.memory_id, None, taken
            )
            operations["new_guard"] = guard.pop("guard")
            operations.update(guard)
        return updated, operations

    def _reread_unchanged(self, memory: Memory, exc: Exception) -> Memory:
        """``memory`` read again when only its guard changed since (taken over by another save);
        ``MemoryNotFound`` when it changed or went."""
        fresh = self.find(memory.scope.kind, memory.scope.owner_id, memory.memory_id)
        if fresh is None or (fresh.fingerprint, fresh.updated_at, fresh.status, fresh.holds_guard) == (
            memory.fingerprint,
            memory.updated_at,
            memory.status,
            memory.holds_guard,
        ):
            raise MemoryNotFound(f"memory #{memory.memory_id} changed or was deleted") from exc
        if (fresh.fingerprint, fresh.updated_at, fresh.status) != (
            memory.fingerprint,
            memory.updated_at,
            memory.status,
        ):
            raise MemoryNotFound(f"memory #{memory.memory_id} changed or was deleted") from exc
        return fresh

    def delete(self, memory: Memory, *, also: Sequence[dict[str, Any]] = ()) -> None:
        """Remove ``memory`` and give back its slot; raises ``MemoryNotFound`` when it changed.
        ``also`` (transaction operations: the outbox keeping the notice the deletion owes) are
        written in the same transaction; when one of their conditions fails, nothing is written and
        ``SpeakerForgotten`` is raised (their conditions are forget-all's)."""
        self._remove(memory, pending_only=False, also=also)

    def reject(self, memory: Memory) -> None:
        """A pending memory is deleted, giving back its slot; raises ``MemoryNotFound`` when it is no
        longer the pending memory that was read (approved, rejected or changed meanwhile)."""
        self._remove(memory, pending_only=True)

    def _remove(self, memory: Memory, *, pending_only: bool, also: Sequence[dict[str, Any]] = ()) -> None:
        for _ in range(MAX_ATTEMPTS):
            operations = self._remove_operations(memory, pending_only=pending_only)
            try:
                self._transact_retrying([*operations, *also])
                return
            except TransactionCancelled as exc:
                if any(reason.condition_failed for reason in exc.reasons[len(operations) :]):
                    raise SpeakerForgotten("someone the notice answers or quotes forgot everything") from exc
                memory = self._reread_unchanged(memory, exc)  # its guard may have been taken over
        raise MemoryStoreFailed(f"gave up deleting after {MAX_ATTEMPTS} lost races")

    def _remove_operations(self, memory: Memory, *, pending_only: bool) -> list[dict[str, Any]]:
        scope = memory.scope
        condition = f"#fingerprint = :read_fingerprint AND {_guard_state(memory)}"
        names = _names("#fingerprint", "#unguarded")
        values: dict[str, Any] = {":read_fingerprint": memory.fingerprint}
        if pending_only:
            condition, names = f"#status = :pending AND {condition}", {**names, **_names("#status")}
            values[":pending"] = MemoryStatus.PENDING.value
        return [
            self._table.op_delete(
                memory_key(scope.kind, scope.owner_id, memory.memory_id),
                condition=condition,
                names=names,
                values=values,
            ),
            *self._release_guard(memory).values(),
            self._table.op_update(
                counter_key(scope.kind, scope.owner_id),
                "ADD #count :minus_one",
                names={"#count": count_attribute(scope.lineage)},
                values={":minus_one": -1},
            ),
            self._table.op_update(
                book_key(scope, memory.book_shard),
                "REMOVE #entry ADD #k :minus_one",
                names={"#entry": entry_attribute(memory.memory_id), "#k": _SHARD_COUNT},
                values={":minus_one": -1},
            ),
        ]

    def memories_of(self, kind: ScopeKind, owner_id: str) -> list[Memory]:
        """Every memory of an owner (a server's, or all that are about a person), every lineage,
        oldest first; one query of the owner's partition (a few hundred items at most)."""
        memories: list[Memory] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._guarded(
                self._table.query_range, memory_range(kind, owner_id), consistent=True, start_key=start_key
            )
            memories.extend(memory_from_item(item) for item in items)
            if start_key is None:
                return sorted(memories, key=lambda memory: memory.created_at)

    def server_memories_naming(self, user_id: str) -> dict[str, list[Memory]]:
        """By server, every server memory (pending ones too) saved by ``user_id`` or about them, in the
        servers their notes name (one query of their notes, one of each such server's partition)."""
        found: dict[str, list[Memory]] = {}
        for guild_id in self._noted_servers(user_id):
            found[guild_id] = [
                memory
                for memory in self.memories_of(ScopeKind.SERVER, guild_id)
                if user_id in (memory.author_id, memory.about)
            ]
        return found

    def drop_server_note(self, user_id: str, guild_id: str) -> None:
        """Forget that memories of ``guild_id`` name ``user_id`` (once none does)."""
        self._guarded(self._table.delete, server_note_key(user_id, guild_id))

    def personal_memories_saved_by(self, user_id: str) -> dict[str, list[Memory]]:
        """By person, every personal memory about someone else that ``user_id`` saved, found through
        their notes (one query of them, one of each noted person's partition)."""
        found: dict[str, list[Memory]] = {}
        start_key: Cursor | None = None
        while True:
            items, start_key = self._guarded(
                self._table.query_range, author_note_range(user_id), consistent=True, start_key=start_key
            )
            for item in items:
                owner = noted_owner(ItemKey.of(item))
                found[owner] = [
                    memory
                    for memory in self.memories_of(ScopeKind.PERSONAL, owner)
                    if memory.author_id == user_id
                ]
            if start_key is None:
                return found

    def drop_author_note(self, user_id: str, owner_id: str) -> None:
        """Forget that ``user_id`` saved personal memories about ``owner_id`` (once none is theirs)."""
        self._guarded(self._table.delete, author_note_key(user_id, owner_id))

    def forget_author(self, memory: Memory) -> Memory:
        """``memory`` kept without the link to who saved it; raises ``MemoryNotFound`` when it changed
        since it was read. A guard whose key names the author (a personal memory someone else saved:
        ``duplicate_domain``) is given back, the memory left unguarded, so no key keeps their id."""
        anonymous = replace(memory, author_id=NO_AUTHOR)
        released = (
            self._release_guard(memory) if anonymous.duplicate_domain != memory.duplicate_domain else {}
        )
        update, names = "SET #author_id = :no_author", ["#author_id", "#fingerprint"]
        condition = "#fingerprint = :read_fingerprint AND #author_id = :read_author"
        values: dict[str, Any] = {":no_author": NO_AUTHOR, ":read_author": memory.author_id}
        if released:
            anonymous = replace(anonymous, holds_guard=False)
            update += ", #unguarded = :true"
            condition += f" AND {_guard_state(memory)}"
            names.append("#unguarded")
            values[":true"] = True
        return self._rewrite(
            memory,
            anonymous,
            update,
            condition=condition,
            names=names,
            values=values,
            refused=f"memory #{memory.memory_id} changed or was deleted",
            also=list(released.values()),
        )

    def tag_for_review(self, memory: Memory) -> Memory:
        """``memory`` with the random tag its review buttons carry: its own, or, for one saved before
        tags were kept (or changed since), one written now while it has none."""
        if memory.review_tag:
            return memory
        tag = new_review_tag()
        try:
            self._guarded(
                self._table.update,
                memory_key(memory.scope.kind, memory.scope.owner_id, memory.memory_id),
                "SET #review_tag = :tag",
                condition="attribute_exists(pk) AND attribute_not_exists(#review_tag)",
                names=_names("#review_tag"),
                values={":tag": tag},
            )
        except ConditionFailed as exc:  # tagged meanwhile (or gone: its buttons are then refused)
            if exc.old_item and exc.old_item.get("review_tag"):
                return replace(memory, review_tag=str(exc.old_item["review_tag"]))
        return replace(memory, review_tag=tag)

    def approve(self, memory: Memory) -> Memory:
        """A pending memory becomes recalled; raises ``MemoryNotFound`` when it is no longer the
        pending memory that was read (approved, rejected or changed meanwhile)."""
        approved = replace(memory, status=MemoryStatus.ACTIVE)
        return self._rewrite(
            memory,
            approved,
            "SET #status = :active",
            condition="#status = :pending AND #fingerprint = :read_fingerprint",
            names=("#status", "#fingerprint"),
            values={":active": MemoryStatus.ACTIVE.value, ":pending": MemoryStatus.PENDING.value},
            refused=f"memory #{memory.memory_id} is no longer pending",
        )

    def _rewrite(
        self,
        memory: Memory,
        rewritten: Memory,
        update: str,
        *,
        condition: str,
        names: Sequence[str],
        values: dict[str, Any],
        refused: str,
        also: Sequence[dict[str, Any]] = (),
    ) -> Memory:
        """Update ``memory``'s item (only while it is what was read: ``condition`` may use
        ``:read_fingerprint``) and its book entry, as ``rewritten``, in one transaction with ``also``;
        raises ``MemoryNotFound`` with ``refused`` when the condition fails."""
        operations = [
            self._table.op_update(
                memory_key(memory.scope.kind, memory.scope.owner_id, memory.memory_id),
                update,
                condition=condition,
                names=_names(*names),
                values={**values, ":read_fingerprint": memory.fingerprint},
            ),
            self._write_entry(rewritten),
            *also,
        ]
        try:
            self._transact_retrying(operations)
        except TransactionCancelled as exc:
            raise MemoryNotFound(refused) from exc
        return rewritten

    def recall(
        self,
        guild_id: str | None,
        lineage: int,
        user_ids: Sequence[str],
        *,
        place: Place,
        policy: PrivacyPolicy,
    ) -> RecallSet:
        """One BatchGetItem of ``recall_keys``, read by ``recall_from_items``."""
        keys = self.recall_keys(guild_id, lineage, user_ids)
        items = index_by_key(self._guarded(self._table.batch_get, keys))
        return self.recall_from_items(items, guild_id, lineage, user_ids, place=place, policy=policy)

    def recall_keys(self, guild_id: str | None, lineage: int, user_ids: Sequence[str]) -> list[ItemKey]:
        """The items recall reads, all with fixed keys: every shard of the server's book of
        ``lineage``, and per person their profile (for the privacy level) and every shard of their
        books of ``lineage`` and of global memories."""
        keys = self.layout.keys(MemoryScope.server(guild_id, lineage)) if guild_id else []
        for user_id in user_ids:
            keys.append(user_profile_key(user_id))
            for held in personal_lineages(lineage):
                keys.extend(self.layout.keys(MemoryScope.personal(user_id, held)))
        return keys

    def recall_from_items(
        self,
        items_by_key: Mapping[ItemKey, Item],
        guild_id: str | None,
        lineage: int,
        user_ids: Sequence[str],
        *,
        place: Place,
        policy: PrivacyPolicy,
    ) -> RecallSet:
        """The memories in the items of ``recall_keys`` (by key, missing ones left out) that a
        turn at ``place`` may be shown (``RecallReach``), without the people whose privacy level
        forbids personal memories. A recalled memory's ``created_at`` is its ``updated_at``: books
        keep only what recall shows."""
        people = tuple(
            user_id
            for user_id in user_ids
            if allows_personal_memories(
                user_profile_from_item(items_by_key.get(user_profile_key(user_id)), user_id).privacy_level
            )
        )
        reach = RecallReach(place, policy, lineage, frozenset(people))

        def read(scope: MemoryScope) -> tuple[Memory, ...]:
            shards = range(self.layout.shards(scope.kind))
            book = memories_from_book([items_by_key.get(book_key(scope, shard)) for shard in shards], scope)
            return tuple(memory for memory in book if reach.shows(memory))

        server = read(MemoryScope.server(guild_id, lineage)) if guild_id else ()
        personal = {
            user_id: tuple(
                memory
                for held in personal_lineages(lineage)
                for memory in read(MemoryScope.personal(user_id, held))
            )
            for user_id in people
        }
        return RecallSet(server=server, personal=personal)

    # -- internals --------------------------------------------------------------------------------

    def _create_operations(
        self,
        draft: MemoryDraft,
        memory_id: str,
        fingerprint: str,
        limit: int,
        ledger: PersonalLedger | None,
        shard: int,
        taken: GuardHolder | None = None,
    ) -> dict[str, dict[str, Any]]:
        """The transaction of a save, by name, in the order the cancellation reasons come back."""
        scope, table = draft.scope, self._table
        count = {"#count": count_attribute(scope.lineage)}
        operations: dict[str, dict[str, Any]] = {}
        if ledger is None:
            counter = table.op_update(
                counter_key(scope.kind, scope.owner_id),
                "ADD #count :one",
                condition="attribute_not_exists(#count) OR #count < :limit",
                names=count,
                values={":one": 1, ":limit": limit},
            )
        else:
            operations["privacy"] = table.op_check(
                user_profile_key(scope.owner_id),
                "attribute_not_exists(pk) OR #privacy = :allowed",
                names=_names("#privacy"),
                values={":allowed": PrivacyLevel.NONE.value},
            )
            unchanged = "attribute_not_exists(pk)" if ledger.version == 0 else "#version = :read_version"
            counter = table.op_update(
                counter_key(scope.kind, scope.owner_id),
                "ADD #count :one, #version :one",
                condition=unchanged,
                names={**count, **_names("#version")},
                values={":one": 1, **({":read_version": ledger.version} if ledger.version else {})},
            )
        if draft.said_at is not None:
            operations.update(self._not_forgotten(draft.author_id, scope, draft.said_at))
        operations.update(
            self._guard_operations(
                scope, fingerprint, draft.duplicate_domain, memory_id, draft.turn_id, taken
            )
        )
        operations["counter"] = counter
        operations["memory"] = table.op_put(
            {
                **memory_to_item(draft, memory_id, fingerprint, shard),
                **({"review_tag": new_review_tag()} if draft.status is MemoryStatus.PENDING else {}),
            },
            condition="attribute_not_exists(pk)",
        )
        operations["book"] = table.op_update(
            book_key(scope, shard),
            "SET #entry = :entry ADD #k :one",
            condition="attribute_not_exists(#k) OR #k < :capacity",
            names={"#entry": entry_attribute(memory_id), "#k": _SHARD_COUNT},
            values={
                ":entry": book_entry(draft.saved_as(memory_id)),
                ":one": 1,
                ":capacity": self.layout.capacity,
            },
        )
        operations.update(self._notes(draft.saved_as(memory_id)))
        return operations

    def _not_forgotten(
        self, author_id: str, scope: MemoryScope, said_at: datetime
    ) -> dict[str, dict[str, Any]]:
        """The parts that refuse a write if its author, or a personal memory's owner, asked to forget
        everything since ``said_at`` (one part when they are the same person)."""
        parts = {"author_not_forgotten": op_not_forgotten_since(self._table, author_id, said_at)}
        if scope.kind is ScopeKind.PERSONAL and scope.owner_id != author_id:
            parts["subject_not_forgotten"] = op_not_forgotten_since(self._table, scope.owner_id, said_at)
        return parts

    def _notes(self, memory: Memory) -> dict[str, dict[str, Any]]:
        """Notes, for whoever a server memory names (its author, its subject), that it exists; for
        the author of a personal memory about someone else, whom it is about."""
        if memory.scope.kind is not ScopeKind.SERVER:
            if not memory.author_id or memory.author_id == memory.scope.owner_id:
                return {}
            return {
                "note_0": self._table.op_put(
                    author_note_key(memory.author_id, memory.scope.owner_id).as_item()
                )
            }
        people = dict.fromkeys(person for person in (memory.author_id, memory.subject_id) if person)
        return {
            f"note_{n}": self._table.op_put(server_note_key(person, memory.scope.owner_id).as_item())
            for n, person in enumerate(people)
        }

    def _noted_servers(self, user_id: str) -> list[str]:
        servers: list[str] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._guarded(
                self._table.query_range, server_note_range(user_id), consistent=True, start_key=start_key
            )
            servers += [noted_server(ItemKey.of(item)) for item in items]
            if start_key is None:
                return servers

    def _existing_or_limit(
        self, draft: MemoryDraft, fingerprint: str, limit: int, policy: PrivacyPolicy
    ) -> SaveOutcome:
        """A full scope still answers a repeated fact with the memory that holds it, where that
        memory would refuse the save."""
        scope, domain = draft.scope, draft.duplicate_domain
        guard = self._guarded(self._table.get, guard_key(scope, fingerprint, domain))
        own = _own_save(guard, draft)
        if own is not None:
            return own
        holder = self._holder_of(guard, scope, fingerprint, domain)
        if holder is not None and holder.refuses(scope, draft.said(), policy):
            return SaveOutcome(holder.memory_id, created=False)
        raise MemoryLimitReached(limit)

    def _holder_of(
        self, guard: Item | None, scope: MemoryScope, fingerprint: str, domain: str
    ) -> GuardHolder | None:
        """The memory ``guard`` (an item of that guard's key, or None) names, read afresh."""
        if not guard or "memory_id" not in guard:
            return None
        held_id = str(guard["memory_id"])
        memory = self.find(scope.kind, scope.owner_id, held_id)
        holds = (
            memory is not None
            and memory.holds_guard
            and memory.scope == scope
            and (memory.fingerprint, memory.duplicate_domain) == (fingerprint, domain)
        )
        return GuardHolder(held_id, memory if holds else None)

    def _guard_operations(
        self,
        scope: MemoryScope,
        fingerprint: str,
        domain: str,
        memory_id: str,
        turn_id: str | None,
        taken: GuardHolder | None,
    ) -> dict[str, dict[str, Any]]:
        """The guard of ``memory_id``'s fact: put if there is none; else (``taken``: its holder, which
        does not refuse it) taken over while it still names that holder, and that memory, while it
        is as read, marked as holding no guard (``guard``, and ``displaced``)."""
        key = guard_key(scope, fingerprint, domain)
        # the turn that saved it: a retry of that turn knows the memory as its own, and owes its notice
        saved_by = {GUARD_TURN: turn_id} if turn_id else {}
        if taken is None:
            return {
                "guard": self._table.op_put(
                    {**key.as_item(), "memory_id": memory_id, **saved_by},
                    condition="attribute_not_exists(pk)",
                )
            }
        operations = {
            "guard": self._table.op_update(
                key,
                "SET #memory_id = :memory_id, #turn = :turn"
                if turn_id
                else "SET #memory_id = :memory_id REMOVE #turn",
                condition="#memory_id = :held",
                names=_names("#memory_id", "#turn"),
                values={
                    ":memory_id": memory_id,
                    ":held": taken.memory_id,
                    **({":turn": turn_id} if turn_id else {}),
                },
            )
        }
        held = taken.memory
        if held is not None:
            operations["displaced"] = self._table.op_update(
                memory_key(held.scope.kind, held.scope.owner_id, held.memory_id),
                "SET #unguarded = :true",
                condition="#fingerprint = :fingerprint AND #status = :status AND #updated_at = :updated_at "
                "AND attribute_not_exists(#unguarded)",
                names=_names("#unguarded", "#fingerprint", "#status", "#updated_at"),
                values={
                    ":true": True,
                    ":fingerprint": held.fingerprint,
                    ":status": held.status.value,
                    ":updated_at": held.updated_at.isoformat(),
                },
            )
        return operations

    def _write_entry(self, memory: Memory) -> dict[str, Any]:
        """Rewrite the entry of a saved memory in its book shard (which counted it when it was saved)."""
        return self._table.op_update(
            book_key(memory.scope, memory.book_shard),
            "SET #entry = :entry",
            names={"#entry": entry_attribute(memory.memory_id)},
            values={":entry": book_entry(memory)},
        )

    def _release_guard(self, memory: Memory) -> dict[str, dict[str, Any]]:
        """The delete of ``memory``'s guard, if it still holds one (``old_guard``)."""
        if not memory.holds_guard:
            return {}
        return {
            "old_guard": self._table.op_delete(
                guard_key(memory.scope, memory.fingerprint, memory.duplicate_domain),
                condition="#memory_id = :memory_id",
                names=_names("#memory_id"),
                values={":memory_id": memory.memory_id},
            )
        }

    def _transact_retrying(self, operations: list[dict[str, Any]]) -> None:
        """Run ``operations``, retrying only races; a failed condition is the caller's to read."""
        for attempt in range(MAX_ATTEMPTS):
            try:
                self._guarded(self._table.transact_write, operations)
                return
            except TransactionCancelled as exc:
                if any(reason.condition_failed for reason in exc.reasons):
                    raise
                if not exc.conflicted:
                    raise MemoryStoreFailed(str(exc)) from exc
                self._backoff(attempt)
        raise MemoryStoreFailed(f"gave up after {MAX_ATTEMPTS} lost races")

    def _backoff(self, attempt: int) -> None:
        self._sleep(random.uniform(0, _BACKOFF_SECONDS * (2 ** min(attempt, 5))))

    @staticmethod
    def _guarded(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``call``, with the data layer's failures (other than cancellations) as ``MemoryStoreFailed``."""
        try:
            return call(*args, **kwargs)
        except (TransactionCancelled, ConditionFailed):
            raise
        except StoreError as exc:
            raise MemoryStoreFailed(str(exc)) from exc


def _joined(
    operations: dict[str, dict[str, Any]], also: Sequence[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The caller's ``also`` parts, named, less those the write makes already: a rewrite checks its
    author's and subject's forget-all since the message that asked for it, as the notice's outbox
    does, and DynamoDB refuses a transaction that names one item twice."""
    made = list(operations.values())
    return {f"{_ALSO}{n}": part for n, part in enumerate(also) if part not in made}


def _guard_state(memory: Memory) -> str:
    """A condition that the memory's item holds its guard, or not, as ``memory`` was read."""
    return "attribute_not_exists(#unguarded)" if memory.holds_guard else "attribute_exists(#unguarded)"


def _own_save(guard: Item | None, draft: MemoryDraft) -> SaveOutcome | None:
    """This turn's own save, when the guard names it: an earlier attempt of the turn saved the memory
    and died before its notice was kept, so the retry owes the notice (``created``)."""
    if guard and draft.turn_id and guard.get(GUARD_TURN) == draft.turn_id and "memory_id" in guard:
        return SaveOutcome(str(guard["memory_id"]), created=True)
    return None


def _names(*placeholders: str) -> dict[str, str]:
    return {placeholder: _NAMES[placeholder] for placeholder in placeholders}


def _shard_with_room(memory_id: str, shards: int, full: set[int]) -> int | None:
    """The shard a new memory goes to: its id's, else the next one not found full by this save."""
    first = int(memory_id) % shards if memory_id.isdigit() else 0
    return next(
        (shard for step in range(shards) if (shard := (first + step) % shards) not in full),
        None,
    )


def memories_from_book(shards: Sequence[Item | None], scope: MemoryScope) -> tuple[Memory, ...]:
    """The memories of a book's shard items (by shard number, missing ones None), newest first."""
    memories = []
    for shard, item in enumerate(shards):
        memories.extend(_memories_of_shard(item, scope, shard))
    return tuple(sorted(memories, key=lambda memory: memory.updated_at, reverse=True))


def _memories_of_shard(item: Item | None, scope: MemoryScope, shard: int) -> list[Memory]:
    memories = []
    for name, entry in (item or {}).items():
        if name.startswith(_ENTRY_PREFIX):
            updated_at = parse_time(entry["u"])
            origin = origin_from_text(entry.get("o"))
            memories.append(
                Memory(
                    scope,
                    name[len(_ENTRY_PREFIX) :],
                    str(entry["c"]),
                    str(entry["a"]),
                    updated_at,
                    updated_at,
                    origin=origin,
                    subject_id=_optional_str(entry.get("s")),
                    status=MemoryStatus.PENDING if entry.get("st") == _PENDING else MemoryStatus.ACTIVE,
                    book_shard=shard,
                    embedding=_optional_bytes(entry.get("v")),
                )
            )
    return memories


def ledger_from_item(item: Item | None) -> PersonalLedger:
    if not item:
        return PersonalLedger()
    counts = {int(name[2:]): int(value) for name, value in item.items() if name.startswith("n_")}
    return PersonalLedger(counts=counts, version=int(item.get("version", 0)))


def memory_to_item(draft: MemoryDraft, memory_id: str, fingerprint: str, shard: int = 0) -> Item:
    scope = draft.scope
    return {
        **memory_key(scope.kind, scope.owner_id, memory_id).as_item(),
        "kind": scope.kind.value,
        "owner_id": scope.owner_id,
        "lineage": scope.lineage,
        "memory_id": memory_id,
        "content": draft.content,
        "fingerprint": fingerprint,
        "author_id": draft.author_id,
        "created_at": draft.created_at.isoformat(),
        "updated_at": draft.created_at.isoformat(),
        "origin": origin_text(draft.origin),
        "status": draft.status.value,
        "book_shard": shard,
        **({"subject_id": draft.subject_id} if draft.subject_id else {}),
        **({"embedding": draft.embedding} if draft.embedding else {}),
    }


def memory_from_item(item: Item) -> Memory:
    return Memory(
        scope=MemoryScope(ScopeKind(item["kind"]), str(item["owner_id"]), int(item["lineage"])),
        memory_id=str(item["memory_id"]),
        content=str(item["content"]),
        author_id=str(item["author_id"]),
        created_at=parse_time(item["created_at"]),
        updated_at=parse_time(item["updated_at"]),
        origin=origin_from_text(item.get("origin")),
        subject_id=_optional_str(item.get("subject_id")),
        status=MemoryStatus(item.get("status", MemoryStatus.ACTIVE)),
        book_shard=int(item.get("book_shard", 0)),
        embedding=_optional_bytes(item.get("embedding")),
        review_tag=_optional_str(item.get("review_tag")),
        holds_guard=not item.get("unguarded"),
    )


def _optional_str(value: Any) -> str | None:
    return str(value) if value else None


def _optional_bytes(value: Any) -> bytes | None:
    """A binary attribute as bytes (boto3 reads it as ``Binary``); anything else, None."""
    if isinstance(value, Binary):
        value = value.value
    return bytes(value) if isinstance(value, bytes | bytearray) and value else None
