"""The long-term memory tools the model calls, and the recall stage that shows it what it saved.

Each tool answers with a ``ToolResult``: a status from ``domain.ltm.statuses`` the model reads and,
on success, an embed for the turn to post. Domain errors map to statuses here and nowhere else.
Nothing is cached between turns, so a saved memory needs no cache invalidation: the next recall reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from kioku.config import Settings
from kioku.domain.ltm.arguments import (
    InvalidArguments,
    Problem,
    RequestedScope,
    UpdateArguments,
    clean_content,
    parse_create_arguments,
    parse_update_arguments,
)
from kioku.domain.ltm.memory import (
    GLOBAL_LINEAGE,
    DuplicateMemory,
    Memory,
    MemoryDraft,
    MemoryLimitReached,
    MemoryNotFound,
    MemoryScope,
    MemoryStatus,
    MemoryStoreFailed,
    PersonalTarget,
    ScopeKind,
    TargetPrivacyRestricted,
    allows_personal_memories,
)
from kioku.domain.ltm.notification import (
    memory_forgotten_embed,
    memory_pending_embed,
    memory_saved_embed,
    memory_updated_embed,
)
from kioku.domain.ltm.ports import LookupMember, MemberSearchFailed, MemoryStore, SearchMembers
from kioku.domain.ltm.recall import recall_subjects, render_recall
from kioku.domain.ltm.statuses import SaveStatus, UpdateStatus
from kioku.domain.ltm.targets import TargetKind, TargetResolution, TargetUser, resolve_target
from kioku.domain.models import ContextItem, MemoryModeration
from kioku.domain.privacy import Origin, effective_private, rewritten_origin
from kioku.domain.tools import ToolResult
from kioku.domain.turn import TurnContext

CREATE_TOOL_NAME: Final = "create_long_term_memory"
UPDATE_TOOL_NAME: Final = "update_long_term_memory"

CREATE_TOOL: Final = {
    "type": "function",
    "function": {
        "name": CREATE_TOOL_NAME,
        "description": (
            "Save one new, lasting fact or preference so you remember it in later conversations. "
            "Save only what will still matter next week, one distinct fact per call, and never something "
            "already listed in your long-term memories (correct those with update_long_term_memory). "
            "Write {user} for the person the fact is about and {bot} for yourself instead of names, "
            "e.g. '{user} is allergic to peanuts' or '{bot} promised {user} a haiku every Friday'."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "memory_content": {
                    "type": "string",
                    "description": "The fact, in one or two sentences, using {user} and {bot} instead of names.",
                },
                "memory_scope": {
                    "type": "string",
                    "enum": [scope.value for scope in RequestedScope],
                    "description": (
                        "'target_user' for a fact about one person (their preferences, life, history); "
                        "'server_wide' for a fact about this server, its community, rules or running jokes."
                    ),
                },
                "target_user": {
                    "type": "string",
                    "description": (
                        "With 'target_user': the person's display name as seen in the conversation "
                        "(or their mention). Leave out for 'server_wide'."
                    ),
                },
            },
            "required": ["memory_content", "memory_scope"],
        },
    },
}

UPDATE_TOOL: Final = {
    "type": "function",
    "function": {
        "name": UPDATE_TOOL_NAME,
        "description": (
            "Correct or forget a long-term memory you saved earlier, quoting its id from your memories "
            "(the number in [#12345]). Give the full corrected fact as memory_content, or an empty "
            "memory_content to delete the memory when it is wrong or the person asks you to forget it."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "memory_id": {
                    "type": "integer",
                    "description": "The id shown as [#12345] before the memory.",
                },
                "memory_content": {
                    "type": "string",
                    "description": "The corrected fact, with {user} and {bot} for names; empty to delete.",
                },
                "target_user": {
                    "type": "string",
                    "description": "For a personal memory: whose it is (display name or mention).",
                },
            },
            "required": ["memory_id", "memory_content"],
        },
    },
}

_CREATE_PROBLEMS: Final = {
    Problem.ARGUMENTS: SaveStatus.INVALID_ARGS,
    Problem.CONTENT: SaveStatus.INVALID_CONTENT,
    Problem.SCOPE: SaveStatus.INVALID_SCOPE,
}
_UPDATE_PROBLEMS: Final = {
    Problem.ARGUMENTS: UpdateStatus.INVALID_ARGS,
    Problem.CONTENT: UpdateStatus.INVALID_CONTENT,
    Problem.SCOPE: UpdateStatus.INVALID_ARGS,
}
_PRIVACY_MESSAGE: Final = (
    "this user's privacy setting forbids personal memories; nothing was saved. "
    "They can change it in their settings"
)


_SERVER_FALLBACK: Final = {
    TargetKind.BOT_SELF: "saved as a server memory: you keep no personal memories about yourself",
    TargetKind.OTHER_BOT: "saved as a server memory: bots have no personal memories",
    TargetKind.BRIDGE: "saved as a server memory: bridged users have no personal memories",
}


def long_term_memory_tools(turn: TurnContext) -> list[dict[str, Any]]:
    """The memory tools to offer this turn: none when self-teaching is off or the model takes no tools."""
    if not (turn.config.capabilities.self_teaching_enabled and turn.llm_has_tools):
        return []
    return [CREATE_TOOL, UPDATE_TOOL]


def create_long_term_memory(
    arguments: str | dict[str, Any] | None,
    turn: TurnContext,
    *,
    store: MemoryStore,
    search_members: SearchMembers | None,
    settings: Settings,
    lookup_member: LookupMember | None = None,
    speaker_manages_server: Callable[[], bool] | None = None,
) -> ToolResult:
    """Validate, resolve the target, sanitise, guard the lineage, then save in one limited write.

    On a server that reviews memories, a server memory from a member who does not manage the server
    is saved as pending (``speaker_manages_server`` is asked only then)."""
    if not turn.config.capabilities.self_teaching_enabled:
        return _result(SaveStatus.DISABLED, "self-teaching is turned off on this server")
    try:
        return _create(
            arguments, turn, store, search_members, lookup_member, speaker_manages_server, settings
        )
    except InvalidArguments as exc:
        return _result(_CREATE_PROBLEMS[exc.problem], exc.message)
    except MemberSearchFailed:
        return _result(SaveStatus.INTERNAL_ERROR, "could not search the server's members; try a mention")
    except TargetPrivacyRestricted:
        return _result(SaveStatus.PRIVACY_RESTRICTED, _PRIVACY_MESSAGE)
    except MemoryLimitReached as exc:
        return _result(
            SaveStatus.LIMIT_EXCEEDED,
            f"this scope already holds {exc.limit} memories; update or delete an old one first",
        )
    except MemoryStoreFailed:
        return _result(SaveStatus.DB_ERROR, "the memory could not be saved; do not retry in this turn")


def update_long_term_memory(
    arguments: str | dict[str, Any] | None,
    turn: TurnContext,
    *,
    store: MemoryStore,
    search_members: SearchMembers | None,
    settings: Settings,
    lookup_member: LookupMember | None = None,
) -> ToolResult:
    """Replace a memory's content, or delete it (blank content), giving its slot back."""
    if not turn.config.capabilities.self_teaching_enabled:
        return _result(UpdateStatus.DISABLED, "self-teaching is turned off on this server")
    try:
        request = parse_update_arguments(arguments, settings.MAX_MEMORY_LENGTH)
        return _update(request, turn, store, search_members, lookup_member)
    except InvalidArguments as exc:
        return _result(_UPDATE_PROBLEMS[exc.problem], exc.message)
    except MemberSearchFailed:
        return _result(UpdateStatus.INTERNAL_ERROR, "could not search the server's members; try a mention")
    except MemoryNotFound:
        return _result(UpdateStatus.NOT_FOUND, "the memory changed or was deleted meanwhile")
    except DuplicateMemory as exc:
        return ToolResult(
            UpdateStatus.DUPLICATE,
            {"memory_id": exc.existing_id, "message": f"memory #{exc.existing_id} already says this"},
        )
    except MemoryStoreFailed:
        return _result(UpdateStatus.DB_ERROR, "the memory could not be changed; do not retry in this turn")


