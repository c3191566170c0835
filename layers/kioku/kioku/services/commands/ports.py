"""What the commands call outside, as ports: each store, the turn queue, the container's settings and
clock (``CommandContext``). The composition root hands in the DynamoDB and SQS adapters; a unit test
hands in small in-memory fakes (``tests/unit/command_fakes.py``).

Each port declares what a command calls of it, and what the services a command hands it to call
(``memory_control``, ``memory_edits``, ``personas``, ``why``). The adapters raise the domain's
conditions (``kioku.domain.conditions``, the ltm store ``MemoryStoreFailed``), which
``error_replies`` answers; a command names no adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from kioku.domain.ltm.ports import MemoryStore
from kioku.domain.waiting_replies import WaitingReply

if TYPE_CHECKING:
    from kioku.domain.forgetting import Said
    from kioku.domain.ltm.memory import Memory, ScopeKind
    from kioku.domain.models import ServerConfig, StmCategory, UserProfile
    from kioku.domain.stm.capture import StmRowIdentity
    from kioku.domain.stm.entries import StmAddress, StmEntry
    from kioku.domain.stm.update_tool import StmUpdate
    from kioku.domain.turn_jobs import TurnJob
    from kioku.domain.why import ShownNote, TurnTrace


class Configurations(Protocol):
    """Servers' configurations and people's profiles; every save is conditional on the version read
    (``StaleConfiguration`` when someone saved first)."""

    def get_server_config(self, guild_id: str) -> ServerConfig: ...

    def save_server_config(self, config: ServerConfig) -> ServerConfig: ...

    def save_with_persona_limit(self, config: ServerConfig, max_personas: int) -> ServerConfig:
        """``PersonaLimitReached`` when the stored configuration already holds ``max_personas``."""
        ...

    def get_user_profile(self, user_id: str) -> UserProfile: ...

    def save_user_profile(self, profile: UserProfile) -> UserProfile: ...


class ShortTermRows(Protocol):
    """The short-term memory rows: one read and a hand edit, a server's speakers and personas' rows,
    and a person's own rows and lines (what forget-all and export walk)."""

    def get(self, address: StmAddress) -> StmEntry | None: ...

    def write_memory(
        self,
        identity: StmRowIdentity,
        update: StmUpdate,
        categories: Sequence[StmCategory],
        now: datetime,
        retention: timedelta,
        *,
        reset_counter: bool = True,
        expect_written_at: datetime | object | None = ...,
        said: Said | None = None,
    ) -> None:
        """``NewerMemoryExists`` when the row was written since ``expect_written_at``."""
        ...

    def speakers(self, guild_id: str) -> dict[str, set[str]]: ...

    def persona_rows(self, guild_id: str, persona_id: str) -> list[StmEntry]: ...

    def delete_persona_rows(self, guild_id: str, persona_id: str) -> int: ...

    def rows_with_lines_of(self, user_id: str) -> list[StmEntry]: ...

    def forget_lines_of(self, user_id: str) -> int: ...

    def dm_rows_of(self, user_id: str) -> list[StmEntry]: ...

    def delete_dm_rows_of(self, user_id: str) -> int: ...


class CommandMemories(MemoryStore, Protocol):
    """The long-term memory store as the commands use it: the turn's ``MemoryStore``, and the lists,
    reviews and a person's own part that the memory commands read and change."""

    def memories_of(self, kind: ScopeKind, owner_id: str, *, expired_too: bool = False) -> list[Memory]: ...

    def removed_by_subjects(self, guild_id: str, now: datetime) -> int: ...

    def approve(self, memory: Memory) -> Memory: ...

    def reject(self, memory: Memory) -> None: ...

    def tag_for_review(self, memory: Memory) -> Memory: ...

    def note_removed_by_subject(self, memory: Memory, at: datetime) -> None: ...

    def server_memories_naming(
        self, user_id: str, *, expired_too: bool = False
    ) -> dict[str, list[Memory]]: ...

    def personal_memories_saved_by(
        self, user_id: str, *, expired_too: bool = False
    ) -> dict[str, list[Memory]]: ...

    def drop_author_note(self, user_id: str, owner_id: str) -> None: ...

    def drop_server_note(self, user_id: str, guild_id: str) -> None: ...

    def forget_author(self, memory: Memory, person: str | None = None) -> Memory: ...


class ShownTraces(Protocol):
    """What each turn was shown ("Why this answer?")."""

    def of_reply(self, message_id: str) -> TurnTrace | None: ...

    def notes_of(self, user_id: str) -> list[ShownNote]: ...

    def forget(self, user_id: str) -> int: ...


class TurnNotes(Protocol):
    """The turns' ledger: their traces, and a person's unfinished replies (forget-all, export)."""

    @property
    def traces(self) -> ShownTraces: ...

    def waiting_replies_to(self, user_id: str) -> list[WaitingReply]: ...

    def forget_turns_of(self, user_id: str, at: datetime) -> int: ...


class ChannelWebhooks(Protocol):
    """The channel webhooks kept for alter personas."""

    def forget_server(self, guild_id: str) -> int: ...


class TurnJobs(Protocol):
    """The turn queue: ``QueueUnavailable`` when it cannot take the job."""

    def enqueue(self, job: TurnJob) -> None: ...
