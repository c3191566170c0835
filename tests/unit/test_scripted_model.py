"""The offline scripted model: deterministic answers and tool calls."""

from __future__ import annotations

import json

from kioku.adapters.llm import ChatRequest, make_chat_model
from kioku.adapters.llm.scripted import ScriptedChatModel
from kioku.config import Settings


def stm_tool(properties: dict[str, dict]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": "update_short_term_memory",
            "description": "Refresh the channel summary.",
            "parameters": {"type": "object", "properties": properties, "required": list(properties)},
        },
    }


STM_TOOL = stm_tool({"summary": {"type": "string", "maxLength": 240}})
CATEGORY_TOOL = stm_tool(
    {
        "events": {"type": "string", "description": "Upcoming events and their dates."},
        "food": {"type": "string", "description": "Who brings which food."},
        "weather": {"type": "string", "description": "Forecasts."},
    }
)
LTM_TOOL = {
    "type": "function",
    "function": {
        "name": "create_long_term_memory",
        "parameters": {
            "type": "object",
            "properties": {"memory_content": {"type": "string"}, "memory_scope": {"type": "string"}},
            "required": ["memory_content", "memory_scope"],
        },
    },
}
SYSTEM = {
    "role": "system",
    "content": "You are Kioku. Tools: update_short_term_memory, create_long_term_memory.",
}
NUDGE = {
    "role": "user",
    "content": "[Short-term memory reminder] Call update_short_term_memory with a fresh summary.",
}
MEMORY_BLOCK = {
    "role": "user",
    "content": "[Short-term memory of this channel]\nYour notes, saved earlier with update_short_term_memory.",
}


def said(speaker: str, text: str, role: str = "user") -> dict:
    return {"role": role, "content": f"[{speaker} | UserID:1 | MessageID:2]\n<som>{text}<eom>"}


def complete(messages: list[dict], tools: list[dict] | None = None):
    return ScriptedChatModel().complete(ChatRequest(messages=messages, tools=tools or []))


def test_it_answers_the_last_message_quoting_it():
    response = complete([SYSTEM, said("Alice (alice)", "how are you?")])

    assert response.tool_calls == ()
    assert response.content == '[scripted] Good question! Alice (alice) said: "how are you?"'


def test_same_request_same_answer():
    messages = [SYSTEM, said("bob", "hello")]

    assert complete(messages).raw == complete(messages).raw


def test_the_tool_named_only_in_the_system_prompt_is_not_a_nudge():
    response = complete([SYSTEM, said("bob", "hello")], tools=[STM_TOOL])

    assert response.tool_calls == ()


def test_the_memory_block_naming_the_tool_is_not_a_nudge():
    response = complete([SYSTEM, MEMORY_BLOCK, said("bob", "hello")], tools=[STM_TOOL])

    assert response.tool_calls == ()
    assert 'bob said: "hello"' in response.content


def test_a_nudge_makes_it_write_a_short_summary_of_the_conversation():
    # Given a conversation, the nudge placed inside it, and the memory block above it
    messages = [
        SYSTEM,
        MEMORY_BLOCK,
        said("Alice (alice)", "the picnic is on saturday"),
        said("Bob (bob)", "who brings drinks to the picnic?"),
        NUDGE,
        said("Alice (alice)", "I bring sandwiches"),
    ]
    # When the tool is offered
    (call,) = complete(messages, tools=[STM_TOOL, LTM_TOOL]).tool_calls
    # Then it summarises: who, about what, the latest word, what is still open
    summary = json.loads(call.arguments)["summary"]
    assert call.name == "update_short_term_memory" and len(summary) <= 240
    assert summary.startswith("Alice and Bob are talking about picnic")
    assert "Latest: Alice said “I bring sandwiches”." in summary
    assert "Still open: Bob asked “who brings drinks to the picnic?”." in summary


def test_in_category_mode_each_section_gets_what_was_said_about_it():
    messages = [
        SYSTEM,
        said("alice", "the picnic event is on saturday"),
        said("bob", "I bring the food: sandwiches"),
        NUDGE,
    ]
    (call,) = complete(messages, tools=[CATEGORY_TOOL]).tool_calls
    assert json.loads(call.arguments) == {
        "events": "alice: the picnic event is on saturday",
        "food": "bob: I bring the food: sandwiches",
        "weather": "",
    }


def test_after_its_tool_call_it_answers_the_conversation_and_says_what_the_tool_did():
    first = complete([SYSTEM, said("bob", "hi there"), NUDGE], tools=[STM_TOOL])
    (call,) = first.tool_calls
    messages = [
        SYSTEM,
        said("bob", "hi there"),
        NUDGE,
        first.assistant_message(),
        {"role": "tool", "tool_call_id": call.id, "content": '{"status": "success"}'},
    ]

    second = complete(messages, tools=[STM_TOOL])

    assert second.tool_calls == ()
    assert second.content == '[scripted] Hello! (I refreshed my notes on this channel.) bob said: "hi there"'


def test_remember_requests_create_a_server_wide_memory():
    response = complete(
        [SYSTEM, said("alice", "Please remember that the standup is at 10am.")], tools=[LTM_TOOL]
    )

    (call,) = response.tool_calls
    assert call.name == "create_long_term_memory"
    assert json.loads(call.arguments) == {
        "memory_scope": "server_wide",
        "memory_content": "the standup is at 10am",
    }


def test_what_a_speaker_says_about_themself_is_saved_as_their_personal_memory():
    response = complete(
        [SYSTEM, said("Alice (alice)", "kioku, remember that my favourite colour is teal and I'm vegan")],
        tools=[LTM_TOOL],
    )

    assert json.loads(response.tool_calls[0].arguments) == {
        "memory_scope": "target_user",
        "target_user": "Alice",
        "memory_content": "{user}'s favourite colour is teal and {user} is vegan",
    }


def test_japanese_and_dont_forget_phrasings_count_as_remember():
    japanese = complete([said("taro", "私の誕生日は5月1日だと覚えておいて")], tools=[LTM_TOOL])
    english = complete([said("bob", "don't forget: I prefer tea")], tools=[LTM_TOOL])
    about_a_place = complete([said("bob", "don't forget: the vault code is okapi")], tools=[LTM_TOOL])

    assert json.loads(japanese.tool_calls[0].arguments) == {
        "memory_scope": "target_user",
        "target_user": "taro",
        "memory_content": "{user}の誕生日は5月1日だ",
    }
    assert json.loads(english.tool_calls[0].arguments)["memory_content"] == "{user} prefer tea"
    assert json.loads(about_a_place.tool_calls[0].arguments)["memory_scope"] == "server_wide"


def test_remember_without_the_tool_offered_is_just_echoed():
    response = complete([said("bob", "remember the milk")])

    assert response.tool_calls == ()
    assert "remember the milk" in response.content


def test_registry_builds_the_scripted_model_from_settings():
    settings = Settings(
        TABLE_NAME="kioku",
        TURN_QUEUE_URL="http://queue",
        DISCORD_APPLICATION_ID="1",
        DISCORD_PUBLIC_KEY="a" * 64,
        RELAY_PUBLIC_KEY="b" * 64,
        LLM_PROVIDER="scripted",
    )

    assert isinstance(make_chat_model(settings), ScriptedChatModel)
