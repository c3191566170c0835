"""Discord message components for modals: protocol numbers, limits, the modal response, and reading
what a modal submit sent back (never trusted: every field is checked)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

from kioku.services.commands.discord import ResponseType


class ComponentType(IntEnum):
    ACTION_ROW = 1
    BUTTON = 2
    TEXT_INPUT = 4


class ButtonStyle(IntEnum):
    PRIMARY = 1
    SECONDARY = 2
    DANGER = 4


class TextInputStyle(IntEnum):
    SHORT = 1
    PARAGRAPH = 2


MAX_MODAL_INPUTS: Final = 5
MAX_MODAL_TITLE_CHARS: Final = 45
MAX_INPUT_LABEL_CHARS: Final = 45
MAX_INPUT_PLACEHOLDER_CHARS: Final = 100
MAX_TEXT_INPUT_CHARS: Final = 4000
MAX_CUSTOM_ID_CHARS: Final = 100


class InvalidModalSubmit(ValueError):
    """A modal submit whose components are not the text inputs kioku sent."""


@dataclass(frozen=True, slots=True)
class TextInput:
    custom_id: str
    label: str
    value: str = ""
    style: TextInputStyle = TextInputStyle.PARAGRAPH
    max_length: int = MAX_TEXT_INPUT_CHARS
    required: bool = False
    placeholder: str | None = None

    def component(self) -> dict[str, Any]:
        """The input in its own action row, every text cut to Discord's limits."""
        max_length = max(1, min(self.max_length, MAX_TEXT_INPUT_CHARS))
        text_input: dict[str, Any] = {
            "type": ComponentType.TEXT_INPUT,
            "custom_id": self.custom_id[:MAX_CUSTOM_ID_CHARS],
            "label": _fit(self.label, MAX_INPUT_LABEL_CHARS),
            "style": self.style,
            "max_length": max_length,
            "required": self.required,
        }
        if self.value:
            text_input["value"] = self.value[:max_length]
        if self.placeholder:
            text_input["placeholder"] = _fit(self.placeholder, MAX_INPUT_PLACEHOLDER_CHARS)
        return {"type": ComponentType.ACTION_ROW, "components": [text_input]}


def modal(custom_id: str, title: str, inputs: Sequence[TextInput]) -> dict[str, Any]:
    """The MODAL interaction response; Discord shows at most five inputs."""
    if not 1 <= len(inputs) <= MAX_MODAL_INPUTS:
        raise ValueError(f"a modal holds 1 to {MAX_MODAL_INPUTS} inputs, not {len(inputs)}")
    return {
        "type": ResponseType.MODAL,
        "data": {
            "custom_id": custom_id[:MAX_CUSTOM_ID_CHARS],
            "title": _fit(title, MAX_MODAL_TITLE_CHARS),
            "components": [text_input.component() for text_input in inputs],
        },
    }


def button(
    label: str, custom_id: str, *, style: ButtonStyle = ButtonStyle.SECONDARY, disabled: bool = False
) -> dict:
    if len(custom_id) > MAX_CUSTOM_ID_CHARS:
        raise ValueError("a custom_id is at most 100 characters")
    return {
        "type": ComponentType.BUTTON,
        "style": style,
        "label": label,
        "custom_id": custom_id,
        "disabled": disabled,
    }


def action_row(*components: dict) -> dict:
    return {"type": ComponentType.ACTION_ROW, "components": list(components)}


def submitted_values(data: Mapping[str, Any]) -> dict[str, str]:
    """The text inputs of a modal submit's ``data``, by custom_id."""
    rows = data.get("components")
    if not isinstance(rows, list) or len(rows) > MAX_MODAL_INPUTS:
        raise InvalidModalSubmit("the form came back without its fields")
    values: dict[str, str] = {}
    for row in rows:
        children = row.get("components") if isinstance(row, dict) else None
        if not isinstance(children, list):
            raise InvalidModalSubmit("the form came back malformed")
        for child in children:
            if not isinstance(child, dict):
                raise InvalidModalSubmit("the form came back malformed")
            custom_id, value = child.get("custom_id"), child.get("value", "")
            if not isinstance(custom_id, str) or not isinstance(value, str) or custom_id in values:
                raise InvalidModalSubmit("the form came back malformed")
            if len(value) > MAX_TEXT_INPUT_CHARS:
                raise InvalidModalSubmit("a field came back longer than Discord allows")
            values[custom_id] = value
    return values


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
