"""The one path every new memory is saved by, the model's tool and every person's command alike:
the owner's privacy level, the near-duplicate answer from the memories the saver may see, then one
limited write that holds the exact duplicate guard; and what the save answers (the notice, the close
memories it may correct, a full book's least used)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kioku.config import Settings
from kioku.domain.ltm.full_book import counted_in, least_used
from kioku.domain.ltm.memory import (
    MemoryDraft,
    MemoryLimitReached,
    MemoryScope,
    MemoryStatus,
    MemoryStoreFailed,
    PersonalLedger,
    PersonalTarget,
    SaveOutcome,
    ScopeKind,
    allows_personal_memories,
    content_fingerprint,
)
from kioku.domain.ltm.notification import memory_pending_embed, memory_saved_embed
from kioku.domain.ltm.ports import MemoryStore
from kioku.domain.ltm.recall import Recall, Recalled, most_similar
from kioku.domain.ltm.saving import (
    check_personal_saving,
    owner_of,
    saving_origin,
    scope_name,
    shown_here,
)
from kioku.domain.ltm.statuses import SaveStatus
from kioku.domain.ltm.targets import TargetUser
from kioku.domain.ltm.vectors import embedded_text
from kioku.domain.models import ServerConfig
from kioku.domain.tools import ToolResult
from kioku.domain.turn import TurnContext
from kioku.domain.why import MAX_PEOPLE_NOTED, MemoryUse, UsedMemory
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.tool_failures import PRIVACY_RESTRICTED

NEAR_DUPLICATE_SIMILARITY: Final = 0.8
"""Share of words in common above which a new memory says what one in its scope already says.
Measured by ``make bench`` (memory.near_duplicate): no two distinct facts of the generated
conversation reach it, most rewordings of one fact do."""
SIMILAR_ON_LIMIT: Final = 3
CORRECTION_SIMILARITY: Final = 0.2
"""Share of words in common from which a saved memory may correct one its scope holds: the save's
answer names those (at most ``SIMILAR_ON_LIMIT``) and asks whether it replaces one. Measured by
``python -m bench.memory_corrections`` (docs/memory.md, "Corrections")."""


def _write_memory(
    store: MemoryStore,
    draft: MemoryDraft,
    config: ServerConfig,
    *,
    limit: int,
    ledger: PersonalLedger | None = None,
) -> SaveOutcome:
    """The one write of a new memory (``save_memory``'s, for the model's tool and every command):
    refused with ``PersonalMemoriesOff`` when it is personal and the server keeps none, else the
    store's limited write, as private as ``config``'s channel overrides."""
    check_personal_saving(draft.scope.kind, config.capabilities)
    return store.create(draft, limit=limit, ledger=ledger, policy=config.privacy)


@dataclass(frozen=True, slots=True)
class Saving:
    """A memory whose scope and text are decided (by the model's tool, or by a person's command),
    to be saved by ``save_memory`` under the rules every save keeps."""

    scope: MemoryScope
    content: str
    subject: TargetUser
    """Whom the notice names: a personal memory's owner, or the person a server memory is about."""
    target: PersonalTarget | None = None
    """A personal memory's owner, as read (privacy level and counts); None for a server memory."""
    subject_id: str | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    note: str | None = None
    expires_at: datetime | None = None


def save_memory(
    saving: Saving,
    turn: TurnContext,
    *,
    store: MemoryStore,
    settings: Settings,
    recalled: Recall | None = None,
    embeddings: TurnEmbeddings | None = None,
) -> ToolResult:
    """The one path every new memory is saved by: the owner's privacy level, the near-duplicate answer (``recalled``: the memories of the scope the
    saver may see), then one write that holds the limit and the exact duplicate guard."""
    scope, content, target = saving.scope, saving.content, saving.target
    if target is not None and not allows_personal_memories(target.privacy_level):
        return ToolResult(SaveStatus.PRIVACY_RESTRICTED, {"message": PRIVACY_RESTRICTED})
    limit = settings.MAX_SERVER_MEMORIES if target is None else settings.MAX_PERSONAL_MEMORIES
    similar = most_similar(recalled or Recall(), scope, content, SIMILAR_ON_LIMIT)
    remembered = _already_remembered([(n, c) for n, c in similar if c.memory.scope == scope], content)
    if remembered is not None:
        return remembered
    embedding = embeddings.embed(embedded_text(content)) if embeddings else None
    draft = MemoryDraft(
        scope=scope,
        content=content,
        author_id=turn.user.user_id,
        created_at=turn.now,
        origin=saving_origin(turn),
        subject_id=saving.subject_id,
        status=saving.status,
        said_at=turn.sent_at,
        embedding=embedding,
        turn_id=turn.turn_id,
        expires_at=saving.expires_at,
    )
    try:
        outcome = _write_memory(
            store, draft, turn.config, limit=limit, ledger=target.ledger if target else None
        )
    except MemoryLimitReached as exc:
        if embedding is not None:
            similar = most_similar(recalled or Recall(), scope, content, SIMILAR_ON_LIMIT, embedding)
        return ToolResult(
            SaveStatus.LIMIT_EXCEEDED,
            {
                "message": f"this scope already holds {exc.limit} memories; make room first: merge one "
                "of the least used into another with update_long_term_memory, or delete one (empty "
                "memory_content), such as the most similar ones; then save again",
                "least_used": _least_used(store, scope, recalled),
                "similar": [{"memory_id": c.memory.memory_id, "memory": c.text} for _, c in similar],
            },
        )
    return _saved(saving, draft, outcome, turn, similar)


