"""The Discord side of the relay, on hikari: the only module of kioku that imports hikari.

hikari's ``ShardPayloadEvent`` carries each dispatch as the raw JSON object Discord sent, which is
exactly what RelayFunction takes; with the cache off and no typed listeners, hikari never builds
message objects at all.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

import hikari

from kioku.relay.forwarder import Forwarder
from kioku.relay.health import RelayHealth
from kioku.relay.sharding import ShardingError, ShardPlan

RELAY_INTENTS: Final = (
    hikari.Intents.GUILDS  # CHANNEL_* and THREAD_* dispatches
    | hikari.Intents.GUILD_MESSAGES
    | hikari.Intents.DM_MESSAGES
    | hikari.Intents.MESSAGE_CONTENT
)

_CloseCode = hikari.errors.ShardCloseCode
PERMANENT_CLOSE_CODES: Final[dict[int, str]] = {
    _CloseCode.AUTHENTICATION_FAILED: "Discord rejected DISCORD_BOT_TOKEN (gateway close 4004: authentication failed)",
    _CloseCode.INVALID_SHARD: "Discord refused the shard (gateway close 4010: invalid shard)",
    _CloseCode.SHARDING_REQUIRED: (
        "Discord requires more shards than the relay opened (gateway close 4011: sharding required)"
    ),
    _CloseCode.INVALID_VERSION: "Discord refused the gateway version (gateway close 4012: invalid API version)",
    _CloseCode.INVALID_INTENT: "Discord refused the relay's intents (gateway close 4013: invalid intents)",
    _CloseCode.DISALLOWED_INTENT: (
        "Discord refused the Message Content intent (gateway close 4014: disallowed intents): "
        "enable it for the bot in the Developer Portal"
    ),
}
"""Gateway close codes after which reconnecting with the same settings cannot succeed."""

logger = logging.getLogger("kioku.relay")


def build_bot(
    token: str, forwarder: Forwarder, *, rest_url: str, health: RelayHealth | None = None
) -> hikari.GatewayBot:
    """A stateless gateway client that hands every dispatch to ``forwarder`` and drains it on shutdown,
    reporting each shard's session to ``health``.

    ``rest_url`` is Discord's REST base; hikari takes the gateway URL from its ``GET /gateway/bot``.
    """
    bot = hikari.GatewayBot(
        token,
        intents=RELAY_INTENTS,
        rest_url=rest_url,
        cache_settings=hikari.impl.CacheSettings(components=hikari.api.CacheComponents.NONE),
        auto_chunk_members=False,
        banner=None,
        logs=None,
        # The relay does no CPU work worth -O; the warning would only alarm operators.
        suppress_optimization_warning=True,
    )
    delivery: set[asyncio.Task[None]] = set()

    async def start_forwarding(_: hikari.StartingEvent) -> None:
        delivery.add(asyncio.create_task(forwarder.run(), name="kioku-relay-forwarder"))

    async def forward(event: hikari.ShardPayloadEvent) -> None:
        forwarder.submit(event.name, event.payload)

    async def drain(_: hikari.StoppedEvent) -> None:
        await forwarder.stop()
        await asyncio.gather(*delivery)

    bot.subscribe(hikari.StartingEvent, start_forwarding)
    bot.subscribe(hikari.ShardPayloadEvent, forward)
    bot.subscribe(hikari.StoppedEvent, drain)
    if health is not None:
        # hikari's connected and disconnected events bracket a session: after READY or RESUMED, until
        # the websocket closes. They carry the shard, never a payload to build objects from.
        async def connected(event: hikari.ShardConnectedEvent) -> None:
            health.shard_connected(event.shard.id, event.shard.shard_count)

        async def disconnected(event: hikari.ShardDisconnectedEvent) -> None:
            health.shard_disconnected(event.shard.id)

        bot.subscribe(hikari.ShardConnectedEvent, connected)
        bot.subscribe(hikari.ShardDisconnectedEvent, disconnected)
    return bot


class GatewayUnavailable(RuntimeError):
    """The relay could not run: Discord refused it or could not be reached; the message says why.

    ``permanent`` when retrying with the same settings cannot help (a bad token, a missing intent).
    """

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class ShardMismatch(ShardingError):
    """The shard ids do not fit the shard count Discord recommends (``--shard-count auto``)."""


def run_gateway(
    token: str,
    forwarder: Forwarder,
    *,
    rest_url: str,
    shards: ShardPlan | None = None,
    health: RelayHealth | None = None,
) -> None:
    """Connect the shards of ``shards`` and relay until SIGINT/SIGTERM; the forwarder drains after the
    gateway closes."""
    try:
        bot = build_bot(token, forwarder, rest_url=rest_url, health=health)
    except ValueError:
        raise GatewayUnavailable(
            "DISCORD_BOT_TOKEN is not shaped like a Discord bot token", permanent=True
        ) from None
    try:
        shards = shards or ShardPlan()
        shard_ids, shard_count = shards.ids, shards.count
        if shards.needs_recommended_count:
            recommended = asyncio.run(fetch_recommended_shard_count(token, rest_url=rest_url))
            try:
                shard_ids, shard_count = shards.resolve(recommended)
            except ShardingError as exc:
                raise ShardMismatch(str(exc)) from None
            logger.info("Discord recommends %d shard(s); this process opens %s", shard_count, shard_ids)
        bot.run(check_for_updates=False, shard_ids=shard_ids, shard_count=shard_count)
    except hikari.errors.UnauthorizedError:
        raise GatewayUnavailable(
            "Discord rejected DISCORD_BOT_TOKEN (401 Unauthorized)", permanent=True
        ) from None
    except hikari.errors.GatewayServerClosedConnectionError as exc:
        if exc.code in PERMANENT_CLOSE_CODES:
            raise GatewayUnavailable(PERMANENT_CLOSE_CODES[exc.code], permanent=True) from None
        raise GatewayUnavailable(f"the gateway closed the connection: {exc}", permanent=False) from None
    except hikari.errors.HTTPError as exc:
        raise GatewayUnavailable(f"cannot reach Discord: {exc}", permanent=False) from None


async def fetch_recommended_shard_count(token: str, *, rest_url: str) -> int:
    """Discord's recommended shard count (``GET /gateway/bot``: ``shards``), through hikari's REST
    client, so rate limits and errors are handled as for the bot's own lookup."""
    rest_app = hikari.RESTApp(url=rest_url)
    await rest_app.start()
    try:
        async with rest_app.acquire(token, hikari.TokenType.BOT) as rest:
            return (await rest.fetch_gateway_bot_info()).shard_count
    finally:
        await rest_app.close()
