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

The store is a repository per job on one table: ``ltm_writes`` (saves, rewrites, deletes),
``ltm_reads`` (recall), ``ltm_person`` (a person's data: forget-all and the export) and
``ltm_curation`` (a server's review), ``ltm_usage`` (when each memory was last shown), over ``ltm_transactions`` (what their writes share), with the
book layout in ``ltm_book`` and the items mapped by ``ltm_items``. ``DynamoMemoryStore`` is all of
them, the class callers use.
"""

from __future__ import annotations

from kioku.adapters.dynamodb.ltm_book import BookLayout, GuardHolder
from kioku.adapters.dynamodb.ltm_curation import LtmCuration
from kioku.adapters.dynamodb.ltm_items import (
    GUARD_TURN,
    book_entry,
    count_attribute,
    entry_attribute,
    ledger_from_item,
    memories_from_book,
    memory_from_item,
    memory_to_item,
    origin_from_text,
    origin_text,
)
from kioku.adapters.dynamodb.ltm_person import LtmPersonData
from kioku.adapters.dynamodb.ltm_reads import LtmReads
from kioku.adapters.dynamodb.ltm_transactions import MAX_ATTEMPTS
from kioku.adapters.dynamodb.ltm_usage import LtmUsage
from kioku.adapters.dynamodb.ltm_writes import LtmWrites

__all__ = [
    "GUARD_TURN",
    "MAX_ATTEMPTS",
    "BookLayout",
    "DynamoMemoryStore",
    "GuardHolder",
    "book_entry",
    "count_attribute",
    "entry_attribute",
    "ledger_from_item",
    "memories_from_book",
    "memory_from_item",
    "memory_to_item",
    "origin_from_text",
    "origin_text",
]
"""The store, and what its callers import from here (each name is its own module's)."""


class DynamoMemoryStore(LtmWrites, LtmReads, LtmPersonData, LtmCuration, LtmUsage):
    """The ``MemoryStore`` port on DynamoDB; every data-layer error becomes a domain error."""
