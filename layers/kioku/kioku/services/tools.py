"""Every tool a turn may offer the model, one object each: its name, when it is offered (its schema,
or None) and how a call runs. The turn asks ``offered`` for a request's tools and ``run`` for a call;
a new tool is one more ``Tool`` in ``TOOLS`` (its schema in the domain, its work in a service)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from aws_lambda_powertools import Logger

from kioku.config import Settings
from kioku.domain.ltm import tools as ltm_tools
from kioku.domain.ltm.ports import MemberDirectory, MemoryStore
from kioku.domain.ltm.recall import Recall
from kioku.domain.stm.update_tool import TOOL_NAME as STM_TOOL_NAME
from kioku.domain.tools import ToolResult
from kioku.domain.turn import PersonaRemoved, TurnAlreadyRecorded, TurnClaimed, TurnContext
from kioku.services import ltm, ltm_search, tool_failures
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.stm import ShortTermMemoryTurn

logger = Logger(child=True)


@dataclass(frozen=True, slots=True)
class ToolBench:
    """What a turn's tools work with: the turn, what it read, and the stores and directory they write to
    and look people up in. ``write_announced`` keeps a change and the notice it owes together."""

    turn: TurnContext
    stm: ShortTermMemoryTurn
    recalled: Recall
    embeddings: TurnEmbeddings | None
    store: MemoryStore
    settings: Settings
    members: MemberDirectory | None
    speaker_manages_server: Callable[[], bool]
    write_announced: ltm.WriteAnnounced


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    schema: Callable[[ToolBench], dict[str, Any] | None]
    """The tool as the model is offered it this turn, or None when it is not offered."""
    execute: Callable[[Any, ToolBench], ToolResult]
    """Run a call with the model's arguments (unchecked: the tool validates them)."""


def _memory_access(bench: ToolBench) -> dict[str, Any]:
    """What saving and correcting a memory both use: the store, and how people are looked up."""
    return {
        "store": bench.store,
        "members": bench.members,
        "settings": bench.settings,
        "embeddings": bench.embeddings,
    }


def _create(arguments: Any, bench: ToolBench) -> ToolResult:
    return ltm.create_long_term_memory(
        arguments,
        bench.turn,
        speaker_manages_server=bench.speaker_manages_server,
        recalled=bench.recalled,
        **_memory_access(bench),
    )


def _update(arguments: Any, bench: ToolBench) -> ToolResult:
    return ltm.update_long_term_memory(
        arguments, bench.turn, write_announced=bench.write_announced, **_memory_access(bench)
    )


def _search(arguments: Any, bench: ToolBench) -> ToolResult:
    return ltm_search.search_long_term_memory(arguments, bench.turn, bench.recalled, bench.embeddings)


def _saving(schema: dict[str, Any]) -> Callable[[ToolBench], dict[str, Any] | None]:
    return lambda bench: schema if ltm_tools.saving_offered(bench.turn) else None


TOOLS: Final = (
    Tool(
        STM_TOOL_NAME,
        lambda bench: bench.stm.tool_definition(),
        lambda arguments, bench: bench.stm.run_update_tool(arguments),
    ),
    Tool(
        ltm_tools.CREATE_TOOL_NAME,
        lambda bench: ltm_tools.create_tool(bench.turn) if ltm_tools.saving_offered(bench.turn) else None,
        _create,
    ),
    Tool(ltm_tools.UPDATE_TOOL_NAME, _saving(ltm_tools.UPDATE_TOOL), _update),
    Tool(
        ltm_tools.SEARCH_TOOL_NAME,
        lambda bench: ltm_tools.SEARCH_TOOL if ltm_tools.search_offered(bench.turn, bench.recalled) else None,
        _search,
    ),
)
"""In the order the model is given them."""
_BY_NAME: Final = {tool.name: tool for tool in TOOLS}


def offered(bench: ToolBench) -> list[dict[str, Any]]:
    """The tools of this turn's model requests."""
    return [schema for tool in TOOLS if (schema := tool.schema(bench)) is not None]


def run(name: str, arguments: Any, bench: ToolBench) -> ToolResult:
    """A call of the tool ``name``: what it answers, or an error status the model reads; a failure on
    our side is logged, never raised into the turn. The turn's own ends are raised: a change whose
    notice finds the turn another attempt's, or done, stops this attempt (``write_announced``)."""
    tool = _BY_NAME.get(name)
    if tool is None:
        return tool_failures.no_such_tool(name)
    try:
        return tool.execute(arguments, bench)
    except (TurnClaimed, TurnAlreadyRecorded, PersonaRemoved):
        raise
    except Exception:
        logger.exception("tool %s failed", name)
        return tool_failures.tool_failed()
