"""What the model was sent, message by message, each labelled with what it is and how deep in the
dialogue it sits: shared by the console's ``:context`` and the web inspector."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kioku.services.turn import TurnRecord

DIALOGUE_KIND = "dialogue"
ROLE_KINDS = {"assistant": "tool call", "tool": "tool result"}
"""Messages a round adds after the first request: the model's tool calls and their results."""


@dataclass(frozen=True, slots=True)
class LabelledMessage:
    index: int
    kind: str
    """system, long-term memory, short-term memory, nudge, dialogue, tool call, tool result, …"""
    depth: int | None
    """Dialogue messages after this one (0: the newest); None for what a later round added."""
    role: str
    name: str | None
    text: str
    tool_calls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ModelRound:
    number: int
    messages: tuple[LabelledMessage, ...]
    tools: tuple[dict[str, Any], ...]


def rounds_of(turn: TurnRecord) -> list[ModelRound]:
    """Every model request of ``turn``, labelled."""
    return [
        ModelRound(number, tuple(label(request["messages"], turn.context_kinds)), tuple(request["tools"]))
        for number, request in enumerate(turn.requests, 1)
    ]


def label(messages: list[dict[str, Any]], context_kinds: list[str]) -> list[LabelledMessage]:
    kinds = [
        context_kinds[index]
        if index < len(context_kinds)
        else ROLE_KINDS.get(message["role"], message["role"])
        for index, message in enumerate(messages)
    ]
    dialogue_after = [
        sum(1 for kind in kinds[index + 1 :] if kind == DIALOGUE_KIND) for index in range(len(kinds))
    ]
    return [
        LabelledMessage(
            index=index,
            kind=kinds[index],
            depth=dialogue_after[index] if index < len(context_kinds) else None,
            role=message["role"],
            name=message.get("name"),
            text=content_text(message.get("content")),
            tool_calls=tuple(
                f"{call['function']['name']}({call['function'].get('arguments', '')})"
                for call in message.get("tool_calls") or ()
            ),
        )
        for index, message in enumerate(messages)
    ]


def content_text(content: Any) -> str:
    """A message's content as text, image parts shown as their URL."""
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "")
            if part.get("type") == "text"
            else f"[image_url {part.get('image_url', {}).get('url')}]"
            for part in content
        )
    return str(content or "")


def tool_schema(tool: dict[str, Any]) -> str:
    """A tool as the model reads it: its function's name, description and parameters."""
    return json.dumps(tool.get("function", tool), ensure_ascii=False, indent=2)
