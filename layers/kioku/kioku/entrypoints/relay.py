"""RelayFunction: messages forwarded by the gateway relay, verified, addressed, queued; channel
events applied to stored memory; a guild's channel list (GUILD_CREATE) reconciled with it; a guild
that removed the bot (GUILD_DELETE) scheduled for deletion, the schedule taken back by its next
GUILD_CREATE.

202 queued, 204 not for the bot (or a channel event applied), 400 malformed, 401 not signed by the
relay, 503 when the queue or the table cannot be reached (the relay retries).
"""

from __future__ import annotations

from typing import Any

from kioku import clock
from kioku.config import Settings, get_settings
from kioku.domain.addressing import (
    MAIN_PERSONA_TURN,
    MAX_GUILD_BODY_BYTES,
    GatewayMessage,
    InvalidRelayEvent,
    RelayEvent,
    decide_turn,
    needs_server_config,
    parse_relay_body,
)
from kioku.domain.channel_events import ChannelEvent, GuildRemoval, GuildSnapshot
from kioku.domain.models import ServerConfig
from kioku.entrypoints.composition import container
from kioku.entrypoints.function_url import empty_response, error_response, json_response
from kioku.entrypoints.signed_endpoint import handle_signed
from kioku.observability import Metric, correlate, count, invocation, logger
from kioku.public_keys import public_key_from_env


def handle(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """Answer one Function URL event; never raises."""
    with invocation(context):
        response = handle_signed(
            event,
            lambda: public_key_from_env("RELAY_PUBLIC_KEY"),
            _answer,
            max_body_bytes=MAX_GUILD_BODY_BYTES,  # parse_relay_body holds other events to less
        )
        if response["statusCode"] in (400, 401):
            count(Metric.RELAY_REJECTED)
        return response


def _answer(body: bytes) -> dict[str, Any]:
    settings = get_settings()
    event: RelayEvent | None = None
    try:
        event = parse_relay_body(body)
        return _route(event, settings)
    except Exception as exc:
        response = _error_response(exc, event)
        if response is None:
            raise  # handle_signed logs it and answers 500
        return response


def _error_response(exc: Exception, event: RelayEvent | None) -> dict[str, Any] | None:
    """The relay endpoint's one map from what stopped a request to its HTTP answer: 400 for an
    event it cannot take, 503 (the relay retries) for a queue or table out of reach; None for
    anything else. ``event``: the request's, once parsed."""
    from kioku.adapters.dynamodb.errors import StoreError
    from kioku.domain.turn_jobs import InvalidTurnJob, QueueUnavailable

    if isinstance(exc, InvalidRelayEvent):
        return error_response(400, f"invalid relay event: {exc.reason}")
    if isinstance(exc, InvalidTurnJob):
        return error_response(400, f"invalid relay event: {exc}")
    if isinstance(exc, QueueUnavailable) and isinstance(event, GatewayMessage):
        logger.exception("could not queue message %s", event.message.id)
        return error_response(503, "could not queue the turn; retry")
    if isinstance(exc, StoreError) and isinstance(event, ChannelEvent):
        logger.exception("could not apply %s for channel %s", event.kind, event.channel_id)
        return error_response(503, "could not apply the channel event; retry")
    if isinstance(exc, StoreError) and isinstance(event, GuildSnapshot):
        logger.exception("could not reconcile guild %s", event.guild_id)
        return error_response(503, "could not reconcile the guild's memory; retry")
    if isinstance(exc, StoreError) and isinstance(event, GuildRemoval):
        logger.exception("could not schedule the deletion of guild %s", event.guild_id)
        return error_response(503, "could not schedule the guild's deletion; retry")
    return None


def _route(event: RelayEvent, settings: Settings) -> dict[str, Any]:
    if isinstance(event, ChannelEvent):
        correlate(channel_id=event.channel_id, guild_id=event.guild_id)
        count(Metric.RELAY_CHANNEL_EVENTS)
        return _apply_channel_event(event)
    if isinstance(event, GuildSnapshot):
        correlate(guild_id=event.guild_id)
        return _reconcile_guild(event)
    if isinstance(event, GuildRemoval):
        correlate(guild_id=event.guild_id)
        return _schedule_removal(event)
    message = event.message
    correlate(message_id=message.id, channel_id=message.channel_id, guild_id=message.guild_id)

    bot_user_id = settings.DISCORD_APPLICATION_ID
    config = ServerConfig(guild_id=message.guild_id)
    decision = decide_turn(event, bot_user_id=bot_user_id, config=config)
    if message.guild_id is not None and needs_server_config(event, decision):
        config = container().config_store.get_server_config(message.guild_id)
        decision = decide_turn(event, bot_user_id=bot_user_id, config=config)
    if not decision.answer:
        count(Metric.RELAY_IGNORED)
        return empty_response(204)

    from kioku.domain.turn_jobs import TurnJob

    # one turn per persona addressed, in the order named: the channel's FIFO group keeps it
    always = message.channel_id in config.always_channels  # known when the configuration was read
    for cue in _persona_cues(config, decision.personas):
        container().turn_queue.enqueue(TurnJob.from_message(message, cue, always=always).fitted())
    count(Metric.RELAY_QUEUED)
    return json_response(202, {"status": "queued", "reason": decision.reason.value})


def _persona_cues(config: ServerConfig, personas: tuple[str, ...]) -> list[Any]:
    """The persona each turn speaks as: None for the main persona (its turn is the plain one)."""
    from kioku.domain.turn_jobs import PersonaCue

    cues: list[PersonaCue | None] = []
    for persona_id in personas or (MAIN_PERSONA_TURN,):
        persona = config.persona_by_id(persona_id) if persona_id != MAIN_PERSONA_TURN else None
        cues.append(
            None if persona is None else PersonaCue(persona.persona_id, persona.lineage_id, persona.name)
        )
    return cues


def _apply_channel_event(event: ChannelEvent) -> dict[str, Any]:
    from kioku.services.channel_events import apply_channel_event

    apply_channel_event(event, container().stm_store, container().webhook_store)
    return empty_response(204)


def _reconcile_guild(snapshot: GuildSnapshot) -> dict[str, Any]:
    from kioku.services.channel_events import reconcile_guild

    now = clock.now()
    if container().server_removals.cancel(snapshot.guild_id, min(snapshot.taken_at or now, now)):
        logger.info("guild %s added back: its scheduled deletion is cancelled", snapshot.guild_id)
    report = reconcile_guild(snapshot, container().stm_store, container().webhook_store)
    count(Metric.RELAY_GUILDS_RECONCILED)
    count(Metric.STM_ROWS_RECONCILED, report.restamped + report.deleted)
    return empty_response(204)


def _schedule_removal(removal: GuildRemoval) -> dict[str, Any]:
    """Kioku was removed from the guild: its data is deleted after the grace, unless added back. An
    outage (``unavailable``) removes nothing."""
    if removal.outage:
        return empty_response(204)
    now = clock.now()
    if container().server_removals.schedule(removal.guild_id, min(removal.taken_at or now, now)):
        logger.info("guild %s removed kioku: its data is deleted after the grace", removal.guild_id)
    return empty_response(204)
