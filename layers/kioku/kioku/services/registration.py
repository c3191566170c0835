"""``kioku register-commands [--guild ID]``: bulk-overwrite the slash commands in one PUT.

The tree comes from the same registry the router uses, so what Discord shows is what kioku routes.
The bot token never comes as an argument (shell history, the process list): it is read from
``DISCORD_BOT_TOKEN`` or from the stack's secret (``--secret-arn`` or ``KIOKU_SECRET_ARN``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Final, Protocol

from kioku.discord.protocol import Permission
from kioku.discord.snowflake import is_snowflake
from kioku.domain.conditions import DiscordRefused
from kioku.services.commands.registry import definitions

DEFAULT_API_BASE_URL = "https://discord.com/api/v10"
MIN_TYPED_ID_DIGITS: Final = 15
"""An id typed on the command line is at least this long: a shorter one is a typo, not an id."""

BOT_PERMISSIONS: Final = (
    Permission.VIEW_CHANNEL
    | Permission.SEND_MESSAGES
    | Permission.EMBED_LINKS
    | Permission.READ_MESSAGE_HISTORY
    | Permission.SEND_MESSAGES_IN_THREADS
    | Permission.MANAGE_WEBHOOKS
)
"""What the bot does in a channel: read it and its history, answer (with embeds for memory
notifications), in threads too, and speak as an alter persona through a channel webhook it creates.
Files go through interaction webhooks, which need none."""


def is_typed_id(value: str) -> bool:
    return is_snowflake(value) and len(value) >= MIN_TYPED_ID_DIGITS


def invite_url(application_id: str) -> str:
    """The OAuth2 link that adds the bot to a server with exactly ``BOT_PERMISSIONS``."""
    return (
        "https://discord.com/oauth2/authorize"
        f"?client_id={application_id}&scope=bot+applications.commands&permissions={int(BOT_PERMISSIONS)}"
    )


class CommandRegistrar(Protocol):
    """Where the commands are registered (``DiscordRest``); raises ``DiscordRefused``."""

    def bulk_overwrite_commands(
        self, application_id: str, commands: list[dict[str, Any]], guild_id: str | None = None
    ) -> list[dict[str, Any]]: ...


def register_commands(
    rest: CommandRegistrar, application_id: str, guild_id: str | None = None
) -> list[dict[str, Any]]:
    """Replace the application's commands (globally, or in one guild) with the registry's."""
    return rest.bulk_overwrite_commands(application_id, definitions(), guild_id=guild_id)


def bot_token(secret_arn: str | None) -> tuple[str, str | None]:
    """The bot token from the environment, else from the secret; or why there is none."""
    token = os.environ.get("DISCORD_BOT_TOKEN", "").strip()
    if token:
        return token, None
    if not secret_arn:
        return (
            "",
            "DISCORD_BOT_TOKEN must be set to the bot token, or --secret-arn (KIOKU_SECRET_ARN) name its secret",
        )
    from kioku.adapters.secrets import read_secret
    from kioku.config import ConfigurationError

    try:
        token = read_secret(secret_arn).get("DISCORD_BOT_TOKEN", "").strip()
    except ConfigurationError as exc:
        return "", str(exc)
    return (token, None) if token else ("", "the secret has no DISCORD_BOT_TOKEN")


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kioku register-commands", description=__doc__)
    parser.add_argument("--guild", help="register in this guild only (appears instantly; for testing)")
    parser.add_argument("--dry-run", action="store_true", help="print the command tree instead of sending it")
    parser.add_argument(
        "--secret-arn",
        default=os.environ.get("KIOKU_SECRET_ARN"),
        help="read the bot token from this secret (the template's SecretArn) unless DISCORD_BOT_TOKEN is set",
    )
    options = parser.parse_args(argv)
    if options.dry_run:
        print(json.dumps(definitions(), indent=2))
        return 0
    application_id = os.environ.get("DISCORD_APPLICATION_ID", "").strip()
    problems = []
    if not is_typed_id(application_id):
        problems.append("DISCORD_APPLICATION_ID must be set to the application id")
    if options.guild is not None and not is_typed_id(options.guild):
        problems.append("--guild must be a guild id")
    token, token_problem = bot_token(options.secret_arn) if not problems else ("", None)
    if token_problem:
        problems.append(token_problem)
    if problems:
        print("kioku register-commands: " + "; ".join(problems), file=sys.stderr)
        return 2

    from kioku.adapters.discord_rest import DiscordRest

    rest = DiscordRest(os.environ.get("DISCORD_API_BASE_URL") or DEFAULT_API_BASE_URL, token)
    try:
        registered = register_commands(rest, application_id, options.guild)
    except DiscordRefused as exc:
        print(f"kioku register-commands: Discord refused the commands: {exc}", file=sys.stderr)
        return 1
    finally:
        rest.close()
    where = f"guild {options.guild}" if options.guild else "all servers (global commands take up to an hour)"
    names = ", ".join(f"/{command.get('name')}" for command in registered)
    print(f"registered {len(registered)} command(s) for {where}: {names}")
    print(f"invite the bot: {invite_url(application_id)}")
    return 0
