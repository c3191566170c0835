"""What kioku keeps about one person, for that person: see it, export it, forget one or all of it.

Long-term memories about them (every persona lineage), their DM short-term rows, and the raw lines
they wrote in servers' short-term rows (found through the notes each capture leaves in their
partition). Forgetting everything also marks the person (``forgotten_at``): a turn still answering a
message they sent before, queued or retried, can store nothing of it. Summaries are written by the bot from whole conversations and are not theirs alone, so
they are neither exported nor rewritten here (docs/privacy.md says so).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kioku import clock
from kioku.adapters.discord_rest import DiscordRest
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.domain.ltm.memory import Memory, MemoryNotFound, ScopeKind
from kioku.domain.privacy import Place, PrivacyPolicy, may_recall
from kioku.domain.stm.entries import StmEntry
from kioku.domain.turn_jobs import TurnJob

MAX_FORGET_ROUNDS: Final = 8
"""Forget-all lists and deletes again until a round finds nothing, so a memory saved by a turn at the
same moment is caught; a round finds more only while such turns keep racing."""
EXPORT_FORMAT: Final = "kioku-export/1"


@dataclass(frozen=True, slots=True)
class ForgetReport:
    memories: int = 0
    dm_rows: int = 0
    lines: int = 0

    @property
    def nothing(self) -> bool:
        return not (self.memories or self.dm_rows or self.lines)


def memories_about(
    user_id: str, store: DynamoMemoryStore, *, place: Place, policy: PrivacyPolicy
) -> list[Memory]:
    """The long-term memories about ``user_id`` this context may show them: everything they said
    about themself; what others said about them only where it could be recalled."""
    return [
        memory
        for memory in store.memories_of(ScopeKind.PERSONAL, user_id)
        if memory.author_id == user_id or may_recall(memory.origin, place, policy)
    ]


def forget_one(user_id: str, memory_id: str, store: DynamoMemoryStore) -> Memory | None:
    """Delete the memory ``memory_id`` about ``user_id``, whoever wrote it; None when there is none."""
    for _ in range(MAX_FORGET_ROUNDS):
        memory = store.find(ScopeKind.PERSONAL, user_id, memory_id)
        if memory is None:
            return None
        try:
            store.delete(memory)
            return memory
        except MemoryNotFound:
            continue  # it changed between the read and the delete: read it again
    return None


def forget_everything(
    user_id: str,
    ltm_store: DynamoMemoryStore,
    stm_store: StmStore,
    *,
    ledger: TurnLedger,
    now: datetime | None = None,
) -> ForgetReport:
    """Every long-term memory about ``user_id``, their DM rows, and every raw line they wrote; first
    the mark that they forgot at ``now`` (so no turn answering what they said before can store it
    again) and the unfinished replies to them (which quote what they said)."""
    ledger.forget_turns_of(user_id, now or clock.now())
    memories = 0
    for _ in range(MAX_FORGET_ROUNDS):
        found = ltm_store.memories_of(ScopeKind.PERSONAL, user_id)
        if not found:
            break
        for memory in found:
            try:
                ltm_store.delete(memory)
                memories += 1
            except MemoryNotFound:
                continue  # changed or deleted meanwhile: the next round reads it again
    lines = stm_store.forget_lines_of(user_id)
    dm_rows = stm_store.delete_dm_rows_of(user_id)
    return ForgetReport(memories=memories, dm_rows=dm_rows, lines=lines)


def export(user_id: str, ltm_store: DynamoMemoryStore, stm_store: StmStore, now: datetime) -> dict[str, Any]:
    """Everything above as one JSON-ready document."""
    return {
        "format": EXPORT_FORMAT,
        "user_id": user_id,
        "exported_at": now.isoformat(),
        "long_term_memories": [_memory_record(m) for m in ltm_store.memories_of(ScopeKind.PERSONAL, user_id)],
        "direct_message_short_term_memory": [
            _row_record(row, user_id) for row in stm_store.dm_rows_of(user_id)
        ],
        "your_lines_in_server_short_term_memory": [
            _row_record(row, user_id, only_own_lines=True) for row in stm_store.rows_with_lines_of(user_id)
        ],
    }


def send_export(
    job: TurnJob, discord: DiscordRest, ltm_store: DynamoMemoryStore, stm_store: StmStore, now: datetime
) -> None:
    """Attach the person's export to the "thinking…" answer of their ``/personal memories export``.
    Sending it again (a redelivered job) only replaces the same attachment."""
    user_id = str(job.author["id"])
    document = json.dumps(export(user_id, ltm_store, stm_store, now), ensure_ascii=False, indent=2).encode()
    discord.edit_original_response(
        str(job.application_id),
        str(job.interaction_token),
        "Everything I keep about you, as of now. Only you can see this.",
        file=(f"kioku-export-{user_id}.json", document, "application/json"),
    )


def _memory_record(memory: Memory) -> dict[str, Any]:
    origin = memory.origin
    return {
        "id": memory.memory_id,
        "text": memory.content,
        "persona_lineage": memory.scope.lineage,
        "saved_by": memory.author_id,
        "saved_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "saved_in": {
            "server_id": origin.guild_id,
            "channel_id": origin.channel_id,
            "private_channel": origin.private if origin.channel_id else None,
        },
    }


def _row_record(row: StmEntry, user_id: str, *, only_own_lines: bool = False) -> dict[str, Any]:
    lines: Sequence = [m for m in row.crude if m.user_id == user_id] if only_own_lines else row.crude
    record: dict[str, Any] = {
        "server_id": row.address.server_id,
        "channel_id": row.channel_id,
        "persona": row.address.persona_id,
        "messages": [
            {"speaker": m.speaker, "user_id": m.user_id, "text": m.text, "sent_at": m.ts.isoformat()}
            for m in lines
        ],
    }
    if not only_own_lines:
        record["summary"] = row.summary
        record["categories"] = dict(row.categories)
    return record
