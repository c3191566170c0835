"""The record that a turn is done: written in the same transaction as the turn's capture, so that
a redelivered or duplicated turn is recognised (and never replies or counts twice) with no
request of its own: the record is read in the turn's first BatchGetItem.

    pk = TURN#{source}#{turn_id}   sk = DONE   (reply ids, apologised, expires_at after a week)
    pk = USER#{user_id}            sk = RATE#{unix minute}   (turns of the person that minute; TTL)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.table import Item, Key, KiokuTable

RECORD_RETENTION: Final = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    reply_ids: tuple[str, ...] = ()
    apologised: bool = False


def turn_record_key(source: str, turn_id: str) -> Key:
    return {"pk": f"TURN#{source}#{turn_id}", "sk": "DONE"}


def outcome_from_item(item: Item | None) -> TurnOutcome | None:
    if item is None:
        return None
    return TurnOutcome(reply_ids=tuple(item.get("reply_ids", ())), apologised=bool(item.get("apologised")))


class TurnLedger:
    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def op_record(self, source: str, turn_id: str, outcome: TurnOutcome, now: datetime) -> dict[str, Any]:
        """A transaction operation recording the turn as done, refused if it already is."""
        return self._table.op_put(
            _record_item(source, turn_id, outcome, now), condition="attribute_not_exists(pk)"
        )

    def record(self, source: str, turn_id: str, outcome: TurnOutcome, now: datetime) -> bool:
        """Record the turn as done on its own (when there is no capture to ride with); False if it was."""
        try:
            self._table.put(_record_item(source, turn_id, outcome, now), condition="attribute_not_exists(pk)")
        except ConditionFailed:
            return False
        return True


RATE_WINDOW_SECONDS = 60


class RateLedger:
    """Turns per person per minute, counted with a conditional write: the count never passes
    ``limit + 1``, so the turn that goes over is told (once) and the ones after it are refused."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def take(self, user_id: str, now: datetime, limit: int) -> int | None:
        """Count a turn of ``user_id``; its number within the minute, or None once past ``limit + 1``."""
        minute = int(now.timestamp()) // RATE_WINDOW_SECONDS
        try:
            item = self._table.update(
                {"pk": f"USER#{user_id}", "sk": f"RATE#{minute}"},
                "ADD #turns :one SET #expires_at = :expires_at",
                condition="attribute_not_exists(#turns) OR #turns <= :limit",
                names={"#turns": "turns", "#expires_at": "expires_at"},
                values={
                    ":one": 1,
                    ":limit": limit,
                    ":expires_at": (minute + 2) * RATE_WINDOW_SECONDS,
                },
                return_new=True,
            )
        except ConditionFailed:
            return None
        return int((item or {}).get("turns", 0))


def _record_item(source: str, turn_id: str, outcome: TurnOutcome, now: datetime) -> Item:
    return {
        **turn_record_key(source, turn_id),
        "reply_ids": list(outcome.reply_ids),
        "apologised": outcome.apologised,
        "completed_at": now.isoformat(),
        "expires_at": int((now + RECORD_RETENTION).timestamp()),
    }
