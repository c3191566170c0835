"""JanitorFunction: on its schedule, purge short-term memory rows idle for longer than
``STM_JANITOR_RETENTION_DAYS`` (orphans of channels and servers that went quiet), and delete the
long-term memories that expired (a bounded number a run: ``ltm_expiry.EXPIRED_PER_RUN``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from kioku import clock
from kioku.entrypoints.composition import container
from kioku.observability import Metric, count, invocation, logger


def handle(event: dict[str, Any], context: Any = None, *, now: datetime | None = None) -> dict[str, int]:
    with invocation(context):
        return _purge(now or clock.now())


def _purge(moment: datetime) -> dict[str, int]:
    parts = container()
    idle_before = moment - timedelta(days=parts.settings.STM_JANITOR_RETENTION_DAYS)
    report = parts.stm_janitor.purge_idle(idle_before)
    count(Metric.STM_ROWS_PURGED, report.deleted)
    logger.info(
        "short-term memory janitor: %d idle rows found, %d deleted, %d resumed meanwhile and kept",
        report.found,
        report.deleted,
        report.kept,
    )
    expired = parts.ltm_store.purge_expired(moment)
    count(Metric.LTM_MEMORIES_EXPIRED, expired.deleted)
    logger.info(
        "long-term memory janitor: %d expired memories found, %d deleted, %d changed meanwhile and kept",
        expired.found,
        expired.deleted,
        expired.kept,
    )
    return {
        "found": report.found,
        "deleted": report.deleted,
        "kept": report.kept,
        "expired_found": expired.found,
        "expired_deleted": expired.deleted,
    }
