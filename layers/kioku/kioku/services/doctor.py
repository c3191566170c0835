"""``kioku doctor``: a deployed stack checked from outside, hop by hop, as Discord and the relay see it.

Each check answers ok, FAIL (with what to do) or skip (what it needs); the exit status is the number
of failures. Secrets come from the environment or the stack's secret, never from arguments.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final, Protocol, TextIO

import httpx

from kioku.discord.interactions import InteractionType, ResponseType
from kioku.discord.models import Message
from kioku.discord.protocol import ApplicationFlag, GatewayEvent, MessageType, Permission, permission_bits
from kioku.domain.conditions import DiscordRefused
from kioku.services.commands.registry import definitions
from kioku.signatures import new_key_pair, public_key_of, sign_request

DEFAULT_API_BASE_URL: Final = "https://discord.com/api/v10"
CHECKS: Final = {
    "interactions-ping": "the interactions URL answers, and refuses a PING it cannot verify with 401",
    "discord-public-key": "the application's Public Key and endpoint URL on Discord are the stack's",
    "relay-key": "RELAY_SIGNING_KEY matches RelayPublicKey and the relay URL accepts a message signed with it",
    "bot-token": "with DISCORD_BOT_TOKEN set (the relay host's): it is the bot token in the stack's secret",
    "commands": "the slash commands registered on Discord (globally, or in --guild) are the code's",
    "message-content-intent": "the application has the Message Content intent",
    "manage-webhooks": "kioku has Manage Webhooks in every server it is in (or --guild): personas post through them",
    "test-turn": "with --guild, --channel and RELAY_SIGNING_KEY: one real turn, answered within --timeout",
}
"""Every check, in the order a message travels (``examine``'s), as ``kioku doctor --help`` lists them."""
HTTP_ACCEPTED: Final = 202
HTTP_NO_CONTENT: Final = 204
HTTP_UNAUTHORIZED: Final = 401
MESSAGE_CONTENT_FLAGS: Final = (
    ApplicationFlag.GATEWAY_MESSAGE_CONTENT | ApplicationFlag.GATEWAY_MESSAGE_CONTENT_LIMITED
)
TEST_TURN_TEXT: Final = "kioku doctor: a test turn. Please answer with one short sentence."
HTTP_TIMEOUT_SECONDS: Final = 10.0
POLL_SECONDS: Final = 2.0


class Outcome(StrEnum):
    OK = "ok"
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    outcome: Outcome
    detail: str


@dataclass(frozen=True)
class Target:
    """What the doctor knows of the stack (its outputs and parameters) and the keys it may use."""

    interactions_url: str
    relay_url: str
    application_id: str
    discord_public_key: str
    relay_public_key: str
    bot_token: str
    api_base_url: str = DEFAULT_API_BASE_URL
    relay_signing_key: str | None = None
    discord_signing_key: str | None = None  # local stacks only: Discord keeps the real one
    secret_bot_token: str | None = None
    """The stack secret's token, read when ``bot_token`` came from the environment, to compare them."""
    guild_id: str | None = None
    channel_id: str | None = None
    timeout_seconds: float = 60.0
    pause: Callable[[float], None] = field(default=time.sleep, repr=False)


class DoctorDiscord(Protocol):
    """What the checks ask of Discord (``DiscordRest``); each call raises ``DiscordRefused``."""

    @property
    def GUILDS_PAGE(self) -> int: ...

    def get_current_application(self) -> dict[str, Any]: ...

    def get_current_user_guilds(self, after: str | None = None) -> list[dict[str, Any]]: ...

    def get_commands(self, application_id: str, guild_id: str | None = None) -> list[dict[str, Any]]: ...

    def create_message(self, channel_id: str, content: str) -> dict[str, Any]: ...

    def get_channel_messages(self, channel_id: str, limit: int, *, after: str | None) -> list[Message]: ...


def examine(target: Target) -> list[Finding]:
    """Every check, in the order a message travels (the doctor's composition: it builds the client)."""
    from kioku.adapters.discord_rest import DiscordRest

    rest = DiscordRest(target.api_base_url, target.bot_token)
    try:
        application = _application(rest)
        return [
            _interactions_ping(target),
            _discord_public_key(target, application),
            _relay_key(target),
            _bot_token(target),
            _commands(target, rest),
            _message_content_intent(application),
            _manage_webhooks(target, rest),
            _test_turn(target, rest, application),
        ]
    finally:
        rest.close()


def _application(rest: DoctorDiscord) -> dict[str, Any] | Finding:
    try:
        return rest.get_current_application()
    except DiscordRefused as exc:
        return Finding(
            "discord", Outcome.FAIL, f"GET /applications/@me failed ({exc}): is the bot token right?"
        )


def _interactions_ping(target: Target) -> Finding:
    name = "interactions-ping"
    body = json.dumps(
        {"type": InteractionType.PING, "id": "0", "application_id": target.application_id}
    ).encode()
    stranger, _ = new_key_pair()
    try:
        forged = _post(target.interactions_url, body, stranger)
        if forged.status_code != HTTP_UNAUTHORIZED:
            return Finding(
                name, Outcome.FAIL, f"a PING signed by a stranger got {forged.status_code}, not 401"
            )
        if target.discord_signing_key is None:
            return Finding(name, Outcome.OK, "reachable; refuses a PING Discord did not sign")
        signed = _post(target.interactions_url, body, target.discord_signing_key)
    except httpx.HTTPError as exc:
        return Finding(name, Outcome.FAIL, f"{target.interactions_url} unreachable ({type(exc).__name__})")
    if signed.status_code == 200 and _json(signed).get("type") == ResponseType.PONG:
        return Finding(name, Outcome.OK, "a signed PING gets PONG; a forged one 401")
    return Finding(
        name,
        Outcome.FAIL,
        f"a signed PING got {signed.status_code}: check DiscordPublicKey and the function's log",
    )


def _discord_public_key(target: Target, application: dict[str, Any] | Finding) -> Finding:
    name = "discord-public-key"
    if isinstance(application, Finding):
        return Finding(name, Outcome.FAIL, application.detail)
    if str(application.get("verify_key") or "").lower() != target.discord_public_key.lower():
        return Finding(
            name,
            Outcome.FAIL,
            "the stack's DiscordPublicKey is not this application's Public Key: Discord's PING will be "
            "refused and the endpoint URL cannot be saved; redeploy with the Public Key of General Information",
        )
    registered = application.get("interactions_endpoint_url")
    if registered != target.interactions_url:
        return Finding(
            name,
            Outcome.FAIL,
            f"the key matches, but Discord's Interactions Endpoint URL is {registered or 'unset'}: "
            f"paste {target.interactions_url}",
        )
    return Finding(name, Outcome.OK, "the application's Public Key and endpoint URL are the stack's")


def _relay_key(target: Target) -> Finding:
    name = "relay-key"
    if not target.relay_signing_key:
        return Finding(name, Outcome.SKIP, "set RELAY_SIGNING_KEY (the relay host's) to check it")
    try:
        derived = public_key_of(target.relay_signing_key)
    except ValueError:
        return Finding(name, Outcome.FAIL, "RELAY_SIGNING_KEY is not a hex 32-byte Ed25519 seed")
    if derived.lower() != target.relay_public_key.lower():
        return Finding(
            name,
            Outcome.FAIL,
            "RELAY_SIGNING_KEY is not the pair of the stack's RelayPublicKey: every relayed message gets 401",
        )
    # the bot's own message: verified and parsed, then passed over, so nothing is queued or stored
    own = _message_create(target, author={"id": target.application_id, "username": "kioku", "bot": True})
    try:
        answered = _post(target.relay_url, own, target.relay_signing_key)
    except httpx.HTTPError as exc:
        return Finding(name, Outcome.FAIL, f"{target.relay_url} unreachable ({type(exc).__name__})")
    if answered.status_code != HTTP_NO_CONTENT:
        return Finding(
            name, Outcome.FAIL, f"the relay URL answered {answered.status_code} to a signed message"
        )
    return Finding(name, Outcome.OK, "the signing key matches RelayPublicKey and the relay URL accepts it")


def _bot_token(target: Target) -> Finding:
    name = "bot-token"
    if target.secret_bot_token is None:
        return Finding(
            name,
            Outcome.SKIP,
            "run it where the relay runs, with its DISCORD_BOT_TOKEN, and --stack-name, to compare the two",
        )
    if target.secret_bot_token != target.bot_token:
        return Finding(
            name,
            Outcome.FAIL,
            "DISCORD_BOT_TOKEN here is not the one in the stack's secret: after a reset, put the new token "
            "in both (docs/operations.md, Rotating the bot token or the LLM key)",
        )
    return Finding(name, Outcome.OK, "DISCORD_BOT_TOKEN here is the stack secret's")


MAX_GUILD_PAGES: Final = 10
"""Pages of 200 servers the webhook check reads; a bot in more is checked on its first 2,000."""
LISTED_GUILDS: Final = 5


def _manage_webhooks(target: Target, rest: DoctorDiscord) -> Finding:
    name = "manage-webhooks"
    guilds: list[dict[str, Any]] = []
    try:
        for _ in range(MAX_GUILD_PAGES):
            page = rest.get_current_user_guilds(after=guilds[-1]["id"] if guilds else None)
            guilds += page
            if len(page) < rest.GUILDS_PAGE:
                break
    except DiscordRefused as exc:
        return Finding(name, Outcome.FAIL, f"could not list kioku's servers ({exc})")
    if target.guild_id:
        guilds = [guild for guild in guilds if guild.get("id") == target.guild_id]
        if not guilds:
            return Finding(name, Outcome.FAIL, f"kioku is not in server {target.guild_id}: add it first")
    granted = Permission.MANAGE_WEBHOOKS | Permission.ADMINISTRATOR
    lacking = [g for g in guilds if not (permission_bits(g.get("permissions")) or 0) & granted]
    if not lacking:
        return Finding(name, Outcome.OK, f"in all {len(guilds)} of kioku's servers checked")
    named = ", ".join(f"{g.get('name')} ({g.get('id')})" for g in lacking[:LISTED_GUILDS])
    more = f" and {len(lacking) - LISTED_GUILDS} more" if len(lacking) > LISTED_GUILDS else ""
    return Finding(
        name,
        Outcome.FAIL,
        f"no Manage Webhooks in {named}{more}: alter personas cannot speak there. Give kioku's role "
        "Manage Webhooks, or add the bot again with the link `kioku register-commands` prints",
    )


def _commands(target: Target, rest: DoctorDiscord) -> Finding:
    name = "commands"
    try:
        registered = rest.get_commands(target.application_id, guild_id=target.guild_id)
    except DiscordRefused as exc:
        return Finding(name, Outcome.FAIL, f"could not list the commands ({exc})")
    expected = {command["name"]: _shape(command) for command in definitions()}
    found: dict[Any, Any] = {command.get("name"): _shape(command) for command in registered}  # Discord's JSON
    where = f"in guild {target.guild_id}" if target.guild_id else "globally"
    if found == expected:
        return Finding(
            name, Outcome.OK, f"{len(found)} commands registered {where}, as the code defines them"
        )
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    changed = sorted(n for n in set(expected) & set(found) if expected[n] != found[n])
    return Finding(
        name,
        Outcome.FAIL,
        f"registered {where} differ from the code (missing {missing}, extra {extra}, changed {changed}): "
        "run kioku register-commands",
    )


def _shape(command: dict[str, Any]) -> tuple:
    """What the router depends on: names, types and the option tree, not Discord's ids or versions."""
    options = command.get("options") or []
    return (
        command.get("name"),
        command.get("type", 1),
        tuple(sorted((_shape(option) for option in options), key=repr)),
    )


def _message_content_intent(application: dict[str, Any] | Finding) -> Finding:
    name = "message-content-intent"
    if isinstance(application, Finding):
        return Finding(name, Outcome.FAIL, application.detail)
    if int(application.get("flags") or 0) & MESSAGE_CONTENT_FLAGS:
        return Finding(name, Outcome.OK, "the Message Content intent is on")
    return Finding(
        name,
        Outcome.FAIL,
        "the Message Content intent is off: the relay gets messages without text; enable it under Bot",
    )


def _test_turn(target: Target, rest: DoctorDiscord, application: dict[str, Any] | Finding) -> Finding:
    name = "test-turn"
    if not (target.channel_id and target.guild_id and target.relay_signing_key):
        return Finding(name, Outcome.SKIP, "needs --guild, --channel and RELAY_SIGNING_KEY")
    if isinstance(application, Finding) or not application.get("owner"):
        return Finding(name, Outcome.SKIP, "the application has no owner to send the test turn as")
    try:
        # a real message to reply to, relayed as if its owner had written it to the bot
        posted = rest.create_message(target.channel_id, TEST_TURN_TEXT)
        owner = application["owner"]
        relayed = _message_create(target, author=owner, message=posted, mention_bot=True)
        answered = _post(target.relay_url, relayed, target.relay_signing_key)
        if answered.status_code != HTTP_ACCEPTED:
            return Finding(
                name, Outcome.FAIL, f"RelayFunction answered {answered.status_code}, not 202 (queued)"
            )
        for _ in _polls(target):
            for message in rest.get_channel_messages(target.channel_id, 50, after=posted["id"]):
                replied_to = message.reference.message_id if message.reference else None
                if replied_to == posted["id"] and message.author.id == target.application_id:
                    return Finding(name, Outcome.OK, f"answered: {message.content[:80]!r}")
    except (DiscordRefused, httpx.HTTPError) as exc:
        return Finding(name, Outcome.FAIL, f"the test turn could not run ({exc})")
    return Finding(
        name,
        Outcome.FAIL,
        f"no reply within {target.timeout_seconds:g} s: see the turn log group and the dead-letter queue",
    )


def _polls(target: Target) -> Iterator[None]:
    deadline = time.monotonic() + target.timeout_seconds
    while True:
        yield
        if time.monotonic() >= deadline:
            return
        target.pause(POLL_SECONDS)


def _message_create(
    target: Target,
    *,
    author: dict[str, Any],
    message: dict[str, Any] | None = None,
    mention_bot: bool = False,
) -> bytes:
    data = {
        "id": str(time.time_ns() // 1000),
        "channel_id": target.channel_id or "0",
        "type": MessageType.DEFAULT,
        "content": TEST_TURN_TEXT,
        "timestamp": datetime.now(UTC).isoformat(),
        "attachments": [],
        "embeds": [],
        "mentions": [],
        "mention_roles": [],
        **(message or {}),
    }
    data["author"] = dict(author)
    if mention_bot:
        data["content"] = f"<@{target.application_id}> {TEST_TURN_TEXT}"
        data["mentions"] = [{"id": target.application_id, "username": "kioku", "bot": True}]
    data.pop("referenced_message", None)
    data.pop("message_reference", None)
    if target.guild_id:
        data["guild_id"] = target.guild_id
        data["member"] = {"nick": None, "roles": []}
    return json.dumps({"t": GatewayEvent.MESSAGE_CREATE, "d": data}, separators=(",", ":")).encode()


def _post(url: str, body: bytes, signing_key: str) -> httpx.Response:
    headers = {"content-type": "application/json", **sign_request(signing_key, body)}
    return httpx.post(url, content=body, headers=headers, timeout=HTTP_TIMEOUT_SECONDS)


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def report(findings: list[Finding], out: TextIO | None = None) -> int:
    """Print one line per check; the number of failures."""
    for finding in findings:
        print(f"{finding.outcome.value:<4} {finding.check}: {finding.detail}", file=out or sys.stdout)
    return sum(finding.outcome is Outcome.FAIL for finding in findings)
