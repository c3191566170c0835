"""``kioku relay``: run the gateway relay, or print a fresh signing key pair with ``--new-key``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import httpx

from kioku.config import ConfigurationError
from kioku.relay.forwarder import Forwarder
from kioku.signatures import new_key_pair, public_key_of

TOKEN_VARIABLE: Final = "DISCORD_BOT_TOKEN"
SIGNING_KEY_VARIABLE: Final = "RELAY_SIGNING_KEY"
URL_VARIABLE: Final = "RELAY_URL"
SIGNING_SEED_HEX_LENGTH: Final = 64
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})

EXIT_OK: Final = 0
EXIT_GATEWAY_UNAVAILABLE: Final = 1
"""Discord could not be reached: worth restarting later."""
EXIT_CONFIGURATION: Final = 2
EXIT_GATEWAY_REFUSED: Final = 3
"""Discord refused the token or the intents: restarting cannot help until the operator acts."""

logger = logging.getLogger("kioku.relay")


@dataclass(frozen=True, slots=True)
class RelaySettings:
    """What the relay reads from its environment; the secrets stay out of ``repr``."""

    bot_token: str = field(repr=False)
    signing_key_hex: str = field(repr=False)
    relay_url: str

    @property
    def public_key_hex(self) -> str:
        return public_key_of(self.signing_key_hex)


def read_settings(environ: Mapping[str, str]) -> RelaySettings:
    """Validate the relay's variables; the error names every bad one and never echoes a value."""
    problems = []
    token = environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        problems.append(f"{TOKEN_VARIABLE} is required but not set")
    elif any(character.isspace() for character in token):
        problems.append(f"{TOKEN_VARIABLE} must be the bare bot token (no spaces, no 'Bot ' prefix)")
    seed = environ.get(SIGNING_KEY_VARIABLE, "").strip().lower()
    if not seed:
        problems.append(f"{SIGNING_KEY_VARIABLE} is required but not set (`kioku relay --new-key` makes one)")
    elif len(seed) != SIGNING_SEED_HEX_LENGTH or any(c not in "0123456789abcdef" for c in seed):
        problems.append(f"{SIGNING_KEY_VARIABLE} must be 64 hex characters (a 32-byte Ed25519 seed)")
    url = environ.get(URL_VARIABLE, "").strip()
    if not url:
        problems.append(f"{URL_VARIABLE} is required but not set (the RelayFunction URL of the stack)")
    elif not _is_http_url(url):
        problems.append(f"{URL_VARIABLE} must be an http(s) URL with a host")
    if problems:
        raise ConfigurationError("invalid configuration: " + "; ".join(problems))
    return RelaySettings(bot_token=token, signing_key_hex=seed, relay_url=url)


def run(argv: list[str]) -> int:
    """Entry point of ``kioku relay``; returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog="kioku relay",
        description=f"Forward Discord gateway messages to RelayFunction. Reads {TOKEN_VARIABLE}, "
        f"{SIGNING_KEY_VARIABLE} and {URL_VARIABLE} from the environment.",
    )
    parser.add_argument(
        "--new-key", action="store_true", help="print a fresh signing key pair and exit (connects nowhere)"
    )
    options = parser.parse_args(argv)
    if options.new_key:
        _print_new_key_pair()
        return EXIT_OK

    try:
        settings = read_settings(os.environ)
    except ConfigurationError as exc:
        print(f"kioku relay: {exc}", file=sys.stderr)
        return EXIT_CONFIGURATION
    try:
        from kioku.relay import gateway
    except ImportError:
        print("kioku relay: hikari is missing; run: pip install 'kioku[relay]'", file=sys.stderr)
        return EXIT_CONFIGURATION

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    url = httpx.URL(settings.relay_url)
    if url.scheme == "http" and url.host not in LOOPBACK_HOSTS:
        logger.warning("%s is plain http: messages travel unencrypted (signed, but readable)", URL_VARIABLE)
    logger.info(
        "relaying to %s, signing as %s (must equal the stack's RelayPublicKey)",
        settings.relay_url,
        settings.public_key_hex,
    )
    try:
        gateway.run_gateway(settings.bot_token, Forwarder(settings.relay_url, settings.signing_key_hex))
    except gateway.GatewayUnavailable as exc:
        print(f"kioku relay: {exc}", file=sys.stderr)
        return EXIT_GATEWAY_REFUSED if exc.permanent else EXIT_GATEWAY_UNAVAILABLE
    return EXIT_OK


def _print_new_key_pair() -> None:
    seed_hex, public_key_hex = new_key_pair()
    print("# The relay host's secret: put it in the relay's environment file, nowhere else.")
    print(f"{SIGNING_KEY_VARIABLE}={seed_hex}")
    print("# The stack's RelayPublicKey parameter (RELAY_PUBLIC_KEY of RelayFunction); not a secret.")
    print(f"RELAY_PUBLIC_KEY={public_key_hex}")


def _is_http_url(value: str) -> bool:
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL:
        return False
    return url.scheme in {"http", "https"} and bool(url.host)
