"""The search tool over long-term memory: what this turn may see but recall did not show, best first
for the model's words. It reads nothing: recall already holds every memory the turn may see."""

from __future__ import annotations

from typing import Any, Final

from kioku.domain.ltm.ranking import RecallQuery
from kioku.domain.ltm.recall import Recall, rank_recall
from kioku.domain.ltm.statuses import SearchStatus
from kioku.domain.tools import ToolResult, parse_tool_arguments
from kioku.domain.turn import TurnContext
from kioku.domain.why import MemoryUse, UsedMemory
from kioku.services.embeddings import TurnEmbeddings

SEARCH_MAX_RESULTS: Final = 8
SEARCH_BUDGET_CHARS: Final = 2_000
"""Characters of memory text one search answers with: a few memories, not another recall."""
SEARCH_QUERY_MAX_CHARS: Final = 500


def search_long_term_memory(
    arguments: str | dict[str, Any] | None,
    turn: TurnContext,
    recalled: Recall,
    embeddings: TurnEmbeddings | None = None,
) -> ToolResult:
    """The memories this turn may see but was not shown, best first for the model's ``query``, within
    ``SEARCH_BUDGET_CHARS``: no read, since recall already holds every memory the turn may see."""
    parsed = parse_tool_arguments(arguments)
    query = parsed.get("query") if parsed is not None else None
    if not isinstance(query, str) or not query.strip() or len(query) > SEARCH_QUERY_MAX_CHARS:
        return _result(SearchStatus.INVALID_ARGS, f"give a query of 1 to {SEARCH_QUERY_MAX_CHARS} characters")
    hidden = recalled.hidden()
    if not hidden:
        return _result(SearchStatus.NOTHING_FOUND, "every memory you have here is already in your context")
    ranked = rank_recall(
        recalled.candidates,
        recalled.parts,
        RecallQuery(query, ignored=turn.bot.names(turn.bot_name)),
        embeddings.embed if embeddings else None,
        among=hidden,
    )
    found: list[dict[str, Any]] = []
    touched: list[UsedMemory] = []
    room = SEARCH_BUDGET_CHARS
    for place in ranked:
        candidate = recalled.candidates[place.index]
        if place.relevance <= 0 or len(found) >= SEARCH_MAX_RESULTS:
            break
        if len(candidate.text) <= room:
            room -= len(candidate.text)
            found.append(
                {"memory_id": candidate.memory.memory_id, "about": candidate.about, "memory": candidate.text}
            )
            touched.append(UsedMemory.of(candidate.memory, MemoryUse.FOUND))
    if not found:
        return _result(SearchStatus.NOTHING_FOUND, "no memory matches; try other words, or answer without")
    return ToolResult(SearchStatus.FOUND, {"memories": found}, touched=tuple(touched))


def _result(status: str, message: str) -> ToolResult:
    return ToolResult(status, {"message": message})
