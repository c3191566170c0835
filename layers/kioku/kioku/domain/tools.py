"""What an LLM tool gives back: a status the model reads, and optionally a message for the channel."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kioku.domain.trace import UsedMemory


@dataclass(frozen=True, slots=True)
class ToolResult:
    status: str
    data: dict[str, Any] = field(default_factory=dict)
    notification: dict[str, Any] | None = None
    notification_about: str | None = None
    """The person whose personal memory the notification shows: their forget-all drops it while it
    waits to be posted."""
    touched: tuple[UsedMemory, ...] = ()
    """The memories the call saved, rewrote, deleted or found, by id ("Why this answer?")."""

    @property
    def ok(self) -> bool:
        return "success" in self.status

    def to_model_content(self) -> str:
        return json.dumps({"status": self.status, **self.data}, ensure_ascii=False)


def parse_tool_arguments(arguments: str | dict[str, Any] | None) -> dict[str, Any] | None:
    """The arguments object of a tool call, or None when they are not a JSON object."""
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        return None
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
