"""The offline scripted model: deterministic answers and tool calls."""

from __future__ import annotations

import json

from kioku.adapters.llm import ChatRequest, make_chat_model
from kioku.adapters.llm.scripted import ScriptedChatModel
from kioku.config import Settings

STM_TOOL = {
    "type": "function",
    "function": {
        "name": "update_short_term_memory",
        "description": "Refresh the channel summary.",
        "parameters": {
            "type": "object",
            "properties": {
                "summary": {"type": "string", "maxLength": 120},
                "plans": {"type": "string"},
                "mood": {"type": "string", "enum": ["calm", "busy"]},
            },
            "required": ["summary", "plans", "mood"],
        },
    },
}
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
NUDGE = {"role": "user", "content": "Please call update_short_term_memory to refresh your notes."}


def said(speaker: str, text: str, role: str = "user") -> dict:
    return {"role": role, "content": f"[{speaker} | UserID:1 | MessageID:2]\n<som>{text}<eom>"}


def complete(messages: list[dict], tools: list[dict] | None = None):
    return ScriptedChatModel().complete(ChatRequest(messages=messages, tools=tools or []))


def test_echoes_the_last_user_message():
    response = complete([SYSTEM, said("Alice (alice)", "how are you?")])

    assert response.tool_calls == ()
    assert response.content == '[scripted] Alice (alice) said: "how are you?"'


def test_same_request_same_answer():
    messages = [SYSTEM, said("bob", "hello")]

    assert complete(messages).raw == complete(messages).raw


def test_the_tool_named_only_in_the_system_prompt_is_not_a_nudge():
    response = complete([SYSTEM, said("bob", "hello")], tools=[STM_TOOL])

    assert response.tool_calls == ()


def test_a_nudge_makes_it_update_short_term_memory_filling_every_required_property():
    # Given a dialogue and the nudge after it
    messages = [SYSTEM, said("bob", "we ship friday"), said("kioku", "noted", "assistant"), NUDGE]

    # When the tool is offered
    response = complete(messages, tools=[STM_TOOL, LTM_TOOL])

    # Then it calls the tool once with a deterministic summary of the dialogue
    (call,) = response.tool_calls
    arguments = json.loads(call.arguments)
    assert call.name == "update_short_term_memory"
    assert set(arguments) == {"summary", "plans", "mood"}
    assert arguments["mood"] == "calm"
    assert len(arguments["summary"]) <= 120
    assert "bob: we ship friday" in arguments["plans"]
    assert "kioku: noted" in arguments["plans"]


def test_after_the_tool_result_it_confirms_instead_of_calling_again():
    first = complete([SYSTEM, said("bob", "hi"), NUDGE], tools=[STM_TOOL])
    (call,) = first.tool_calls
    messages = [
        SYSTEM,
        said("bob", "hi"),
        NUDGE,
        first.assistant_message(),
        {"role": "tool", "tool_call_id": call.id, "content": '{"status": "ok"}'},
    ]

    second = complete(messages, tools=[STM_TOOL])

    assert second.tool_calls == ()
    assert second.content == "[scripted] Done: update_short_term_memory."


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


def test_japanese_and_dont_forget_phrasings_count_as_remember():
    japanese = complete([said("taro", "私の誕生日は5月1日だと覚えておいて")], tools=[LTM_TOOL])
    english = complete([said("bob", "don't forget: I prefer tea")], tools=[LTM_TOOL])

    assert json.loads(japanese.tool_calls[0].arguments)["memory_content"] == "私の誕生日は5月1日だ"
    assert json.loads(english.tool_calls[0].arguments)["memory_content"] == "I prefer tea"


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
