"""What a turn's model was shown ("Why this answer?"), kept in the turn's own commit: ids and places,
never texts.

- On the completion record (``keys.turn_record_key``): the trace, as ``why`` (the place, the server's
  memories and rows, the count left out) and one ``why_{person}`` per person whose memories or DM row
  it names, so that person's forget-all removes their part with one UpdateItem.
- ``keys.reply_key`` per posted message of the reply: which turn it answered, so the message command
  finds the trace by the message id, whoever posted it (the bot, or a persona's webhook).
- ``keys.shown_note_key`` in the partition of each person named (at most ``MAX_PEOPLE_NOTED``): the
  ids of their memories the turn was shown and where, so ``/personal memories list`` counts uses with
  one Query of their partition, and their forget-all finds the records to clear.

All three are put in the commit's transaction (no request of their own) and expire with the record
(``RECORD_RETENTION``, 16 days).
"""

from __future__ import annotations

import json
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any, Final

from kioku.adapters.dynamodb.errors import ConditionFailed
from kioku.adapters.dynamodb.forgetting import op_not_forgotten_since
from kioku.adapters.dynamodb.keys import (
    JANITOR_PK,
    JANITOR_SK,
    reply_key,
    shown_note_key,
    shown_note_range,
    shown_shard,
    turn_record_key,
)
from kioku.adapters.dynamodb.table import Cursor, Item, KiokuTable, UpdateExpression
from kioku.clock import parse_time
from kioku.domain.ltm.memory import ScopeKind
from kioku.domain.stm.entries import StmAddress
from kioku.domain.turn import TurnKey
from kioku.domain.why import MemoryUse, ShownNote, TurnTrace, UsedMemory, UsedRow, memory_key_text

WHY: Final = "why"
PERSON_PREFIX: Final = "why_"
_KINDS: Final = {ScopeKind.SERVER: "s", ScopeKind.PERSONAL: "p"}
_KIND_OF: Final = {code: kind for kind, code in _KINDS.items()}
SHOWN_USES: Final = frozenset({MemoryUse.RECALLED, MemoryUse.FOUND})
"""What a turn did with a memory that counts as showing it (``Memory.last_shown``)."""


def shown_index(source: str, turn_id: str, trace: TurnTrace, committed_at: datetime) -> Item:
    """The record's place in the ``JanitorAge`` index, by when it was committed, when its turn was
    shown memories: the janitor folds it into their ``last_shown`` (``ltm_usage``). Attributes of
    the record itself: no request of their own."""
    if not any(memory.use in SHOWN_USES for memory in trace.memories):
        return {}
    key = turn_record_key(source, turn_id)
    moment = committed_at.astimezone(UTC).isoformat(timespec="seconds")
    return {JANITOR_PK: shown_shard(key), JANITOR_SK: f"{moment}#{source}#{turn_id}"}


def trace_attributes(trace: TurnTrace) -> Item:
    """The record's attributes holding ``trace``: its common part, and each person's own."""
    trace = trace.capped()
    people = set(trace.people())
    common = _entries(trace.memories, trace.rows, lambda person: person not in people if person else True)
    attributes: Item = {
        WHY: json.dumps(
            {
                "g": trace.guild_id,
                "c": trace.channel_id,
                "p": trace.parent_channel_id,
                "n": trace.channel_name,
                "x": trace.channel_private,
                "v": trace.private_thread,
                "l": trace.lineage,
                "a": trace.persona_id,
                "t": trace.at.isoformat(),
                "o": trace.left_out,
                "u": trace.unnoted,
                **common,
            },
            ensure_ascii=False,
        )
    }
    for person in people:
        own = _entries(trace.memories, trace.rows, lambda about, person=person: about == person)
        attributes[f"{PERSON_PREFIX}{person}"] = json.dumps(own, ensure_ascii=False)
    return attributes


def trace_from_item(item: Item | None) -> TurnTrace | None:
    if item is None or WHY not in item:
        return None
    common = json.loads(str(item[WHY]))
    memories, rows = _parse_entries(common)
    for name, value in item.items():
        if name.startswith(PERSON_PREFIX):
            own_memories, own_rows = _parse_entries(json.loads(str(value)))
            memories += own_memories
            rows += own_rows
    return TurnTrace(
        guild_id=common.get("g"),
        channel_id=str(common["c"]),
        parent_channel_id=common.get("p"),
        channel_name=common.get("n"),
        channel_private=bool(common.get("x", True)),
        private_thread=bool(common.get("v", False)),
        lineage=int(common.get("l", 0)),
        persona_id=common.get("a"),
        at=parse_time(str(common["t"])),
        memories=tuple(memories),
        rows=tuple(rows),
        left_out=int(common.get("o", 0)),
        unnoted=int(common.get("u", 0)),
    )