def recall(turn: TurnContext, *, store: MemoryStore) -> ContextItem | None:
    """The long-term memory context item of a turn, or None when nothing is remembered.

    One BatchGetItem: the recall books and the privacy levels of the participants shown.
    Raises ``MemoryStoreFailed`` when the store cannot answer.
    """
    subjects = recall_subjects(turn)
    memories = store.recall(
        turn.server_id,
        turn.config.persona.lineage_id,
        [s.user_id for s in subjects],
        place=turn.place,
        policy=turn.config.privacy,
    )
    return render_recall(turn, memories.server, memories.personal, subjects, offered_update_tool(turn))


def offered_update_tool(turn: TurnContext) -> str | None:
    """The update tool's name when this turn offers it: recall explains corrections only then."""
    offered = any(tool["function"]["name"] == UPDATE_TOOL_NAME for tool in long_term_memory_tools(turn))
    return UPDATE_TOOL_NAME if offered else None


# -- the steps -------------------------------------------------------------------------------------


def _create(
    arguments: str | dict[str, Any] | None,
    turn: TurnContext,
    store: MemoryStore,
    search_members: SearchMembers | None,
    lookup_member: LookupMember | None,
    speaker_manages_server: Callable[[], bool] | None,
    settings: Settings,
) -> ToolResult:
    request = parse_create_arguments(arguments, settings.MAX_MEMORY_LENGTH)
    subject = _speaker(turn)
    target: PersonalTarget | None = None
    note = None
    if request.scope is RequestedScope.TARGET_USER:
        resolution = resolve_target(request.target_user or "", turn, search_members, lookup_member)
        if resolution.kind in _SERVER_FALLBACK:
            note = _SERVER_FALLBACK[resolution.kind]
            if resolution.kind is TargetKind.BRIDGE and resolution.user is not None:
                subject = resolution.user
        elif resolution.kind is TargetKind.USER and resolution.user is not None:
            subject, target = resolution.user, store.personal_target(resolution.user.user_id)
            if not allows_personal_memories(target.privacy_level):
                return _result(SaveStatus.PRIVACY_RESTRICTED, _PRIVACY_MESSAGE)
        else:
            return _unresolved(resolution, SaveStatus.AMBIGUOUS_USER, SaveStatus.USER_NOT_FOUND)
    if target is None and turn.server_id is None:
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
        scope, limit = MemoryScope.server(turn.server_id or "", lineage), settings.MAX_SERVER_MEMORIES
        if turn.config.memory_moderation is MemoryModeration.APPROVAL and not (
            speaker_manages_server is not None and speaker_manages_server()
        ):
            status = MemoryStatus.PENDING
    else:
        scope, limit = MemoryScope.personal(target.user_id, lineage), settings.MAX_PERSONAL_MEMORIES
    draft = MemoryDraft(
        scope=scope,
        content=content,
        author_id=turn.user.user_id,
        created_at=turn.now,
        origin=_saving_origin(turn),
        subject_id=named.user_id if named else None,
        status=status,
    )
    outcome = store.create(draft, limit=limit, ledger=target.ledger if target else None)

    data: dict[str, Any] = {"memory_id": outcome.memory_id, "memory_scope": _scope_name(scope.kind)}
    if scope.kind is ScopeKind.PERSONAL:
        data["about"] = subject.label()  # the person by name, so the model can say whom it remembered
    if not outcome.created:
        data["message"] = f"already remembered as memory #{outcome.memory_id}; nothing new was saved"
        return ToolResult(SaveStatus.SAVED, data)
    if note:
        data["message"] = note
    if status is MemoryStatus.PENDING:
        data["message"] = (
            "saved for review: a server manager must approve it before you remember it; "
            "tell the person it awaits review"
        )
        embed = memory_pending_embed(
            content, outcome.memory_id, subject_name=subject.display_name, bot_name=turn.bot_name
        )
        return ToolResult(SaveStatus.PENDING_REVIEW, data, notification=embed)
    embed = memory_saved_embed(
        content if _shown_here(draft.saved_as(outcome.memory_id), turn) else None,
        outcome.memory_id,
        scope=scope.kind,
        subject_name=subject.display_name,
        bot_name=turn.bot_name,
        personal_memories_enabled=turn.config.capabilities.personal_memories_enabled,
    )
    return ToolResult(SaveStatus.SAVED, data, notification=embed)


