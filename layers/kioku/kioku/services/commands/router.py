"""Routes a verified interaction to its command's handler; what a handler raises is answered by
``error_replies``."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from kioku.discord.interaction import Interaction, MalformedInteraction, parse_interaction
from kioku.discord.interactions import InteractionType
from kioku.discord.responses import autocomplete, message
from kioku.discord.ui import MAX_CUSTOM_ID_CHARS, InvalidModalSubmit, UnknownComponent
from kioku.services.commands.base import Command, CustomIdHandler, Handler
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import SEPARATOR
from kioku.services.commands.error_replies import Refusal, Refused, reply_for
from kioku.services.commands.registry import command as command_named

logger = logging.getLogger(__name__)


class InvalidInteraction(ValueError):
    """A verified body that is not a Discord interaction kioku can read."""


def route_interaction(payload: dict, context: CommandContext) -> dict:
    """The interaction response for a verified, non-PING interaction payload."""
    try:
        interaction = parse_interaction(payload)
    except MalformedInteraction as exc:
        logger.info("verified body is not a valid interaction: %s", exc.reason)
        raise InvalidInteraction("body is not a valid Discord interaction") from None
    return respond(interaction, context)


def respond(interaction: Interaction, context: CommandContext) -> dict:
    """The interaction response Discord shows; failures become ephemeral messages, never errors."""
    fields: tuple[Any, ...] = ()
    if interaction.type in (InteractionType.MESSAGE_COMPONENT, InteractionType.MODAL_SUBMIT):
        routed = _route_custom_id(interaction)
        if routed is None:
            return reply_for(_unknown_id(interaction), "")
        name, handler, fields = routed
    else:
        name = interaction.command_name
        command = command_named(name)
        found = _handler_for(command, interaction.type) if command else None
        if found is None:
            if interaction.type == InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE:
                return autocomplete([])
            logger.info("no handler for %s interaction %r", interaction.type.name, name)
            return message("I don't know that command (yet). It may have been removed; try `/help`.")
        handler = found
    try:
        return handler(interaction, context, *fields)
    except Exception as exc:
        return reply_for(exc, name)


def _route_custom_id(interaction: Interaction) -> tuple[str, CustomIdHandler, tuple[Any, ...]] | None:
    """The command, the handler and the fields of the button or form id a click or a submit carries;
    None for an id kioku does not write. An id starts with its command's name (``CustomId``), so
    only that command's module is loaded."""
    form = interaction.type == InteractionType.MODAL_SUBMIT
    command = command_named(interaction.custom_id.split(SEPARATOR, 1)[0])
    if command is None:
        return None
    for kind, handler in (command.forms if form else command.buttons).items():
        fields = kind.decode(interaction.custom_id)
        if fields is not None:
            return command.name, handler, fields
    return None


def _unknown_id(interaction: Interaction) -> Exception:
    """What a click or a submit of an id kioku does not write is refused with; nothing is read."""
    form = interaction.type == InteractionType.MODAL_SUBMIT
    logger.info(
        "refused a %s of unknown id %r",
        "form" if form else "button",
        interaction.custom_id[:MAX_CUSTOM_ID_CHARS],
    )
    if form:
        return InvalidModalSubmit("this form is not one I know; open it again with its command")
    return UnknownComponent("this button is not one I know; run the command again")


def _handler_for(command: Command, kind: InteractionType) -> Handler | None:
    if kind == InteractionType.APPLICATION_COMMAND and command.subcommands:
        return partial(_subcommand, command)
    return {
        InteractionType.APPLICATION_COMMAND: command.on_command,
        InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE: command.on_autocomplete,
    }.get(kind)


def _subcommand(command: Command, interaction: Interaction, context: CommandContext) -> dict:
    """The command's handler of the path used, after its guard; a path it lacks is not understood."""
    if command.guard is not None:
        command.guard(interaction)
    handler = command.subcommands.get(interaction.subcommand_path())
    if handler is None:
        raise Refused(Refusal.NOT_UNDERSTOOD, command.hint())
    return handler(interaction, context)
