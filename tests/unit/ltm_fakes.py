"""An in-memory memory store and turn builders for the long-term memory unit tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from kioku import clock
from kioku.config import Settings
from kioku.discord.models import Member, parse_guild_member
from kioku.domain.ltm.memory import (
    GLOBAL_LINEAGE,
    DuplicateMemory,
    Memory,
    MemoryDraft,
    MemoryLimitReached,
    MemoryNotFound,
    MemoryStoreFailed,
    PersonalLedger,
    PersonalTarget,
    RecallReach,
    SaveOutcome,
    ScopeKind,
    TargetPrivacyRestricted,
    allows_personal_memories,
    content_fingerprint,
    refuses_as_duplicate,
)
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.ltm.recall import recall_subjects
from kioku.domain.models import (
    Capabilities,
    ContextItem,
    Participant,
    Persona,
    PrivacyLevel,
    ServerConfig,
    UserProfile,
)
from kioku.domain.privacy import Origin, Place, PrivacyPolicy
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.services.ltm import recall_context

SERVER = "500"
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
BOT = BotIdentity(user_id="900", username="kioku_bot", global_name="Kioku Bot", nickname="Kiki")
ALICE = Participant("101", "alice", global_name="Alice")
BOB = Participant("102", "bob", global_name="Bobby", nickname="Bob")
MARY = Participant("103", "mj", global_name="Mary  Jane")
BRIDGED = Participant("104", "carol[m]", is_bot=True, is_bridge=True)
OTHER_BOT = Participant("105", "dicebot", is_bot=True)
SAM_ONE = Participant("106", "sam1", nickname="Sam")
SAM_TWO = Participant("107", "sam2", global_name="Sam")
DEFAULT_CAPABILITIES = Capabilities()
CHANNEL = "700"
HERE = Origin(guild_id=SERVER, channel_id=CHANNEL, private=False)
"""Where ``make_turn``'s turns happen: a public channel of the test server."""
MEMBERS = {person.user_id: person for person in (ALICE, BOB, MARY, OTHER_BOT, SAM_ONE, SAM_TWO)}


def member_lookup(guild_id: str, user_id: str) -> dict | None:
    """Everyone above but the bridged user is a member of the test server."""
    person = MEMBERS.get(user_id) if guild_id == SERVER else None
    if person is None:
        return None
    user = {"id": person.user_id, "username": person.username, "global_name": person.global_name}
    return {"user": {**user, "bot": person.is_bot}, "nick": person.nickname}


def settings(**overrides) -> Settings:
    values = {
        "TABLE_NAME": "kioku-table",
        "TURN_QUEUE_URL": "https://sqs.local/queue.fifo",
        "DISCORD_APPLICATION_ID": BOT.user_id,
        "DISCORD_PUBLIC_KEY": "0" * 64,
        "RELAY_PUBLIC_KEY": "1" * 64,
        **overrides,
    }
    return Settings.model_validate(values)


def make_turn(
    *,
    user: Participant = ALICE,
    participants: Sequence[Participant] = (ALICE, BOB, MARY, BRIDGED, OTHER_BOT),
    guild_id: str | None = SERVER,
    lineage: int = 1,
    capabilities: Capabilities = DEFAULT_CAPABILITIES,
    llm_has_tools: bool = True,
    privacy: PrivacyLevel = PrivacyLevel.NONE,
    channel_id: str = CHANNEL,
    channel_private: bool = False,
    author_ids: Sequence[str] | None = None,
) -> TurnContext:
    config = ServerConfig(
        guild_id=guild_id, persona=Persona(lineage_id=lineage, name="Kioku"), capabilities=capabilities
    )
    return TurnContext(
        guild_id=guild_id,
        channel_id=channel_id,
        user=user,
        bot=BOT,
        config=config,
        profile=UserProfile(user.user_id, privacy_level=privacy),
        now=NOW,
        participants=tuple(participants),
        llm_has_tools=llm_has_tools,
        channel_private=channel_private,
        author_ids=frozenset(p.user_id for p in participants)
        if author_ids is None
        else frozenset(author_ids),
    )


