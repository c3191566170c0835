"""Which gateway shards one relay process opens: ``--shard-count`` and ``--shard-ids``, validated.

Discord sends each guild's events to shard ``(guild_id >> 22) % shard_count``, so N processes with
the same count and disjoint ids split the guilds between them. No hikari here: ``gateway`` hands
the plan to hikari's own sharding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

AUTO: Final = "auto"


class ShardingError(ValueError):
    """The shard options cannot work; the message names the option and why."""


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """``count`` None: Discord's recommended count (``GET /gateway/bot``); ``ids`` None: every shard
    of the count in this one process. The default plan (both None) is the unsharded relay: hikari
    opens as many shards as Discord recommends."""

    count: int | None = None
    ids: tuple[int, ...] | None = None

    @property
    def needs_recommended_count(self) -> bool:
        """Explicit ids with ``auto``: the count must be fetched before the ids can be checked."""
        return self.count is None and self.ids is not None

    def resolve(self, recommended_count: int) -> tuple[tuple[int, ...], int]:
        """The ids and the count to identify with, given Discord's recommended count."""
        count = self.count if self.count is not None else recommended_count
        ids = self.ids if self.ids is not None else tuple(range(count))
        _check_in_range(ids, count, f"Discord's recommended shard count ({AUTO})")
        return ids, count

    def describe(self) -> str:
        count = str(self.count) if self.count is not None else f"{AUTO} (Discord's recommendation)"
        ids = ",".join(map(str, self.ids)) if self.ids is not None else "all"
        return f"shard count {count}, shard ids {ids}"


def parse_shard_plan(count: str | None, ids: str | None, *, count_source: str, ids_source: str) -> ShardPlan:
    """The plan from the raw option values (None or blank: not given); ``*_source`` name where each came
    from (a flag or a variable), for the error."""
    count = (count or "").strip()
    ids = (ids or "").strip()
    if not count:
        if ids:
            raise ShardingError(f"{ids_source} needs a shard count too (a number or '{AUTO}')")
        return ShardPlan()
    shard_count = None if count.lower() == AUTO else _positive_count(count, count_source)
    if not ids:
        return ShardPlan(count=shard_count)
    shard_ids = _shard_ids(ids, ids_source)
    if shard_count is not None:
        _check_in_range(shard_ids, shard_count, f"{count_source} ({shard_count})")
    return ShardPlan(count=shard_count, ids=shard_ids)


def _positive_count(raw: str, source: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ShardingError(f"{source} must be a whole number of shards or '{AUTO}'") from None
    if value < 1:
        raise ShardingError(f"{source} must be at least 1")
    return value


def _shard_ids(raw: str, source: str) -> tuple[int, ...]:
    parts = [part.strip() for part in raw.split(",")]
    try:
        values = tuple(int(part) for part in parts)
    except ValueError:
        raise ShardingError(f"{source} must be comma-separated whole numbers, such as 0,1") from None
    duplicates = sorted({value for value in values if values.count(value) > 1})
    if duplicates:
        raise ShardingError(f"{source} names shard {', '.join(map(str, duplicates))} more than once")
    return values


def _check_in_range(ids: tuple[int, ...], count: int, count_name: str) -> None:
    outside = [value for value in ids if not 0 <= value < count]
    if outside:
        raise ShardingError(
            f"shard id {', '.join(map(str, outside))} is outside {count_name}: ids run from 0 to {count - 1}"
        )
