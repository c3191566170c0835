"""Every slash command kioku has. The router and ``kioku register-commands`` both read this list."""

from __future__ import annotations

from kioku.services.commands import capabilities, chat, memory_add, persona, personal, server, why_answer
from kioku.services.commands import help as help_command
from kioku.services.commands.base import Command

WHY_THIS_ANSWER = why_answer.NAME
REMEMBER_THIS = memory_add.REMEMBER_THIS
"""The message commands' names, for whoever offers them outside the commands (the playground)."""

COMMANDS: tuple[Command, ...] = (
    help_command.COMMAND,
    chat.COMMAND,
    server.COMMAND,
    persona.COMMAND,
    personal.COMMAND,
    capabilities.COMMAND,
    why_answer.COMMAND,
    memory_add.REMEMBER_COMMAND,
)


def by_name() -> dict[str, Command]:
    return {command.name: command for command in COMMANDS}


def definitions() -> list[dict]:
    """The command tree as one bulk-overwrite body."""
    return [command.definition() for command in COMMANDS]
