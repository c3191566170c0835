"""The update_short_term_memory tool: schema per mode, availability, argument handling, once per turn."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from kioku.domain.forgetting import Said
from kioku.domain.models import PrivacyLevel, UserProfile
from kioku.domain.stm.context import StmState
from kioku.domain.stm.entries import StmAddress, StmEntry
from kioku.domain.stm.update_tool import TOOL_NAME, StmUpdate
from kioku.services.stm import ShortTermMemoryTurn
from tests.unit.stm_builders import ALICE, CATEGORIES, CHANNEL, LIMITS, NOW, SERVER, config, message, turn


@dataclass
class RecordingStore:
    """An in-memory stand-in for StmStore: remembers what it was asked to write."""

    writes: list[StmUpdate] = field(default_factory=list)

    def write_memory(self, identity, update, categories, now, retention, *, said=None):
        self.writes.append(update)


def stm_turn(turn_context=None, store=None, state=None) -> tuple[ShortTermMemoryTurn, RecordingStore]:
    store = store or RecordingStore()
    return ShortTermMemoryTurn(store, turn_context or turn(), state or StmState(), LIMITS), store


def status(result) -> dict:
    return json.loads(result.to_model_content())


# -- schema ---------------------------------------------------------------------------------------


def test_summary_mode_schema_has_one_required_summary_string():
    tool = stm_turn()[0].tool_definition()
    function = tool["function"]
    assert function["name"] == TOOL_NAME
    assert function["parameters"]["properties"].keys() == {"summary"}
    assert function["parameters"]["required"] == ["summary"]
    assert function["parameters"]["properties"]["summary"]["type"] == "string"
    assert "1500 characters" in function["description"]
    assert "{" not in function["description"]
    assert "{" not in function["parameters"]["properties"]["summary"]["description"]


def test_category_mode_schema_has_one_string_per_category_described_by_it():
    tool = stm_turn(turn(config(categories=CATEGORIES)))[0].tool_definition()
    parameters = tool["function"]["parameters"]
    assert list(parameters["properties"]) == ["mood", "plans"]
    assert parameters["required"] == ["mood", "plans"]
    assert parameters["properties"]["plans"]["description"].startswith("What people intend to do next.")
    assert "Mood, Plans" in tool["function"]["description"]


def test_only_the_default_summary_category_means_fallback_mode():
    from kioku.domain.models import StmCategory

    only_default = (StmCategory(slug="summary", label="Summary", description="", position=0),)
    tool = stm_turn(turn(config(categories=only_default)))[0].tool_definition()
    assert list(tool["function"]["parameters"]["properties"]) == ["summary"]


@pytest.mark.parametrize("categories", [(), CATEGORIES])
def test_the_description_override_is_honoured_in_both_modes(categories):
    override = "Keep notes with {short_term_memory_tool}, {bot_name}. {nonsense}Sections: {category_labels}"
    tool = stm_turn(turn(config(categories=categories, tool_description_override=override)))[
        0
    ].tool_definition()
    labels = "Mood, Plans" if categories else ""
    # issue 11.4: an unknown placeholder loses its braces only, as the original sanitiser does
    expected = f"Keep notes with update_short_term_memory, Kioku. nonsenseSections: {labels}".strip()
    assert tool["function"]["description"] == expected


# -- availability ---------------------------------------------------------------------------------

GATES = [
    ({"stm_enabled": False}, "turned off"),
    ({"llm_has_tools": False}, "cannot use tools"),
]


@pytest.mark.parametrize(("overrides", "reason"), GATES)
def test_the_tool_is_not_offered_and_refuses_when_called_anyway(overrides, reason):
    memory, store = stm_turn(turn(**overrides))
    assert memory.tool_definition() is None
    result = memory.run_update_tool({"summary": "hello"})
    assert not result.ok
    assert reason in status(result)["message"]
    assert "Nothing was saved" in status(result)["message"]
    assert store.writes == []


def test_a_long_term_memory_request_keeps_the_tool_offered_and_working():
    # seed 000: explicitLongTermMemoryIntent suppresses the STM hint, not the tool
    memory, store = stm_turn(turn(explicit_ltm_intent=True))
    assert memory.tool_definition() is not None
    assert memory.run_update_tool({"summary": "Alice asked to remember her birthday"}).ok
    assert len(store.writes) == 1


# -- arguments ------------------------------------------------------------------------------------

BAD_SUMMARY_ARGUMENTS = [
    (None, "JSON object"),
    ("not json", "JSON object"),
    ("[1, 2]", "JSON object"),
    ({}, "'summary' is required"),
    ({"summary": 42}, "must be a string"),
    ({"summary": "   "}, "empty"),
    ({"summary": "ok", "extra": 1}, "unknown argument(s) 'extra'"),
]


@pytest.mark.parametrize(("arguments", "error"), BAD_SUMMARY_ARGUMENTS)
def test_bad_summary_arguments_get_a_clear_error_and_write_nothing(arguments, error):
    memory, store = stm_turn()
    result = memory.run_update_tool(arguments)
    assert result.status == "error"
    assert error in status(result)["message"]
    assert store.writes == []


BAD_CATEGORY_ARGUMENTS = [
    ({"mood": "fine"}, "missing: 'plans'"),
    ({"mood": "", "plans": "  "}, "every section is empty"),
    ({"mood": "a", "plans": "b", "summary": "c"}, "unknown argument(s) 'summary'"),
    ({"mood": None, "plans": "b"}, "'mood' must be a string"),
]


@pytest.mark.parametrize(("arguments", "error"), BAD_CATEGORY_ARGUMENTS)
def test_bad_category_arguments_get_a_clear_error_and_write_nothing(arguments, error):
    memory, store = stm_turn(turn(config(categories=CATEGORIES)))
    result = memory.run_update_tool(arguments)
    assert error in status(result)["message"]
    assert store.writes == []


def test_values_are_trimmed_macro_expanded_sanitised_and_cut():
    memory, store = stm_turn()
    long_tail = "word " * 400
    result = memory.run_update_tool(
        json.dumps({"summary": f"  {{user}} and {{bot}} met {{bot_name}} {{made_up}} here. {long_tail}  "})
    )
    assert result.ok
    (written,) = store.writes
    # in a guild the row is shared: {user} is pinned to the speaker, {bot} stays a token
    assert written.summary.startswith(
        f"{ALICE.display_name} and {{bot}} met Kioku made_up here. word"
    )  # 11.4: only braces go
    assert len(written.summary) <= LIMITS.max_summary_length
    assert written.summary.endswith("…")
    assert status(result)["shortened"] == ["summary"]


def test_in_a_dm_the_users_own_row_keeps_the_user_token():
    memory, store = stm_turn(turn(guild_id=None))
    assert memory.run_update_tool({"summary": "{user} is learning the cello"}).ok
    assert store.writes[0].summary == "{user} is learning the cello"


def test_a_category_write_carries_every_section_even_empty_ones():
    memory, store = stm_turn(turn(config(categories=CATEGORIES)))
    assert memory.run_update_tool({"mood": " calm ", "plans": ""}).ok
    assert store.writes == [StmUpdate(categories={"mood": "calm", "plans": ""})]


def test_the_tool_runs_at_most_once_per_turn_but_a_rejected_call_does_not_count():
    memory, store = stm_turn()
    assert not memory.run_update_tool({"summary": ""}).ok
    assert memory.run_update_tool({"summary": "first"}).ok
    again = memory.run_update_tool({"summary": "second"})
    assert not again.ok and "already used this turn" in status(again)["message"]
    assert [w.summary for w in store.writes] == ["first"]


# -- capture --------------------------------------------------------------------------------------


def test_the_capture_holds_the_turns_messages_for_the_row_it_read_checked_against_its_speaker():
    read = StmEntry(StmAddress.of(SERVER, ALICE.user_id, CHANNEL, "kioku"), lineage_id=1)
    sent = NOW - timedelta(minutes=1)
    memory, _ = stm_turn(turn(sent_at=sent), state=StmState(read))
    capture = memory.capture_of([message("hello"), message("hi!", role="assistant")])
    assert [m.text for m in capture.lines] == ["hello", "hi!"]
    assert capture.read is read and capture.identity.address == read.address
    assert capture.speaker_id == ALICE.user_id and capture.said == Said(ALICE.user_id, sent)
    assert capture.keep_lines


def test_the_capture_keeps_no_lines_of_a_user_with_full_privacy_but_still_counts_the_turn():
    from dataclasses import replace

    private_turn = replace(turn(), profile=UserProfile(user_id="7", privacy_level=PrivacyLevel.FULL))
    memory, _ = stm_turn(private_turn)
    assert not memory.capture_of([message("secret")]).keep_lines


def test_every_listed_prompt_macro_is_filled_in_and_no_other():
    # Given a prompt override naming every macro the guides list
    from kioku.domain.settings_edit import PROMPT_PLACEHOLDERS
    from kioku.domain.stm.update_tool import PROMPT_MACROS, prompt_macros, render_prompt

    the_turn = turn()
    macros = prompt_macros(the_turn, LIMITS)
    assert tuple(macros) == PROMPT_MACROS
    assert tuple(f"{{{name}}}" for name in PROMPT_MACROS) == PROMPT_PLACEHOLDERS
    # When it is rendered, Then each is replaced by its value: no braces are left
    for name in PROMPT_MACROS:
        rendered = render_prompt(f"<{{{name}}}>", macros)
        assert rendered == f"<{macros[name]}>" and "{" not in rendered, name
