"""A slash command line typed the way Discord, the README and ``/help`` write it, read against the
command tree kioku registers: ``/server stm parameters refresh_cadence:3`` (or ``=3``),
``/server addressing trigger_words:"kioku, kio"``, ``/chat message:hello there``.

Discord's client checks what it sends (the subcommand, each option's name, type, choices and
whether it is required), so a line it would not send is refused here with what is wrong, never
sent with a part dropped.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from kioku.discord.protocol import OptionType
from kioku.discord.snowflake import is_snowflake

TRUE_WORDS: Final = frozenset({"true", "yes", "on"})
FALSE_WORDS: Final = frozenset({"false", "no", "off"})
_ASSIGNMENT = re.compile(r"(?P<name>[a-z][\w-]*)(?P<sign>[:=])(?P<value>.*)", re.IGNORECASE | re.DOTALL)


class UnreadableCommand(ValueError):
    """The line is not a command Discord would send; the message says why."""


@dataclass(frozen=True)
class TypedCommand:
    name: str
    path: str | None
    options: dict[str, Any] = field(default_factory=dict)
    option_types: dict[str, int] = field(default_factory=dict)


def split_assignment(word: str) -> tuple[str, str] | None:
    """``name:value`` or ``name=value`` as (name, value); None for any other word."""
    match = _ASSIGNMENT.fullmatch(word)
    if match is None or match["value"].startswith("//"):  # http://… is a value, not an option
        return None
    return match["name"], match["value"]


OVERVIEW: Final = "overview"


def parse(
    line: str, definitions: list[dict[str, Any]], channel_id: Callable[[str], str | None]
) -> TypedCommand:
    """``line`` (with or without its leading slash) as the command Discord would send, its options
    typed by the tree; ``channel_id`` names a channel option's value (``#general``) by its id."""
    try:
        words = shlex.split(line.strip().removeprefix("/"))
    except ValueError as exc:
        raise UnreadableCommand(f"could not read that command: {exc}") from None
    if not words:
        raise UnreadableCommand("type a command name after the slash")
    commands = {command["name"]: command for command in definitions}
    node = commands.get(words[0].lower())
    if node is None:
        raise UnreadableCommand(f"no command /{words[0]}: the commands are " + _names(commands.values()))
    typed = [node["name"]]
    rest = words[1:]
    while _subcommands(node):
        children = {child["name"]: child for child in _subcommands(node)}
        if not rest and OVERVIEW in children:  # `/help` alone: its guide to the others
            rest = [OVERVIEW]
        if not rest or rest[0].lower() not in children:
            given = f" (not {rest[0]!r})" if rest else ""
            raise UnreadableCommand(f"/{' '.join(typed)} needs one of: {_names(children.values())}{given}")
        node = children[rest[0].lower()]
        typed.append(node["name"])
        rest = rest[1:]
    specs = {option["name"]: option for option in node.get("options") or ()}
    where = "/" + " ".join(typed)
    raw = _assignments(rest, specs, where)
    missing = [name for name, spec in specs.items() if spec.get("required") and name not in raw]
    if missing:
        raise UnreadableCommand(f"{where} needs {', '.join(f'{name}:…' for name in missing)}")
    options = {name: _typed(value, specs[name], channel_id) for name, value in raw.items()}
    return TypedCommand(
        name=typed[0],
        path=" ".join(typed[1:]) or None,
        options=options,
        option_types={name: specs[name]["type"] for name in options},
    )


def _assignments(words: list[str], specs: dict[str, dict], where: str) -> dict[str, str]:
    """Each option's text; the words after a text option's value continue it, as Discord's box does."""
    raw: dict[str, str] = {}
    current: str | None = None
    options = ", ".join(specs) or "none"
    for word in words:
        assignment = split_assignment(word)
        if assignment is not None and assignment[0].lower() in specs:
            name = assignment[0].lower()
            if name in raw:
                raise UnreadableCommand(f"{where}: {name} is given twice")
            raw[name], current = assignment[1], name
        elif assignment is not None:
            raise UnreadableCommand(
                f"{where} has no option {assignment[0]!r}; its options are {options}"
                + ' (quote a value that holds a colon: message:"a: b")'
            )
        elif current is not None and specs[current]["type"] == OptionType.STRING:
            raw[current] += " " + word
        else:
            raise UnreadableCommand(f"{where}: {word!r} is not option:value; its options are {options}")
    return raw


def _typed(text: str, spec: dict[str, Any], channel_id: Callable[[str], str | None]) -> Any:
    name, kind = spec["name"], spec["type"]
    if text == "":
        raise UnreadableCommand(f"give {name} a value: {name}:…")
    if kind == OptionType.INTEGER:
        try:
            value: Any = int(text)
        except ValueError:
            raise UnreadableCommand(f"{name} takes a whole number, not {text!r}") from None
    elif kind == OptionType.BOOLEAN:
        if text.lower() not in TRUE_WORDS | FALSE_WORDS:
            raise UnreadableCommand(f"{name} takes true or false, not {text!r}")
        value = text.lower() in TRUE_WORDS
    elif kind == OptionType.CHANNEL:
        value = text if is_snowflake(text) else channel_id(text)
        if value is None:
            raise UnreadableCommand(f"{name}: no channel called {text!r}")
    else:
        value = text
    choices = [choice["value"] for choice in spec.get("choices") or ()]
    if choices and value not in choices:
        raise UnreadableCommand(f"{name} is one of {', '.join(map(str, choices))}, not {text!r}")
    return value


def _subcommands(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        option
        for option in node.get("options") or ()
        if option.get("type") in {OptionType.SUB_COMMAND, OptionType.SUB_COMMAND_GROUP}
    ]


def _names(nodes: Any) -> str:
    return ", ".join(node["name"] for node in nodes)
