"""The rules that decide whether the bot answers a gateway message, and the relay payload validation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kioku.discord.models import MAX_ATTACHMENTS, MAX_CONTENT_CHARS, MAX_EMBEDS, MAX_MENTIONS, parse_message
from kioku.discord.protocol import ChannelType, MessageType
from kioku.domain.addressing import (
    MAX_RELAY_BODY_BYTES,
    GatewayMessage,
    InvalidRelayEvent,
    TurnReason,
    decide_turn,
    parse_gateway_message,
    parse_message_object,
    parse_relay_body,
)
from kioku.domain.models import ServerConfig

BOT_ID = "100000000000000001"
USER_ID = "200000000000000002"
OTHER_BOT_ID = "300000000000000003"
GUILD_ID = "400000000000000004"
CHANNEL_ID = "500000000000000005"
MESSAGE_ID = "600000000000000006"
WEBHOOK_ID = "700000000000000007"

MESSAGE_TYPE_THREAD_CREATED = 18
MESSAGE_TYPE_GUILD_MEMBER_JOIN = 7
MESSAGE_REFERENCE_TYPE_FORWARD = 1


def guild_message(content: str = "hello there", **overrides: Any) -> dict[str, Any]:
    """A MESSAGE_CREATE ``d`` object as the gateway sends it in a guild text channel."""
    message: dict[str, Any] = {
        "id": MESSAGE_ID,
        "channel_id": CHANNEL_ID,
        "guild_id": GUILD_ID,
        "type": 0,
        "content": content,
        "timestamp": "2026-11-30T01:00:00.000000+00:00",
        "author": {"id": USER_ID, "username": "alice", "global_name": "Alice"},
        "member": {"nick": None, "roles": []},
        "mentions": [],
        "attachments": [],
        "embeds": [],
        "tts": False,
        "mention_everyone": False,
    }
    message.update(overrides)
    return message


def direct_message(content: str = "hello", **overrides: Any) -> dict[str, Any]:
    message = guild_message(content, **overrides)
    del message["guild_id"], message["member"]
    return {"channel_type": ChannelType.DM, **message}


def bot_author(user_id: str = OTHER_BOT_ID) -> dict[str, Any]:
    return {"id": user_id, "username": "robot", "bot": True}


def reply_to(author_id: str, **reference_overrides: Any) -> dict[str, Any]:
    referenced = guild_message(
        "earlier words", id="600000000000000099", author={"id": author_id, "username": "x"}
    )
    reference = {"message_id": referenced["id"], "channel_id": CHANNEL_ID, "guild_id": GUILD_ID}
    reference.update(reference_overrides)
    return {"type": MessageType.REPLY, "referenced_message": referenced, "message_reference": reference}


DEFAULTS = ServerConfig()
WITH_TRIGGERS = ServerConfig(trigger_words=("Kioku", "hey memory"))
ANSWERING_BOTS = ServerConfig(answer_other_bots=True)

ANSWER_CASES = [
    ("direct message", direct_message(), DEFAULTS, TurnReason.DIRECT_MESSAGE),
    ("direct message with null guild_id", direct_message(guild_id=None), DEFAULTS, TurnReason.DIRECT_MESSAGE),
    (
        "mentioned in the mentions list",
        guild_message("look at this", mentions=[{"id": BOT_ID, "username": "kioku"}]),
        DEFAULTS,
        TurnReason.MENTIONED,
    ),
    ("mentioned as <@id> in content", guild_message(f"<@{BOT_ID}> hi"), DEFAULTS, TurnReason.MENTIONED),
    ("mentioned as <@!id> in content", guild_message(f"hi <@!{BOT_ID}>"), DEFAULTS, TurnReason.MENTIONED),
    ("reply to the bot", guild_message("and then?", **reply_to(BOT_ID)), DEFAULTS, TurnReason.REPLY_TO_BOT),
    (
        "reply to the bot with an explicit default reference type",
        guild_message("and then?", **reply_to(BOT_ID, type=0)),
        DEFAULTS,
        TurnReason.REPLY_TO_BOT,
    ),
    (
        "trigger word, other case",
        guild_message("what does KIOKU think?"),
        WITH_TRIGGERS,
        TurnReason.TRIGGER_WORD,
    ),
    (
        "trigger word, full-width (NFKC)",
        guild_message("ｋｉｏｋｕ, hi"),
        WITH_TRIGGERS,
        TurnReason.TRIGGER_WORD,
    ),
    (
        "multi-word trigger, any spacing",
        guild_message("Hey   Memory!"),
        WITH_TRIGGERS,
        TurnReason.TRIGGER_WORD,
    ),
    (
        "other bot mentioning, when other bots are answered",
        guild_message(f"<@{BOT_ID}> ping", author=bot_author()),
        ANSWERING_BOTS,
        TurnReason.MENTIONED,
    ),
    (
        "webhook mentioning, when other bots are answered",
        guild_message(
            f"<@{BOT_ID}> ping", webhook_id=WEBHOOK_ID, author={"id": WEBHOOK_ID, "username": "hook"}
        ),
        ANSWERING_BOTS,
        TurnReason.MENTIONED,
    ),
]

IGNORE_CASES = [
    ("a group DM", direct_message(channel_type=ChannelType.GROUP_DM), DEFAULTS, "not_dm"),
    ("no server and no channel type", direct_message(channel_type=None), DEFAULTS, "not_dm"),
    ("a server text channel without its server", direct_message(channel_type=0), DEFAULTS, "not_dm"),
    ("its own message", guild_message(f"<@{BOT_ID}>", author=bot_author(BOT_ID)), ANSWERING_BOTS, "own"),
    ("its own DM", direct_message(author=bot_author(BOT_ID)), DEFAULTS, "own"),
    (
        "its own application's webhook",
        guild_message(
            f"<@{BOT_ID}>", webhook_id=WEBHOOK_ID, application_id=BOT_ID, author={"id": WEBHOOK_ID}
        ),
        ANSWERING_BOTS,
        "own",
    ),
    ("other bot mentioning", guild_message(f"<@{BOT_ID}>", author=bot_author()), DEFAULTS, "bot"),
    ("other bot in a DM", direct_message(author=bot_author()), DEFAULTS, "bot"),
    (
        "webhook mentioning",
        guild_message(f"<@{BOT_ID}>", webhook_id=WEBHOOK_ID, author={"id": WEBHOOK_ID, "username": "hook"}),
        DEFAULTS,
        "bot",
    ),
    (
        "thread-created notice",
        guild_message(f"<@{BOT_ID}>", type=MESSAGE_TYPE_THREAD_CREATED),
        DEFAULTS,
        "type",
    ),
    ("member-join notice in a DM", direct_message(type=MESSAGE_TYPE_GUILD_MEMBER_JOIN), DEFAULTS, "type"),
    ("plain chatter", guild_message("just talking among ourselves"), WITH_TRIGGERS, "none"),
    ("someone else mentioned", guild_message(f"<@{USER_ID}> hi"), DEFAULTS, "none"),
    ("reply to someone else", guild_message("yes", **reply_to(USER_ID)), DEFAULTS, "none"),
    (
        "a forward of the bot's message",
        guild_message("", **reply_to(BOT_ID, type=MESSAGE_REFERENCE_TYPE_FORWARD)),
        DEFAULTS,
        "none",
    ),
    (
        "reply to a deleted message",
        guild_message("yes", **{**reply_to(BOT_ID), "referenced_message": None}),
        DEFAULTS,
        "none",
    ),
    ("trigger word inside another word", guild_message("kiokuness is not a word"), WITH_TRIGGERS, "none"),
    ("trigger word ending another word", guild_message("ask the minikioku"), WITH_TRIGGERS, "none"),
    ("trigger word without triggers configured", guild_message("kioku?"), DEFAULTS, "none"),
    ("@everyone", guild_message("@everyone meeting", mention_everyone=True), DEFAULTS, "none"),
]

IGNORE_REASONS = {
    "own": TurnReason.OWN_MESSAGE,
    "bot": TurnReason.OTHER_BOT,
    "type": TurnReason.UNSUPPORTED_MESSAGE_TYPE,
    "none": TurnReason.NOT_ADDRESSED,
    "not_dm": TurnReason.NOT_A_DIRECT_MESSAGE,
}


@pytest.mark.parametrize(
    ("message", "config", "reason"),
    [case[1:] for case in ANSWER_CASES],
    ids=[case[0] for case in ANSWER_CASES],
)
def test_answers_messages_addressed_to_the_bot(message, config, reason):
    decision = decide_turn(parse_message_object(message), bot_user_id=BOT_ID, config=config)

    assert decision.answer is True
    assert decision.reason is reason


@pytest.mark.parametrize(
    ("message", "config", "reason"),
    [case[1:] for case in IGNORE_CASES],
    ids=[case[0] for case in IGNORE_CASES],
)
def test_ignores_messages_not_for_the_bot(message, config, reason):
    decision = decide_turn(parse_message_object(message), bot_user_id=BOT_ID, config=config)

    assert decision.answer is False
    assert decision.reason is IGNORE_REASONS[reason]


def test_decides_the_same_on_a_parsed_message_and_keeps_the_message_typed():
    # Given a validated relay payload
    data = guild_message(f"<@{BOT_ID}> hi")
    parsed = parse_gateway_message({"t": "MESSAGE_CREATE", "d": data})

    # When deciding on it
    decision = decide_turn(parsed, bot_user_id=BOT_ID, config=DEFAULTS)

    # Then the decision matches the message object's and the worker gets the message as it was validated
    assert decision == decide_turn(parse_message_object(data), bot_user_id=BOT_ID, config=DEFAULTS)
    assert parsed.message == parse_message(data)
    message = parsed.message
    assert (message.id, message.channel_id, message.guild_id, message.author.id) == (
        MESSAGE_ID,
        CHANNEL_ID,
        GUILD_ID,
        USER_ID,
    )


def test_parses_a_relay_body_with_non_ascii_content():
    body = json.dumps(
        {"t": "MESSAGE_CREATE", "d": guild_message("記憶さん、こんにちは")}, ensure_ascii=False
    ).encode()

    message = parse_relay_body(body)

    assert isinstance(message, GatewayMessage)
    assert message.message.content == "記憶さん、こんにちは"


def without(key: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    data = copy.deepcopy(data or guild_message())
    del data[key]
    return data


def with_author(**author: Any) -> dict[str, Any]:
    return guild_message(author=author)


def envelope(data: Any) -> dict[str, Any]:
    return {"t": "MESSAGE_CREATE", "d": data}


MALFORMED_PAYLOADS = [
    ("not an object", ["MESSAGE_CREATE"], "not a JSON object"),
    ("another event type", {"t": "MESSAGE_UPDATE", "d": guild_message()}, "event type"),
    ("no event type", {"d": guild_message()}, "event type"),
    ("d missing", {"t": "MESSAGE_CREATE"}, "d is not an object"),
    ("d a string", envelope("hello"), "d is not an object"),
    ("id missing", envelope(without("id")), "id is not a snowflake"),
    ("id an integer", envelope(guild_message(id=600000000000000006)), "id is not a snowflake"),
    ("id not digits", envelope(guild_message(id="12ab")), "id is not a snowflake"),
    ("id too long", envelope(guild_message(id="1" * 21)), "id is not a snowflake"),
    ("id non-ASCII digits", envelope(guild_message(id="１２３")), "id is not a snowflake"),
    ("channel_id missing", envelope(without("channel_id")), "channel_id is not a snowflake"),
    ("guild_id not a snowflake", envelope(guild_message(guild_id="guild")), "guild_id is not a snowflake"),
    ("author missing", envelope(without("author")), "author is not an object"),
    ("author.id missing", envelope(with_author(username="x")), "author.id is not a snowflake"),
    ("author.id an integer", envelope(with_author(id=200)), "author.id is not a snowflake"),
    ("author.bot a string", envelope(with_author(id=USER_ID, bot="yes")), "author.bot is not a boolean"),
    ("content missing", envelope(without("content")), "content is not a string"),
    ("content a list", envelope(guild_message(content=["hi"])), "content is not a string"),
    ("content too long", envelope(guild_message("x" * (MAX_CONTENT_CHARS + 1))), "content is longer"),
    ("type missing", envelope(without("type")), "type is not an integer"),
    ("timestamp missing", envelope(without("timestamp")), "timestamp is not an RFC 3339 time"),
    (
        "timestamp without an offset",
        envelope(guild_message(timestamp="2026-11-30T01:00:00.000000")),
        "timestamp is not an RFC 3339 time with an offset",
    ),
    ("timestamp a date", envelope(guild_message(timestamp="2026-11-30")), "timestamp is not"),
    ("timestamp a number", envelope(guild_message(timestamp=1764464400)), "timestamp is not"),
    ("timestamp out of range", envelope(guild_message(timestamp="2026-11-31T01:00:00Z")), "timestamp is not"),
    ("type a boolean", envelope(guild_message(type=True)), "type is not an integer"),
    (
        "too many attachments",
        envelope(guild_message(attachments=[{}] * (MAX_ATTACHMENTS + 1))),
        "attachments has",
    ),
    ("attachments an object", envelope(guild_message(attachments={})), "attachments is not a list"),
    ("too many embeds", envelope(guild_message(embeds=[{}] * (MAX_EMBEDS + 1))), "embeds has"),
    (
        "too many mentions",
        envelope(guild_message(mentions=[{"id": USER_ID}] * (MAX_MENTIONS + 1))),
        "mentions has",
    ),
    ("mention not an object", envelope(guild_message(mentions=[USER_ID])), "mentions[] is not an object"),
    ("mention without id", envelope(guild_message(mentions=[{"username": "x"}])), "mentions[].id"),
    (
        "referenced message without author",
        envelope(guild_message(referenced_message={"id": MESSAGE_ID})),
        "referenced_message.author is not an object",
    ),
    (
        "referenced message a string",
        envelope(guild_message(referenced_message="earlier")),
        "referenced_message is not an object",
    ),
]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [case[1:] for case in MALFORMED_PAYLOADS],
    ids=[case[0] for case in MALFORMED_PAYLOADS],
)
def test_rejects_malformed_payloads_with_a_reason(payload, reason):
    with pytest.raises(InvalidRelayEvent) as raised:
        parse_gateway_message(payload)

    assert reason in raised.value.reason


def test_content_at_the_limit_is_accepted():
    message = parse_gateway_message(envelope(guild_message("x" * MAX_CONTENT_CHARS)))

    assert len(message.message.content) == MAX_CONTENT_CHARS


def test_a_malformed_message_object_is_rejected_before_any_decision():
    with pytest.raises(InvalidRelayEvent):
        parse_message_object(without("author"))


MALFORMED_BODIES = [
    ("over the size limit", b'{"t":"MESSAGE_CREATE","d":{}}' + b" " * MAX_RELAY_BODY_BYTES, "larger than"),
    ("not UTF-8", b'{"t":"MESSAGE_CREATE","d":"\xff"}', "not UTF-8"),
    ("not JSON", b"t=MESSAGE_CREATE", "not valid JSON"),
    ("empty", b"", "not valid JSON"),
    ("NaN constant", b'{"t":"MESSAGE_CREATE","d":NaN}', "non-JSON constant"),
    ("nested deeper than the parser goes", b"[" * 30_000 + b"]" * 30_000, "not valid JSON"),
]


@pytest.mark.parametrize(
    ("body", "reason"), [case[1:] for case in MALFORMED_BODIES], ids=[case[0] for case in MALFORMED_BODIES]
)
def test_rejects_malformed_bodies_with_a_reason(body, reason):
    with pytest.raises(InvalidRelayEvent) as raised:
        parse_relay_body(body)

    assert reason in raised.value.reason


def test_a_mention_of_the_bots_managed_role_addresses_it_and_another_role_does_not():
    # Issue 11.9: the relay names the bot's managed role (tags.bot_id) in the envelope
    role, other = "810000000000000002", "810000000000000001"
    for mentioned, answered in ((role, True), (other, False)):
        payload = {
            "t": "MESSAGE_CREATE",
            "d": guild_message(f"<@&{mentioned}> are you there?", mention_roles=[mentioned]),
            "bot_role_ids": [role],
        }
        message = parse_relay_body(json.dumps(payload).encode())
        decision = decide_turn(message, bot_user_id=BOT_ID, config=DEFAULTS)
        assert (decision.answer, decision.reason) == (
            answered,
            TurnReason.MENTIONED if answered else TurnReason.NOT_ADDRESSED,
        )


@pytest.mark.parametrize("bad", [["not-a-snowflake"], "810000000000000002", [1]])
def test_malformed_bot_role_ids_are_refused(bad):
    payload = {"t": "MESSAGE_CREATE", "d": guild_message(), "bot_role_ids": bad}
    with pytest.raises(InvalidRelayEvent):
        parse_relay_body(json.dumps(payload).encode())
