"""JanitorFunction: on its schedule, purge short-term memory rows idle for longer than
``STM_JANITOR_RETENTION_DAYS`` (orphans of channels and servers that went quiet), delete the
long-term memories that expired (a bounded number a run: ``ltm_expiry.EXPIRED_PER_RUN``), fold the
turns' records into when each memory was last shown (``ltm_usage``, bounded too), delete the
data of servers that removed kioku more than ``SERVER_DATA_GRACE_DAYS`` ago, and give memories
saved without a vector theirs (at most ``EMBEDDINGS_BACKFILL_PER_RUN``; none with
``EMBEDDINGS_MODEL=none``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from kioku import clock
from kioku.entrypoints.composition import Container, container
from kioku.observability import Metric, count, invocation, logger


def handle(event: dict[str, Any], context: Any = None, *, now: datetime | None = None) -> dict[str, int]:
    with invocation(context):
        moment, parts = now or clock.now(), container()
        return {
            **_purge(parts, moment),
            **_expire(parts, moment),
            **_fold_last_shown(parts, moment),
            **_erase_removed_servers(parts, moment),
            **_backfill(parts),
        }


def _purge(parts: Container, moment: datetime) -> dict[str, int]:
    idle_before = moment - timedelta(days=parts.settings.STM_JANITOR_RETENTION_DAYS)
    report = parts.stm_janitor.purge_idle(idle_before)
    count(Metric.STM_ROWS_PURGED, report.deleted)
    logger.info(
        "short-term memory janitor: %d idle rows found, %d deleted, %d resumed meanwhile and kept",
        report.found,
        report.deleted,
        report.kept,
    )
    return {"found": report.found, "deleted": report.deleted, "kept": report.kept}


def _expire(parts: Container, moment: datetime) -> dict[str, int]:
    expired = parts.ltm_store.purge_expired(moment)
    count(Metric.LTM_MEMORIES_EXPIRED, expired.deleted)
    logger.info(
        "long-term memory janitor: %d expired memories found, %d deleted, %d changed meanwhile and kept",
        expired.found,
        expired.deleted,
        expired.kept,
    )
    return {"expired_found": expired.found, "expired_deleted": expired.deleted}


def _fold_last_shown(parts: Container, moment: datetime) -> dict[str, int]:
    usage = parts.ltm_store.fold_last_shown(moment)
    logger.info(
        "memory use: %d turn records folded, %d memories given a later last-shown time, %d gone or later",
        usage.records,
        usage.folded,
        usage.kept,
    )
    return {"shown_records": usage.records, "last_shown_set": usage.folded}


def _erase_removed_servers(parts: Container, moment: datetime) -> dict[str, int]:
    from kioku.services.server_removal import erase_removed_servers

    grace = timedelta(days=parts.settings.SERVER_DATA_GRACE_DAYS)
    report = erase_removed_servers(parts.server_removals, parts.ltm_store, moment, grace)
    count(Metric.SERVER_ITEMS_ERASED, report.deleted)
    logger.info(
        "removed servers: %d erased, %d items deleted, %d changed since and kept, %d added back",
        report.servers_erased,
        report.deleted,
        report.kept,
        report.readded,
    )
    return {
        "servers_erased": report.servers_erased,
        "server_items_deleted": report.deleted,
        "server_items_kept": report.kept,
    }


def _backfill(parts: Container) -> dict[str, int]:
    embedder = parts.embedder
    if embedder is None:
        return {"vectors_written": 0, "vectors_skipped": 0}
    from kioku.services.vector_backfill import backfill_vectors

    report = backfill_vectors(parts.ltm_backfill, embedder, parts.settings.EMBEDDINGS_BACKFILL_PER_RUN)
    logger.info(
        "memory vectors: %d memories without one found, %d given theirs, %d edited meanwhile and left",
        report.found,
        report.embedded,
        report.skipped,
    )
    return {"vectors_written": report.embedded, "vectors_skipped": report.skipped}
