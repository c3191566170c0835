"""What every server-settings command shares: guild only, Manage Server only.

Discord hides these commands from members without Manage Server (``default_member_permissions``),
but server admins can override that per role, so the permission is checked again on every use.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import Permission, permission_bits
from kioku.services.commands.context import CommandContext
from kioku.services.commands.error_replies import Refusal, Refused

if TYPE_CHECKING:
    from kioku.domain.models import ServerConfig

MANAGE_SERVER: Final = str(int(Permission.MANAGE_GUILD))
"""``default_member_permissions`` for the settings commands."""

DM_REFUSAL: Final = "Server settings can only be changed inside the server, not in direct messages."
PERMISSION_REFUSAL: Final = "You need the **Manage Server** permission to change kioku's server settings."


def manages_server(interaction: Interaction) -> bool:
    """Whether the invoker may manage the server the interaction comes from (Discord computed the
    permissions, channel overwrites included)."""
    permissions = (permission_bits(interaction.member.permissions) if interaction.member else None) or 0
    return bool(permissions & (Permission.MANAGE_GUILD | Permission.ADMINISTRATOR))


def check_manager(interaction: Interaction) -> None:
    """Refuse anyone but a Manage Server member of a guild."""
    if interaction.guild_id is None or interaction.member is None:
        raise Refused(Refusal.SERVER_ONLY, DM_REFUSAL)
    if not manages_server(interaction):
        raise Refused(Refusal.NOT_ALLOWED, PERMISSION_REFUSAL)


def managed(handler: Callable[..., dict]) -> Callable[..., dict]:
    """``handler`` (of a command, a button or a form) behind the manager check."""

    @wraps(handler)
    def guarded(interaction: Interaction, context: CommandContext, *fields: Any) -> dict:
        check_manager(interaction)
        return handler(interaction, context, *fields)

    return guarded


def load_server_config(interaction: Interaction, context: CommandContext) -> ServerConfig:
    """The interaction's guild configuration (defaults when none is stored yet)."""
    return context.config_store.get_server_config(str(interaction.guild_id))
