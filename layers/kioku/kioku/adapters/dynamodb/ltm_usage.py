"""When each memory was last shown to a turn (``Memory.last_shown``), folded in by the janitor.

A turn's record names the memories it was shown and is indexed by when it was committed
(``turn_traces.shown_index``, written with the record: a plain turn makes no request for it). Each
run reads the records committed since its mark, partition by partition, and sets each shown
memory's ``last_shown`` on the condition that the memory exists and holds an older time (a memory
deleted meanwhile is not recreated; no value goes backwards). The mark (a second, and how many of
its records were folded) moves after each page, so a run stopped midway folds that page again the
next time, which changes nothing. Only records
committed ``SETTLED`` ago are read, so one the index shows late is not passed over.

Only turns in public channels and DMs are folded: a list shows ``last_shown`` (as an order and a
mark) wherever it is asked from, and a private channel's turns are told of only there (the use
notes the personal list reads are filtered by where it is asked from; ``last_shown`` has no place).
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.keys import (
    AGE_SHARDS,
    JANITOR_INDEX,
    JANITOR_PK,
    JANITOR_SK,
    ItemKey,
    memory_key,
    shown_shard_partition,
    usage_mark_key,
)
from kioku.adapters.dynamodb.ltm_items import LAST_SHOWN, iso_time
from kioku.adapters.dynamodb.ltm_transactions import LtmTransactions
from kioku.adapters.dynamodb.turn_traces import SHOWN_USES, trace_from_item

SHOWN_PER_RUN: Final = 500
"""The most turn records one janitor run folds; the rest wait for the next run (a day later, well
within the records' 16 days)."""
SETTLED: Final = timedelta(minutes=15)
_PAGE: Final = 99
_START: Final = "0"
"""Below every index key (they begin with a year)."""


@dataclass
class UsageReport:
    records: int = 0
    folded: int = 0
    kept: int = 0
    """Memories gone, or already holding a later time."""


class LtmUsage(LtmTransactions):
    """Folds the turns' records into their memories' ``last_shown``."""

    def fold_last_shown(self, now: datetime, *, at_most: int = SHOWN_PER_RUN) -> UsageReport:
        report = UsageReport()
        marks = self._guarded(self._table.get, usage_mark_key()) or {}
        settled = iso_time(now - SETTLED) + "#~"
        for shard in range(AGE_SHARDS):
            mark = _Mark.of(marks, shard)
            while report.records < at_most:
                wanted = at_most - report.records
                keys, _ = self._guarded(
                    self._table.query,
                    "#pk = :shard AND #sk BETWEEN :mark AND :settled",
                    names={"#pk": JANITOR_PK, "#sk": JANITOR_SK},
                    values={":shard": shown_shard_partition(shard), ":mark": mark.at, ":settled": settled},
                    index=JANITOR_INDEX,
                    limit=min(_PAGE, wanted) + mark.done,  # that second's records folded come first
                )
                keys = keys[mark.done :][:wanted]
                if not keys:
                    break
                for key in keys:
                    report.records += 1
                    self._fold_record(ItemKey.of(key), report)
                mark = mark.past([str(key[JANITOR_SK]) for key in keys])
                self._move_mark(shard, mark)
        return report

    def _fold_record(self, record: ItemKey, report: UsageReport) -> None:
        trace = trace_from_item(self._guarded(self._table.get, record))
        if trace is None:  # expired meanwhile, or its trace forgotten
            return
        if trace.guild_id is not None and (trace.channel_private or trace.private_thread):
            return  # a time would tell of a private channel's activity wherever a list is read
        shown = {(m.kind, m.owner_id, m.memory_id) for m in trace.memories if m.use in SHOWN_USES}
        for kind, owner_id, memory_id in sorted(shown):
            try:
                self._guarded(
                    self._table.update,
                    memory_key(kind, owner_id, memory_id),
                    "SET #last_shown = :at",
                    condition="attribute_exists(#memory_id) AND "
                    "(attribute_not_exists(#last_shown) OR #last_shown < :at)",
                    names={"#last_shown": LAST_SHOWN, "#memory_id": "memory_id"},
                    values={":at": iso_time(trace.at)},
                )
                report.folded += 1
            except ConditionFailed:
                report.kept += 1

    def _move_mark(self, shard: int, mark: _Mark) -> None:
        """The shard's mark moved forward to ``mark`` (never back: two runs at once may race)."""
        with suppress(ConditionFailed):  # another run is ahead
            self._guarded(
                self._table.update,
                usage_mark_key(),
                "SET #at = :at, #done = :done",
                condition="attribute_not_exists(#at) OR #at < :at OR (#at = :at AND #done < :done)",
                names={"#at": f"w{shard}", "#done": f"n{shard}"},
                values={":at": mark.at, ":done": mark.done},
            )


@dataclass(frozen=True)
class _Mark:
    """Where a shard's fold resumes: a second (``at``) and how many of its records were folded. A
    time, not a record's key: that names its message, which a removed server's erasure must not
    leave behind here. Records are read once settled, so none is added to a folded second."""

    at: str = _START
    done: int = 0

    @classmethod
    def of(cls, marks: dict[str, object], shard: int) -> _Mark:
        at = str(marks.get(f"w{shard}", _START))
        if "#" in at:  # a record's key, as marks were first kept: that record was the last folded
            return cls(at.split("#", 1)[0], 0)
        return cls(at, int(str(marks.get(f"n{shard}", 0))))

    def past(self, folded: list[str]) -> _Mark:
        """The mark after folding ``folded`` (index keys, in order, all after this mark)."""
        last = folded[-1].split("#", 1)[0]
        in_last = sum(1 for key in folded if key.split("#", 1)[0] == last)
        return _Mark(last, in_last + (self.done if last == self.at else 0))