def _saved(
    saving: Saving,
    draft: MemoryDraft,
    outcome: SaveOutcome,
    turn: TurnContext,
    similar: list[tuple[float, Recalled]],
) -> ToolResult:
    scope, content, subject = saving.scope, saving.content, saving.subject
    data: dict[str, Any] = {"memory_id": outcome.memory_id, "memory_scope": scope_name(scope.kind)}
    if scope.kind is ScopeKind.PERSONAL:
        data["about"] = subject.label()  # the person by name, so the model can say whom it remembered
    saved = draft.saved_as(outcome.memory_id)
    if not outcome.created:
        data["message"] = f"already remembered as memory #{outcome.memory_id}; nothing new was saved"
        return ToolResult(SaveStatus.SAVED, data, touched=(UsedMemory.of(saved, MemoryUse.FOUND),))
    touched = (UsedMemory.of(saved, MemoryUse.SAVED),)
    if saving.note:
        data["message"] = saving.note
    data.update(_may_correct(similar, outcome.memory_id))
    if saving.status is MemoryStatus.PENDING:
        data["message"] = (
            "saved for review: a server manager must approve it before you remember it; "
            "tell the person it awaits review"
        )
        embed = memory_pending_embed(
            content, outcome.memory_id, subject_name=subject.display_name, bot_name=turn.bot_name
        )
        return ToolResult(SaveStatus.PENDING_REVIEW, data, notification=embed, touched=touched)
    embed = memory_saved_embed(
        content if shown_here(saved, turn) else None,
        outcome.memory_id,
        scope=scope.kind,
        subject_name=subject.display_name,
        bot_name=turn.bot_name,
        personal_memories_enabled=turn.config.capabilities.personal_memories_enabled,
    )
    return ToolResult(
        SaveStatus.SAVED, data, notification=embed, notification_about=owner_of(scope), touched=touched
    )


def _least_used(store: MemoryStore, scope: MemoryScope, recalled: Recall | None) -> list[dict[str, str]]:
    """The full scope's memories this turn may see (its recall holds them), least recently used
    first; when they were last shown is read only here, on the refusal (a Query per person noted)."""
    candidates = [c for c in (recalled or Recall()).candidates if counted_in(scope, c)]
    if not candidates:
        return []
    people = [scope.owner_id] if scope.kind is ScopeKind.PERSONAL else [c.memory.about for c in candidates]
    try:
        shown = store.last_shown([p for p in dict.fromkeys(people) if p][:MAX_PEOPLE_NOTED])
    except MemoryStoreFailed:
        shown = {}  # the refusal still names them, by age
    return [used.as_answer() for used in least_used(candidates, shown)]


def _may_correct(similar: list[tuple[float, Recalled]], memory_id: str) -> dict[str, Any]:
    """What a new memory's answer adds when memories of its scope say something close: them, and
    the question whether the new fact replaces one (a correction lands on the fact it corrects)."""
    close = [c for score, c in similar if CORRECTION_SIMILARITY <= score < NEAR_DUPLICATE_SIMILARITY]
    if not close:
        return {}
    return {
        "close_memories": [{"memory_id": c.memory.memory_id, "memory": c.text} for c in close],
        "question": (
            "does the new fact replace one of these close memories? If it corrects one, move it "
            "there: update_long_term_memory that memory with the corrected fact, then delete "
            f"#{memory_id} (update_long_term_memory with empty memory_content). If both stay true, "
            "do nothing"
        ),
    }


def _already_remembered(similar: list[tuple[float, Recalled]], content: str) -> ToolResult | None:
    """The answer to a save that rewords the most similar memory of its own scope and lineage (as
    the store's exact guard, kept per lineage, compares: a persona's memory and a global one are two
    memories, counted apart), if it does. The same text is left to the store, whose guard answers
    it within the save's transaction."""
    if not similar or similar[0][0] < NEAR_DUPLICATE_SIMILARITY:
        return None
    same = similar[0][1].memory
    if same.fingerprint == content_fingerprint(content):
        return None
    return ToolResult(
        SaveStatus.ALREADY_REMEMBERED,
        {
            "memory_id": same.memory_id,
            "memory": similar[0][1].text,
            "message": f"already remembered as #{same.memory_id}; update it instead if something changed",
        },
    )
