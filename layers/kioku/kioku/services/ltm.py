"""The long-term memory tools the model calls, and the recall stage that shows it what it saved.

Each tool answers with a ``ToolResult``: a status from ``domain.ltm.statuses`` the model reads and,
on success, an embed for the turn to post; a condition that stops a tool is answered from the one
table of them all (``services/tool_failures.py``).
Nothing is cached between turns, so a saved memory needs no cache invalidation: the next recall reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Final, Protocol, TypeVar

from kioku.config import Settings
from kioku.domain.ltm.arguments import (
    RequestedScope,
    UpdateArguments,
    clean_content,
    parse_create_arguments,
    parse_update_arguments,
)
from kioku.domain.ltm.memory import (
    GLOBAL_LINEAGE,
    ExpiryChange,
    Memory,
    MemoryScope,
    MemoryStatus,
    PersonalTarget,
    ScopeKind,
    TargetPrivacyRestricted,
    allows_personal_memories,
    expiry_after,
)
from kioku.domain.ltm.notification import (
    memory_forgotten_embed,
    memory_updated_embed,
)
from kioku.domain.ltm.ports import MemberDirectory, MemoryStore, RecallSet
from kioku.domain.ltm.ranking import RecallQuery
from kioku.domain.ltm.recall import (
    DEFAULT_RECALL_BUDGET_CHARS,
    Recall,
    build_recall,
    recall_subjects,
)
from kioku.domain.ltm.saving import (
    check_personal_saving,
    memory_about,
    names_user,
    owner_of,
    pin_user_token,
    saving_origin,
    shown_here,
    speaker_of,
    unresolved,
)
from kioku.domain.ltm.statuses import SaveStatus, UpdateStatus
from kioku.domain.ltm.targets import TargetKind, TargetUser, resolve_target
from kioku.domain.ltm.tools import (
    CREATE_TOOL_NAME,
    SEARCH_TOOL_NAME,
    UPDATE_TOOL_NAME,
    awaits_review,
    offered_update_tool,
)
from kioku.domain.ltm.vectors import embedded_text
from kioku.domain.privacy import Origin, PrivacyPolicy, rewritten_origin
from kioku.domain.tools import ToolResult
from kioku.domain.turn import TurnContext
from kioku.domain.why import MemoryUse, UsedMemory
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.ltm_saving import Saving, save_memory
from kioku.services.tool_failures import answer_for

_T = TypeVar("_T")


class WriteAnnounced(Protocol):
    """Makes a tool's change to a memory together with keeping the notice it owes (``result``'s),
    so the notice survives the attempt: ``write`` makes the change, given the parts to write in its
    transaction (``also`` of ``MemoryStore.delete`` and ``replace_content``); raises as it does."""

    def __call__(self, result: ToolResult, write: Callable[[Sequence[Any]], _T]) -> _T: ...


def _manages_nothing() -> bool:
    return False


def _unannounced(result: ToolResult, write: Callable[[Sequence[Any]], _T]) -> _T:
    """The change alone (no turn keeps its notice: a command's, or a test's)."""
    return write(())


_SERVER_FALLBACK: Final = {
    TargetKind.BOT_SELF: "saved as a server memory: you keep no personal memories about yourself",
    TargetKind.OTHER_BOT: "saved as a server memory: bots have no personal memories",
    TargetKind.BRIDGE: "saved as a server memory: bridged users have no personal memories",
}


def create_long_term_memory(
    arguments: str | dict[str, Any] | None,
    turn: TurnContext,
    *,
    store: MemoryStore,
    members: MemberDirectory | None,
    settings: Settings,
    speaker_manages_server: Callable[[], bool] | None = None,
    recalled: Recall | None = None,
    embeddings: TurnEmbeddings | None = None,
) -> ToolResult:
    """Validate, resolve the target, sanitise, guard the lineage, then save in one limited write.

    On a server that reviews memories, a server memory from a member who does not manage the server
    is saved as pending (``speaker_manages_server`` is asked only then). ``recalled``, the turn's
    recall, holds the memories of the scope this turn may see: one that says nearly the same is
    answered instead of saving, and a full scope names the most similar, to update one of them.
    With ``embeddings``, the memory is saved with its content's embedding (none if that fails)."""
    if not turn.config.capabilities.self_teaching_enabled:
        return _result(SaveStatus.DISABLED, "self-teaching is turned off on this server")
    try:
        return _create(
            arguments,
            turn,
            store,
            members,
            speaker_manages_server,
            settings,
            recalled,
            embeddings,
        )
    except Exception as exc:
        return _answer(CREATE_TOOL_NAME, exc)


