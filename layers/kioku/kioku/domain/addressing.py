"""Is a gateway message addressed to the bot? The pure rules behind RelayFunction.

``parse_relay_body`` / ``parse_gateway_message`` validate what the relay forwards (never trust it,
even signed); ``decide_turn`` says whether the bot answers a message, and why.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache
from typing import Any, Final

from kioku.clock import InvalidTime, parse_time
from kioku.domain.channel_events import (
    GUILD_CREATE,
    ChannelEvent,
    ChannelEventType,
    GuildSnapshot,
    InvalidChannelEvent,
    parse_channel_event,
    parse_guild_create,
)
from kioku.domain.models import ServerConfig
from kioku.domain.text import USER_MENTION

MESSAGE_CREATE: Final = "MESSAGE_CREATE"
MESSAGE_TYPE_DEFAULT: Final = 0
MESSAGE_TYPE_REPLY: Final = 19
ANSWERABLE_MESSAGE_TYPES: Final = frozenset({MESSAGE_TYPE_DEFAULT, MESSAGE_TYPE_REPLY})
MESSAGE_REFERENCE_TYPE_DEFAULT: Final = 0
"""A reply; type 1 is a forward, which quotes the bot without talking to it."""

MAX_RELAY_BODY_BYTES: Final = 64 * 1024
MAX_GUILD_BODY_BYTES: Final = 1024 * 1024
"""A ``GUILD_CREATE`` lists every channel and active thread of a guild: 500 channels with a few
overwrites each come to about 150 KB even stripped to what privacy needs (Function URLs take 6 MB)."""
MAX_CONTENT_CHARS: Final = 4000
MAX_ATTACHMENTS: Final = 10
MAX_EMBEDS: Final = 10
MAX_MENTIONS: Final = 100
MAX_SNOWFLAKE_DIGITS: Final = 20


class InvalidRelayEvent(ValueError):
    """The relay sent something that is not a well-formed MESSAGE_CREATE; ``reason`` says what."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class GatewayMessage:
    """The fields the addressing rules need, validated; ``raw`` is the gateway's message object as sent."""

    message_id: str
    channel_id: str
    guild_id: str | None
    author_id: str
    author_is_bot: bool
    webhook_id: str | None
    application_id: str | None
    message_type: int
    content: str
    mentioned_user_ids: frozenset[str]
    referenced_author_id: str | None
    raw: Mapping[str, Any]
    mentioned_role_ids: frozenset[str] = frozenset()
    bot_role_ids: frozenset[str] = frozenset()
    """The bot's managed roles in this guild (``tags.bot_id`` is the bot), as the relay knows them from
    the gateway's guild and role dispatches; the envelope's ``bot_role_ids``."""

    @property
    def is_direct_message(self) -> bool:
        return self.guild_id is None


class TurnReason(StrEnum):
    DIRECT_MESSAGE = "direct_message"
    MENTIONED = "mentioned"
    REPLY_TO_BOT = "reply_to_bot"
    TRIGGER_WORD = "trigger_word"
    OWN_MESSAGE = "own_message"
    OTHER_BOT = "other_bot"
    UNSUPPORTED_MESSAGE_TYPE = "unsupported_message_type"
    NOT_ADDRESSED = "not_addressed"


@dataclass(frozen=True, slots=True)
class TurnDecision:
    answer: bool
    reason: TurnReason


def parse_relay_body(body: bytes) -> GatewayMessage | ChannelEvent | GuildSnapshot:
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
    is_guild = isinstance(payload, Mapping) and payload.get("t") == GUILD_CREATE
    if len(body) > MAX_RELAY_BODY_BYTES and not is_guild:
        raise InvalidRelayEvent(f"body is larger than {MAX_RELAY_BODY_BYTES} bytes")
    return parse_gateway_message(payload)


def parse_gateway_message(payload: Any) -> GatewayMessage | ChannelEvent | GuildSnapshot:
    """Validate ``{"t": "MESSAGE_CREATE", "d": {...}}``, a channel event (``CHANNEL_UPDATE``,
    ``CHANNEL_DELETE``, ``THREAD_UPDATE``, ``THREAD_DELETE``) or a ``GUILD_CREATE``; raises
    InvalidRelayEvent with the reason."""
    if not isinstance(payload, Mapping):
        raise InvalidRelayEvent("payload is not a JSON object")
    event_type = payload.get("t")
    if event_type == GUILD_CREATE:
        try:
            return parse_guild_create(payload.get("d"), payload.get("received_at"))
        except InvalidChannelEvent as exc:
            raise InvalidRelayEvent(exc.reason) from None
    if event_type == MESSAGE_CREATE:
        message = parse_message_object(payload.get("d"))
        bot_roles = payload.get("bot_role_ids", [])
        if not isinstance(bot_roles, list) or len(bot_roles) > MAX_MENTIONS:
            raise InvalidRelayEvent("bot_role_ids is not a short list")
        if not all(_is_snowflake(role) for role in bot_roles):
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
        f"event type must be {MESSAGE_CREATE}, {GUILD_CREATE} or one of {', '.join(ChannelEventType)}"
    )


