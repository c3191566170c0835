"""A fake ``CommandContext``: in-memory implementations of the ports in ``services/commands/ports.py``
(cosmicpython's ``FakeUnitOfWork``), so a command's unit test runs without moto and asserts what was
answered and what was written.

Each fake keeps the rule the command leans on (a save conditional on the version read, the persona
limit, a queue that may be unreachable) and records its writes for the test to read back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kioku.discord.interaction import Interaction, parse_interaction
from kioku.domain.forgetting import Said
from kioku.domain.ltm.memory import Memory, ScopeKind
from kioku.domain.models import (
    PersonaLimitReached,
    ServerConfig,
    StaleConfiguration,
    StmCategory,
    UserProfile,
)
from kioku.domain.stm.capture import NewerMemoryExists, StmRowIdentity
from kioku.domain.stm.entries import StmAddress, StmEntry
from kioku.domain.stm.update_tool import StmUpdate
from kioku.domain.turn_jobs import QueueUnavailable, TurnJob
from kioku.domain.why import ShownNote, TurnTrace
from kioku.playground.events import modal_submit, slash_command
from kioku.services.commands.router import respond
from tests.unit.ltm_fakes import settings

if TYPE_CHECKING:
    from kioku.services.commands.ports import (
        ChannelWebhooks,
        Configurations,
        ShortTermRows,
        TurnJobs,
        TurnNotes,
    )

APPLICATION_ID = "100000000000000001"
GUILD = "200000000000000001"
CHANNEL = "300000000000000001"
ALICE = "400000000000000001"
NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
MANAGE_GUILD = "32"


class FakeConfigurations:
    """Servers' configurations and people's profiles; saves conditional on the version read."""

    def __init__(self, *configs: ServerConfig) -> None:
        self.servers: dict[str, ServerConfig] = {str(c.guild_id): c for c in configs}
        self.profiles: dict[str, UserProfile] = {}
        self.saves = 0

    def get_server_config(self, guild_id: str) -> ServerConfig:
        return self.servers.get(guild_id) or ServerConfig(guild_id=guild_id)

    def save_server_config(self, config: ServerConfig) -> ServerConfig:
        stored = self.get_server_config(str(config.guild_id))
        if stored.version != config.version:
            raise StaleConfiguration(stored)
        saved = replace(config, version=config.version + 1)
        self.servers[str(config.guild_id)] = saved
        self.saves += 1
        return saved

    def save_with_persona_limit(self, config: ServerConfig, max_personas: int) -> ServerConfig:
        if len(config.personas) > max_personas:
            raise PersonaLimitReached(max_personas)
        return self.save_server_config(config)

    def get_user_profile(self, user_id: str) -> UserProfile:
        return self.profiles.get(user_id) or UserProfile(user_id=user_id)

    def save_user_profile(self, profile: UserProfile) -> UserProfile:
        stored = self.get_user_profile(profile.user_id)
        if stored.version != profile.version:
            raise StaleConfiguration(stored)
        saved = replace(profile, version=profile.version + 1)
        self.profiles[profile.user_id] = saved
        self.saves += 1
        return saved


class FakeShortTermRows:
    """Short-term memory rows by address; a hand edit replaces the summary or the categories."""

    def __init__(self, *entries: StmEntry) -> None:
        self.rows: dict[StmAddress, StmEntry] = {entry.address: entry for entry in entries}

    def get(self, address: StmAddress) -> StmEntry | None:
        return self.rows.get(address)

    def write_memory(
        self,
        identity: StmRowIdentity,
        update: StmUpdate,
        categories: Sequence[StmCategory],
        now: datetime,
        retention: timedelta,
        *,
        reset_counter: bool = True,
        expect_written_at: datetime | object | None = None,
        said: Said | None = None,
    ) -> None:
        row = self.rows.get(identity.address) or StmEntry(
            address=identity.address,
            lineage_id=identity.lineage_id,
            parent_channel_id=identity.parent_channel_id,
            channel_name=identity.channel_name,
            private_thread=identity.private_thread,
        )
        if isinstance(expect_written_at, datetime) and row.last_updated != expect_written_at:
            raise NewerMemoryExists()
        if update.summary is not None:
            row = replace(row, summary=update.summary, summary_updated_at=now)
        if update.categories is not None:
            labels = tuple((c.slug, c.label) for c in categories)
            row = replace(
                row, categories=dict(update.categories), category_labels=labels, categories_updated_at=now
            )
        self.rows[identity.address] = replace(row, last_updated=now, version=row.version + 1)

    def speakers(self, guild_id: str) -> dict[str, set[str]]:
        return {}

    def persona_rows(self, guild_id: str, persona_id: str) -> list[StmEntry]:
        return [e for a, e in self.rows.items() if a.guild_id == guild_id and a.persona_id == persona_id]

    def delete_persona_rows(self, guild_id: str, persona_id: str) -> int:
        gone = [e.address for e in self.persona_rows(guild_id, persona_id)]
        for address in gone:
            del self.rows[address]
        return len(gone)

    def rows_with_lines_of(self, user_id: str) -> list[StmEntry]:
        return [e for e in self.rows.values() if any(line.user_id == user_id for line in e.crude)]

    def forget_lines_of(self, user_id: str) -> int:
        return 0

    def dm_rows_of(self, user_id: str) -> list[StmEntry]:
        return [e for a, e in self.rows.items() if a.user_id == user_id]

    def delete_dm_rows_of(self, user_id: str) -> int:
        gone = [e.address for e in self.dm_rows_of(user_id)]
        for address in gone:
            del self.rows[address]
        return len(gone)


class FakeTurnJobs:
    """The turn queue: what was queued, in order; ``unavailable`` makes it refuse as SQS would."""

    def __init__(self) -> None:
        self.jobs: list[TurnJob] = []
        self.unavailable = False

    def enqueue(self, job: TurnJob) -> None:
        if self.unavailable:
            raise QueueUnavailable(f"could not queue turn {job.turn_id}")
        self.jobs.append(job)


class FakeTraces:
    def __init__(self) -> None:
        self.by_reply: dict[str, TurnTrace] = {}
        self.notes: dict[str, list[ShownNote]] = {}

    def of_reply(self, message_id: str) -> TurnTrace | None:
        return self.by_reply.get(message_id)

    def notes_of(self, user_id: str) -> list[ShownNote]:
        return list(self.notes.get(user_id, []))

    def forget(self, user_id: str) -> int:
        return len(self.notes.pop(user_id, []))


class FakeTurnNotes:
    def __init__(self) -> None:
        self.traces = FakeTraces()

    def waiting_replies_to(self, user_id: str) -> list[Any]:
        return []

    def forget_turns_of(self, user_id: str, at: datetime) -> int:
        return 0


class FakeWebhooks:
    def __init__(self) -> None:
        self.forgotten: list[str] = []

    def forget_server(self, guild_id: str) -> int:
        self.forgotten.append(guild_id)
        return 0


class FakeMemories:
    """The long-term memory store as far as the commands tested here read it (memory control and the
    memory commands keep their moto tests): a list, filtered by scope."""

    def __init__(self) -> None:
        self.memories: list[Memory] = []

    def memories_of(self, kind: ScopeKind, owner_id: str, *, expired_too: bool = False) -> list[Memory]:
        return [m for m in self.memories if m.scope.kind is kind and m.scope.owner_id == owner_id]

    def removed_by_subjects(self, guild_id: str, now: datetime) -> int:
        return 0


@dataclass
class FakeCommandContext:
    """What a command is handed, every part in memory; ``clock`` stands still at ``NOW``."""

    config_store: FakeConfigurations = field(default_factory=FakeConfigurations)
    stm_store: FakeShortTermRows = field(default_factory=FakeShortTermRows)
    ltm_store: FakeMemories = field(default_factory=FakeMemories)
    webhook_store: FakeWebhooks = field(default_factory=FakeWebhooks)
    turn_ledger: FakeTurnNotes = field(default_factory=FakeTurnNotes)
    turn_queue: FakeTurnJobs = field(default_factory=FakeTurnJobs)
    settings: Any = field(default_factory=settings)
    now: datetime = NOW

    def clock(self) -> datetime:
        return self.now


def command(name: str, subcommand: str | None = None, options: dict[str, Any] | None = None, **where: Any):
    """A slash command from Alice in the test server's channel (``permissions`` "0" unless given;
    ``context``, Discord's interaction context, replaces the one the place implies)."""
    where.setdefault("user_id", ALICE)
    where.setdefault("username", "alice")
    context = where.pop("context", None)
    payload = slash_command(
        APPLICATION_ID, name, subcommand, options, guild_id=where.pop("guild_id", GUILD), **where
    )
    if context is not None:
        payload["context"] = context
    return parse_interaction(payload)


