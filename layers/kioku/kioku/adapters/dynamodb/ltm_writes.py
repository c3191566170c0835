"""Saving, rewriting and deleting long-term memories (see ``ltm_store``: a save's transaction, a
personal save's counter version, the duplicate guards and the forget-all check).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from kioku.adapters.dynamodb.config_store import user_profile_from_item
from kioku.adapters.dynamodb.errors import AlsoRefused, TransactionCancelled
from kioku.adapters.dynamodb.keys import (
    counter_key,
    guard_key,
    index_by_key,
    memory_key,
    user_profile_key,
)
from kioku.adapters.dynamodb.ltm_book import GuardHolder, shard_with_room
from kioku.adapters.dynamodb.ltm_expiry import LtmExpiry
from kioku.adapters.dynamodb.ltm_items import (
    GUARD_TURN,
    attribute_names,
    count_attribute,
    expiry_clauses,
    history_to_item,
    ledger_from_item,
    memory_to_item,
    origin_text,
)
from kioku.adapters.dynamodb.ltm_transactions import (
    MAX_ATTEMPTS,
    counted,
    guard_state,
    history_state,
)
from kioku.adapters.dynamodb.table import Item
from kioku.domain.forgetting import SpeakerForgotten
from kioku.domain.ltm.memory import (
    DuplicateMemory,
    ExpiryChange,
    Memory,
    MemoryDraft,
    MemoryLimitReached,
    MemoryStatus,
    MemoryStoreFailed,
    PersonalLedger,
    PersonalTarget,
    SaveOutcome,
    ScopeKind,
    TargetPrivacyRestricted,
    content_fingerprint,
    new_review_tag,
)
from kioku.domain.models import PrivacyLevel
from kioku.domain.privacy import Origin, PrivacyPolicy

_REWRITTEN: Final = (
    "#history",
    "#changes",
    "#content",
    "#fingerprint",
    "#updated_at",
    "#origin",
    "#author_id",
    "#embedding",
    "#unguarded",
    "#review_tag",
)
"""The attributes a rewrite's update names whatever it changes (``_replace_operations``)."""
_FORGOTTEN_PARTS: Final = frozenset({"author_not_forgotten", "subject_not_forgotten"})
_ALSO: Final = "also "
"""The name of a caller's part of a write's transaction (``also``), before its number."""