def commit_parts(
    table: KiokuTable,
    key: TurnKey,
    trace: TurnTrace,
    reply_ids: tuple[str, ...],
    expires_at: int,
    *,
    checked: frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    """The pointers from each posted message to the turn and each named person's note, as
    transaction operations for the turn's commit; with each person's forget-all check (as every
    write about them carries), unless ``checked`` says the transaction checks them already (one
    item, one operation): a turn retried after their forget-all fails, and is committed without them."""
    parts = [
        table.op_put(
            {
                **reply_key(message_id).as_item(),
                "source": key.source,
                "turn_id": key.turn_id,
                "expires_at": expires_at,
            }
        )
        for message_id in dict.fromkeys(reply_ids)
    ]
    for person in trace.people():
        own = trace.of_person(person)
        note: Item = {
            **shown_note_key(person, key.source, key.turn_id).as_item(),
            "source": key.source,
            "turn_id": key.turn_id,
            "at": trace.at.isoformat(),
            "channel_id": trace.channel_id,
            "channel_private": trace.channel_private,
            "private_thread": trace.private_thread,
            "memories": [memory_key_text(m.kind, m.owner_id, m.memory_id) for m in own.memories],
            "expires_at": expires_at,
        }
        for name, value in (
            ("guild_id", trace.guild_id),
            ("parent_channel_id", trace.parent_channel_id),
        ):  # no channel name: a private channel's would sit in the person's partition
            if value:
                note[name] = value
        parts.append(table.op_put(note))
        if person not in checked:
            parts.append(op_not_forgotten_since(table, person, key.sent_at))
    return parts


class TurnTraces:
    """Reads the traces by a reply's message id, a person's notes, and forgets a person's part."""

    def __init__(self, table: KiokuTable) -> None:
        self._table = table

    def of_reply(self, message_id: str) -> TurnTrace | None:
        """The trace of the turn whose reply holds message ``message_id``; None when it is not a
        reply kioku keeps a trace of (or the trace expired)."""
        pointer = self._table.get(reply_key(message_id))
        if pointer is None:
            return None
        record = self._table.get(turn_record_key(str(pointer["source"]), str(pointer["turn_id"])))
        return trace_from_item(record)

    def notes_of(self, user_id: str) -> list[ShownNote]:
        """Every turn noted as shown memories about ``user_id`` (kept 16 days), oldest first."""
        notes: list[ShownNote] = []
        start_key: Cursor | None = None
        while True:
            items, start_key = self._table.query_range(shown_note_range(user_id), start_key=start_key)
            notes += [_note(item) for item in items]
            if start_key is None:
                return sorted(notes, key=lambda note: note.at)

    def forget(self, user_id: str) -> int:
        """Remove ``user_id``'s part of every trace noted in their partition, and the notes."""
        forgotten = 0
        for note in self.notes_of(user_id):
            expression = UpdateExpression()
            expression.remove(f"{PERSON_PREFIX}{user_id}")
            with suppress(ConditionFailed):  # the record expired: nothing of them is left there
                self._table.update_with(
                    turn_record_key(note.source, note.turn_id),
                    expression,
                    condition="attribute_exists(pk)",
                )
            self._table.delete(shown_note_key(user_id, note.source, note.turn_id))
            forgotten += 1
        return forgotten


def _entries(memories: tuple[UsedMemory, ...], rows: tuple[UsedRow, ...], keep: Any) -> dict[str, Any]:
    return {
        "m": [
            [_KINDS[m.kind], m.owner_id, m.memory_id, m.use.value, m.about] for m in memories if keep(m.about)
        ],
        "r": [
            [
                r.address.guild_id,
                r.address.user_id,
                r.address.channel_id,
                r.address.persona_id,
                r.last_updated.isoformat() if r.last_updated else None,
                "".join(flag for flag, on in (("c", r.current), ("s", r.summary), ("k", r.categories)) if on),
            ]
            for r in rows
            if keep(r.person)
        ],
    }


def _parse_entries(raw: dict[str, Any]) -> tuple[list[UsedMemory], list[UsedRow]]:
    memories = [
        UsedMemory(_KIND_OF[kind], str(owner), str(memory_id), MemoryUse(use), about)
        for kind, owner, memory_id, use, about in raw.get("m", ())
    ]
    rows = [
        UsedRow(
            StmAddress(channel_id=channel, persona_id=persona, guild_id=guild, user_id=user),
            parse_time(updated) if updated else None,
            current="c" in flags,
            summary="s" in flags,
            categories="k" in flags,
        )
        for guild, user, channel, persona, updated, flags in raw.get("r", ())
    ]
    return memories, rows


def _note(item: Item) -> ShownNote:
    at = item.get("at")
    return ShownNote(
        source=str(item.get("source", "")),
        turn_id=str(item.get("turn_id", "")),
        at=parse_time(str(at)) if at else datetime.min.replace(tzinfo=UTC),
        guild_id=item.get("guild_id"),
        channel_id=str(item.get("channel_id", "")),
        parent_channel_id=item.get("parent_channel_id"),
        channel_private=bool(item.get("channel_private", True)),
        memory_keys=tuple(str(key) for key in item.get("memories", ())),
        private_thread=bool(item.get("private_thread", False)),
    )
