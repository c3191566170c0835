"""``kioku relay``: run the gateway relay, or print a fresh signing key pair with ``--new-key``."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import httpx

from kioku.config import ConfigurationError
from kioku.relay.forwarder import (
    DEFAULT_BUFFER_SIZE,
    DEFAULT_DRAIN_TIMEOUT_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_DELAY_SECONDS,
    Forwarder,
)
from kioku.relay.health import DEFAULT_HEALTH_HOST, HealthServer, HealthServerError, RelayHealth
from kioku.relay.sharding import ShardingError, ShardPlan, parse_shard_plan
from kioku.signatures import new_key_pair, public_key_of

TOKEN_VARIABLE: Final = "DISCORD_BOT_TOKEN"
SIGNING_KEY_VARIABLE: Final = "RELAY_SIGNING_KEY"
URL_VARIABLE: Final = "RELAY_URL"
API_BASE_URL_VARIABLE: Final = "DISCORD_API_BASE_URL"
MAX_ATTEMPTS_VARIABLE: Final = "RELAY_MAX_ATTEMPTS"
MAX_DELAY_VARIABLE: Final = "RELAY_MAX_DELAY_SECONDS"
DRAIN_TIMEOUT_VARIABLE: Final = "RELAY_DRAIN_TIMEOUT_SECONDS"
BUFFER_SIZE_VARIABLE: Final = "RELAY_BUFFER_SIZE"
SHARD_COUNT_VARIABLE: Final = "RELAY_SHARD_COUNT"
SHARD_IDS_VARIABLE: Final = "RELAY_SHARD_IDS"
HEALTH_PORT_VARIABLE: Final = "RELAY_HEALTH_PORT"
HEALTH_HOST_VARIABLE: Final = "RELAY_HEALTH_HOST"
SHARD_COUNT_FLAG: Final = "--shard-count"
SHARD_IDS_FLAG: Final = "--shard-ids"
HEALTH_PORT_FLAG: Final = "--health-port"
HEALTH_HOST_FLAG: Final = "--health-host"
DEFAULT_API_BASE_URL: Final = "https://discord.com/api/v10"
MAX_ATTEMPTS_LIMIT: Final = 100
MAX_SECONDS_LIMIT: Final = 3600.0
BUFFER_SIZE_LIMIT: Final = 1_000_000
SIGNING_SEED_HEX_LENGTH: Final = 64
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})
HIGHEST_PORT: Final = 65535

EXIT_OK: Final = 0
EXIT_GATEWAY_UNAVAILABLE: Final = 1
"""Discord could not be reached: worth restarting later."""
EXIT_CONFIGURATION: Final = 2
EXIT_GATEWAY_REFUSED: Final = 3
"""Discord refused the token, the intents or the sharding: restarting cannot help until the operator acts."""

logger = logging.getLogger("kioku.relay")


@dataclass(frozen=True, slots=True)
class RelaySettings:
    """What the relay reads from its environment; the secrets stay out of ``repr``."""

    bot_token: str = field(repr=False)
    signing_key_hex: str = field(repr=False)
    relay_url: str
    discord_api_base_url: str = DEFAULT_API_BASE_URL
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    max_delay_seconds: float = DEFAULT_MAX_DELAY_SECONDS
    drain_timeout_seconds: float = DEFAULT_DRAIN_TIMEOUT_SECONDS
    buffer_size: int = DEFAULT_BUFFER_SIZE
    shards: ShardPlan = field(default_factory=ShardPlan)
    health_host: str = DEFAULT_HEALTH_HOST
    health_port: int | None = None
    """None: no health endpoint; 0: any free port (logged)."""

    @property
    def public_key_hex(self) -> str:
        return public_key_of(self.signing_key_hex)


def read_settings(environ: Mapping[str, str], flags: Mapping[str, str | None] | None = None) -> RelaySettings:
    """Validate the relay's variables; the error names every bad one and never echoes a value.

    ``flags`` (by flag name, None when not given) win over their variables: the shard and health options.
    """
    problems = []
    flags = flags or {}
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
    api_base_url = environ.get(API_BASE_URL_VARIABLE, "").strip().rstrip("/") or DEFAULT_API_BASE_URL
    if not _is_http_url(api_base_url):
        problems.append(f"{API_BASE_URL_VARIABLE} must be an http(s) URL with a host")
    max_attempts = _read_number(
        environ, MAX_ATTEMPTS_VARIABLE, DEFAULT_MAX_ATTEMPTS, int, 1, MAX_ATTEMPTS_LIMIT, problems
    )
    max_delay = _read_number(
        environ, MAX_DELAY_VARIABLE, DEFAULT_MAX_DELAY_SECONDS, float, 0, MAX_SECONDS_LIMIT, problems
    )
    drain_timeout = _read_number(
        environ, DRAIN_TIMEOUT_VARIABLE, DEFAULT_DRAIN_TIMEOUT_SECONDS, float, 0, MAX_SECONDS_LIMIT, problems
    )
    buffer_size = _read_number(
        environ, BUFFER_SIZE_VARIABLE, DEFAULT_BUFFER_SIZE, int, 1, BUFFER_SIZE_LIMIT, problems
    )
    count, count_source = _flag_or_variable(flags, SHARD_COUNT_FLAG, environ, SHARD_COUNT_VARIABLE)
    ids, ids_source = _flag_or_variable(flags, SHARD_IDS_FLAG, environ, SHARD_IDS_VARIABLE)
    shards = ShardPlan()
    try:
        shards = parse_shard_plan(count, ids, count_source=count_source, ids_source=ids_source)
    except ShardingError as exc:
        problems.append(str(exc))
    health_port = _read_port(
        *_flag_or_variable(flags, HEALTH_PORT_FLAG, environ, HEALTH_PORT_VARIABLE), problems
    )
    health_host_value, _ = _flag_or_variable(flags, HEALTH_HOST_FLAG, environ, HEALTH_HOST_VARIABLE)
    health_host = (health_host_value or "").strip() or DEFAULT_HEALTH_HOST
    if problems:
        raise ConfigurationError("invalid configuration: " + "; ".join(problems))
    return RelaySettings(
        bot_token=token,
        signing_key_hex=seed,
        relay_url=url,
        discord_api_base_url=api_base_url,
        max_attempts=int(max_attempts),
        max_delay_seconds=float(max_delay),
        drain_timeout_seconds=float(drain_timeout),
        buffer_size=int(buffer_size),
        shards=shards,
        health_host=health_host,
        health_port=health_port,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kioku relay",
        description=f"Forward Discord gateway messages to RelayFunction. Reads {TOKEN_VARIABLE}, "
        f"{SIGNING_KEY_VARIABLE} and {URL_VARIABLE} from the environment (optional settings: "
        "docs/relay.md). Exits 0 when stopped, 1 on a transient failure (worth restarting), "
        "2 on bad configuration, 3 when Discord refuses the token, intents or sharding.",
    )
    parser.add_argument(
        "--new-key", action="store_true", help="print a fresh signing key pair and exit (connects nowhere)"
    )
    parser.add_argument(
        SHARD_COUNT_FLAG,
        metavar="N|auto",
        help=f"shards the bot runs with in all, or 'auto' for Discord's recommendation ({SHARD_COUNT_VARIABLE})",
    )
    parser.add_argument(
        SHARD_IDS_FLAG,
        metavar="A,B,...",
        help=f"the shards this process opens, from 0 to N-1; default: all of them ({SHARD_IDS_VARIABLE})",
    )
    parser.add_argument(
        HEALTH_PORT_FLAG,
        metavar="PORT",
        help=f"serve GET /healthz on this port; default: no endpoint ({HEALTH_PORT_VARIABLE})",
    )
    parser.add_argument(
        HEALTH_HOST_FLAG,
        metavar="ADDRESS",
        help=f"the address /healthz listens on; default {DEFAULT_HEALTH_HOST} ({HEALTH_HOST_VARIABLE})",
    )
    return parser


def run(argv: list[str]) -> int:
    """Entry point of ``kioku relay``; returns the process exit code."""
    options = _parser().parse_args(argv)
    if options.new_key:
        _print_new_key_pair()
        return EXIT_OK

    flags = {
        SHARD_COUNT_FLAG: options.shard_count,
        SHARD_IDS_FLAG: options.shard_ids,
        HEALTH_PORT_FLAG: options.health_port,
        HEALTH_HOST_FLAG: options.health_host,
    }
    try:
        settings = read_settings(os.environ, flags)
    except ConfigurationError as exc:
        print(f"kioku relay: {exc}", file=sys.stderr)
        return EXIT_CONFIGURATION
    try:
        from kioku.relay import gateway
    except ImportError:
        print("kioku relay: hikari is missing; run: pip install 'kioku[relay]'", file=sys.stderr)
        return EXIT_CONFIGURATION

    _configure_logging()
    _log_settings(settings)
    forwarder = Forwarder(
        settings.relay_url,
        settings.signing_key_hex,
        buffer_size=settings.buffer_size,
        max_attempts=settings.max_attempts,
        max_delay=settings.max_delay_seconds,
        drain_timeout=settings.drain_timeout_seconds,
    )
    health = RelayHealth(
        forwarder.counters, shard_ids=settings.shards.ids, buffered=lambda: forwarder.buffered
    )
    try:
        with _health_endpoint(settings, health):
            gateway.run_gateway(
                settings.bot_token,
                forwarder,
                rest_url=settings.discord_api_base_url,
                shards=settings.shards,
                health=health,
            )
    except (HealthServerError, gateway.ShardMismatch) as exc:
        print(f"kioku relay: {exc}", file=sys.stderr)
        return EXIT_CONFIGURATION
    except gateway.GatewayUnavailable as exc:
        print(f"kioku relay: {exc}", file=sys.stderr)
        return EXIT_GATEWAY_REFUSED if exc.permanent else EXIT_GATEWAY_UNAVAILABLE
    return EXIT_OK


def _log_settings(settings: RelaySettings) -> None:
    """What the relay starts with, as an operator checks it (never the token or the signing key)."""
    if _is_remote_plain_http(settings.relay_url):
        logger.warning("%s is plain http: messages travel unencrypted (signed, but readable)", URL_VARIABLE)
    if _is_remote_plain_http(settings.discord_api_base_url):
        logger.warning("%s is plain http: the bot token travels unencrypted", API_BASE_URL_VARIABLE)
    logger.info(
        "relaying to %s, signing as %s (must equal the stack's RelayPublicKey)",
        settings.relay_url,
        settings.public_key_hex,
    )
    logger.info(
        "Discord REST at %s; delivery: %d attempt(s), backoff capped at %gs, drain %gs, buffer %d",
        settings.discord_api_base_url,
        settings.max_attempts,
        settings.max_delay_seconds,
        settings.drain_timeout_seconds,
        settings.buffer_size,
    )
    logger.info("sharding: %s", settings.shards.describe())


def _health_endpoint(
    settings: RelaySettings, health: RelayHealth
) -> contextlib.AbstractContextManager[object]:
    if settings.health_port is None:
        return contextlib.nullcontext()
    return HealthServer(health, settings.health_host, settings.health_port)


def _print_new_key_pair() -> None:
    seed_hex, public_key_hex = new_key_pair()
    print("# The relay host's secret: put it in the relay's environment file, nowhere else.")
    print(f"{SIGNING_KEY_VARIABLE}={seed_hex}")
    print("# The stack's RelayPublicKey parameter (RELAY_PUBLIC_KEY of RelayFunction); not a secret.")
    print(f"RELAY_PUBLIC_KEY={public_key_hex}")


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # httpx logs every request at INFO: one line per forwarded message says nothing the counters do not.
    logging.getLogger("httpx").setLevel(logging.WARNING)


def _read_number(
    environ: Mapping[str, str],
    variable: str,
    default: float,
    kind: type[int] | type[float],
    minimum: float,
    maximum: float,
    problems: list[str],
) -> float:
    """An optional numeric variable within bounds; a problem names the variable, never its value."""
    raw = environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = math.nan
    if not minimum <= value <= maximum:  # NaN and infinities fail this too
        noun = "a whole number" if kind is int else "a number of seconds"
        problems.append(f"{variable} must be {noun} from {minimum:g} to {maximum:g}")
        return default
    return value


def _flag_or_variable(
    flags: Mapping[str, str | None], flag: str, environ: Mapping[str, str], variable: str
) -> tuple[str | None, str]:
    """The flag's value if it was given, else the variable's; and the name of where it came from."""
    if flags.get(flag) is not None:
        return flags[flag], flag
    return environ.get(variable), variable


def _read_port(raw: str | None, source: str, problems: list[str]) -> int | None:
    """An optional TCP port (0: any free one); None when not given."""
    raw = (raw or "").strip()
    if not raw:
        return None
    if not raw.isdecimal() or int(raw) > HIGHEST_PORT:
        problems.append(f"{source} must be a port number from 0 to {HIGHEST_PORT}")
        return None
    return int(raw)


def _is_remote_plain_http(value: str) -> bool:
    url = httpx.URL(value)
    return url.scheme == "http" and url.host not in LOOPBACK_HOSTS


def _is_http_url(value: str) -> bool:
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL:
        return False
    return url.scheme in {"http", "https"} and bool(url.host)
