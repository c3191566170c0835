"""Every slash command kioku has, by name. The router loads a command's module when that command is
first dispatched, so ``/chat`` does not import the memory commands; ``kioku register-commands``, the
doctor and the playground read every definition (``definitions``)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from kioku.services.commands.base import Command

WHY_THIS_ANSWER: Final = "Why this answer?"
REMEMBER_THIS: Final = "Remember this"
"""The message commands' names, for whoever offers them outside the commands (the playground)."""

_PACKAGE: Final = "kioku.services.commands"
MODULES: Final[dict[str, tuple[str, str]]] = {
    "help": (f"{_PACKAGE}.help", "COMMAND"),
    "chat": (f"{_PACKAGE}.chat", "COMMAND"),
    "server": (f"{_PACKAGE}.server", "COMMAND"),
    "persona": (f"{_PACKAGE}.persona", "COMMAND"),
    "personal": (f"{_PACKAGE}.personal", "COMMAND"),
    "capabilities": (f"{_PACKAGE}.capabilities", "COMMAND"),
    WHY_THIS_ANSWER: (f"{_PACKAGE}.why_answer", "COMMAND"),
    REMEMBER_THIS: (f"{_PACKAGE}.memory_add", "REMEMBER_COMMAND"),
}
"""Each command's name, in registration order, with the module and the attribute defining it."""


def command(name: str) -> Command | None:
    """The command called ``name``, its module imported on first use; None for a name kioku lacks."""
    where = MODULES.get(name)
    if where is None:
        return None
    module, attribute = where
    found: Command = getattr(importlib.import_module(module), attribute)
    return found


def by_name() -> dict[str, Command]:
    """Every command, each module imported."""
    return {name: loaded for name in MODULES if (loaded := command(name)) is not None}


def definitions() -> list[dict]:
    """The command tree as one bulk-overwrite body."""
    return [command.definition() for command in by_name().values()]
