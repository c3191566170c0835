"""Is a gateway message addressed to the bot? The pure rules behind RelayFunction.

``parse_relay_body`` / ``parse_gateway_message`` validate what the relay forwards (never trust it,
even signed); ``decide_turn`` says whether the bot answers a message, and why.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache
from typing import Any, Final

from kioku.discord.models import MalformedMessage, Message, parse_message
from kioku.discord.protocol import ChannelType, GatewayEvent, MessageReferenceType, MessageType
from kioku.discord.snowflake import is_snowflake
from kioku.domain.channel_events import (
    ChannelEvent,
    ChannelEventType,
    GuildRemoval,
    GuildSnapshot,
    InvalidChannelEvent,
    parse_channel_event,
    parse_guild_create,
    parse_guild_delete,
)
from kioku.domain.models import ServerConfig
from kioku.domain.text import USER_MENTION

ANSWERABLE_MESSAGE_TYPES: Final = frozenset({MessageType.DEFAULT, MessageType.REPLY})

MAX_RELAY_BODY_BYTES: Final = 64 * 1024
MAX_GUILD_BODY_BYTES: Final = 1024 * 1024
"""A ``GUILD_CREATE`` lists every channel and active thread of a guild: 500 channels with a few
overwrites each come to about 150 KB even stripped to what privacy needs (Function URLs take 6 MB)."""
MAX_BOT_ROLES: Final = 100
LEADING_MENTIONS: Final = re.compile(r"^(?:\s*<@[!&]?\d+>[\s,:]*)+")
"""The user and role mentions a message opens with, and what separates them from its text."""
CALL_BY_NAME: Final = re.compile(r"^[^\s,:;!?.]+(?:\s+[^\s,:;!?.]+){0,3}\s*[,:]")
"""A text opening with a name of up to four words and a comma or colon: "Luna, …", "Big Sol: …"."""


class InvalidRelayEvent(ValueError):
    """The relay sent something that is not a well-formed MESSAGE_CREATE; ``reason`` says what."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class GatewayMessage:
    """A ``MESSAGE_CREATE`` as the relay forwards it: the message, validated, and what the envelope adds."""

    message: Message
    bot_role_ids: frozenset[str] = frozenset()
    """The bot's managed roles in this guild (``tags.bot_id`` is the bot), as the relay knows them from
    the gateway's guild and role dispatches; the envelope's ``bot_role_ids``."""


class TurnReason(StrEnum):
    DIRECT_MESSAGE = "direct_message"
    MENTIONED = "mentioned"
    REPLY_TO_BOT = "reply_to_bot"
    TRIGGER_WORD = "trigger_word"
    ALWAYS_CHANNEL = "always_channel"
    """A member's message in a channel where kioku answers every message (``always_channels``)."""
    OWN_MESSAGE = "own_message"
    OTHER_BOT = "other_bot"
    UNSUPPORTED_MESSAGE_TYPE = "unsupported_message_type"
    NOT_ADDRESSED = "not_addressed"
    NOT_A_DIRECT_MESSAGE = "not_a_direct_message"
    """No server, and not the bot's DM (a group DM, or a channel the gateway did not name): what
    kioku recalls there belongs to one person, so it is never answered as theirs."""


@dataclass(frozen=True, slots=True)
class TurnDecision:
    answer: bool
    reason: TurnReason
    personas: tuple[str, ...] = ()
    """The alter personas addressed, in the order named, each answering in a turn of its own; the
    main persona is ``MAIN_PERSONA_TURN`` among them. Empty with ``answer``: the main persona alone."""


MAIN_PERSONA_TURN: Final = ""
"""The main persona's place in ``TurnDecision.personas``: its turn is the message's plain turn."""


RelayEvent = GatewayMessage | ChannelEvent | GuildSnapshot | GuildRemoval
"""Whatever the relay forwards, validated."""


def parse_relay_body(body: bytes) -> RelayEvent:
    """Validate the raw body of a relay request (size, UTF-8, JSON, shape): a ``GUILD_CREATE`` may
    take up to ``MAX_GUILD_BODY_BYTES``, anything else ``MAX_RELAY_BODY_BYTES``."""
    if len(body) > MAX_GUILD_BODY_BYTES:
        raise InvalidRelayEvent(f"body is larger than {MAX_GUILD_BODY_BYTES} bytes")
    try:
        payload = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise InvalidRelayEvent("body is not UTF-8") from None
    except (json.JSONDecodeError, RecursionError):
        raise InvalidRelayEvent("body is not valid JSON") from None
    is_guild = isinstance(payload, Mapping) and payload.get("t") == GatewayEvent.GUILD_CREATE
    if len(body) > MAX_RELAY_BODY_BYTES and not is_guild:
        raise InvalidRelayEvent(f"body is larger than {MAX_RELAY_BODY_BYTES} bytes")
    return parse_gateway_message(payload)


