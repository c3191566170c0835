"""A long-term memory's items: a memory and its item, a book's entries, the origin text, a personal
counter as a ledger (see ``ltm_store`` for the layout of an owner's partition).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from boto3.dynamodb.types import Binary

from kioku.adapters.dynamodb.keys import (
    JANITOR_PK,
    JANITOR_SK,
    THREAD_PARENT_PK,
    ItemKey,
    expiry_shard,
    memory_key,
    said_in_partition,
)
from kioku.adapters.dynamodb.table import Item
from kioku.clock import parse_time
from kioku.domain.ltm.memory import (
    ExpiryChange,
    Memory,
    MemoryDraft,
    MemoryScope,
    MemoryStatus,
    MemoryVersion,
    PersonalLedger,
    ScopeKind,
)
from kioku.domain.privacy import Origin

EXPIRES: Final = "memory_expires_at"
"""A memory's expiry, epoch seconds: not the table's TTL attribute (``expires_at``), whose deletes
would skip the counter, the guard and the book; the janitor deletes an expired memory instead."""
LAST_SHOWN: Final = "last_shown"
"""When a turn was last shown the memory (``iso_time``: string order is time order), folded in by
the janitor (``ltm_usage``)."""
GUARD_TURN: Final = "turn_id"
"""On a duplicate guard: the turn whose save wrote it (see ``MemoryDraft.turn_id``)."""
ENTRY_PREFIX: Final = "m"
SHARD_COUNT: Final = "k"
_ENTRY_EXPIRES: Final = "x"
_PENDING: Final = "p"
_ORIGIN_PRIVATE: Final = "p"
_ORIGIN_PRIVATE_THREAD: Final = "t"
_NAMES: Final = {
    "#fingerprint": "fingerprint",
    "#memory_id": "memory_id",
    "#turn": GUARD_TURN,
    "#content": "content",
    "#updated_at": "updated_at",
    "#privacy": "privacy_level",
    "#status": "status",
    "#origin": "origin",
    "#author_id": "author_id",
    "#subject_id": "subject_id",
    "#embedding": "embedding",
    "#unguarded": "unguarded",
    "#review_tag": "review_tag",
    "#expires": EXPIRES,
    "#history": "history",
    "#changes": "changes",
    "#last_shown": LAST_SHOWN,
}


def count_attribute(lineage: int) -> str:
    return f"n_{lineage}"


def entry_attribute(memory_id: str) -> str:
    return f"{ENTRY_PREFIX}{memory_id}"


def book_entry(memory: Memory) -> Item:
    """A memory as its book holds it: all of it that recall shows."""
    entry: Item = {
        "c": memory.content,
        "u": memory.updated_at.isoformat(),
        "a": memory.author_id,
        "o": origin_text(memory.origin),
    }
    if memory.subject_id:
        entry["s"] = memory.subject_id
    if memory.status is MemoryStatus.PENDING:
        entry["st"] = _PENDING
    if memory.embedding:
        entry["v"] = memory.embedding
    if memory.expires_at is not None:
        entry[_ENTRY_EXPIRES] = epoch(memory.expires_at)
    return entry


def epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def expiry_attributes(key: ItemKey, expires_at: datetime | None) -> Item:
    """A memory item's expiry, and its place in the janitor's index (sorted by expiry)."""
    if expires_at is None:
        return {}
    return {
        EXPIRES: epoch(expires_at),
        JANITOR_PK: expiry_shard(key),
        JANITOR_SK: iso_time(expires_at),
    }


def expiry_clauses(key: ItemKey, expiry: ExpiryChange | None) -> tuple[str, list[str], Item, Item]:
    """What an edit adds to its memory item's update to change its expiry (``expiry_attributes``,
    set anew or removed, so the janitor's index follows): ``", SET clauses"``, placeholders to
    remove, their names and values; nothing without a change."""
    if expiry is None:
        return "", [], {}, {}
    names = {"#expires": EXPIRES, "#janitor_pk": JANITOR_PK, "#janitor_sk": JANITOR_SK}
    if expiry.expires_at is None:
        return "", list(names), names, {}
    at = expiry.expires_at
    values = {":expires": epoch(at), ":janitor_pk": expiry_shard(key), ":janitor_sk": iso_time(at)}
    return ", #expires = :expires, #janitor_pk = :janitor_pk, #janitor_sk = :janitor_sk", [], names, values


def iso_time(moment: datetime) -> str:
    """One fixed ISO form (UTC, seconds), so that the index's string order is time order."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _expiry(value: Any) -> datetime | None:
    return datetime.fromtimestamp(int(value), UTC) if value is not None else None


def origin_text(origin: Origin) -> str:
    """``guild/channel/parent/flags``: compact, since every book entry carries one."""
    flags = (_ORIGIN_PRIVATE if origin.private else "") + (
        _ORIGIN_PRIVATE_THREAD if origin.private_thread else ""
    )
    return "/".join((origin.guild_id or "", origin.channel_id or "", origin.parent_channel_id or "", flags))


def origin_from_text(text: Any) -> Origin:
    """The origin written by ``origin_text``; anything else (no origin kept) is ``Origin.unknown()``."""
    parts = text.split("/") if isinstance(text, str) else []
    if len(parts) != 4 or not parts[1]:
        return Origin.unknown()
    guild, channel, parent, flags = parts
    return Origin(
        guild_id=guild or None,
        channel_id=channel,
        parent_channel_id=parent or None,
        private=_ORIGIN_PRIVATE in flags,
        private_thread=_ORIGIN_PRIVATE_THREAD in flags,
    )