def _update(
    request: UpdateArguments,
    turn: TurnContext,
    store: MemoryStore,
    search_members: SearchMembers | None,
    lookup_member: LookupMember | None,
) -> ToolResult:
    lineage = turn.config.persona.lineage_id
    if lineage <= GLOBAL_LINEAGE:
        return _result(UpdateStatus.INTERNAL_ERROR, "the persona has no valid lineage; nothing was changed")
    owners: list[tuple[ScopeKind, TargetUser]] = []
    speaker = _speaker(turn)
    if request.target_user is None:
        if turn.server_id is not None:
            owners.append((ScopeKind.SERVER, speaker))
        owners.append((ScopeKind.PERSONAL, speaker))
    else:
        resolution = resolve_target(request.target_user, turn, search_members, lookup_member)
        if resolution.kind in _SERVER_FALLBACK and turn.server_id is not None:
            owners.append((ScopeKind.SERVER, speaker))
        elif resolution.kind is TargetKind.USER and resolution.user is not None:
            owners.append((ScopeKind.PERSONAL, resolution.user))
        else:
            return _unresolved(resolution, UpdateStatus.AMBIGUOUS_USER, UpdateStatus.USER_NOT_FOUND)

    found = _find(store, turn, owners, request.memory_id, lineage)
    if found is None:
        return _result(
            UpdateStatus.NOT_FOUND,
            f"no memory #{request.memory_id} here; quote an id from your memories, with target_user "
            "for a personal memory",
        )
    memory, subject = found
    names = {"subject_name": subject.display_name, "bot_name": turn.bot_name}
    shown = _shown_here(memory, turn)
    if request.deletes:
        store.delete(memory)
        embed = memory_forgotten_embed(memory.content if shown else None, memory.memory_id, **names)
        return ToolResult(UpdateStatus.DELETED, _about(memory, subject), notification=embed)
    content = clean_content(request.content)
    named = None
    if memory.scope.kind is ScopeKind.SERVER:
        named = speaker.user_id if names_user(content) else None
        content = pin_user_token(content, speaker.display_name)
    else:
        privacy = store.personal_target(memory.scope.owner_id).privacy_level
        if not allows_personal_memories(privacy):
            return _result(UpdateStatus.PRIVACY_RESTRICTED, _PRIVACY_MESSAGE)
    origin = rewritten_origin(memory.origin, _saving_origin(turn), turn.config.privacy)
    updated = store.replace_content(
        memory, content, turn.now, origin=origin, author_id=turn.user.user_id, subject_id=named
    )
    embed = memory_updated_embed(updated.content if shown else None, updated.memory_id, **names)
    return ToolResult(UpdateStatus.UPDATED, _about(updated, subject), notification=embed)


