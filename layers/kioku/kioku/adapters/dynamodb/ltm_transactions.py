"""What the long-term memory store's jobs share: the table, a memory read by id or by owner, the
duplicate guards (taken, given back, their holder read afresh), book entries, the notes that name
a person, the forget-all check, the delete of a memory and a rewrite of its item with its entry,
and a transaction retried while it loses races (see ``ltm_store`` for the layout).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

from kioku.adapters.dynamodb.errors import AlsoRefused, ConditionFailed, StoreError, TransactionCancelled
from kioku.adapters.dynamodb.forgetting import op_not_forgotten_since
from kioku.adapters.dynamodb.keys import (
    author_note_key,
    book_key,
    counter_key,
    guard_key,
    memory_key,
    memory_range,
    server_note_key,
)
from kioku.adapters.dynamodb.ltm_book import BookLayout, GuardHolder
from kioku.adapters.dynamodb.ltm_items import (
    GUARD_TURN,
    SHARD_COUNT,
    attribute_names,
    book_entry,
    count_attribute,
    entry_attribute,
    memory_from_item,
)
from kioku.adapters.dynamodb.table import Cursor, Item, KiokuTable, UpdateExpression
from kioku.domain.ltm.memory import (
    Memory,
    MemoryNotFound,
    MemoryScope,
    MemoryStatus,
    MemoryStoreFailed,
    ScopeKind,
    new_memory_id,
)

MAX_ATTEMPTS: Final = 16
"""Each lost race means another save succeeded, so a caller loses at most as many races as there are slots."""
_BACKOFF_SECONDS: Final = 0.01


class LtmTransactions:
    """The table, and what every job's writes share: guards, book entries, notes, the forget-all
    check and the retried transaction."""

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

    def find(
        self, kind: ScopeKind, owner_id: str, memory_id: str, *, expired_too: bool = False
    ) -> Memory | None:
        """The memory, or None; one that expired by the table's clock is None too (as for every
        reader: it is gone, whether or not the janitor deleted it yet) unless ``expired_too``, for
        the parts that delete it."""
        item = self._guarded(self._table.get, memory_key(kind, owner_id, memory_id))
        memory = memory_from_item(item) if item else None
        return memory if memory is None or expired_too or not memory.expired(self._table.clock()) else None

    def _reread_unchanged(self, memory: Memory, exc: Exception) -> Memory:
        """``memory`` read again when only its guard changed since (taken over by another save), or
        it was read without its history (from a book);
            ``MemoryNotFound`` when it changed or went."""
        fresh = self.find(memory.scope.kind, memory.scope.owner_id, memory.memory_id, expired_too=True)
        if fresh is None or (
            fresh.fingerprint,
            fresh.updated_at,
            fresh.status,
            fresh.holds_guard,
            fresh.changes,
        ) == (memory.fingerprint, memory.updated_at, memory.status, memory.holds_guard, memory.changes):
            raise MemoryNotFound(f"memory #{memory.memory_id} changed or was deleted") from exc
        if (fresh.fingerprint, fresh.updated_at, fresh.status) != (
            memory.fingerprint,
            memory.updated_at,
            memory.status,
        ):
            raise MemoryNotFound(f"memory #{memory.memory_id} changed or was deleted") from exc
        return fresh

    def _remove(self, memory: Memory, *, pending_only: bool, also: Sequence[dict[str, Any]] = ()) -> None:
        for _ in range(MAX_ATTEMPTS):
            operations = self._remove_operations(memory, pending_only=pending_only)
            try:
                self._transact_retrying([*operations, *also])
                return
            except TransactionCancelled as exc:
                refused = {
                    n: reason
                    for n, reason in enumerate(exc.reasons[len(operations) :])
                    if reason.condition_failed
                }
                if refused:
                    raise AlsoRefused(refused) from exc
                memory = self._reread_unchanged(memory, exc)  # its guard may have been taken over
        raise MemoryStoreFailed(f"gave up deleting after {MAX_ATTEMPTS} lost races")

    def _remove_operations(
        self, memory: Memory, *, pending_only: bool, expires: int | None = None
    ) -> list[dict[str, Any]]:
        """The delete of ``memory`` as read (only while pending, with ``pending_only``; only while
        it expires at ``expires``, epoch seconds, when given), with its guard, count and entry."""
        scope = memory.scope
        condition = f"#fingerprint = :read_fingerprint AND {guard_state(memory)}"
        names = attribute_names("#fingerprint", "#unguarded")
        values: dict[str, Any] = {":read_fingerprint": memory.fingerprint}
        if pending_only:
            condition, names = f"#status = :pending AND {condition}", {**names, **attribute_names("#status")}
            values[":pending"] = MemoryStatus.PENDING.value
        if expires is not None:
            condition, names = (
                f"#expires = :expires AND {condition}",
                {**names, **attribute_names("#expires")},
            )
            values[":expires"] = expires
        return [
            self._table.op_delete(
                memory_key(scope.kind, scope.owner_id, memory.memory_id),
                condition=condition,
                names=names,
                values=values,
            ),
            *self._release_guard(memory).values(),
            self._table.op_update_with(
                counter_key(scope.kind, scope.owner_id), counted(count_attribute(scope.lineage), -1)
            ),
            self._table.op_update_with(book_key(scope, memory.book_shard), _entry_removed(memory.memory_id)),
        ]

    def memories_of(self, kind: ScopeKind, owner_id: str, *, expired_too: bool = False) -> list[Memory]:
        """Every memory of an owner (a server's, or all that are about a person), every lineage,
        oldest first; one query of the owner's partition (a few hundred items at most). Without the
        expired ones (as ``find``) unless ``expired_too``."""
        now = self._table.clock()
        memories: list[Memory] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._guarded(
                self._table.query_range, memory_range(kind, owner_id), consistent=True, start_key=start_key
            )
            read = map(memory_from_item, items)
            memories.extend(m for m in read if expired_too or not m.expired(now))
            if start_key is None:
                return sorted(memories, key=lambda memory: memory.created_at)

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
                names=attribute_names(*names),
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

    def _holder_of(
        self, guard: Item | None, scope: MemoryScope, fingerprint: str, domain: str
    ) -> GuardHolder | None:
        """The memory ``guard`` (an item of that guard's key, or None) names, read afresh."""
        if not guard or "memory_id" not in guard:
            return None
        held_id = str(guard["memory_id"])
        memory = self.find(scope.kind, scope.owner_id, held_id, expired_too=True)
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
                names=attribute_names("#memory_id", "#turn"),
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
                names=attribute_names("#unguarded", "#fingerprint", "#status", "#updated_at"),
                values={
                    ":true": True,
                    ":fingerprint": held.fingerprint,
                    ":status": held.status.value,
                    ":updated_at": held.updated_at.isoformat(),
                },
            )
        return operations

    def _add_entry(self, memory: Memory, shard: int) -> dict[str, Any]:
        """Put a new memory's entry in book shard ``shard``, counted there, while the shard has room."""
        expression = UpdateExpression()
        expression.set(entry_attribute(memory.memory_id), book_entry(memory))
        expression.add(SHARD_COUNT, 1)
        k = expression.name(SHARD_COUNT)
        return self._table.op_update_with(
            book_key(memory.scope, shard),
            expression,
            condition=f"attribute_not_exists({k}) OR {k} < {expression.value(self.layout.capacity)}",
        )

    def _write_entry(self, memory: Memory) -> dict[str, Any]:
        """Rewrite the entry of a saved memory in its book shard (which counted it when it was saved)."""
        expression = UpdateExpression()
        expression.set(entry_attribute(memory.memory_id), book_entry(memory))
        return self._table.op_update_with(book_key(memory.scope, memory.book_shard), expression)

    def _release_guard(self, memory: Memory) -> dict[str, dict[str, Any]]:
        """The delete of ``memory``'s guard, if it still holds one (``old_guard``)."""
        if not memory.holds_guard:
            return {}
        return {
            "old_guard": self._table.op_delete(
                guard_key(memory.scope, memory.fingerprint, memory.duplicate_domain),
                condition="#memory_id = :memory_id",
                names=attribute_names("#memory_id"),
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


def guard_state(memory: Memory) -> str:
    """A condition that the memory's item holds its guard, or not, as ``memory`` was read."""
    return "attribute_not_exists(#unguarded)" if memory.holds_guard else "attribute_exists(#unguarded)"


def history_state(memory: Memory) -> str:
    """A condition that the memory's item has been edited as many times as ``memory`` was read
    with (``:read_changes``), so the history written with an edit is the item's own."""
    return "attribute_not_exists(#changes)" if not memory.changes else "#changes = :read_changes"


def counted(attribute: str, amount: int) -> UpdateExpression:
    """``ADD`` ``amount`` to the count ``attribute``."""
    expression = UpdateExpression()
    expression.add(attribute, amount)
    return expression


def _entry_removed(memory_id: str) -> UpdateExpression:
    """A memory's book entry removed, and its shard's count lowered."""
    expression = UpdateExpression()
    expression.remove(entry_attribute(memory_id))
    expression.add(SHARD_COUNT, -1)
    return expression
