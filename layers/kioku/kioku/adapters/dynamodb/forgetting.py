"""The mark ``/personal memories forget-all`` leaves on a person, and the check every write of what
they said carries.

The mark (``keys.forgotten_key``) holds ``forgotten_at``, when they last asked to forget everything,
and only moves forward (a conditional write keeps the latest). A capture of their lines or a
save of a memory they wrote or that is about them carries ``op_not_forgotten_since`` in its own
transaction: a condition DynamoDB checks as it writes, so no forget-all can slip between a read and
the write.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.keys import forgotten_key
from kioku.adapters.dynamodb.table import Item, KiokuTable, UpdateExpression
from kioku.clock import parse_time

_NAMES: Final = {"#forgotten_at": "forgotten_at"}


def forgotten_at_from_item(item: Item | None) -> datetime | None:
    if not item or not item.get("forgotten_at"):
        return None
    return parse_time(str(item["forgotten_at"]))


def op_not_forgotten_since(table: KiokuTable, user_id: str, sent_at: datetime) -> dict[str, Any]:
    """A transaction part that fails if ``user_id`` asked to forget everything at or after
    ``sent_at`` (``kioku.domain.forgetting.forgotten_since``, as a condition)."""
    return table.op_check(
        forgotten_key(user_id),
        "attribute_not_exists(#forgotten_at) OR #forgotten_at < :sent_at",
        names=_NAMES,
        values={":sent_at": _stamp(sent_at)},
    )


def mark_forgotten(table: KiokuTable, user_id: str, at: datetime) -> None:
    """Note that ``user_id`` asked to forget everything at ``at``, unless a later ask is noted."""
    expression = UpdateExpression()
    expression.set("forgotten_at", _stamp(at))
    forgotten_at = expression.name("forgotten_at")
    try:
        table.update_with(
            forgotten_key(user_id),
            expression,
            condition=f"attribute_not_exists({forgotten_at}) OR {forgotten_at} < {expression.value(_stamp(at))}",
        )
    except ConditionFailed:
        return  # a later forget-all is noted already


def _stamp(moment: datetime) -> str:
    """One fixed ISO form (UTC, microseconds), so that DynamoDB's string order is time order."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")