def parse_message_object(data: Any) -> GatewayMessage:
    """Validate the gateway's message object (the ``d`` of a MESSAGE_CREATE)."""
    if not isinstance(data, Mapping):
        raise InvalidRelayEvent("d is not an object")
    author = _object(data, "author")
    content = data.get("content")
    if not isinstance(content, str):
        raise InvalidRelayEvent("content is not a string")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidRelayEvent(f"content is longer than {MAX_CONTENT_CHARS} characters")
    message_type = data.get("type")
    if not isinstance(message_type, int) or isinstance(message_type, bool):
        raise InvalidRelayEvent("type is not an integer")
    author_is_bot = author.get("bot", False)
    if not isinstance(author_is_bot, bool):
        raise InvalidRelayEvent("author.bot is not a boolean")
    try:
        parse_time(data.get("timestamp"))
    except InvalidTime:
        raise InvalidRelayEvent("timestamp is not an RFC 3339 time with an offset") from None
    _bounded_list(data, "attachments", MAX_ATTACHMENTS)
    _bounded_list(data, "embeds", MAX_EMBEDS)
    mentions = _bounded_list(data, "mentions", MAX_MENTIONS)
    mentioned_roles = _bounded_list(data, "mention_roles", MAX_MENTIONS)
    if not all(_is_snowflake(role) for role in mentioned_roles):
        raise InvalidRelayEvent("mention_roles[] is not a snowflake id string")
    referenced = _optional_object(data, "referenced_message")
    return GatewayMessage(
        message_id=_snowflake(data, "id"),
        channel_id=_snowflake(data, "channel_id"),
        guild_id=_optional_snowflake(data, "guild_id"),
        author_id=_snowflake(author, "id", "author.id"),
        author_is_bot=author_is_bot,
        webhook_id=_optional_snowflake(data, "webhook_id"),
        application_id=_optional_snowflake(data, "application_id"),
        message_type=message_type,
        content=content,
        mentioned_user_ids=_mentioned_user_ids(mentions),
        referenced_author_id=_replied_to_author(data, referenced),
        raw=data,
        mentioned_role_ids=frozenset(mentioned_roles),
    )


def decide_turn(
    message: GatewayMessage | Mapping[str, Any], *, bot_user_id: str, config: ServerConfig
) -> TurnDecision:
    """Answer or ignore, with the reason. ``message`` is a parsed message or the raw ``d`` object."""
    if not isinstance(message, GatewayMessage):
        message = parse_message_object(message)
    if bot_user_id in (message.author_id, message.application_id):
        return TurnDecision(False, TurnReason.OWN_MESSAGE)
    if message.message_type not in ANSWERABLE_MESSAGE_TYPES:
        return TurnDecision(False, TurnReason.UNSUPPORTED_MESSAGE_TYPE)
    if (message.author_is_bot or message.webhook_id) and not config.answer_other_bots:
        return TurnDecision(False, TurnReason.OTHER_BOT)
    if message.is_direct_message:
        return TurnDecision(True, TurnReason.DIRECT_MESSAGE)
    if bot_user_id in message.mentioned_user_ids or bot_user_id in USER_MENTION.findall(message.content):
        return TurnDecision(True, TurnReason.MENTIONED)
    if message.mentioned_role_ids & message.bot_role_ids:
        return TurnDecision(True, TurnReason.MENTIONED)
    if message.referenced_author_id == bot_user_id:
        return TurnDecision(True, TurnReason.REPLY_TO_BOT)
    if config.trigger_words and _trigger_pattern(config.trigger_words).search(_normalise(message.content)):
        return TurnDecision(True, TurnReason.TRIGGER_WORD)
    return TurnDecision(False, TurnReason.NOT_ADDRESSED)


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


def _replied_to_author(data: Mapping[str, Any], referenced: Mapping[str, Any] | None) -> str | None:
    reference = _optional_object(data, "message_reference") or {}
    if (
        referenced is None
        or reference.get("type", MESSAGE_REFERENCE_TYPE_DEFAULT) != MESSAGE_REFERENCE_TYPE_DEFAULT
    ):
        return None
    author = _object(referenced, "author", "referenced_message.author")
    return _snowflake(author, "id", "referenced_message.author.id")


def _mentioned_user_ids(mentions: list[Any]) -> frozenset[str]:
    ids = set()
    for mention in mentions:
        if not isinstance(mention, Mapping):
            raise InvalidRelayEvent("mentions[] is not an object")
        ids.add(_snowflake(mention, "id", "mentions[].id"))
    return frozenset(ids)


def _reject_constant(constant: str) -> None:
    raise InvalidRelayEvent(f"body contains the non-JSON constant {constant}")


def _is_snowflake(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_SNOWFLAKE_DIGITS
        and value.isascii()
        and value.isdigit()
    )


def _snowflake(data: Mapping[str, Any], key: str, name: str | None = None) -> str:
    value = data.get(key)
    if not _is_snowflake(value):
        raise InvalidRelayEvent(f"{name or key} is not a snowflake id string")
    return value


def _optional_snowflake(data: Mapping[str, Any], key: str) -> str | None:
    return None if data.get(key) is None else _snowflake(data, key)


def _object(data: Mapping[str, Any], key: str, name: str | None = None) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise InvalidRelayEvent(f"{name or key} is not an object")
    return value


def _optional_object(data: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    return None if data.get(key) is None else _object(data, key)


def _bounded_list(data: Mapping[str, Any], key: str, limit: int) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise InvalidRelayEvent(f"{key} is not a list")
    if len(value) > limit:
        raise InvalidRelayEvent(f"{key} has more than {limit} items")
    return value
