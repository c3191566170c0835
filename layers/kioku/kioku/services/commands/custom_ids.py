"""Button and form ids: what a button or a form (modal) carries back to kioku, written by the
commands' builders and read by the router, both through this module alone.

An id is its command's name, the literal parts naming the kind of button or form, and its fields,
joined by ``:`` (``server:memories:approve:12345:0123456789ab``). Every field is checked on the way
out as on the way in, so what kioku writes it reads back as it was; an id longer than Discord allows,
of a kind kioku does not write or with a field out of shape decodes to nothing, and is refused
before any handler runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from kioku.discord.ui import MAX_CUSTOM_ID_CHARS

SEPARATOR: Final = ":"


@dataclass(frozen=True, slots=True)
class Field:
    """One value an id carries: its shape (an ASCII pattern without the separator, whose matches are
    at most ``max_chars`` long) and its type."""

    name: str
    pattern: str
    max_chars: int
    parse: Callable[[str], Any] = str

    def encode(self, value: Any) -> str:
        text = str(value)
        if not self.matches(text):
            raise ValueError(f"{self.name} {text!r} is not of the shape {self.pattern}")
        return text

    def matches(self, text: str) -> bool:
        return re.fullmatch(self.pattern, text, re.ASCII) is not None


def number(name: str, max_digits: int) -> Field:
    """A whole number from 0, written one way only (no leading zero)."""
    return Field(name, rf"0|[1-9][0-9]{{0,{max_digits - 1}}}", max_digits, int)


def digits(name: str, max_digits: int) -> Field:
    """Digits kept as text: a Discord snowflake or a memory id."""
    return Field(name, rf"[0-9]{{1,{max_digits}}}", max_digits)


def hexadecimal(name: str, chars: int | tuple[int, int]) -> Field:
    low, high = chars if isinstance(chars, tuple) else (chars, chars)
    return Field(name, rf"[0-9a-f]{{{low},{high}}}", high)


def one_of(name: str, *choices: str) -> Field:
    return Field(name, "|".join(re.escape(choice) for choice in choices), max(map(len, choices)))


class CustomId:
    """One kind of id: ``CustomId("server", "memories", "page", number("page", 6))``."""

    def __init__(self, command: str, *parts: str | Field) -> None:
        for part in (command, *parts):
            if isinstance(part, str) and (not part or SEPARATOR in part):
                raise ValueError(f"a literal part of an id is a non-empty text without {SEPARATOR!r}")
        self.command = command
        self.parts = parts
        self.fields = tuple(part for part in parts if isinstance(part, Field))
        longest = len(command) + sum(
            1 + (part.max_chars if isinstance(part, Field) else len(part)) for part in parts
        )
        if longest > MAX_CUSTOM_ID_CHARS:
            raise ValueError(f"{self} may be {longest} characters long; Discord takes {MAX_CUSTOM_ID_CHARS}")

    def encode(self, *values: Any) -> str:
        """The id carrying ``values``, one per field in order; ValueError if one is out of shape or
        the id would be longer than Discord allows."""
        if len(values) != len(self.fields):
            raise ValueError(f"{self} carries {len(self.fields)} fields, not {len(values)}")
        given = iter(values)
        encoded = SEPARATOR.join(
            [
                self.command,
                *(part.encode(next(given)) if isinstance(part, Field) else part for part in self.parts),
            ]
        )
        if len(encoded) > MAX_CUSTOM_ID_CHARS:
            raise ValueError(f"{encoded!r} is longer than {MAX_CUSTOM_ID_CHARS} characters")
        return encoded

    def decode(self, custom_id: str) -> tuple[Any, ...] | None:
        """The fields ``custom_id`` carries if it is an id of this kind; else None."""
        if len(custom_id) > MAX_CUSTOM_ID_CHARS:
            return None
        segments = custom_id.split(SEPARATOR)
        if len(segments) != 1 + len(self.parts) or segments[0] != self.command:
            return None
        values = []
        for part, segment in zip(self.parts, segments[1:], strict=True):
            if isinstance(part, Field):
                if not part.matches(segment):
                    return None
                values.append(part.parse(segment))
            elif segment != part:
                return None
        return tuple(values)

    def __repr__(self) -> str:
        shown = (f"{{{part.name}}}" if isinstance(part, Field) else part for part in self.parts)
        return f"CustomId({SEPARATOR.join([self.command, *shown])})"
