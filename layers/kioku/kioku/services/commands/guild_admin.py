"""What every server-settings command shares: guild only, Manage Server only, one error mapping.

Discord hides these commands from members without Manage Server (``default_member_permissions``),
but server admins can override that per role, so the permission is checked again on every use.
"""

from __future__ import annotations

from functools import wraps
from typing import TYPE_CHECKING, Final

from kioku.discord.protocol import Permission
from kioku.domain.ltm.memory import MemoryNotFound, MemoryStoreFailed
from kioku.domain.settings_edit import InvalidSettingsEdit
from kioku.services.commands.base import Handler, Interaction
from kioku.services.commands.components import InvalidModalSubmit, UnknownComponent
from kioku.services.commands.discord import Refusal, error_message, refusal_message
from kioku.services.warm import config_store

if TYPE_CHECKING:
    from kioku.domain.models import ServerConfig

MANAGE_SERVER: Final = str(int(Permission.MANAGE_GUILD))
"""``default_member_permissions`` for the settings commands."""

DM_REFUSAL: Final = "Server settings can only be changed inside the server, not in direct messages."
PERMISSION_REFUSAL: Final = "You need the **Manage Server** permission to change kioku's server settings."
STALE_CONFIGURATION: Final = (
    "The server settings were changed meanwhile (someone else saved first), so nothing was saved. "
    "Please try again."
)
MEMORIES_UNREACHABLE: Final = (
    "I could not reach the server's memories just now, so nothing was changed. Please try again."
)


def manager_refusal(interaction: Interaction) -> dict | None:
    """The ephemeral refusal for anyone but a Manage Server member of a guild; None for them."""
    if interaction.guild_id is None or interaction.member is None:
        return refusal_message(Refusal.SERVER_ONLY, DM_REFUSAL)
    if not int(interaction.member.permissions) & (Permission.MANAGE_GUILD | Permission.ADMINISTRATOR):
        return refusal_message(Refusal.NOT_ALLOWED, PERMISSION_REFUSAL)
    return None


def managed(handler: Handler) -> Handler:
    """``handler`` behind the manager check, its bad-input, stale-save and memory errors answered
    ephemerally: the one place these domain errors become replies."""

    @wraps(handler)
    def guarded(interaction: Interaction) -> dict:
        from kioku.adapters.dynamodb.config_store import StaleConfiguration

        refusal = manager_refusal(interaction)
        if refusal is not None:
            return refusal
        try:
            return handler(interaction)
        except (InvalidSettingsEdit, InvalidModalSubmit) as exc:
            return refusal_message(Refusal.NOTHING_SAVED, f"Nothing was saved:\n{exc}")
        except StaleConfiguration:
            return refusal_message(Refusal.NOTHING_SAVED, STALE_CONFIGURATION)
        except (MemoryNotFound, UnknownComponent) as exc:
            return refusal_message(Refusal.NOTHING_CHANGED, f"Nothing was changed: {exc}.")
        except MemoryStoreFailed:
            return error_message(MEMORIES_UNREACHABLE)

    return guarded


def load_server_config(interaction: Interaction) -> ServerConfig:
    """The interaction's guild configuration (defaults when none is stored yet)."""
    return config_store().get_server_config(str(interaction.guild_id))