def attribute_names(*placeholders: str) -> dict[str, str]:
    return {placeholder: _NAMES[placeholder] for placeholder in placeholders}


def memories_from_book(shards: Sequence[Item | None], scope: MemoryScope) -> tuple[Memory, ...]:
    """The memories of a book's shard items (by shard number, missing ones None), newest first."""
    memories = []
    for shard, item in enumerate(shards):
        memories.extend(_memories_of_shard(item, scope, shard))
    return tuple(sorted(memories, key=lambda memory: memory.updated_at, reverse=True))


def _memories_of_shard(item: Item | None, scope: MemoryScope, shard: int) -> list[Memory]:
    memories = []
    for name, entry in (item or {}).items():
        if name.startswith(ENTRY_PREFIX):
            updated_at = parse_time(entry["u"])
            origin = origin_from_text(entry.get("o"))
            memories.append(
                Memory(
                    scope,
                    name[len(ENTRY_PREFIX) :],
                    str(entry["c"]),
                    str(entry["a"]),
                    updated_at,
                    updated_at,
                    origin=origin,
                    subject_id=_optional_str(entry.get("s")),
                    status=MemoryStatus.PENDING if entry.get("st") == _PENDING else MemoryStatus.ACTIVE,
                    book_shard=shard,
                    embedding=_optional_bytes(entry.get("v")),
                    expires_at=_expiry(entry.get(_ENTRY_EXPIRES)),
                )
            )
    return memories


def ledger_from_item(item: Item | None) -> PersonalLedger:
    if not item:
        return PersonalLedger()
    counts = {int(name[2:]): int(value) for name, value in item.items() if name.startswith("n_")}
    return PersonalLedger(counts=counts, version=int(item.get("version", 0)))


def memory_to_item(draft: MemoryDraft, memory_id: str, fingerprint: str, shard: int = 0) -> Item:
    scope = draft.scope
    key = memory_key(scope.kind, scope.owner_id, memory_id)
    return {
        **key.as_item(),
        **expiry_attributes(key, draft.expires_at),
        "kind": scope.kind.value,
        "owner_id": scope.owner_id,
        "lineage": scope.lineage,
        "memory_id": memory_id,
        "content": draft.content,
        "fingerprint": fingerprint,
        "author_id": draft.author_id,
        "created_at": draft.created_at.isoformat(),
        "updated_at": draft.created_at.isoformat(),
        "origin": origin_text(draft.origin),
        "status": draft.status.value,
        "book_shard": shard,
        **({"subject_id": draft.subject_id} if draft.subject_id else {}),
        **({"embedding": draft.embedding} if draft.embedding else {}),
        **_said_in(draft),
    }


def _said_in(draft: MemoryDraft) -> Item:
    """A personal memory said in a server is indexed under it, for when kioku is removed from it (a
    server memory needs no index: its whole partition goes)."""
    guild_id = draft.origin.guild_id
    if draft.scope.kind is not ScopeKind.PERSONAL or not guild_id:
        return {}
    return {THREAD_PARENT_PK: said_in_partition(guild_id)}


def memory_from_item(item: Item) -> Memory:
    return Memory(
        scope=MemoryScope(ScopeKind(item["kind"]), str(item["owner_id"]), int(item["lineage"])),
        memory_id=str(item["memory_id"]),
        content=str(item["content"]),
        author_id=str(item["author_id"]),
        created_at=parse_time(item["created_at"]),
        updated_at=parse_time(item["updated_at"]),
        origin=origin_from_text(item.get("origin")),
        subject_id=_optional_str(item.get("subject_id")),
        status=MemoryStatus(item.get("status", MemoryStatus.ACTIVE)),
        book_shard=int(item.get("book_shard", 0)),
        embedding=_optional_bytes(item.get("embedding")),
        review_tag=_optional_str(item.get("review_tag")),
        holds_guard=not item.get("unguarded"),
        expires_at=_expiry(item.get(EXPIRES)),
        history=tuple(_version_from_item(version) for version in item.get("history") or ()),
        changes=int(item.get("changes", 0)),
        last_shown=parse_time(str(item[LAST_SHOWN])) if item.get(LAST_SHOWN) else None,
    )


def history_to_item(history: Sequence[MemoryVersion]) -> list[Item]:
    """A memory's history as its item keeps it (never in its book entry: recall does not read it)."""
    return [
        {
            "c": version.content,
            "since": version.since.isoformat(),
            "until": version.until.isoformat(),
            "a": version.author_id,
            "by": version.changed_by,
            **({_ENTRY_EXPIRES: epoch(version.expires_at)} if version.expires_at is not None else {}),
        }
        for version in history
    ]


def _version_from_item(version: Item) -> MemoryVersion:
    return MemoryVersion(
        content=str(version["c"]),
        since=parse_time(version["since"]),
        until=parse_time(version["until"]),
        author_id=str(version.get("a", "")),
        changed_by=str(version.get("by", "")),
        expires_at=_expiry(version.get(_ENTRY_EXPIRES)),
    )


def _optional_str(value: Any) -> str | None:
    return str(value) if value else None


def _optional_bytes(value: Any) -> bytes | None:
    """A binary attribute as bytes (boto3 reads it as ``Binary``); anything else, None."""
    if isinstance(value, Binary):
        value = value.value  # type: ignore[attr-defined]  # boto3-stubs leave out Binary.value
    return bytes(value) if isinstance(value, bytes | bytearray) and value else None
