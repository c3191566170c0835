"""The shape of a command; the interaction it is given is ``kioku.discord.interaction``'s."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import CommandType, IntegrationType, InteractionContext, OptionType
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import CustomId

Handler = Callable[[Interaction, CommandContext], dict]
"""A handler answers an interaction with what its container hands it."""
CustomIdHandler = Callable[..., dict]
"""A button's or a form's handler: the interaction, the context, then the fields its id carried."""
Guard = Callable[[Interaction], None]
"""A check every subcommand of a command passes first (Manage Server); it raises ``Refused``."""


@dataclass(frozen=True)
class Command:
    """A top-level slash command: its Discord definition and its handlers.

    ``buttons`` and ``forms`` are the ids its answers carry (``custom_ids``), each with the handler
    a click or a submit of it is routed to, so each command owns its whole interaction surface.
    ``subcommands``, by path (``("stm", "view")``), are what the router dispatches a use of the
    command to, after its ``guard``; a path it lacks is answered with ``hint``, read from ``options``.
    """

    name: str
    description: str
    options: list[dict[str, Any]] = field(default_factory=list)
    on_command: Handler | None = None
    on_autocomplete: Handler | None = None
    buttons: Mapping[CustomId, CustomIdHandler] = field(default_factory=dict)
    forms: Mapping[CustomId, CustomIdHandler] = field(default_factory=dict)
    dm_permission: bool = True
    default_member_permissions: str | None = None
    kind: CommandType = CommandType.CHAT_INPUT
    """``MESSAGE``: a message's context menu command, which Discord gives no description or options."""
    subcommands: Mapping[tuple[str, ...], Handler] = field(default_factory=dict)
    guard: Guard | None = None

    def __post_init__(self) -> None:
        strays = [kind for kind in [*self.buttons, *self.forms] if kind.command != self.name]
        if strays:
            raise ValueError(f"/{self.name} answers with ids of another command: {strays}")

    def subcommand_paths(self) -> list[tuple[str, ...]]:
        """Every (group and) subcommand path its definition offers, in order."""
        return list(_paths(self.options, ()))

    def hint(self) -> str:
        """ "Try …", with each group's subcommands together: ``/persona stm view|edit``."""
        grouped: dict[tuple[str, ...], list[str]] = {}
        for path in self.subcommand_paths():
            grouped.setdefault(path[:-1], []).append(path[-1])
        uses = [f"`/{' '.join([self.name, *group, '|'.join(names)])}`" for group, names in grouped.items()]
        return "Try " + (", ".join(uses[:-1]) + " or " + uses[-1] if len(uses) > 1 else "".join(uses)) + "."

    def definition(self) -> dict[str, Any]:
        """The command as Discord's bulk-overwrite endpoint takes it."""
        body: dict[str, Any] = {
            "name": self.name,
            "description": self.description if self.kind is CommandType.CHAT_INPUT else "",
            "type": self.kind,
            "dm_permission": self.dm_permission,
        }
        if self.kind is CommandType.CHAT_INPUT:
            body["options"] = self.options
        if self.default_member_permissions is not None:
            body["default_member_permissions"] = self.default_member_permissions
        # Installed to servers only, and usable only in a server or the bot's own DM: never in a group
        # DM, where what the bot recalls for one person would be shown to everyone there.
        body["integration_types"] = [IntegrationType.GUILD_INSTALL]
        body["contexts"] = [InteractionContext.GUILD] + (
            [InteractionContext.BOT_DM] if self.dm_permission else []
        )
        return body


def _paths(options: list[dict[str, Any]], above: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    for option in options:
        if option.get("type") == OptionType.SUB_COMMAND:
            yield (*above, option["name"])
        elif option.get("type") == OptionType.SUB_COMMAND_GROUP:
            yield from _paths(option.get("options", []), (*above, option["name"]))
