"""The item codec of short-term memory rows: a row's item as a domain ``StmEntry`` and its raw lines
as stored maps, and back (the cookbook's ``dal/models/db.py``). The repositories that read and write
rows (``stm_reads``, ``stm_writes``, ``stm_person``, ``stm_channels``, ``stm_janitor``) map through
here and nowhere else."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from kioku.adapters.dynamodb.keys import Item
from kioku.clock import parse_time
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmEntry

logger = logging.getLogger(__name__)

MAX_CHANNEL_NAME_CHARS: Final = 100
STAMP_ATTRIBUTES: Final = (
    "channel_id",
    "persona_id",
    "server_id",
    "lineage_id",
    "parent_channel_id",
    "channel_name",
    "private",
    "private_thread",
    "described_at",
)
"""What reconciling a row with its guild's channel list reads of it: what ``entry_from_item`` needs and
the channel's privacy stamp."""


def entry_from_item(item: Item | None) -> StmEntry | None:
    """The row as a domain entry; None for a missing item or one too damaged to identify."""
    if item is None:
        return None
    try:
        address = StmAddress(
            channel_id=str(item["channel_id"]),
            persona_id=str(item["persona_id"]),
            guild_id=_optional_str(item.get("server_id")),
            user_id=_optional_str(item.get("user_id")),
        )
        return StmEntry(
            address=address,
            lineage_id=int(item["lineage_id"]),
            last_updated=_parse_time(item.get("last_updated")),
            parent_channel_id=_optional_str(item.get("parent_channel_id")),
            channel_name=_optional_str(item.get("channel_name")),
            summary=_optional_str(item.get("summary")),
            summary_updated_at=_parse_time(item.get("summary_updated_at")),
            categories={str(k): str(v) for k, v in (item.get("categories") or {}).items()},
            category_labels=tuple(
                (str(label["slug"]), str(label["label"])) for label in item.get("category_labels") or ()
            ),
            categories_updated_at=_parse_time(item.get("categories_updated_at")),
            crude=tuple(_crude_messages(item.get("crude") or ())),
            turns_since_refresh=int(item.get("turns_since_refresh", 0)),
            version=int(item.get("version", 0)),
            private=item["private"] if isinstance(item.get("private"), bool) else None,
            private_thread=item.get("private_thread") is True,
            described_at=_parse_time(item.get("described_at")),
        )
    except (KeyError, TypeError, ValueError):
        logger.warning("skipping a damaged STM item %s/%s", item.get("pk"), item.get("sk"))
        return None


def entries_from_items(items: Iterable[Item]) -> list[StmEntry]:
    """The rows of ``items`` as entries, damaged ones left out."""
    return [entry for entry in map(entry_from_item, items) if entry is not None]


def crude_lines_to_items(lines: Iterable[CrudeMessage]) -> list[Item]:
    """Raw lines as stored items (a row's ``crude`` list, or another store's lines to capture later)."""
    return [_crude_to_item(line) for line in lines]


def crude_lines_from_items(items: Iterable[Mapping[str, Any]]) -> tuple[CrudeMessage, ...]:
    return tuple(_crude_messages(items))


def iso(moment: datetime) -> str:
    """One fixed ISO form (UTC, microseconds), so that DynamoDB's string order is time order."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _optional_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _crude_messages(items: Iterable[Mapping[str, Any]]) -> Iterable[CrudeMessage]:
    for item in items:
        try:
            yield CrudeMessage(
                speaker=str(item["speaker"]),
                user_id=str(item["user_id"]),
                role=CrudeRole(item["role"]),
                text=str(item["text"]),
                ts=_parse_time(item["ts"]) or datetime.min.replace(tzinfo=UTC),
                message_id=_optional_str(item.get("message_id")),
            )
        except (KeyError, TypeError, ValueError):
            continue


def _crude_to_item(message: CrudeMessage) -> Item:
    item: Item = {
        "speaker": message.speaker,
        "user_id": message.user_id,
        "role": message.role.value,
        "text": message.text,
        "ts": iso(message.ts),
    }
    if message.message_id:
        item["message_id"] = message.message_id
    return item


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    return parse_time(str(value))
