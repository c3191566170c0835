"""Memory control: the use cases behind ``/personal memories`` and ``/server memories``.

For a person (personal scope), what kioku keeps about them, for them: see it, export it, forget one
or all of it. Long-term memories about them (their personal ones, whoever saved them, and the
server memories that name them, in every persona lineage), the server memories they saved, the
personal memories they saved about someone else (whom, where and when: not the text, which is the
other person's), their DM short-term rows, and the raw lines they wrote in servers' short-term rows
(found through the notes each capture and each memory save leaves in their partition). The list
and the export show every memory about them, with its full text: it is theirs to see wherever it was
said; only a channel they may not see is not named (``origin_known_to``). Forgetting all also marks
the person (``forgotten_at``): a turn still answering a message they sent before, queued or retried,
can store nothing of it. Summaries are written by the bot from whole conversations and are not
theirs alone, so they are neither exported nor rewritten here (docs/privacy.md says so).

For a server (server scope), its managers' curation: list its memories, forget one, approve or
reject one awaiting review. Every write is conditional on the memory still being what was shown
(``fingerprint``), so a stale or repeated click changes nothing.

The commands' Discord UI lives in ``kioku.services.commands`` (``personal_memories``,
``server_memories``); the stores are handed in.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

from kioku import clock
from kioku.domain.ltm.memory import NO_AUTHOR, Memory, MemoryNotFound, MemoryStatus, ScopeKind
from kioku.domain.ltm.ports import MemoryStore
from kioku.domain.privacy import Place, PrivacyPolicy, origin_known_to
from kioku.domain.stm.entries import StmEntry
from kioku.domain.turn_jobs import TurnJob
from kioku.domain.waiting_replies import WaitingReply
from kioku.domain.why import ShownNote

MAX_FORGET_ROUNDS: Final = 8
"""Forgetting all lists and deletes again until a round finds nothing, so a memory saved by a turn at
the same moment is caught; a round finds more only while such turns keep racing."""
EXPORT_FORMAT: Final = "kioku-export/2"
UNSEEN_CHANNEL: Final = "a channel you can't see"


class PersonMemories(MemoryStore, Protocol):
    """The memory store as memory control reads and curates it (``PersonMemories``): a scope's
    memories, a person's notes, a review's steps. Writes raise ``MemoryNotFound`` when the memory
    changed since it was read."""

    def memories_of(self, kind: ScopeKind, owner_id: str, *, expired_too: bool = False) -> list[Memory]:
        """Without the expired ones (gone for every reader) unless ``expired_too``, for the deletes."""
        ...

    def server_memories_naming(self, user_id: str, *, expired_too: bool = False) -> dict[str, list[Memory]]:
        """By server, the server memories that name ``user_id``."""
        ...

    def personal_memories_saved_by(
        self, user_id: str, *, expired_too: bool = False
    ) -> dict[str, list[Memory]]:
        """By person, the personal memories ``user_id`` saved about them."""
        ...

    def note_removed_by_subject(self, memory: Memory, at: datetime) -> None: ...

    def drop_author_note(self, user_id: str, owner_id: str) -> None: ...

    def drop_server_note(self, user_id: str, guild_id: str) -> None: ...

    def forget_author(self, memory: Memory, person: str | None = None) -> Memory: ...

    def tag_for_review(self, memory: Memory) -> Memory: ...

    def approve(self, memory: Memory) -> Memory: ...

    def reject(self, memory: Memory) -> None: ...


class PersonRows(Protocol):
    """A person's short-term rows and lines (``StmStore``)."""

    def dm_rows_of(self, user_id: str) -> list[StmEntry]: ...

    def rows_with_lines_of(self, user_id: str) -> list[StmEntry]: ...

    def forget_lines_of(self, user_id: str) -> int: ...

    def delete_dm_rows_of(self, user_id: str) -> int: ...


class UseNotes(Protocol):
    """What turns were shown, noted per person (``TurnTraces``)."""

    def notes_of(self, user_id: str) -> list[ShownNote]: ...

    def forget(self, user_id: str) -> int: ...


class PersonTurns(Protocol):
    """A person's unfinished turns and use notes (``TurnLedger``)."""

    @property
    def traces(self) -> UseNotes: ...

    def waiting_replies_to(self, user_id: str) -> list[WaitingReply]: ...

    def forget_turns_of(self, user_id: str, at: datetime) -> int: ...