def update_long_term_memory(
    arguments: str | dict[str, Any] | None,
    turn: TurnContext,
    *,
    store: MemoryStore,
    members: MemberDirectory | None,
    settings: Settings,
    embeddings: TurnEmbeddings | None = None,
    write_announced: WriteAnnounced | None = None,
) -> ToolResult:
    """Replace a memory's content (with its new embedding, given ``embeddings``), or delete it
    (blank content), giving its slot back; ``write_announced`` makes the change, if given."""
    if not turn.config.capabilities.self_teaching_enabled:
        return _result(UpdateStatus.DISABLED, "self-teaching is turned off on this server")
    try:
        request = parse_update_arguments(arguments, settings.MAX_MEMORY_LENGTH)
        return _update(request, turn, store, members, embeddings, write_announced)
    except Exception as exc:
        return _answer(UPDATE_TOOL_NAME, exc)


def recall_context(
    turn: TurnContext,
    memories: RecallSet,
    *,
    query: RecallQuery | None = None,
    budget: int = DEFAULT_RECALL_BUDGET_CHARS,
    embeddings: TurnEmbeddings | None = None,
) -> Recall:
    """The recall of memories already read (and filtered for privacy) for this turn, within ``budget``
    characters, ranked for ``query`` when not everything fits (hybrid, given ``embeddings``: the
    query's message is embedded then, once)."""
    search_tool = SEARCH_TOOL_NAME if turn.llm_has_tools else None
    return build_recall(
        turn,
        memories.server,
        memories.personal,
        recall_subjects(turn),
        offered_update_tool(turn),
        budget=budget,
        query=query,
        search_tool=search_tool,
        embed=embeddings.embed if embeddings else None,
    )


# -- the steps -------------------------------------------------------------------------------------


def _create(
    arguments: str | dict[str, Any] | None,
    turn: TurnContext,
    store: MemoryStore,
    members: MemberDirectory | None,
    speaker_manages_server: Callable[[], bool] | None,
    settings: Settings,
    recalled: Recall | None,
    embeddings: TurnEmbeddings | None,
) -> ToolResult:
    request = parse_create_arguments(arguments, settings.MAX_MEMORY_LENGTH)
    if request.scope is RequestedScope.TARGET_USER:
        check_personal_saving(ScopeKind.PERSONAL, turn.config.capabilities)  # before looking anyone up
    subject = speaker_of(turn)
    target: PersonalTarget | None = None
    note = None
    if request.scope is RequestedScope.TARGET_USER:
        resolution = resolve_target(request.target_user or "", turn, members)
        if resolution.kind in _SERVER_FALLBACK:
            note = _SERVER_FALLBACK[resolution.kind]
            if resolution.kind is TargetKind.BRIDGE and resolution.user is not None:
                subject = resolution.user
        elif resolution.kind is TargetKind.USER and resolution.user is not None:
            subject, target = resolution.user, store.personal_target(resolution.user.user_id)
        else:
            return unresolved(resolution, SaveStatus.AMBIGUOUS_USER, SaveStatus.USER_NOT_FOUND)
    if target is None and turn.guild_id is None:
        if note is not None:  # the target was the bot, a bot or a bridge: the server memory it falls back to
            why = note.removeprefix("saved as a server memory: ")
            return _result(
                SaveStatus.INVALID_SCOPE,
                f"nothing was saved: {why}, and a direct message has no server memory to keep it in",
            )
        return _result(SaveStatus.INVALID_SCOPE, "a direct message has no server; use target_user")
    content = clean_content(request.content)
    lineage = turn.config.persona.lineage_id
    if lineage <= GLOBAL_LINEAGE:
        return _result(SaveStatus.INTERNAL_ERROR, "the persona has no valid lineage; nothing was saved")

    status = MemoryStatus.ACTIVE
    # About someone: a personal memory's owner, the bridged user named, or the speaker it writes {user} for.
    about_subject = target is not None or subject.user_id != turn.user.user_id or names_user(content)
    named = subject if about_subject else None
    if target is None:
        content = pin_user_token(content, subject.display_name)
        scope = MemoryScope.server(turn.guild_id or "", lineage)
        if awaits_review(turn.config, speaker_manages_server or _manages_nothing):
            status = MemoryStatus.PENDING
    else:
        scope = MemoryScope.personal(target.user_id, lineage)
    expires_at = expiry_after(turn.now, request.expires_in_days)
    saving = Saving(
        scope, content, subject, target, named.user_id if named else None, status, note, expires_at
    )
    return save_memory(saving, turn, store=store, settings=settings, recalled=recalled, embeddings=embeddings)


