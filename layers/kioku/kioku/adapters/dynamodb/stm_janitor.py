"""The janitor's job: short-term memory rows idle for longer than ``STM_JANITOR_RETENTION_DAYS`` are
found through the ``JanitorAge`` index, shard by shard (``keys.age_shard``), and deleted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.keys import (
    AGE_SHARDS,
    JANITOR_INDEX,
    JANITOR_PK,
    JANITOR_SK,
    ItemKey,
    age_shard_partition,
)
from kioku.adapters.dynamodb.stm_items import iso
from kioku.adapters.dynamodb.table import Cursor, KiokuTable


@dataclass
class PurgeReport:
    found: int = 0
    deleted: int = 0
    kept: int = 0


class StmJanitor:
    """Purges idle short-term memory rows."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def purge_idle(self, idle_before: datetime, *, page_size: int = 100) -> PurgeReport:
        """Delete every row not updated since ``idle_before``, found through the ``JanitorAge`` index
        shard by shard (no scan). Each delete is conditional on the row still being idle, so a
        conversation that resumed between the query and the delete keeps its memory."""
        report = PurgeReport()
        cutoff = iso(idle_before)
        for shard in range(AGE_SHARDS):
            start_key: Cursor | None = None
            while True:
                keys, start_key = self._table.query(
                    "#pk = :shard AND #sk < :cutoff",
                    names={"#pk": JANITOR_PK, "#sk": JANITOR_SK},
                    values={":shard": age_shard_partition(shard), ":cutoff": cutoff},
                    index=JANITOR_INDEX,
                    limit=page_size,
                    start_key=start_key,
                    expired_too=True,  # the janitor deletes what is past its time: it must see it
                )
                for key in keys:
                    report.found += 1
                    try:
                        self._table.delete(
                            ItemKey.of(key),
                            condition="#last_updated < :cutoff",
                            names={"#last_updated": "last_updated"},
                            values={":cutoff": cutoff},
                        )
                        report.deleted += 1
                    except ConditionFailed:
                        report.kept += 1
                if start_key is None:
                    break
        return report
