"""What the commands call outside, as ports: each store, the turn queue, the container's settings and
clock (``CommandContext``). The composition root hands in the DynamoDB and SQS adapters; a unit test
could hand in small in-memory fakes.

Each port declares what a command calls of it, and what the services a command hands it to call
(``memory_control``, ``memory_edits``, ``personas``, ``why``). The adapters raise the domain's
conditions (``kioku.domain.conditions``, the ltm store ``MemoryStoreFailed``), which
``error_replies`` answers; a command names no adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from kioku.services.memory_control import PersonMemories, PersonTurns, UseNotes

if TYPE_CHECKING:
    from kioku.domain.forgetting import Said
    from kioku.domain.models import ServerConfig, StmCategory, UserProfile
    from kioku.domain.stm.capture import StmRowIdentity
    from kioku.domain.stm.entries import StmAddress, StmEntry
    from kioku.domain.stm.update_tool import StmUpdate
    from kioku.domain.turn_jobs import TurnJob
    from kioku.domain.why import TurnTrace


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


class CommandMemories(PersonMemories, Protocol):
    """The long-term memory store as the commands use it: what memory control reads and curates,
    and how many memories a server's members removed about themselves."""

    def removed_by_subjects(self, guild_id: str, now: datetime) -> int: ...


class ShownTraces(UseNotes, Protocol):
    """What each turn was shown ("Why this answer?"), and the notes memory control reads."""

    def of_reply(self, message_id: str) -> TurnTrace | None: ...


class TurnNotes(PersonTurns, Protocol):
    """The turns' ledger: their traces, and a person's unfinished replies (forget-all, export)."""

    @property
    def traces(self) -> ShownTraces: ...


class ChannelWebhooks(Protocol):
    """The channel webhooks kept for alter personas."""

    def forget_server(self, guild_id: str) -> int: ...


class TurnJobs(Protocol):
    """The turn queue: ``QueueUnavailable`` when it cannot take the job."""

    def enqueue(self, job: TurnJob) -> None: ...
