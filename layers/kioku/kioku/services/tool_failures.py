"""What a tool answers when a condition stops it, every tool in one table: the status the model reads
and a message that says what happened and whether to retry. The tools let the conditions through to
their entry point (``services/ltm.py``'s save and correct, ``services/stm.py``'s update), which asks
``answer_for``; a condition the table does not know propagates, and the tools registry
(``services/tools.py``) answers it with ``TOOL_FAILED``, logged.

A tool's refusals that are no condition (the tool turned off, a target not found) are answered
where they are decided."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from kioku.domain.conditions import StoreFailed
from kioku.domain.forgetting import SpeakerForgotten
from kioku.domain.ltm.arguments import InvalidArguments, Problem
from kioku.domain.ltm.memory import (
    DuplicateMemory,
    MemoryNotFound,
    MemoryStoreFailed,
    TargetPrivacyRestricted,
)
from kioku.domain.ltm.ports import MemberSearchFailed
from kioku.domain.ltm.saving import PersonalMemoriesOff
from kioku.domain.ltm.statuses import SaveStatus, UpdateStatus
from kioku.domain.ltm.tools import CREATE_TOOL_NAME, UPDATE_TOOL_NAME
from kioku.domain.stm.capture import NewerMemoryExists
from kioku.domain.stm.update_tool import TOOL_NAME as STM_TOOL_NAME
from kioku.domain.stm.update_tool import InvalidStmUpdate
from kioku.domain.tools import ToolResult

logger = logging.getLogger(__name__)

Answer = Callable[[Any], ToolResult]

PRIVACY_RESTRICTED: Final = (
    "this user's privacy setting forbids personal memories; nothing was saved. "
    "They can change it in their settings"
)
PERSONAL_MEMORIES_OFF: Final = (
    "this server has turned personal memories off, so nothing about one person is kept here; "
    "nothing was saved. Tell them so; a server manager can turn them on with /capabilities manage"
)
FORGOTTEN: Final = "nothing was saved: the person asked to forget everything about them after this was said"
MEMBER_SEARCH_FAILED: Final = "could not search the server's members; try a mention"
ERROR: Final = "error"
"""The status of every tool's answer when the call itself cannot run."""
TOOL_FAILED: Final = "the tool failed on our side; do not retry it this turn"
TOOL_CALLS_EXHAUSTED: Final = "not run: this turn has used all the tool calls it may make; answer without it"

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


def _says(status: str, message: str) -> Answer:
    return lambda _: ToolResult(status, {"message": message})


def _duplicate(exc: DuplicateMemory) -> ToolResult:
    return ToolResult(
        UpdateStatus.DUPLICATE,
        {"memory_id": exc.existing_id, "message": f"memory #{exc.existing_id} already says this"},
    )


def _stm_store_failed(_: StoreFailed) -> ToolResult:
    logger.exception("saving short-term memory failed")
    return ToolResult(
        ERROR, {"message": "the short-term memory could not be saved right now. Nothing was saved."}
    )


FAILURES: Final[Mapping[str, Mapping[type[Exception], Answer]]] = {
    CREATE_TOOL_NAME: {
        InvalidArguments: lambda exc: ToolResult(_CREATE_PROBLEMS[exc.problem], {"message": exc.message}),
        MemberSearchFailed: _says(SaveStatus.INTERNAL_ERROR, MEMBER_SEARCH_FAILED),
        TargetPrivacyRestricted: _says(SaveStatus.PRIVACY_RESTRICTED, PRIVACY_RESTRICTED),
        PersonalMemoriesOff: _says(SaveStatus.DISABLED, PERSONAL_MEMORIES_OFF),
        SpeakerForgotten: _says(SaveStatus.FORGOTTEN, FORGOTTEN),
        MemoryStoreFailed: _says(
            SaveStatus.DB_ERROR, "the memory could not be saved; do not retry in this turn"
        ),
    },
    UPDATE_TOOL_NAME: {
        InvalidArguments: lambda exc: ToolResult(_UPDATE_PROBLEMS[exc.problem], {"message": exc.message}),
        MemberSearchFailed: _says(UpdateStatus.INTERNAL_ERROR, MEMBER_SEARCH_FAILED),
        MemoryNotFound: _says(UpdateStatus.NOT_FOUND, "the memory changed or was deleted meanwhile"),
        TargetPrivacyRestricted: _says(UpdateStatus.PRIVACY_RESTRICTED, PRIVACY_RESTRICTED),
        SpeakerForgotten: _says(UpdateStatus.FORGOTTEN, FORGOTTEN),
        DuplicateMemory: _duplicate,
        MemoryStoreFailed: _says(
            UpdateStatus.DB_ERROR, "the memory could not be changed; do not retry in this turn"
        ),
    },
    STM_TOOL_NAME: {
        InvalidStmUpdate: lambda exc: ToolResult(
            ERROR, {"message": f"invalid arguments: {exc}. Nothing was saved."}
        ),
        SpeakerForgotten: _says(
            ERROR, "the person asked to forget everything since this was said; nothing was saved."
        ),
        NewerMemoryExists: _says(
            ERROR, "a newer short-term memory of this channel was saved meanwhile; yours was not."
        ),
        StoreFailed: _stm_store_failed,
    },
}
"""Tool by tool, each condition it answers, the first that matches winning."""


def no_such_tool(name: str) -> ToolResult:
    return ToolResult(ERROR, {"message": f"there is no tool named {name!r}"})


def tool_failed() -> ToolResult:
    """A failure on our side that no condition names (logged where it is caught)."""
    return ToolResult(ERROR, {"message": TOOL_FAILED})


def calls_exhausted() -> ToolResult:
    """A call past ``MAX_TOOL_CALLS_PER_TURN``: not run."""
    return ToolResult(ERROR, {"message": TOOL_CALLS_EXHAUSTED})


def answer_for(tool: str, exc: Exception) -> ToolResult | None:
    """What ``tool`` answers the model when ``exc`` stopped it; None: not a condition it answers."""
    for condition, answer in FAILURES.get(tool, {}).items():
        if isinstance(exc, condition):
            return answer(exc)
    return None
