"""What the memory tools decide without the store: whom a memory is about, where it is said (as
private as the server made that channel), where a notice may show its text, and how ``{user}`` is
pinned in a server memory. ``services/ltm.py`` runs the tools on these rules."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kioku.domain.ltm.arguments import RequestedScope
from kioku.domain.ltm.memory import Memory, MemoryScope, ScopeKind
from kioku.domain.ltm.targets import TargetKind, TargetResolution, TargetUser
from kioku.domain.models import Capabilities
from kioku.domain.privacy import Origin, effective_private
from kioku.domain.tools import ToolResult
from kioku.domain.turn import TurnContext


class PersonalMemoriesOff(Exception):
    """The server turned personal memories off (``/capabilities manage personal_memories:False``)."""


def check_personal_saving(kind: ScopeKind, capabilities: Capabilities) -> None:
    """Raises ``PersonalMemoriesOff`` for a personal memory on a server that keeps none: every way of
    adding one (the model's tool, a command) asks this before writing."""
    if kind is ScopeKind.PERSONAL and not capabilities.personal_memories_enabled:
        raise PersonalMemoriesOff("this server keeps no personal memories")


def memory_about(memory: Memory, subject: TargetUser) -> dict[str, Any]:
    """A tool result's memory id and, for a personal memory, whom it is about, by name."""
    data: dict[str, Any] = {"memory_id": memory.memory_id}
    if memory.scope.kind is ScopeKind.PERSONAL:
        data["about"] = subject.label()
    return data


def owner_of(scope: MemoryScope) -> str | None:
    """The person a personal memory is about; None for a server memory."""
    return scope.owner_id if scope.kind is ScopeKind.PERSONAL else None


def names_user(content: str) -> bool:
    """Whether a server memory's text is about someone: it writes ``{user}`` for them."""
    return "{user}" in content


def pin_user_token(content: str, subject_name: str) -> str:
    """A server memory is read in every later turn, where ``{user}`` would mean whoever is speaking
    then; so ``{user}`` is written down as the person the fact is about when it is saved."""
    return content.replace("{user}", subject_name)


def saving_origin(turn: TurnContext) -> Origin:
    """Where a memory is said, as private as the server's overrides made that channel: what was said
    in a channel a manager made private must not follow its subject to another server."""
    origin = turn.origin
    if origin.guild_id is None:
        return origin
    return replace(origin, private=effective_private(origin, turn.config.privacy))


def shown_here(memory: Memory, turn: TurnContext) -> bool:
    """A notification shows a memory's text only where the memory itself could be recalled."""
    if memory.scope.kind is ScopeKind.PERSONAL and not turn.config.capabilities.personal_memories_enabled:
        return False
    return memory.recallable_at(turn.place, turn.config.privacy)


def speaker_of(turn: TurnContext) -> TargetUser:
    user = turn.user
    return TargetUser(user_id=user.user_id, display_name=user.display_name, username=user.username)


def unresolved(resolution: TargetResolution, ambiguous: str, not_found: str) -> ToolResult:
    if resolution.kind is TargetKind.AMBIGUOUS:
        return ToolResult(
            ambiguous,
            {
                "candidates": list(resolution.candidates),
                "message": "several users have that name; ask which one is meant, then use their mention",
            },
        )
    return _message(not_found, "no user with that name in this conversation or server")


def scope_name(kind: ScopeKind) -> str:
    return RequestedScope.SERVER_WIDE if kind is ScopeKind.SERVER else RequestedScope.TARGET_USER


def _message(status: str, message: str) -> ToolResult:
    return ToolResult(status, {"message": message})