def _update(
    request: UpdateArguments,
    turn: TurnContext,
    store: MemoryStore,
    members: MemberDirectory | None,
    embeddings: TurnEmbeddings | None,
    write_announced: WriteAnnounced | None = None,
) -> ToolResult:
    lineage = turn.config.persona.lineage_id
    if lineage <= GLOBAL_LINEAGE:
        return _result(UpdateStatus.INTERNAL_ERROR, "the persona has no valid lineage; nothing was changed")
    owners = _owners(request.target_user, turn, members)
    if isinstance(owners, ToolResult):
        return owners
    speaker = speaker_of(turn)
    found = _find(store, turn, owners, request.memory_id, lineage)
    if found is None:
        return _result(
            UpdateStatus.NOT_FOUND,
            f"no memory #{request.memory_id} here; quote an id from your memories, with target_user "
            "for a personal memory",
        )
    memory, subject = found
    names = {"subject_name": subject.display_name, "bot_name": turn.bot_name}
    shown = shown_here(memory, turn)
    announced = write_announced or _unannounced
    if request.deletes:
        embed = memory_forgotten_embed(memory.content if shown else None, memory.memory_id, **names)
        deleted = ToolResult(
            UpdateStatus.DELETED,
            memory_about(memory, subject),
            notification=embed,
            notification_about=owner_of(memory.scope),
            touched=(UsedMemory.of(memory, MemoryUse.DELETED),),
        )
        announced(deleted, lambda also: store.delete(memory, also=also))
        return deleted
    content = clean_content(request.content)
    named = None
    if memory.scope.kind is ScopeKind.SERVER:
        named = speaker.user_id if names_user(content) else None
        content = pin_user_token(content, speaker.display_name)
    origin = rewritten_origin(memory.origin, saving_origin(turn), turn.config.privacy)
    embedding = embeddings.embed(embedded_text(content)) if embeddings else None
    # the rewritten memory keeps its id and scope, and says ``content``: its notice is known before
    embed = memory_updated_embed(content if shown else None, memory.memory_id, **names)
    rewritten = ToolResult(
        UpdateStatus.UPDATED,
        memory_about(memory, subject),
        notification=embed,
        notification_about=owner_of(memory.scope),
        touched=(UsedMemory.of(replace(memory, subject_id=named or memory.subject_id), MemoryUse.UPDATED),),
    )
    announced(
        rewritten,
        lambda also: rewrite_memory(
            store,
            memory,
            content,
            turn.now,
            editor_id=turn.user.user_id,
            origin=origin,
            said_at=turn.sent_at,
            subject_id=named,
            embedding=embedding,
            policy=turn.config.privacy,
            expiry=_expiry_change(turn.now, request.expires_in_days),
            also=also,
        ),
    )
    return rewritten