class LtmWrites(LtmExpiry):
    """A memory saved, rewritten or deleted, each in one transaction with its guard, counter,
    book entry and notes."""

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
        attempt, released = 0, False  # released: a full scope's expired memories went, once
        while attempt < MAX_ATTEMPTS:
            if ledger is not None and not ledger.has_room(draft.scope.lineage, limit):
                if (
                    not released
                    and (released := True)
                    and self.release_expired(draft.scope, draft.created_at)
                ):
                    ledger = self.personal_target(draft.scope.owner_id).ledger
                    continue
                return self._existing_or_limit(draft, fingerprint, limit, policy)
            memory_id = self._new_id()
            shard = shard_with_room(memory_id, shards, full)
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
                    raise SpeakerForgotten("its author or subject asked to forget everything since") from exc
                if "privacy" in failed:
                    raise TargetPrivacyRestricted(
                        "the user's privacy level forbids personal memories"
                    ) from exc
                if "guard" in failed or "displaced" in failed:
                    own = _own_save(old["guard"], draft)
                    if own is not None:
                        return own
                    holder = self._holder_of(old["guard"], draft.scope, fingerprint, draft.duplicate_domain)
                    if holder is not None and holder.refuses(
                        draft.scope, draft.said(memory_id), policy, draft.created_at
                    ):
                        return SaveOutcome(holder.memory_id, created=False)
                    taken = holder  # the next attempt takes the guard over (or puts it, if it went)
                    attempt += 1
                    continue
                if "counter" in failed and not personal:
                    if (
                        not released
                        and (released := True)
                        and self.release_expired(draft.scope, draft.created_at)
                    ):
                        continue
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
        also: Sequence[dict[str, Any]] = (),
    ) -> Memory:
        """``memory`` with new content (and, given ``expiry``, a new expiry or none), the text it
        replaces kept in its history (``Memory.edited``:
        changed by ``changed_by``, else ``author_id``, else its author) in the same write; given ``origin``, ``author_id`` and ``subject_id`` (where, by
        whom and about whom the new text was written), it belongs there from now on, as new text
        would. Given ``said_at`` (when the new text was said), raises ``SpeakerForgotten`` if its
        author, or a personal memory's owner, asked to forget everything since. ``embedding`` is the
        new content's (None: the old one goes, it described the old text). Raises
        ``DuplicateMemory`` only for a memory recalled wherever the rewritten one would be, under
        ``policy``; otherwise it takes that memory's guard over. ``also``: as for ``delete`` (the
        rewrite's own refusals come first)."""
        policy = policy or PrivacyPolicy((origin or memory.origin).guild_id)
        taken: GuardHolder | None = None
        for attempt in range(MAX_ATTEMPTS):
            updated, operations = self._replace_operations(
                memory,
                content,
                now,
                origin,
                author_id,
                said_at,
                subject_id,
                embedding,
                taken,
                changed_by or author_id or memory.author_id,
                expiry,
            )
            operations.update(_joined(operations, also))
            try:
                self._guarded(self._table.transact_write, list(operations.values()))
                return updated
            except TransactionCancelled as exc:
                reasons = dict(zip(operations, exc.reasons, strict=True))
                failed = {name for name, reason in reasons.items() if reason.condition_failed}
                if failed & _FORGOTTEN_PARTS:
                    raise SpeakerForgotten("its author or subject asked to forget everything since") from exc
                refused = {
                    int(name.removeprefix(_ALSO)): reasons[name] for name in failed if name.startswith(_ALSO)
                }
                if refused:
                    raise AlsoRefused(refused) from exc
                if failed & {"memory", "old_guard"}:
                    memory = self._reread_unchanged(memory, exc)  # its guard may have been taken over
                elif failed & {"new_guard", "displaced"}:
                    holder = self._holder_of(
                        reasons["new_guard"].old_item,
                        memory.scope,
                        updated.fingerprint,
                        updated.duplicate_domain,
                    )
                    if holder is not None and holder.refuses(memory.scope, updated.said(), policy, now):
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
        changed_by: str,
        expiry: ExpiryChange | None,
    ) -> tuple[Memory, dict[str, dict[str, Any]]]:
        """The rewritten memory and the transaction that writes it (see ``replace_content``)."""
        updated = memory.rewritten(
            content,
            now,
            changed_by,
            origin=origin,
            author_id=author_id,
            subject_id=subject_id,
            embedding=embedding,
            expiry=expiry,
        )
        moves = (updated.fingerprint, updated.duplicate_domain) != (
            memory.fingerprint,
            memory.duplicate_domain,
        )
        # a review button shown before is out of date
        updated = replace(updated, holds_guard=updated.holds_guard or moves, review_tag=None)
        subject = ", #subject_id = :subject_id" if updated.subject_id else ""
        key = memory_key(memory.scope.kind, memory.scope.owner_id, memory.memory_id)
        expiry_set, expiry_removed, expiry_names, expiry_values = expiry_clauses(key, expiry)
        removed = [
            *(() if embedding else ("#embedding",)),
            *(("#unguarded",) if moves else ()),
            "#review_tag",
            *expiry_removed,
        ]
        operations = {
            "memory": self._table.op_update(
                key,
                "SET #content = :content, #fingerprint = :fingerprint, #updated_at = :updated_at, "
                f"#origin = :origin, #author_id = :author_id{subject}, #history = :history, "
                f"#changes = :changes{expiry_set}"
                + (", #embedding = :embedding" if embedding else "")
                + (f" REMOVE {', '.join(removed)}" if removed else ""),
                condition=f"#fingerprint = :read_fingerprint AND {guard_state(memory)} AND "
                + history_state(memory),
                names=attribute_names(*_REWRITTEN, *(("#subject_id",) if subject else ())) | expiry_names,
                values={
                    ":content": content,
                    ":fingerprint": updated.fingerprint,
                    ":updated_at": now.isoformat(),
                    ":origin": origin_text(updated.origin),
                    ":author_id": updated.author_id,
                    ":read_fingerprint": memory.fingerprint,
                    ":history": history_to_item(updated.history),
                    ":changes": updated.changes,
                    **({":read_changes": memory.changes} if memory.changes else {}),
                    **({":subject_id": updated.subject_id} if subject else {}),
                    **({":embedding": embedding} if embedding else {}),
                    **expiry_values,
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

    def delete(self, memory: Memory, *, also: Sequence[dict[str, Any]] = ()) -> None:
        """Remove ``memory`` and give back its slot; raises ``MemoryNotFound`` when it changed.
        ``also`` (transaction operations: the outbox keeping the notice the deletion owes) are
        written in the same transaction; when one of their conditions fails (forget-all's, or a turn's
        claim on its outbox), nothing is written and ``AlsoRefused`` (a ``SpeakerForgotten``) says
        which."""
        self._remove(memory, pending_only=False, also=also)

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
        added = counted(count_attribute(scope.lineage), 1)
        operations: dict[str, dict[str, Any]] = {}
        if ledger is None:
            count = added.name(count_attribute(scope.lineage))
            counter = table.op_update_with(
                counter_key(scope.kind, scope.owner_id),
                added,
                condition=f"attribute_not_exists({count}) OR {count} < {added.value(limit)}",
            )
        else:
            operations["privacy"] = table.op_check(
                user_profile_key(scope.owner_id),
                "attribute_not_exists(pk) OR #privacy = :allowed",
                names=attribute_names("#privacy"),
                values={":allowed": PrivacyLevel.NONE.value},
            )
            added.add("version", 1)
            unchanged = (
                "attribute_not_exists(pk)"
                if ledger.version == 0
                else f"{added.name('version')} = {added.value(ledger.version)}"
            )
            counter = table.op_update_with(
                counter_key(scope.kind, scope.owner_id), added, condition=unchanged
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
        operations["book"] = self._add_entry(draft.saved_as(memory_id), shard)
        operations.update(self._notes(draft.saved_as(memory_id)))
        return operations

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
        if holder is not None and holder.refuses(scope, draft.said(), policy, draft.created_at):
            return SaveOutcome(holder.memory_id, created=False)
        raise MemoryLimitReached(limit)


def _joined(
    operations: dict[str, dict[str, Any]], also: Sequence[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The caller's ``also`` parts, named, less those the write makes already: a rewrite checks its
    author's and subject's forget-all since the message that asked for it, as the notice's outbox
    does, and DynamoDB refuses a transaction that names one item twice."""
    made = list(operations.values())
    return {f"{_ALSO}{n}": part for n, part in enumerate(also) if part not in made}


def _own_save(guard: Item | None, draft: MemoryDraft) -> SaveOutcome | None:
    """This turn's own save, when the guard names it: an earlier attempt of the turn saved the memory
    and died before its notice was kept, so the retry owes the notice (``created``)."""
    if guard and draft.turn_id and guard.get(GUARD_TURN) == draft.turn_id and "memory_id" in guard:
        return SaveOutcome(str(guard["memory_id"]), created=True)
    return None