def submit(custom_id: str, values: dict[str, str], **where: Any) -> Interaction:
    """The form ``custom_id`` submitted with ``values``, by Alice as in ``command``."""
    where.setdefault("user_id", ALICE)
    where.setdefault("username", "alice")
    base = slash_command(APPLICATION_ID, "form", guild_id=where.pop("guild_id", GUILD), **where)
    return parse_interaction(modal_submit(base, custom_id, values))


def answer(interaction: Interaction, context: FakeCommandContext) -> dict[str, Any]:
    """What the router answers ``interaction`` with on ``context``: the reply, or the refusal."""
    return respond(interaction, context)  # type: ignore[arg-type]


def embed(reply: dict[str, Any]) -> dict[str, Any]:
    """The one embed of an ephemeral message reply."""
    (shown,) = reply["data"]["embeds"]
    return shown


def embed_fields(reply: dict[str, Any]) -> dict[str, str]:
    """The fields of that embed, name to value."""
    return {field["name"]: field["value"] for field in embed(reply)["fields"]}


if TYPE_CHECKING:  # make lint's mypy holds each fake to its port
    _PORTS: tuple[Configurations, ShortTermRows, TurnJobs, TurnNotes, ChannelWebhooks] = (
        FakeConfigurations(),
        FakeShortTermRows(),
        FakeTurnJobs(),
        FakeTurnNotes(),
        FakeWebhooks(),
    )