def turn_recall(turn: TurnContext, store: FakeMemoryStore) -> ContextItem | None:
    """The long-term memory item ``turn`` is shown, as the turn's recall stage makes it: the books of
    the people ``recall_subjects`` names, read for the turn's place, then ``recall_context``."""
    subjects = [person.user_id for person in recall_subjects(turn)]
    memories = store.recall(
        turn.guild_id,
        turn.config.persona.lineage_id,
        subjects,
        place=turn.place,
        policy=turn.config.privacy,
    )
    return recall_context(turn, memories).item


class FakeMemoryStore:
    """The ``MemoryStore`` contract, kept in a dict: limits, duplicates, privacy, lineage 0."""

    def __init__(self, privacy: dict[str, PrivacyLevel] | None = None) -> None:
        self.memories: dict[tuple[ScopeKind, str, str], Memory] = {}
        self.privacy = dict(privacy or {})
        self.broken = False
        self._next_id = 10000
        self.shown: dict[str, datetime] = {}
        """When each memory (``memory_key_text``) was last shown, as the use notes would tell."""
        self.shown_read: list[tuple[str, ...]] = []

    def add(self, memory: Memory) -> Memory:
        self.memories[(memory.scope.kind, memory.scope.owner_id, memory.memory_id)] = memory
        return memory

    def in_scope(self, kind: ScopeKind, owner_id: str, lineages: set[int]) -> list[Memory]:
        return [
            m
            for m in self.memories.values()
            if m.scope.kind is kind and m.scope.owner_id == owner_id and m.scope.lineage in lineages
        ]

    def personal_target(self, user_id: str) -> PersonalTarget:
        self._check()
        counts: dict[int, int] = {}
        for memory in self.in_scope(ScopeKind.PERSONAL, user_id, set(range(0, 100))):
            counts[memory.scope.lineage] = counts.get(memory.scope.lineage, 0) + 1
        return PersonalTarget(user_id, self.privacy.get(user_id, PrivacyLevel.NONE), PersonalLedger(counts))

    def create(
        self,
        draft: MemoryDraft,
        *,
        limit: int,
        ledger: PersonalLedger | None = None,
        policy: PrivacyPolicy | None = None,
    ) -> SaveOutcome:
        self._check()
        scope = draft.scope
        policy = policy or PrivacyPolicy(draft.origin.guild_id)
        for memory in self.in_scope(scope.kind, scope.owner_id, {scope.lineage}):
            same = memory.fingerprint == content_fingerprint(draft.content)
            if memory.expired(draft.created_at):
                continue
            if same and refuses_as_duplicate(scope, memory.said(), draft.said(), policy):
                return SaveOutcome(memory.memory_id, created=False)
        if scope.kind is ScopeKind.PERSONAL:
            if not allows_personal_memories(self.privacy.get(scope.owner_id, PrivacyLevel.NONE)):
                raise TargetPrivacyRestricted("private")
            used = self.personal_target(scope.owner_id).ledger.used_by(scope.lineage)
        else:
            used = len(self.in_scope(scope.kind, scope.owner_id, {scope.lineage}))
        if used >= limit:  # as the store: a full scope's expired memories go before the save is refused
            for memory in self.in_scope(scope.kind, scope.owner_id, set(range(0, 100))):
                if memory.expired(draft.created_at):
                    del self.memories[(memory.scope.kind, memory.scope.owner_id, memory.memory_id)]
                    used -= memory.scope.lineage in (scope.lineage, GLOBAL_LINEAGE)
        if used >= limit:
            raise MemoryLimitReached(limit)
        self._next_id += 1
        memory = self.add(draft.saved_as(str(self._next_id)))
        return SaveOutcome(memory.memory_id, created=True)

    def find(
        self, kind: ScopeKind, owner_id: str, memory_id: str, *, expired_too: bool = False
    ) -> Memory | None:
        self._check()
        memory = self.memories.get((kind, owner_id, memory_id))
        return memory if memory is None or expired_too or not memory.expired(clock.now()) else None

    def replace_content(
        self,
        memory: Memory,
        content: str,
        now: datetime,
        *,
        origin=None,
        author_id=None,
        said_at=None,
        subject_id=None,
        embedding=None,
        policy=None,
        changed_by=None,
        expiry=None,
        also=(),
    ) -> Memory:
        self._check()
        key = (memory.scope.kind, memory.scope.owner_id, memory.memory_id)
        if self.memories.get(key) != memory:
            raise MemoryNotFound("changed")
        rewritten = replace(memory, origin=origin or memory.origin, author_id=author_id or memory.author_id)
        for other in self.in_scope(memory.scope.kind, memory.scope.owner_id, {memory.scope.lineage}):
            if other.fingerprint == content_fingerprint(content) and refuses_as_duplicate(
                memory.scope,
                other.said(),
                rewritten.said(),
                policy or PrivacyPolicy(rewritten.origin.guild_id),
            ):
                raise DuplicateMemory(other.memory_id)
        updated = memory.rewritten(
            content,
            now,
            changed_by or author_id or memory.author_id,
            origin=origin,
            author_id=author_id,
            subject_id=subject_id,
            embedding=embedding,
            expiry=expiry,
        )
        self.memories[key] = updated
        return updated

    def delete(self, memory: Memory, *, also=()) -> None:
        self._check()
        if self.memories.pop((memory.scope.kind, memory.scope.owner_id, memory.memory_id), None) is None:
            raise MemoryNotFound("gone")

    def recall(
        self,
        guild_id: str | None,
        lineage: int,
        user_ids: Sequence[str],
        *,
        place: Place,
        policy: PrivacyPolicy,
        now: datetime | None = None,
    ) -> RecallSet:
        self._check()

        people = [
            user_id
            for user_id in user_ids
            if allows_personal_memories(self.privacy.get(user_id, PrivacyLevel.NONE))
        ]
        reach = RecallReach(place, policy, lineage, frozenset(people), now or clock.now())

        def shown(memories: list[Memory]) -> tuple[Memory, ...]:
            return tuple(memory for memory in memories if reach.shows(memory))

        server = shown(self.in_scope(ScopeKind.SERVER, guild_id, {lineage})) if guild_id else ()
        personal = {
            user_id: shown(self.in_scope(ScopeKind.PERSONAL, user_id, {lineage, GLOBAL_LINEAGE}))
            for user_id in people
        }
        return RecallSet(server=server, personal=personal)

    def last_shown(self, user_ids: Sequence[str]) -> dict[str, datetime]:
        self._check()
        self.shown_read.append(tuple(user_ids))
        return dict(self.shown)

    def _check(self) -> None:
        if self.broken:
            raise MemoryStoreFailed("the table is unreachable")


@dataclass(frozen=True, slots=True)
class Members:
    """A ``MemberDirectory`` over a search and a lookup (None: no search, nobody a member), which
    answer Discord's member objects: parsed here, as the adapters parse them where they enter."""

    search_with: Callable[[str, str], list[dict]] | None = None
    member_with: Callable[[str, str], dict | None] | None = None

    def search(self, guild_id: str, query: str) -> list[Member]:
        found = self.search_with(guild_id, query) if self.search_with else []
        return [member for member in map(parse_guild_member, found) if member is not None]

    def member(self, guild_id: str, user_id: str) -> Member | None:
        return parse_guild_member(self.member_with(guild_id, user_id)) if self.member_with else None


def members(
    search: Callable[[str, str], list[dict]] | None = None,
    lookup: Callable[[str, str], dict | None] | None = member_lookup,
) -> Members:
    """The test server's directory: everyone in ``MEMBERS`` is a member; ``search`` as given."""
    return Members(search, lookup)
