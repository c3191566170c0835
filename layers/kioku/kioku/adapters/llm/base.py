"""What every chat model takes and gives back, in OpenAI chat-completions terms."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the JSON text exactly as sent."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """OpenAI-format messages and function tool schemas (empty when tools are not offered)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    time_budget_seconds: float | None = None
    """The most this call may take, retries included (what is left of the turn's own deadline)."""
    max_tokens: int | None = None
    """The longest answer the model may give."""


@dataclass(frozen=True, slots=True)
class ChatResponse:
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict)
    cut_short: bool = False
    """The model stopped at the token limit (``finish_reason`` ``length``), likely mid-sentence."""

    def assistant_message(self) -> dict[str, Any]:
        """The assistant turn to append before sending tool results back."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


class ChatModel(Protocol):
    def complete(self, request: ChatRequest) -> ChatResponse:
        """One non-streaming completion; raises ``LlmUnavailable`` when no answer can be had."""
        ...
