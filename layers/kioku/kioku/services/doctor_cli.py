"""``kioku doctor``'s command line: the stack's facts read from its outputs or the options, the bot
token from the environment or the stack's secret, then ``doctor.examine``'s checks reported."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from kioku.services import doctor
from kioku.services.doctor import CHECKS, DEFAULT_API_BASE_URL, Target, examine, report


def cannot_run(token_problem: str | None, missing: list[str]) -> str:
    """Why the doctor cannot start, in one sentence: the token's problem and the values not given."""
    parts = [token_problem] if token_problem else []
    if missing:
        flags = [f"--{name.replace('_', '-')}" for name in missing]
        listed = flags[0] if len(flags) == 1 else ", ".join(flags[:-1]) + " and " + flags[-1]
        verb, pronoun = ("is", "it") if len(flags) == 1 else ("are", "them")
        parts.append(f"{listed} {verb} needed (or --stack-name, to read {pronoun} from the stack)")
    return "; and ".join(parts) + "."


def run(argv: list[str]) -> int:
    options = _parser().parse_args(argv)

    facts: dict[str, str] = {}
    if options.stack_name:
        from kioku.adapters.cloudformation import StackNotReadable, stack_facts

        try:
            facts = stack_facts(options.stack_name, options.region)
        except StackNotReadable as exc:
            print(f"kioku doctor: {exc}", file=sys.stderr)
            return 2
    secret_arn = options.secret_arn or facts.get("SecretArn")
    from kioku.services.registration import bot_token

    token, problem = bot_token(secret_arn)
    secret_token = None
    if os.environ.get("DISCORD_BOT_TOKEN") and secret_arn:
        secret_token = _secret_bot_token(secret_arn)
    values: dict[str, Any] = {  # each one checked below: none missing
        "interactions_url": options.interactions_url or facts.get("InteractionsEndpointUrl"),
        "relay_url": options.relay_url or facts.get("RelayEndpointUrl"),
        "application_id": options.application_id or facts.get("DiscordApplicationId"),
        "discord_public_key": options.discord_public_key or facts.get("DiscordPublicKey"),
        "relay_public_key": options.relay_public_key or facts.get("RelayPublicKey"),
    }
    missing = [name for name, value in values.items() if not value]
    if problem or missing:
        print(f"kioku doctor cannot run: {cannot_run(problem, missing)}", file=sys.stderr)
        return 2
    target = Target(
        **values,
        bot_token=token,
        api_base_url=os.environ.get("DISCORD_API_BASE_URL") or DEFAULT_API_BASE_URL,
        relay_signing_key=os.environ.get("RELAY_SIGNING_KEY") or None,
        secret_bot_token=secret_token,
        guild_id=options.guild,
        channel_id=options.channel,
        timeout_seconds=options.timeout,
    )
    return report(examine(target))


def _parser() -> argparse.ArgumentParser:
    checks = "\n".join(f"  {name:<23} {what}" for name, what in CHECKS.items())
    parser = argparse.ArgumentParser(
        prog="kioku doctor",
        description=doctor.__doc__,
        epilog=f"checks:\n{checks}\n\nenvironment: DISCORD_BOT_TOKEN (else the secret's), RELAY_SIGNING_KEY, "
        "DISCORD_APPLICATION_ID, KIOKU_SECRET_ARN, AWS_REGION",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--stack-name", help="read the URLs, ids and keys from this stack's outputs and parameters"
    )
    parser.add_argument(
        "--region",
        default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
        help="the stack's region (default: AWS_REGION, AWS_DEFAULT_REGION)",
    )
    parser.add_argument("--interactions-url", help="the InteractionsEndpointUrl output, without --stack-name")
    parser.add_argument("--relay-url", help="the RelayEndpointUrl output, without --stack-name")
    parser.add_argument(
        "--application-id",
        default=os.environ.get("DISCORD_APPLICATION_ID"),
        help="the Discord application id, without --stack-name (default: DISCORD_APPLICATION_ID)",
    )
    parser.add_argument("--discord-public-key", help="the stack's DiscordPublicKey, without --stack-name")
    parser.add_argument("--relay-public-key", help="the stack's RelayPublicKey, without --stack-name")
    parser.add_argument(
        "--secret-arn",
        default=os.environ.get("KIOKU_SECRET_ARN"),
        help="the secret to read the bot token from when DISCORD_BOT_TOKEN is unset (default: KIOKU_SECRET_ARN, "
        "else the stack's SecretArn)",
    )
    parser.add_argument(
        "--guild", help="check the commands of this guild; with --channel, where the test turn runs"
    )
    parser.add_argument(
        "--channel", help="run one test turn in this channel (needs --guild, RELAY_SIGNING_KEY)"
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds the test turn may take (default: 60)"
    )
    return parser


def _secret_bot_token(secret_arn: str) -> str | None:
    """The secret's token, to compare with the environment's; None if it cannot be read."""
    from kioku.adapters.secrets import read_secret
    from kioku.config import ConfigurationError

    try:
        return read_secret(secret_arn).get("DISCORD_BOT_TOKEN", "").strip() or None
    except ConfigurationError:
        return None
