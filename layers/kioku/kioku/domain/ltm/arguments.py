"""What the model sends to the memory tools, checked: every mistake becomes a named problem."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from kioku.domain.text import sanitize_unknown_placeholders
from kioku.domain.tools import parse_tool_arguments

MIN_EXPIRY_DAYS: Final = 1
MAX_EXPIRY_DAYS: Final = 3650
_QUOTED_MEMORY_ID = re.compile(r"^\[?#?(\d{1,12})\]?$")
# {User}, and character cards' {{user}}, {{char}} and {char}: the same two people, {user} and {bot}.
_TOKEN_SPELLING = re.compile(r"\{\{\s*(user|bot|char)\s*\}\}|\{(user|bot|char)\}", re.IGNORECASE)


class RequestedScope(StrEnum):
    SERVER_WIDE = "server_wide"
    TARGET_USER = "target_user"


class Problem(StrEnum):
    ARGUMENTS = "arguments"
    CONTENT = "content"
    SCOPE = "scope"


class InvalidArguments(ValueError):
    """The call cannot run as sent; ``message`` tells the model what to fix."""

    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.message = message


@dataclass(frozen=True, slots=True)
class CreateArguments:
    content: str
    scope: RequestedScope
    target_user: str | None
    expires_in_days: int | None = None


@dataclass(frozen=True, slots=True)
class UpdateArguments:
    memory_id: str
    content: str
    """Blank content asks for the memory to be deleted."""
    target_user: str | None
    expires_in_days: int | None = None
    """A new expiry, in days from now; 0 clears it; None leaves it as it is."""

    @property
    def deletes(self) -> bool:
        return self.content == ""


def parse_create_arguments(raw: str | dict[str, Any] | None, max_length: int) -> CreateArguments:
    arguments = _arguments_object(raw)
    content = _required_string(arguments, "memory_content")
    scope_name = _required_string(arguments, "memory_scope").strip().lower()
    try:
        scope = RequestedScope(scope_name)
    except ValueError:
        raise InvalidArguments(
            Problem.SCOPE, f"memory_scope must be 'server_wide' or 'target_user', not {scope_name!r}"
        ) from None
    content = _checked_content(content, max_length)
    if not content:
        raise InvalidArguments(Problem.CONTENT, "memory_content is empty; write the fact to remember")
    target = _optional_target(arguments)
    if scope is RequestedScope.TARGET_USER and target is None:
        raise InvalidArguments(
            Problem.ARGUMENTS, "memory_scope 'target_user' needs target_user: the display name of the user"
        )
    expires_in_days = expiry_days(arguments.get("expires_in_days"))
    return CreateArguments(content=content, scope=scope, target_user=target, expires_in_days=expires_in_days)


def expiry_days(value: Any, *, zero_clears: bool = False) -> int | None:
    """``expires_in_days`` checked: absent (None), or a whole number of days from 1 to 3650 (or 0,
    which clears an expiry, when ``zero_clears``: the update tool's)."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArguments(
            Problem.ARGUMENTS, f"expires_in_days must be a whole number of days, not {value!r}"[:200]
        )
    if zero_clears and value == 0:
        return value
    if not MIN_EXPIRY_DAYS <= value <= MAX_EXPIRY_DAYS:
        lowest = 0 if zero_clears else MIN_EXPIRY_DAYS
        absent = (
            "0 for a fact that now stays true" if zero_clears else "leave it out for a fact that stays true"
        )
        raise InvalidArguments(
            Problem.ARGUMENTS,
            f"expires_in_days must be from {lowest} to {MAX_EXPIRY_DAYS}, not {value}; {absent}",
        )
    return value


def parse_update_arguments(raw: str | dict[str, Any] | None, max_length: int) -> UpdateArguments:
    arguments = _arguments_object(raw)
    memory_id = _memory_id(arguments.get("memory_id"))
    content = _checked_content(_required_string(arguments, "memory_content"), max_length)
    return UpdateArguments(
        memory_id=memory_id,
        content=content,
        target_user=_optional_target(arguments),
        expires_in_days=expiry_days(arguments.get("expires_in_days"), zero_clears=True),
    )


def _token(match: re.Match[str]) -> str:
    name = (match.group(1) or match.group(2)).lower()
    return "{user}" if name == "user" else "{bot}"


def parse_memory_text(content: str, max_length: int) -> str:
    """A memory's text as a person typed it (an edit command's ``content``), checked as the tools
    check theirs: within ``max_length``, not empty, placeholders cleaned."""
    content = _checked_content(content, max_length)
    if not content:
        raise InvalidArguments(Problem.CONTENT, "the text is empty; write the fact to remember")
    return clean_content(content)


def clean_content(content: str) -> str:
    """``content`` without placeholders other than {user}/{bot} (``{User}``, ``{{user}}`` count as
    ``{user}``; ``{char}``, ``{{char}}`` as ``{bot}``); empty left over is a problem."""
    cleaned = sanitize_unknown_placeholders(_TOKEN_SPELLING.sub(_token, content))
    if not cleaned:
        raise InvalidArguments(
            Problem.CONTENT,
            "memory_content held only placeholders; write the fact, with {user} or {bot} for names",
        )
    return cleaned


def _arguments_object(raw: str | dict[str, Any] | None) -> dict[str, Any]:
    arguments = parse_tool_arguments(raw)
    if arguments is None:
        raise InvalidArguments(Problem.ARGUMENTS, "the arguments must be a JSON object")
    return arguments


def _required_string(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if value is None:
        raise InvalidArguments(Problem.ARGUMENTS, f"{name} is required")
    if not isinstance(value, str):
        raise InvalidArguments(Problem.ARGUMENTS, f"{name} must be a string, not {type(value).__name__}")
    return value


def _checked_content(content: str, max_length: int) -> str:
    content = content.strip()
    if len(content) > max_length:
        raise InvalidArguments(
            Problem.CONTENT,
            f"memory_content has {len(content)} characters; the limit is {max_length}. Keep one short fact",
        )
    return content


def _optional_target(arguments: dict[str, Any]) -> str | None:
    value = arguments.get("target_user")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is not None and not isinstance(value, str):
        raise InvalidArguments(Problem.ARGUMENTS, f"target_user must be a string, not {type(value).__name__}")
    return (value.strip() or None) if value else None


def _memory_id(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return str(value)
    if isinstance(value, str) and (match := _QUOTED_MEMORY_ID.match(value.strip())):
        return str(int(match.group(1)))
    if value is None:
        raise InvalidArguments(Problem.ARGUMENTS, "memory_id is required: the number shown as [#12345]")
    raise InvalidArguments(
        Problem.ARGUMENTS, f"memory_id must be the number shown as [#12345], not {value!r}"[:200]
    )
