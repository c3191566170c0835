"""Routes a verified interaction to its command's handler; the one place errors become replies."""

from __future__ import annotations

import logging

from pydantic import ValidationError

from kioku.discord.interactions import InteractionType
from kioku.discord.responses import autocomplete, message
from kioku.services.commands.base import Command, Handler, Interaction
from kioku.services.commands.discord import error_message
from kioku.services.commands.registry import by_name

logger = logging.getLogger(__name__)

CUSTOM_ID_SEPARATOR = ":"


class InvalidInteraction(ValueError):
    """A verified body that is not a Discord interaction kioku can read."""


def route_interaction(payload: dict) -> dict:
    """The interaction response for a verified, non-PING interaction payload."""
    try:
        interaction = Interaction.model_validate(payload)
    except ValidationError as exc:
        logger.info("verified body is not a valid interaction: %s", exc.error_count())
        raise InvalidInteraction("body is not a valid Discord interaction") from None
    return respond(interaction)


def respond(interaction: Interaction) -> dict:
    """The interaction response Discord shows; failures become ephemeral messages, never errors."""
    commands = by_name()
    if interaction.type in (InteractionType.MESSAGE_COMPONENT, InteractionType.MODAL_SUBMIT):
        name = interaction.custom_id.split(CUSTOM_ID_SEPARATOR, 1)[0]
    else:
        name = interaction.command_name
    command = commands.get(name)
    handler = _handler_for(command, interaction.type) if command else None
    if handler is None:
        if interaction.type == InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE:
            return autocomplete([])
        logger.info("no handler for %s interaction %r", interaction.type.name, name)
        return message("I don't know that command (yet). It may have been removed; try `/help`.")
    try:
        return handler(interaction)
    except Exception:
        logger.exception("command %r failed", name)
        return error_message("That did not work because of a problem on my side. Please try again later.")


def _handler_for(command: Command, kind: InteractionType) -> Handler | None:
    return {
        InteractionType.APPLICATION_COMMAND: command.on_command,
        InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE: command.on_autocomplete,
        InteractionType.MESSAGE_COMPONENT: command.on_component,
        InteractionType.MODAL_SUBMIT: command.on_modal,
    }.get(kind)