def _expiry_change(now: datetime, days: int | None) -> ExpiryChange | None:
    return ExpiryChange.in_days(now, days) if days is not None else None


def _owners(
    target_user: str | None, turn: TurnContext, members: MemberDirectory | None
) -> list[tuple[ScopeKind, TargetUser]] | ToolResult:
    """Whose memories an update looks in: the server's and the speaker's, or the one person named
    (a bot, another bot or a bridge named: the server's); an unresolved name is answered."""
    speaker = speaker_of(turn)
    if target_user is None:
        server = [(ScopeKind.SERVER, speaker)] if turn.guild_id is not None else []
        return [*server, (ScopeKind.PERSONAL, speaker)]
    resolution = resolve_target(target_user, turn, members)
    if resolution.kind in _SERVER_FALLBACK and turn.guild_id is not None:
        return [(ScopeKind.SERVER, speaker)]
    if resolution.kind is TargetKind.USER and resolution.user is not None:
        return [(ScopeKind.PERSONAL, resolution.user)]
    return unresolved(resolution, UpdateStatus.AMBIGUOUS_USER, UpdateStatus.USER_NOT_FOUND)


def rewrite_memory(
    store: MemoryStore,
    memory: Memory,
    content: str,
    now: datetime,
    *,
    editor_id: str,
    policy: PrivacyPolicy,
    origin: Origin | None = None,
    said_at: datetime | None = None,
    subject_id: str | None = None,
    embedding: bytes | None = None,
    expiry: ExpiryChange | None = None,
    also: Sequence[Any] = (),
) -> Memory:
    """The one write that changes a memory's text (and, given ``expiry``, its expiry), the model's
    and a person's edit alike: ``content``
    written by ``editor_id``, the text it replaces kept as its history in the same write; the
    store's guard refuses another memory's fact (``DuplicateMemory``); a personal memory only while
    its owner's privacy level allows personal memories (``TargetPrivacyRestricted``)."""
    personal = memory.scope.kind is ScopeKind.PERSONAL
    if personal and not allows_personal_memories(store.personal_target(memory.scope.owner_id).privacy_level):
        raise TargetPrivacyRestricted("the person's privacy level forbids personal memories")
    return store.replace_content(
        memory,
        content,
        now,
        origin=origin,
        author_id=editor_id,
        said_at=said_at,
        subject_id=subject_id,
        embedding=embedding,
        policy=policy,
        changed_by=editor_id,
        expiry=expiry,
        also=also,
    )


def _find(
    store: MemoryStore,
    turn: TurnContext,
    owners: list[tuple[ScopeKind, TargetUser]],
    memory_id: str,
    lineage: int,
) -> tuple[Memory, TargetUser] | None:
    """The memory among ``owners`` that this turn may change: one this persona sees (its lineage, or
    a user's global ones) that may be recalled here, about or by the speaker. Anything else is
    reported as not found, so nobody learns that it exists."""
    for kind, subject in owners:
        owner_id = turn.guild_id if kind is ScopeKind.SERVER else subject.user_id
        memory = store.find(kind, owner_id or "", memory_id)
        visible = {lineage} if kind is ScopeKind.SERVER else {lineage, GLOBAL_LINEAGE}
        if (
            memory is not None
            and memory.scope.lineage in visible
            and memory.recallable_at(turn.place, turn.config.privacy)
            and turn.user.user_id in (memory.author_id, memory.about)
        ):
            return memory, subject
    return None


def _result(status: str, message: str) -> ToolResult:
    return ToolResult(status, {"message": message})


def _answer(tool: str, exc: Exception) -> ToolResult:
    """The tool's answer to a condition that stopped it (``tool_failures``); anything else raises."""
    answer = answer_for(tool, exc)
    if answer is None:
        raise exc
    return answer
