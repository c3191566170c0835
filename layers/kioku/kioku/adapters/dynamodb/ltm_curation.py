"""A server's curation: a pending memory approved or rejected, and the tag its review buttons carry."""

from __future__ import annotations

from dataclasses import replace

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.keys import memory_key
from kioku.adapters.dynamodb.ltm_transactions import LtmTransactions
from kioku.adapters.dynamodb.table import UpdateExpression
from kioku.domain.ltm.memory import Memory, MemoryStatus, new_review_tag


class LtmCuration(LtmTransactions):
    """A server's curation of its pending memories."""

    def reject(self, memory: Memory) -> None:
        """A pending memory is deleted, giving back its slot; raises ``MemoryNotFound`` when it is no
        longer the pending memory that was read (approved, rejected or changed meanwhile)."""
        self._remove(memory, pending_only=True)

    def tag_for_review(self, memory: Memory) -> Memory:
        """``memory`` with the random tag its review buttons carry: its own, or, for one saved before
        tags were kept (or changed since), one written now while it has none."""
        if memory.review_tag:
            return memory
        tag = new_review_tag()
        try:
            expression = UpdateExpression()
            expression.set("review_tag", tag)
            self._guarded(
                self._table.update_with,
                memory_key(memory.scope.kind, memory.scope.owner_id, memory.memory_id),
                expression,
                condition=f"attribute_exists(pk) AND attribute_not_exists({expression.name('review_tag')})",
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
