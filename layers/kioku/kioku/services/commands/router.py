"""Routes a verified interaction to its command's handler; what a handler raises is answered by
``error_replies``."""

from __future__ import annotations

import logging

from pydantic import ValidationError

from kioku.services.commands.base import Command, Handler, Interaction
from kioku.services.commands.components import InvalidModalSubmit, UnknownComponent
from kioku.services.commands.context import CommandContext
from kioku.services.commands.custom_ids import MAX_CUSTOM_ID_CHARS
from kioku.services.commands.discord import InteractionType, autocomplete, message
from kioku.services.commands.error_replies import reply_for
from kioku.services.commands.registry import COMMANDS, by_name

logger = logging.getLogger(__name__)


class InvalidInteraction(ValueError):
    """A verified body that is not a Discord interaction kioku can read."""


def route_interaction(payload: dict, context: CommandContext) -> dict:
    """The interaction response for a verified, non-PING interaction payload."""
    try:
        interaction = Interaction.model_validate(payload)
    except ValidationError as exc:
        logger.info("verified body is not a valid interaction: %s", exc.error_count())
        raise InvalidInteraction("body is not a valid Discord interaction") from None
    return respond(interaction, context)


def respond(interaction: Interaction, context: CommandContext) -> dict:
    """The interaction response Discord shows; failures become ephemeral messages, never errors."""
    if interaction.type in (InteractionType.MESSAGE_COMPONENT, InteractionType.MODAL_SUBMIT):
        return _answer_custom_id(interaction, context)
    name = interaction.command_name
    command = by_name().get(name)
    handler = _handler_for(command, interaction.type) if command else None
    if handler is None:
        if interaction.type == InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE:
            return autocomplete([])
        logger.info("no handler for %s interaction %r", interaction.type.name, name)
        return message("I don't know that command (yet). It may have been removed; try `/help`.")
    try:
        return handler(interaction, context)
    except Exception as exc:
        return reply_for(exc, name)


def _answer_custom_id(interaction: Interaction, context: CommandContext) -> dict:
    """A click or a submit, answered by the handler of the id it carries, with the id's fields; an
    id kioku does not write is refused, and nothing is read or changed."""
    form = interaction.type == InteractionType.MODAL_SUBMIT
    custom_id = interaction.custom_id
    for command in COMMANDS:
        for kind, handler in (command.forms if form else command.buttons).items():
            fields = kind.decode(custom_id)
            if fields is not None:
                try:
                    return handler(interaction, context, *fields)
                except Exception as exc:
                    return reply_for(exc, command.name)
    logger.info(
        "refused a %s of unknown id %r", "form" if form else "button", custom_id[:MAX_CUSTOM_ID_CHARS]
    )
    if form:
        return reply_for(
            InvalidModalSubmit("this form is not one I know; open it again with its command"), ""
        )
    return reply_for(UnknownComponent("this button is not one I know; run the command again"), "")


def _handler_for(command: Command, kind: InteractionType) -> Handler | None:
    return {
        InteractionType.APPLICATION_COMMAND: command.on_command,
        InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE: command.on_autocomplete,
    }.get(kind)
