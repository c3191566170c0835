"""The janitor's second job: vectors for memories saved without one, so ranking by meaning reaches
every memory, not only those saved since embeddings were on. Bounded per run
(``EMBEDDINGS_BACKFILL_PER_RUN``); what one run leaves, the next takes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kioku.domain.ltm.memory import Memory
from kioku.domain.ltm.ports import Embedder, EmbeddingsUnavailable
from kioku.domain.ltm.vectors import embedded_text

logger = logging.getLogger(__name__)

BATCH = 32
"""Texts per embedding call: the embedded model's work per call, or one request to an endpoint."""


class VectorlessMemories(Protocol):
    def without_vector(self, limit: int) -> list[Memory]: ...

    def fill(self, memory: Memory, vector: bytes) -> bool: ...


@dataclass
class BackfillReport:
    found: int = 0
    embedded: int = 0
    skipped: int = 0
    """Edited, given a vector or deleted between the read and the write: left as they are."""


def backfill_vectors(memories: VectorlessMemories, embedder: Embedder, limit: int) -> BackfillReport:
    """Embed and write the vectors of at most ``limit`` memories that have none; stops (keeping what
    was written) at the first embedding failure."""
    report = BackfillReport()
    if limit <= 0:
        return report
    found = memories.without_vector(limit)
    report.found = len(found)
    for start in range(0, len(found), BATCH):
        batch: Sequence[Memory] = found[start : start + BATCH]
        try:
            vectors = embedder.embed([embedded_text(memory.content) for memory in batch])
        except (EmbeddingsUnavailable, ValueError) as exc:
            logger.warning(
                "memory vectors: embeddings failed, %d left for the next run: %s", len(found) - start, exc
            )
            break
        for memory, vector in zip(batch, vectors, strict=True):
            if memories.fill(memory, vector):
                report.embedded += 1
            else:
                report.skipped += 1
    return report
