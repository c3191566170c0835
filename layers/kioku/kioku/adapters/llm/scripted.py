"""An offline, deterministic chat model for the playground and the tests.

It follows a fixed script, so a whole turn (memory tools included) can run without a network:

1. When ``update_short_term_memory`` is offered, a nudge naming it appears after the system prompt,
   and no result for it is in the request yet: call it once with a summary of the recent dialogue.
2. Else, when the last user message asks to remember something and ``create_long_term_memory`` is
   offered and not yet called: call it with ``memory_scope: "server_wide"`` and the fact.
3. Else, when tool results just came back: confirm them in a short text.
4. Else: echo the last user message, so tests can assert on what the model saw.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from kioku.adapters.llm.base import ChatRequest, ChatResponse, ToolCall
from kioku.config import Settings
from kioku.domain.text import END_OF_MESSAGE, START_OF_MESSAGE

SCRIPTED_MODEL_NAME: Final = "scripted"
STM_TOOL: Final = "update_short_term_memory"
LTM_TOOL: Final = "create_long_term_memory"
SERVER_WIDE_SCOPE: Final = "server_wide"
ECHO_PREFIX: Final = "[scripted]"
MAX_ECHO_CHARS: Final = 1500
DEFAULT_SUMMARY_CHARS: Final = 500
SUMMARY_MESSAGES: Final = 6

_MARKED = re.compile(re.escape(START_OF_MESSAGE) + r"(.*?)" + re.escape(END_OF_MESSAGE), re.DOTALL)
_SPEAKER = re.compile(r"^\[([^|\]\n]+?)\s*\|")
_REMEMBER = (
    re.compile(r"\b(?:please\s+)?remember(?:\s+that)?[\s:,]+(?P<fact>.+)", re.IGNORECASE | re.DOTALL),
    re.compile(r"\b(?:don'?t|do\s+not)\s+forget(?:\s+that)?[\s:,]+(?P<fact>.+)", re.IGNORECASE | re.DOTALL),
    re.compile(r"(?P<fact>.+?)(?:ってこと|ことを|と|を|って)?覚えておいて", re.DOTALL),
)


class ScriptedChatModel:
    """A ``ChatModel`` whose answer is a pure function of the request."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ScriptedChatModel:
        return cls()

    def complete(self, request: ChatRequest) -> ChatResponse:
        offered = {_tool_name(tool) for tool in request.tools}
        called = _called_tools(request.messages)
        if (
            STM_TOOL in offered
            and STM_TOOL not in _answered_tools(request.messages)
            and _nudged(request.messages)
        ):
            schema = _tool_parameters(request.tools, STM_TOOL)
            summary = _summary(request.messages)
            return _tool_response(request, STM_TOOL, _fill_required(schema, summary))
        fact = _fact_to_remember(_last_user_text(request.messages))
        if fact and LTM_TOOL in offered and LTM_TOOL not in called:
            return _tool_response(
                request, LTM_TOOL, {"memory_scope": SERVER_WIDE_SCOPE, "memory_content": fact}
            )
        if request.messages and request.messages[-1].get("role") == "tool":
            return _text_response(f"{ECHO_PREFIX} Done: {', '.join(_latest_tool_results(request.messages))}.")
        last = _last_user_message(request.messages)
        if last is None:
            return _text_response(f"{ECHO_PREFIX} Nothing to answer.")
        text = _text_of(last)
        speaker = _SPEAKER.match(text)
        said = _spoken(text)
        who = f"{speaker.group(1)} said" if speaker else "You said"
        return _text_response(f'{ECHO_PREFIX} {who}: "{said[:MAX_ECHO_CHARS]}"')


def _tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    return function.get("name", "") if isinstance(function, dict) else ""


def _tool_parameters(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for tool in tools:
        if _tool_name(tool) == name:
            parameters = tool["function"].get("parameters")
            return parameters if isinstance(parameters, dict) else {}
    return {}


def _tool_names_by_call_id(messages: list[dict[str, Any]]) -> dict[Any, str]:
    return {
        call.get("id"): call.get("function", {}).get("name", "")
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict)
    }


def _called_tools(messages: list[dict[str, Any]]) -> set[str]:
    return set(_tool_names_by_call_id(messages).values())


def _answered_tools(messages: list[dict[str, Any]]) -> set[str]:
    names_by_id = _tool_names_by_call_id(messages)
    return {
        names_by_id.get(message.get("tool_call_id"), "")
        for message in messages
        if message.get("role") == "tool"
    }


def _latest_tool_results(messages: list[dict[str, Any]]) -> list[str]:
    """Names of the tools whose results end the request, in call order."""
    names_by_id = _tool_names_by_call_id(messages)
    results = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.append(names_by_id.get(message.get("tool_call_id")) or "tool")
    return list(reversed(results))


def _nudged(messages: list[dict[str, Any]]) -> bool:
    # The leading system prompt may describe the tool without asking for it; only later text nudges.
    later = messages[1:] if messages and messages[0].get("role") == "system" else messages
    return any(
        message.get("role") in {"user", "system"} and STM_TOOL in _text_of(message) for message in later
    )


def _summary(messages: list[dict[str, Any]]) -> str:
    lines = []
    for message in messages:
        if message.get("role") not in {"user", "assistant"}:
            continue
        text = _text_of(message)
        if START_OF_MESSAGE not in text:
            continue  # nudges and hints, not dialogue
        speaker = _SPEAKER.match(text)
        lines.append(f"{speaker.group(1) if speaker else message['role']}: {_spoken(text)}")
    recent = lines[-SUMMARY_MESSAGES:]
    return "Recent conversation: " + (" / ".join(recent) if recent else "nothing yet.")


def _fill_required(schema: dict[str, Any], summary: str) -> dict[str, str]:
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    arguments = {}
    for name in schema.get("required") or ():
        spec = properties.get(name) if isinstance(properties.get(name), dict) else {}
        if spec.get("enum"):
            arguments[name] = str(spec["enum"][0])
            continue
        limit = spec.get("maxLength") if isinstance(spec.get("maxLength"), int) else DEFAULT_SUMMARY_CHARS
        arguments[name] = summary[:limit]
    return arguments


def _fact_to_remember(text: str | None) -> str | None:
    if not text:
        return None
    said = _spoken(text)
    for pattern in _REMEMBER:
        match = pattern.search(said)
        if match:
            fact = match.group("fact").strip().rstrip(".!?。！")
            return fact or said
    return None


def _last_user_message(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((message for message in reversed(messages) if message.get("role") == "user"), None)


def _last_user_text(messages: list[dict[str, Any]]) -> str | None:
    message = _last_user_message(messages)
    return _text_of(message) if message else None


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _spoken(text: str) -> str:
    """What was written between the markers, or the whole text when unmarked."""
    match = _MARKED.search(text)
    return (match.group(1) if match else text).strip()


def _tool_response(request: ChatRequest, name: str, arguments: dict[str, str]) -> ChatResponse:
    round_number = sum(1 for message in request.messages if message.get("tool_calls")) + 1
    call = ToolCall(
        id=f"call_{round_number}_{name}", name=name, arguments=json.dumps(arguments, ensure_ascii=False)
    )
    return _response(None, (call,))


def _text_response(text: str) -> ChatResponse:
    return _response(text, ())


def _response(content: str | None, calls: tuple[ToolCall, ...]) -> ChatResponse:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [call.to_openai() for call in calls]
    raw = {
        "object": "chat.completion",
        "model": SCRIPTED_MODEL_NAME,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
    }
    return ChatResponse(content=content, tool_calls=calls, raw=raw)