def parse_gateway_message(payload: Any) -> RelayEvent:
    """Validate ``{"t": "MESSAGE_CREATE", "d": {...}}``, a channel event (``CHANNEL_UPDATE``,
    ``CHANNEL_DELETE``, ``THREAD_UPDATE``, ``THREAD_DELETE``), a ``GUILD_CREATE`` or a
    ``GUILD_DELETE``; raises InvalidRelayEvent with the reason."""
    if not isinstance(payload, Mapping):
        raise InvalidRelayEvent("payload is not a JSON object")
    event_type = payload.get("t")
    guild_parsers: dict[str, Callable[[Any, Any], RelayEvent]] = {
        GatewayEvent.GUILD_CREATE: parse_guild_create,
        GatewayEvent.GUILD_DELETE: parse_guild_delete,
    }
    if isinstance(event_type, str) and event_type in guild_parsers:
        try:
            return guild_parsers[event_type](payload.get("d"), payload.get("received_at"))
        except InvalidChannelEvent as exc:
            raise InvalidRelayEvent(exc.reason) from None
    if event_type == GatewayEvent.MESSAGE_CREATE:
        message = parse_message_object(payload.get("d"))
        bot_roles = payload.get("bot_role_ids", [])
        if not isinstance(bot_roles, list) or len(bot_roles) > MAX_BOT_ROLES:
            raise InvalidRelayEvent("bot_role_ids is not a short list")
        if not all(is_snowflake(role) for role in bot_roles):
            raise InvalidRelayEvent("bot_role_ids[] is not a snowflake id string")
        return replace(message, bot_role_ids=frozenset(bot_roles))
    if isinstance(event_type, str) and event_type in ChannelEventType.__members__:
        try:
            return parse_channel_event(
                ChannelEventType(event_type), payload.get("d"), payload.get("received_at")
            )
        except InvalidChannelEvent as exc:
            raise InvalidRelayEvent(exc.reason) from None
    raise InvalidRelayEvent(
        f"event type must be {GatewayEvent.MESSAGE_CREATE}, {GatewayEvent.GUILD_CREATE}, "
        f"{GatewayEvent.GUILD_DELETE} or one of {', '.join(ChannelEventType)}"
    )


def parse_message_object(data: Any) -> GatewayMessage:
    """Validate the gateway's message object (the ``d`` of a MESSAGE_CREATE)."""
    if not isinstance(data, Mapping):
        raise InvalidRelayEvent("d is not an object")
    try:
        return GatewayMessage(parse_message(data))
    except MalformedMessage as exc:
        raise InvalidRelayEvent(exc.reason) from None


def decide_turn(message: GatewayMessage, *, bot_user_id: str, config: ServerConfig) -> TurnDecision:
    """Answer or ignore, with the reason."""
    return _decide(message.message, message.bot_role_ids, bot_user_id, config)


def _decide(
    message: Message, bot_role_ids: frozenset[str], bot_user_id: str, config: ServerConfig
) -> TurnDecision:
    author = message.author
    if bot_user_id in (author.id, message.application_id):
        return TurnDecision(False, TurnReason.OWN_MESSAGE)
    if message.type not in ANSWERABLE_MESSAGE_TYPES:
        return TurnDecision(False, TurnReason.UNSUPPORTED_MESSAGE_TYPE)
    if (author.bot or message.webhook_id) and not config.answer_other_bots:
        return TurnDecision(False, TurnReason.OTHER_BOT)
    if message.guild_id is None:
        if message.channel_type != ChannelType.DM:
            return TurnDecision(False, TurnReason.NOT_A_DIRECT_MESSAGE)
        return TurnDecision(True, TurnReason.DIRECT_MESSAGE)
    mentioned = {mention.user.id for mention in message.mentions}
    if (
        bot_user_id in mentioned
        or bot_user_id in USER_MENTION.findall(message.content)
        or bot_role_ids.intersection(message.mention_roles)
    ):
        return TurnDecision(True, TurnReason.MENTIONED, _mentioned_persona(message, config))
    if _replied_to_author(message) == bot_user_id:
        return TurnDecision(True, TurnReason.REPLY_TO_BOT)
    if not config.alters:
        if config.trigger_words and _trigger_pattern(config.trigger_words).search(
            _normalise(message.content)
        ):
            return TurnDecision(True, TurnReason.TRIGGER_WORD)
        return _always_or_not(message, config)
    addressed = _addressed_personas(message, bot_user_id, config)
    if not addressed:
        return _always_or_not(message, config)
    return TurnDecision(True, TurnReason.TRIGGER_WORD, addressed)


