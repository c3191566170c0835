"""How kioku's messages look on Discord: embeds and their colours (the one table), Discord's time
markup, components (buttons in action rows, the modal response) within Discord's limits, and
reading what a modal submit sent back (never trusted: every field is checked)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import ButtonStyle, ComponentType, TextInputStyle

EMBED_COLOR_INFO: Final = 0x5865F2
"""Blurple: what is shown or changed (a list, a view, a memory updated)."""
EMBED_COLOR_SUCCESS: Final = 0x57F287
"""Green: a memory saved."""
EMBED_COLOR_WARNING: Final = 0xFEE75C
"""Yellow: a refusal, a memory awaiting review."""
EMBED_COLOR_ERROR: Final = 0xED4245
"""Red: something went wrong, or cannot be undone."""
EMBED_COLOR_MUTED: Final = 0x99AAB5
"""Grey: a memory forgotten."""

MAX_CUSTOM_ID_CHARS: Final = 100
"""Discord's limit for a component's or a modal's custom_id."""
MAX_MODAL_INPUTS: Final = 5
MAX_MODAL_TITLE_CHARS: Final = 45
MAX_INPUT_LABEL_CHARS: Final = 45
MAX_INPUT_PLACEHOLDER_CHARS: Final = 100
MAX_TEXT_INPUT_CHARS: Final = 4000
MAX_ACTION_ROWS: Final = 5
MAX_BUTTONS_PER_ROW: Final = 5
MAX_BUTTON_LABEL_CHARS: Final = 80
MAX_EMBED_FIELD_VALUE_CHARS: Final = 1024


def embed(title: str, description: str, *, color: int, footer: str | None = None) -> dict[str, Any]:
    """An embed as Discord takes it (``color`` from the table above)."""
    data: dict[str, Any] = {"title": title, "description": description, "color": color}
    if footer is not None:
        data["footer"] = {"text": footer}
    return data


def relative_time(moment: datetime | None) -> str:
    """Discord's timestamp markup ("3 days ago", in each reader's language); "never" for None."""
    return f"<t:{int(moment.timestamp())}:R>" if moment else "never"


class InvalidModalSubmit(ValueError):
    """A modal submit whose components are not the text inputs kioku sent."""


class UnknownComponent(ValueError):
    """A component interaction whose custom_id is not one kioku writes."""


@dataclass(frozen=True, slots=True)
class Button:
    custom_id: str
    """Encoded by ``custom_ids``, the router's decoder."""
    label: str
    style: ButtonStyle = ButtonStyle.SECONDARY
    disabled: bool = False

    def component(self) -> dict[str, Any]:
        if not 1 <= len(self.custom_id) <= MAX_CUSTOM_ID_CHARS:
            raise ValueError(f"a custom_id holds 1 to {MAX_CUSTOM_ID_CHARS} characters: {self.custom_id!r}")
        return {
            "type": ComponentType.BUTTON,
            "custom_id": self.custom_id,
            "label": _fit(self.label, MAX_BUTTON_LABEL_CHARS),
            "style": self.style,
            "disabled": self.disabled,
        }


def action_rows(rows: Sequence[Sequence[Button]]) -> list[dict[str, Any]]:
    """Buttons in action rows, as a message holds them: at most five rows of five, every custom_id
    distinct (Discord rejects a message that repeats one)."""
    if len(rows) > MAX_ACTION_ROWS or any(not 1 <= len(row) <= MAX_BUTTONS_PER_ROW for row in rows):
        raise ValueError(
            f"a message holds up to {MAX_ACTION_ROWS} rows of 1 to {MAX_BUTTONS_PER_ROW} buttons"
        )
    custom_ids = [button.custom_id for row in rows for button in row]
    if len(custom_ids) != len(set(custom_ids)):
        raise ValueError(f"custom_ids repeat in {custom_ids}")
    return [
        {"type": ComponentType.ACTION_ROW, "components": [button.component() for button in row]}
        for row in rows
    ]


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
    """The MODAL interaction response (``custom_id`` encoded by ``custom_ids``); Discord shows at
    most five inputs."""
    if not 1 <= len(inputs) <= MAX_MODAL_INPUTS:
        raise ValueError(f"a modal holds 1 to {MAX_MODAL_INPUTS} inputs, not {len(inputs)}")
    if not 1 <= len(custom_id) <= MAX_CUSTOM_ID_CHARS:
        raise ValueError(f"a custom_id holds 1 to {MAX_CUSTOM_ID_CHARS} characters: {custom_id!r}")
    return {
        "type": ResponseType.MODAL,
        "data": {
            "custom_id": custom_id,
            "title": _fit(title, MAX_MODAL_TITLE_CHARS),
            "components": [text_input.component() for text_input in inputs],
        },
    }


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
