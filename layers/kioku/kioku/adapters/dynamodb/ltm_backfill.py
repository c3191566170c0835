"""The vectors of memories saved without one (before embeddings were on, or while they failed): the
janitor finds them and writes each one's vector into the memory and its book entry together.

No key finds a memory by what it lacks, so they are found by a scan, page by page, stopping at the
run's bound; once every memory has a vector, a run reads the table once and writes nothing. A vector
is written only if the memory is as it was read (same fingerprint, same ``updated_at``, still without
one): an edit since wrote its own vector, or chose to keep none, and is never clobbered.
"""

from __future__ import annotations

from kioku.adapters.dynamodb.errors import TransactionCancelled
from kioku.adapters.dynamodb.keys import MEMORY_PREFIX, book_key, memory_key
from kioku.adapters.dynamodb.ltm_items import entry_attribute, memory_from_item
from kioku.adapters.dynamodb.table import Cursor, KiokuTable
from kioku.domain.ltm.memory import Memory

SCAN_PAGE_ITEMS = 200


class LtmVectorBackfill:
    """Memories without a vector, and the conditional write of one."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def without_vector(self, limit: int, *, page_items: int = SCAN_PAGE_ITEMS) -> list[Memory]:
        """At most ``limit`` memories that have no vector, in the order the scan meets them."""
        found: list[Memory] = []
        start_key: Cursor | None = None
        while len(found) < limit:
            items, start_key = self._table.scan(
                "begins_with(#sk, :memory) AND attribute_exists(#memory_id) AND attribute_not_exists(#embedding)",
                names={"#sk": "sk", "#memory_id": "memory_id", "#embedding": "embedding"},
                values={":memory": MEMORY_PREFIX},
                limit=page_items,
                start_key=start_key,
            )
            found += map(memory_from_item, items)
            if start_key is None:
                break
        return found[:limit]

    def fill(self, memory: Memory, vector: bytes) -> bool:
        """Give ``memory`` and its book entry ``vector``; False (nothing written) when the memory was
        edited, given a vector or deleted since it was read."""
        entry = entry_attribute(memory.memory_id)
        try:
            self._table.transact_write(
                [
                    self._table.op_update(
                        memory_key(memory.scope.kind, memory.scope.owner_id, memory.memory_id),
                        "SET #embedding = :vector",
                        condition="#fingerprint = :fingerprint AND #updated_at = :updated_at "
                        "AND attribute_not_exists(#embedding)",
                        names={
                            "#embedding": "embedding",
                            "#fingerprint": "fingerprint",
                            "#updated_at": "updated_at",
                        },
                        values={
                            ":vector": vector,
                            ":fingerprint": memory.fingerprint,
                            ":updated_at": memory.updated_at.isoformat(),
                        },
                    ),
                    self._table.op_update(
                        book_key(memory.scope, memory.book_shard),
                        "SET #entry.#v = :vector",
                        condition="attribute_exists(#entry)",
                        names={"#entry": entry, "#v": "v"},
                        values={":vector": vector},
                    ),
                ]
            )
        except TransactionCancelled:
            return False
        return True