def needs_server_config(message: GatewayMessage, decision: TurnDecision) -> bool:
    """Whether the server's configuration could change ``decision``, made without it: its trigger
    words, ``always`` channels and other bots for a message not addressed, and for a mention only
    one whose text opens as a call by name ("@kioku Luna, …"), so that a plain mention, the most
    common turn, reads nothing."""
    if message.message.guild_id is None:
        return False
    if decision.reason is TurnReason.MENTIONED:
        return bool(CALL_BY_NAME.match(LEADING_MENTIONS.sub("", message.message.content)))
    return decision.reason in (TurnReason.NOT_ADDRESSED, TurnReason.OTHER_BOT)


def _mentioned_persona(message: Message, config: ServerConfig) -> tuple[str, ...]:
    """Who answers a mention of kioku: the alter persona whose name opens the rest of the text as
    a call ("@kioku Luna, …", "@kioku Luna: …"), else the main one (empty)."""
    from kioku.domain.personas import name_opens

    rest = LEADING_MENTIONS.sub("", message.content)
    if not CALL_BY_NAME.match(rest):
        return ()
    for persona in config.alters:
        if name_opens(rest, persona.name):
            return (persona.persona_id,)
    return ()


def _always_or_not(message: Message, config: ServerConfig) -> TurnDecision:
    """An unaddressed message is a turn only in an ``always`` channel, and only a member's."""
    if message.channel_id not in config.always_channels or message.author.bot or message.webhook_id:
        return TurnDecision(False, TurnReason.NOT_ADDRESSED)
    return TurnDecision(True, TurnReason.ALWAYS_CHANNEL, _channel_persona(message, config))


def _channel_persona(message: Message, config: ServerConfig) -> tuple[str, ...]:
    """The alter persona an ``always`` channel is given, if it still exists; else the main one."""
    persona_id = config.always_channels.get(message.channel_id or "")
    if persona_id and any(persona.persona_id == persona_id for persona in config.alters):
        return (persona_id,)
    return ()


def _addressed_personas(message: Message, bot_user_id: str, config: ServerConfig) -> tuple[str, ...]:
    """Every persona the message calls, in the order named: a reply to an alter persona's message
    first, then by where its trigger word (the main persona's are the server's) or, for an alter
    persona, its name opening the message stands."""
    from kioku.domain.personas import name_opens, ordered_unique, persona_of_message

    text = _normalise(message.content)
    named = []
    quoted = _replied_message(message)
    if quoted is not None:
        persona = persona_of_message(quoted, bot_user_id, config)
        if persona is not None:
            named.append((-1, persona))
    for persona in config.personas:
        words = persona.trigger_words if persona.alter else config.trigger_words
        found = _trigger_pattern(tuple(words)).search(text) if words else None
        if found:
            named.append((found.start(), persona))
        if persona.alter and name_opens(message.content, persona.name):
            named.append((0, persona))
    return tuple(
        persona.persona_id if persona.alter else MAIN_PERSONA_TURN for persona in ordered_unique(named)
    )


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@lru_cache(maxsize=256)
def _trigger_pattern(trigger_words: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for all trigger words: whole words, case- and width-insensitive, any spacing."""
    alternatives = [
        r"\s+".join(re.escape(part) for part in _normalise(word).split())
        for word in trigger_words
        if word.strip()
    ]
    if not alternatives:
        return re.compile(r"(?!)")
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)")


def _replied_to_author(message: Message) -> str | None:
    """Whom the message replies to; a forward quotes a message without talking to its author."""
    quoted = _replied_message(message)
    return None if quoted is None else quoted.author.id


def _replied_message(message: Message) -> Message | None:
    reference_type = message.reference.type if message.reference else MessageReferenceType.DEFAULT
    if message.referenced_message is None or reference_type != MessageReferenceType.DEFAULT:
        return None
    return message.referenced_message


def _reject_constant(constant: str) -> None:
    raise InvalidRelayEvent(f"body contains the non-JSON constant {constant}")
