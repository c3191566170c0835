"""A chat-completions response, parsed once where it enters, as a typed model of what kioku reads.

Whatever the adapter does not expect (a content part whose ``text`` is not text, a tool call
without a name, a choice without a message) is ``LlmUnavailable``: the turn apologises once, never
a ``TypeError`` further in that fails the job until it is dead-lettered.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from kioku.adapters.llm.base import ChatResponse, ToolCall
from kioku.domain.turn import LlmUnavailable


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ContentPart(_Read):
    """One part of a content list (some compatible servers answer so); a part that is not text
    (an image, a refusal) adds nothing."""

    type: StrictStr = "text"
    text: StrictStr | None = None


class FunctionCall(_Read):
    name: StrictStr = Field(min_length=1)
    arguments: StrictStr | dict[str, Any] | None = None
    """JSON text; a few compatible servers send an object instead."""


class ToolCallPart(_Read):
    id: StrictStr = Field(min_length=1)
    function: FunctionCall


class AssistantMessage(_Read):
    content: StrictStr | list[ContentPart] | None = None
    tool_calls: list[ToolCallPart] | None = None


class Choice(_Read):
    message: AssistantMessage
    finish_reason: StrictStr | None = None


class ChatCompletion(_Read):
    choices: list[Choice] = Field(min_length=1)


def parse_chat_completion(body: Any) -> ChatResponse:
    """The first choice of a chat-completions response body; any other shape → ``LlmUnavailable``."""
    try:
        completion = ChatCompletion.model_validate(body)
    except ValidationError as exc:
        where = ".".join(str(part) for part in exc.errors()[0]["loc"]) if exc.errors() else "?"
        raise LlmUnavailable(f"the model answered with an unexpected response shape (at {where})") from exc
    choice = completion.choices[0]
    message = choice.message
    content = message.content
    if isinstance(content, list):
        content = "".join(part.text or "" for part in content if part.type == "text") or None
    calls = tuple(_tool_call(call) for call in message.tool_calls or ())
    if content is None and not calls:
        raise LlmUnavailable("the model answered with neither text nor tool calls")
    return ChatResponse(
        content=content, tool_calls=calls, raw=body, cut_short=choice.finish_reason == "length"
    )


def _tool_call(call: ToolCallPart) -> ToolCall:
    arguments = call.function.arguments or "{}"
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(id=call.id, name=call.function.name, arguments=arguments)