class ExportDiscord(Protocol):
    """Where an export is sent (``DiscordRest``); raises ``DiscordRefused``."""

    def edit_original_response(
        self,
        application_id: str,
        interaction_token: str,
        content: str,
        embeds: list[dict[str, Any]] | None = None,
        *,
        file: tuple[str, bytes, str] | None = None,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class ForgetAllReport:
    """What forgetting all about a person deleted, and what it kept without their name."""

    memories: int = 0
    dm_rows: int = 0
    lines: int = 0
    unnamed: int = 0
    """Memories they saved that are not about them (about someone else, or server memories that do
    not name them): kept, without their name."""

    @property
    def nothing(self) -> bool:
        return not (self.memories or self.dm_rows or self.lines or self.unnamed)


def memories_about(user_id: str, store: PersonMemories) -> list[Memory]:
    """Every long-term memory about ``user_id``, oldest first: their personal memories, whoever saved
    them and wherever, and the server memories that name them (pending ones too)."""
    server = [
        m for found in store.server_memories_naming(user_id).values() for m in found if m.about == user_id
    ]
    return sorted([*store.memories_of(ScopeKind.PERSONAL, user_id), *server], key=lambda m: m.created_at)


def forget_memory_about(user_id: str, memory_id: str, store: PersonMemories) -> Memory:
    """Delete the memory ``memory_id`` about ``user_id``, whoever wrote it; ``MemoryNotFound`` when
    there is none."""
    for _ in range(MAX_FORGET_ROUNDS):
        memory = store.find(ScopeKind.PERSONAL, user_id, memory_id) or next(
            (m for m in memories_about(user_id, store) if m.memory_id == memory_id), None
        )
        if memory is None:
            break
        try:
            store.delete(memory)
        except MemoryNotFound:
            continue  # it changed between the read and the delete: read it again
        if memory.scope.kind is ScopeKind.SERVER and memory.author_id != user_id:
            store.note_removed_by_subject(memory, clock.now())  # the managers count it: not which, nor who
        return memory
    raise MemoryNotFound(f"I keep no memory #{memory_id} about you")


def forget_all(
    user_id: str,
    ltm_store: PersonMemories,
    stm_store: PersonRows,
    *,
    ledger: PersonTurns,
    now: datetime | None = None,
) -> ForgetAllReport:
    """Every long-term memory about ``user_id`` (server memories that name them too) and the notes,
    in their authors' partitions, that someone saved one about them; the author link of the memories
    they saved about others or their server, their DM rows, and every raw line they wrote; first the
    mark that they forgot at ``now`` (so no turn answering what they said before can store it again)
    and the planned replies to them (which quote what they said)."""
    ledger.forget_turns_of(user_id, now or clock.now())
    ledger.traces.forget(user_id)  # their part of what turns were shown ("Why this answer?")
    memories = unnamed = 0
    for _ in range(MAX_FORGET_ROUNDS):
        # the expired ones too: what the janitor has not deleted yet is still theirs to erase
        personal = ltm_store.memories_of(ScopeKind.PERSONAL, user_id, expired_too=True)
        servers = ltm_store.server_memories_naming(user_id, expired_too=True)
        saved_about_others = ltm_store.personal_memories_saved_by(user_id, expired_too=True)
        if not personal and not servers and not saved_about_others:
            break
        authors: set[str] = set()
        for memory in personal:
            try:
                ltm_store.delete(memory)
                memories += 1
            except MemoryNotFound:
                continue  # changed or deleted meanwhile: the next round reads it again
            if memory.author_id not in (user_id, NO_AUTHOR):
                authors.add(memory.author_id)
        for author_id in authors:  # a memory saved meanwhile is found, with its note, next round
            ltm_store.drop_author_note(author_id, user_id)
        for guild_id, named in servers.items():
            settled = True
            for memory in named:
                try:
                    if memory.about == user_id:
                        ltm_store.delete(memory)
                        memories += 1
                    else:
                        ltm_store.forget_author(memory, user_id)
                        unnamed += 1
                except MemoryNotFound:
                    settled = False  # the next round reads it again, through the note kept
            if settled:
                ltm_store.drop_server_note(user_id, guild_id)
        for owner_id, saved in saved_about_others.items():
            settled = True
            for memory in saved:
                try:
                    ltm_store.forget_author(memory, user_id)
                    unnamed += 1
                except MemoryNotFound:
                    settled = False  # the next round reads it again, through the note kept
            if settled:
                ltm_store.drop_author_note(user_id, owner_id)
    lines = stm_store.forget_lines_of(user_id)
    dm_rows = stm_store.delete_dm_rows_of(user_id)
    return ForgetAllReport(memories=memories, dm_rows=dm_rows, lines=lines, unnamed=unnamed)


def export(
    user_id: str,
    ltm_store: PersonMemories,
    stm_store: PersonRows,
    now: datetime,
    *,
    place: Place,
    ledger: PersonTurns,
    policy_of: Callable[[str], PrivacyPolicy] | None = None,
) -> dict[str, Any]:
    """Everything above as one JSON-ready document, asked for at ``place``; with the turns still on
    their way to them (their outboxes: their message and the answer wait there until posted), and,
    by person, the personal memories they saved about someone else that are still theirs (found
    through their notes; without the text, see ``_authored_record``)."""
    # theirs while they wrote the text it says now (an earlier text of theirs, in its history, is not)
    saved = [
        m
        for found in ltm_store.server_memories_naming(user_id).values()
        for m in found
        if m.about != user_id and m.author_id == user_id
    ]
    authored_by_owner = {
        owner_id: [m for m in memories if m.author_id == user_id]
        for owner_id, memories in ltm_store.personal_memories_saved_by(user_id).items()
    }
    # the notes of the turns shown their memories, as /personal memories list counts them
    known, others = usage_notes(user_id, place, ledger, policy_of or PrivacyPolicy)
    return {
        "format": EXPORT_FORMAT,
        "user_id": user_id,
        "exported_at": now.isoformat(),
        "long_term_memories": [memory_record(m, user_id, place) for m in memories_about(user_id, ltm_store)],
        "server_memories_you_saved": [memory_record(m, user_id, place) for m in saved],
        "personal_memories_you_saved_about_others": [
            {"about": owner_id, "memories": [_authored_record(m, user_id, place) for m in authored]}
            for owner_id, authored in authored_by_owner.items()
        ],
        "direct_message_short_term_memory": [
            _row_record(row, user_id) for row in stm_store.dm_rows_of(user_id)
        ],
        "your_lines_in_server_short_term_memory": [
            _row_record(row, user_id, only_own_lines=True) for row in stm_store.rows_with_lines_of(user_id)
        ],
        "replies_waiting_to_be_posted": [_waiting_record(w) for w in ledger.waiting_replies_to(user_id)],
        "turns_shown_your_memories": [_usage_record(note) for note in known],
        "turns_shown_your_memories_elsewhere": len(others),
    }


def usage_notes(
    user_id: str, place: Place, ledger: PersonTurns, policy_of: Callable[[str], PrivacyPolicy]
) -> tuple[list[ShownNote], list[ShownNote]]:
    """The turns noted as shown ``user_id``'s memories (16 days), split into those they may be told of
    asking at ``place`` (``ShownNote.known_to``, each server's settings read now by ``policy_of``)
    and the others, which are only counted: telling when and where would tell them of activity in a
    channel they may not see."""
    notes = ledger.traces.notes_of(user_id)
    policies = {g: policy_of(g) for g in dict.fromkeys(n.guild_id for n in notes if n.guild_id)}
    known = [n for n in notes if n.known_to(place, policies.get(n.guild_id or "", PrivacyPolicy(None)))]
    return known, [n for n in notes if n not in known]


def _usage_record(note: ShownNote) -> dict[str, Any]:
    """A turn shown the person's memories, in a place they may be told of (``usage_notes``)."""
    return {
        "at": note.at.isoformat(),
        "server_id": note.guild_id,
        "channel_id": note.channel_id,
        "memories": list(note.memory_keys),
    }


def send_export(
    job: TurnJob,
    discord: ExportDiscord,
    ltm_store: PersonMemories,
    stm_store: PersonRows,
    now: datetime,
    *,
    ledger: PersonTurns,
    policy_of: Callable[[str], PrivacyPolicy] | None = None,
) -> None:
    """Attach the person's export to the "thinking…" answer of their ``/personal memories export``.
    Sending it again (a redelivered job) only replaces the same attachment."""
    user_id = job.author.id
    place = Place(job.guild_id, job.channel_id)
    document = export(user_id, ltm_store, stm_store, now, place=place, ledger=ledger, policy_of=policy_of)
    encoded = json.dumps(document, ensure_ascii=False, indent=2).encode()
    discord.edit_original_response(
        str(job.application_id),
        str(job.interaction_token),
        "Everything I keep about you, as of now. Only you can see this.",
        file=(f"kioku-export-{user_id}.json", encoded, "application/json"),
    )


def memory_record(memory: Memory, user_id: str, place: Place) -> dict[str, Any]:
    """A memory as ``user_id`` is shown it, asked for at ``place``."""
    return {
        "id": memory.memory_id,
        "kind": memory.scope.kind.value,
        "status": memory.status.value,
        "text": memory.content,
        "persona_lineage": memory.scope.lineage,
        "saved_by": memory.author_id or None,
        "saved_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "saved_in": saved_in(memory, user_id, place),
        **({"expires_at": memory.expires_at.isoformat()} if memory.expires_at else {}),
        "times_changed": memory.changes,
        "history": [
            {
                "text": version.content,
                "from": version.since.isoformat(),
                "until": version.until.isoformat(),
                "written_by": version.author_id or None,
                "changed_by": version.changed_by or None,
            }
            for version in memory.history
        ],
    }


def saved_in(memory: Memory, user_id: str, place: Place) -> dict[str, Any]:
    """Where ``memory`` was said, as ``user_id`` may be told: a channel they may not see is not named."""
    origin = memory.origin
    if origin.channel_id is not None and not origin_known_to(
        origin, person_id=user_id, author_id=memory.author_id, place=place
    ):
        return {"server_id": origin.guild_id, "channel": UNSEEN_CHANNEL}
    return {
        "server_id": origin.guild_id,
        "channel_id": origin.channel_id,
        "private_channel": origin.private if origin.channel_id else None,
    }


def _authored_record(memory: Memory, user_id: str, place: Place) -> dict[str, Any]:
    """A personal memory ``user_id`` saved about someone else, without its text: the text is the
    other person's memory (written by the model, maybe never shown to its author); their saving it,
    where, when and for which persona are the author's."""
    return {
        "id": memory.memory_id,
        "status": memory.status.value,
        "persona_lineage": memory.scope.lineage,
        "saved_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "saved_in": saved_in(memory, user_id, place),
    }


def _waiting_record(waiting: WaitingReply) -> dict[str, Any]:
    kept_until = waiting.expires_at.isoformat() if waiting.expires_at else None
    if waiting.answers is not None:  # the reply is someone else's: only that it quotes them is theirs
        return {"kept_until": kept_until, "a_reply_to_someone_else_shows_a_memory_about_you": True}
    return {
        "turn_id": waiting.turn_id,
        "kept_until": kept_until,
        "reply": waiting.reply,
        "memory_notices": list(waiting.notices),
        "messages": [
            {"speaker": m.speaker, "user_id": m.user_id, "text": m.text, "sent_at": m.ts.isoformat()}
            for m in waiting.lines
        ],
    }


def _row_record(row: StmEntry, user_id: str, *, only_own_lines: bool = False) -> dict[str, Any]:
    lines: Sequence = [m for m in row.crude if m.user_id == user_id] if only_own_lines else row.crude
    record: dict[str, Any] = {
        "server_id": row.address.guild_id,
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


# -- a server's memories, for its managers ---------------------------------------------------------


def server_memories(guild_id: str, store: PersonMemories) -> list[Memory]:
    """Every memory kept for the server (every persona lineage, pending ones too), oldest first."""
    return store.memories_of(ScopeKind.SERVER, guild_id)


def awaiting_review(guild_id: str, store: PersonMemories) -> list[Memory]:
    """The server's memories waiting for a manager's review, oldest first."""
    return [memory for memory in server_memories(guild_id, store) if memory.status is MemoryStatus.PENDING]


def forget_server_memory(guild_id: str, memory_id: str, store: PersonMemories) -> Memory:
    """Delete the server memory ``memory_id`` of ``guild_id``; ``MemoryNotFound`` when it has none."""
    memory = store.find(ScopeKind.SERVER, guild_id, memory_id)
    if memory is None:
        raise MemoryNotFound(f"there is no server memory #{memory_id} here")
    store.delete(memory)
    return memory


def awaiting_review_tagged(guild_id: str, store: PersonMemories, count: int) -> tuple[list[Memory], int]:
    """The oldest ``count`` memories awaiting review, each with the tag its buttons carry, and how
    many wait in all."""
    pending = awaiting_review(guild_id, store)
    return [store.tag_for_review(memory) for memory in pending[:count]], len(pending)


def approve(guild_id: str, memory_id: str, tag: str, store: PersonMemories) -> Memory:
    """Let kioku recall the memory awaiting review whose review buttons carry ``tag``."""
    memory = _awaiting_review(guild_id, memory_id, tag, store)
    store.approve(memory)
    return memory


def reject(guild_id: str, memory_id: str, tag: str, store: PersonMemories) -> Memory:
    """Delete the memory awaiting review whose review buttons carry ``tag``."""
    memory = _awaiting_review(guild_id, memory_id, tag, store)
    store.reject(memory)
    return memory


def _awaiting_review(guild_id: str, memory_id: str, tag: str, store: PersonMemories) -> Memory:
    """The memory, if it still awaits review as it was shown (the tag of its buttons then); else
    MemoryNotFound. A button of a message posted before the tags (it carried the start of a hash of
    the text) is refused as out of date."""
    memory = store.find(ScopeKind.SERVER, guild_id, memory_id)
    if memory is None:
        raise MemoryNotFound(f"server memory #{memory_id} is gone: it was already rejected or forgotten")
    if memory.status is not MemoryStatus.PENDING:
        raise MemoryNotFound(f"server memory #{memory_id} was already approved")
    if not tag or not memory.review_tag or not hmac.compare_digest(memory.review_tag, tag):
        raise MemoryNotFound(
            f"server memory #{memory_id} changed since this list was shown; run `/server memories review` again"
        )
    return memory