def _about(memory: Memory, subject: TargetUser) -> dict[str, Any]:
    """A tool result's memory id and, for a personal memory, whom it is about, by name."""
    data: dict[str, Any] = {"memory_id": memory.memory_id}
    if memory.scope.kind is ScopeKind.PERSONAL:
        data["about"] = subject.label()
    return data


def names_user(content: str) -> bool:
    """Whether a server memory's text is about someone: it writes ``{user}`` for them."""
    return "{user}" in content


def pin_user_token(content: str, subject_name: str) -> str:
    """A server memory is read in every later turn, where ``{user}`` would mean whoever is speaking
    then; so ``{user}`` is written down as the person the fact is about when it is saved."""
    return content.replace("{user}", subject_name)


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
        owner_id = turn.server_id if kind is ScopeKind.SERVER else subject.user_id
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


def _saving_origin(turn: TurnContext) -> Origin:
    """Where a memory is said, as private as the server's overrides made that channel: what was said
    in a channel a manager made private must not follow its subject to another server."""
    origin = turn.origin
    if origin.guild_id is None:
        return origin
    return replace(origin, private=effective_private(origin, turn.config.privacy))


def _shown_here(memory: Memory, turn: TurnContext) -> bool:
    """A notification shows a memory's text only where the memory itself could be recalled."""
    if memory.scope.kind is ScopeKind.PERSONAL and not turn.config.capabilities.personal_memories_enabled:
        return False
    return memory.recallable_at(turn.place, turn.config.privacy)


def _speaker(turn: TurnContext) -> TargetUser:
    user = turn.user
    return TargetUser(user_id=user.user_id, display_name=user.display_name, username=user.username)


def _unresolved(resolution: TargetResolution, ambiguous: str, not_found: str) -> ToolResult:
    if resolution.kind is TargetKind.AMBIGUOUS:
        return ToolResult(
            ambiguous,
            {
                "candidates": list(resolution.candidates),
                "message": "several users have that name; ask which one is meant, then use their mention",
            },
        )
    return _result(not_found, "no user with that name in this conversation or server")


def _scope_name(kind: ScopeKind) -> str:
    return RequestedScope.SERVER_WIDE if kind is ScopeKind.SERVER else RequestedScope.TARGET_USER


def _result(status: str, message: str) -> ToolResult:
    return ToolResult(status, {"message": message})
