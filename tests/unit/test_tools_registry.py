"""The tools a turn offers and runs, through their one registry (``services/tools.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kioku.domain.ltm.recall import Recall
from kioku.domain.ltm.statuses import SaveStatus
from kioku.domain.ltm.tools import CREATE_TOOL_NAME, SEARCH_TOOL_NAME, UPDATE_TOOL_NAME
from kioku.domain.models import Capabilities
from kioku.domain.stm.update_tool import TOOL_NAME as STM_TOOL_NAME
from kioku.domain.tools import ToolResult
from kioku.domain.turn import PersonaRemoved, TurnAlreadyRecorded, TurnClaimed
from kioku.services import tool_failures, tools
from tests.unit.ltm_fakes import FakeMemoryStore, make_turn, member_lookup, members, settings
from tests.unit.test_ltm_recall_budget import SERVER_SCOPE, chatter, recalled

STM_SCHEMA = {"type": "function", "function": {"name": STM_TOOL_NAME, "parameters": {}}}


@dataclass
class FakeShortTermMemory:
    """The short-term side of a turn: offered or not, and what its tool was called with."""

    offered: bool = True
    calls: list[Any] = field(default_factory=list)

    def tool_definition(self) -> dict[str, Any] | None:
        return STM_SCHEMA if self.offered else None

    def run_update_tool(self, arguments: Any) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult("stm_saved")


def bench(*, stm=None, recall=None, turn=None, store=None) -> tools.ToolBench:
    return tools.ToolBench(
        turn=turn or make_turn(),
        stm=stm or FakeShortTermMemory(),  # type: ignore[arg-type]
        recalled=recall or Recall(),
        embeddings=None,
        store=store or FakeMemoryStore(),
        settings=settings(),
        members=members(None, member_lookup),
        speaker_manages_server=lambda: True,
        write_announced=lambda result, write: write(()),
    )


def names(schemas: list[dict[str, Any]]) -> list[str]:
    return [schema["function"]["name"] for schema in schemas]


def test_a_turn_that_left_memories_out_offers_every_tool_in_order():
    # Given a recall that could not show everything
    recall = recalled(chatter(SERVER_SCOPE, 300), message="what was Bob's cat called?", budget=2000)
    assert recall.left_out

    # When the turn asks which tools to offer
    offered = tools.offered(bench(recall=recall))

    # Then short-term memory comes first, then saving, correcting and searching long-term memory
    assert names(offered) == [STM_TOOL_NAME, CREATE_TOOL_NAME, UPDATE_TOOL_NAME, SEARCH_TOOL_NAME]


def test_each_tool_offers_only_when_its_rule_says_so():
    # Given a server with self-teaching off, short-term memory not offered and nothing left out
    turn = make_turn(capabilities=Capabilities(self_teaching_enabled=False))

    # Then nothing is offered, and a model that takes no tools is offered none either
    assert tools.offered(bench(turn=turn, stm=FakeShortTermMemory(offered=False))) == []
    assert (
        names(tools.offered(bench(turn=make_turn(llm_has_tools=False), stm=FakeShortTermMemory(False)))) == []
    )
    assert names(tools.offered(bench())) == [STM_TOOL_NAME, CREATE_TOOL_NAME, UPDATE_TOOL_NAME]


def test_every_tool_is_offered_under_its_own_name():
    recall = recalled(chatter(SERVER_SCOPE, 300), message="anything", budget=2000)
    assert sorted(names(tools.offered(bench(recall=recall)))) == sorted(tool.name for tool in tools.TOOLS)


def test_a_call_runs_the_tool_it_names_with_the_models_arguments():
    # Given a turn on a server that saves memories
    store, stm = FakeMemoryStore(), FakeShortTermMemory()
    here = bench(store=store, stm=stm)

    # When the model saves a memory and updates its short-term memory
    saved = tools.run(
        CREATE_TOOL_NAME,
        '{"memory_content": "the picnic is on Saturday", "memory_scope": "server_wide"}',
        here,
    )
    noted = tools.run(STM_TOOL_NAME, '{"summary": "tea talk"}', here)

    # Then each reached its own tool
    assert saved.status == SaveStatus.SAVED
    assert [m.content for m in store.memories.values()] == ["the picnic is on Saturday"]
    assert noted.status == "stm_saved" and stm.calls == ['{"summary": "tea talk"}']


def test_an_unknown_tool_is_an_error_the_model_reads():
    result = tools.run("delete_everything", "{}", bench())

    assert result.status == "error"
    assert "no tool named 'delete_everything'" in result.data["message"]


def test_a_tool_that_fails_on_our_side_answers_an_error_and_does_not_raise():
    # Given a short-term memory whose tool raises
    class Broken(FakeShortTermMemory):
        def run_update_tool(self, arguments: Any) -> ToolResult:
            raise RuntimeError("the table went away")

    # When the model calls it
    result = tools.run(STM_TOOL_NAME, "{}", bench(stm=Broken()))

    # Then the model is told it failed, and not to retry
    assert (result.status, result.data["message"]) == ("error", tool_failures.TOOL_FAILED)


@pytest.mark.parametrize(
    "end", [TurnClaimed("m#1#twin"), TurnAlreadyRecorded("done"), PersonaRemoved("gone")], ids=type
)
def test_a_tool_stopped_by_the_turn_s_own_end_raises_it_into_the_turn(end):
    # Given a short-term memory whose tool finds the turn another attempt's, done, or its persona gone
    class Ended(FakeShortTermMemory):
        def run_update_tool(self, arguments: Any) -> ToolResult:
            raise end

    # When the model calls it, Then the attempt stops there: the model is not answered
    with pytest.raises(type(end)):
        tools.run(STM_TOOL_NAME, "{}", bench(stm=Ended()))
