"""Discord's message object, parsed once where it enters: strictly from the relay, as far as it reads
from REST, and written back in the same shape for the queue."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kioku.discord.models import (
    Attachment,
    Embed,
    MalformedMessage,
    Member,
    Mention,
    MessageReference,
    Reaction,
    Snapshot,
    User,
    parse_guild_member,
    parse_history,
    parse_message,
)
from kioku.discord.protocol import MessageReferenceType, MessageType

ALICE = {"id": "111", "username": "alice", "global_name": "Alice"}
BOB = {"id": "222", "username": "bob", "bot": False}


def gateway_message(**overrides) -> dict:
    message = {
        "id": "700",
        "channel_id": "300",
        "guild_id": "200",
        "author": ALICE,
        "member": {"nick": "Ally", "roles": ["801", "802"]},
        "content": "look <@222>",
        "timestamp": "2026-11-30T01:02:03.456000+00:00",
        "type": MessageType.REPLY,
        "tts": False,
        "mentions": [{**BOB, "member": {"nick": "Rob", "roles": []}}],
        "mention_roles": ["801"],
        "attachments": [
            {"id": "9", "filename": "cat.png", "content_type": "image/png", "url": "https://c/cat.png"}
        ],
        "embeds": [{"type": "rich", "title": "Plan", "description": "tea at five"}],
        "sticker_items": [{"id": "5", "name": "wave", "format_type": 1}],
        "reactions": [
            {"count": 2, "emoji": {"id": None, "name": "👍"}},
            {"count": 1, "emoji": {"id": "55", "name": "kekw"}},
        ],
        "message_reference": {"message_id": "699", "channel_id": "300", "type": MessageReferenceType.DEFAULT},
        "referenced_message": {
            "id": "699",
            "channel_id": "300",
            "author": BOB,
            "content": "tea?",
            "timestamp": "2026-11-30T01:00:00+00:00",
            "type": 0,
        },
        "message_snapshots": [{"message": {"content": "fwd", "attachments": [{"filename": "a.pdf"}]}}],
    }
    message.update(overrides)
    return message


def test_a_gateway_message_reads_into_typed_fields():
    message = parse_message(gateway_message())

    assert (message.id, message.channel_id, message.guild_id, message.type) == ("700", "300", "200", 19)
    assert message.author == User("111", "alice", "Alice")
    assert message.member == Member(nick="Ally", roles=("801", "802"))
    assert message.timestamp == datetime(2026, 11, 30, 1, 2, 3, 456000, tzinfo=UTC)
    assert message.mentions == (Mention(User("222", "bob"), Member(nick="Rob")),)
    assert message.mention_roles == ("801",)
    assert message.attachments == (Attachment("cat.png", "image/png", "https://c/cat.png"),)
    assert message.embeds == (Embed("Plan", "tea at five"),)
    assert message.sticker_names == ("wave",)
    assert message.reactions == (Reaction("👍", 2), Reaction("kekw", 1, "55"))
    assert message.reference == MessageReference("699", MessageReferenceType.DEFAULT)
    assert (
        message.referenced_message.author == User("222", "bob")
        and message.referenced_message.content == "tea?"
    )
    assert message.forwarded == Snapshot(content="fwd", attachments=(Attachment("a.pdf"),))


@pytest.mark.parametrize(
    "data",
    [
        gateway_message(),
        gateway_message(referenced_message=None),
        gateway_message(type=0, message_reference=None, referenced_message=None, guild_id=None, member=None),
        gateway_message(webhook_id="444", application_id="555", content=""),
    ],
    ids=["reply", "reply-to-a-deleted-message", "direct-message", "webhook"],
)
def test_what_it_writes_reads_back_the_same(data):
    message = parse_message(data)
    assert parse_message(message.to_dict()) == message


def test_a_reply_whose_message_is_gone_says_so_and_a_plain_message_does_not():
    assert parse_message(gateway_message(referenced_message=None)).referenced_message_deleted
    plain = gateway_message(type=0, referenced_message=None)
    assert not parse_message(plain).referenced_message_deleted


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("id", "١٢٣", "id is not a snowflake"),
        ("channel_id", None, "channel_id is not a snowflake"),
        ("author", {"id": 111}, "author.id is not a snowflake"),
        ("timestamp", "2026-11-30T01:00:00", "timestamp is not an RFC 3339 time"),
        ("type", "0", "type is not an integer"),
        ("content", None, "content is not a string"),
        ("mention_roles", ["role"], "mention_roles[] is not a snowflake"),
        ("referenced_message", {"id": "699"}, "referenced_message.author is not an object"),
    ],
)
def test_strictly_a_malformed_field_is_refused_by_name(field, value, reason):
    with pytest.raises(MalformedMessage) as raised:
        parse_message(gateway_message(**{field: value}))
    assert reason in raised.value.reason


def test_leniently_only_the_id_and_the_author_must_read():
    # Given a history message with everything but its id and author malformed
    data = gateway_message(
        channel_id=None,
        timestamp="yesterday",
        type="19",
        content=42,
        mentions=[{"id": "nope"}, "bob", BOB],
        mention_roles=["role", "801"],
        attachments="many",
        reactions=[{"count": True, "emoji": {"name": "x"}}, {"count": 1}],
        referenced_message={"content": "no author"},
        member={"nick": 5, "roles": "all", "permissions": "lots"},
    )
    # When it is read as REST history is
    message = parse_message(data, strict=False)
    # Then what does not read is left out
    assert (message.id, message.author.id) == ("700", "111")
    assert (message.channel_id, message.timestamp, message.type, message.content) == (None, None, 0, "")
    assert [mention.user.id for mention in message.mentions] == ["222"]
    assert message.mention_roles == ("801",) and message.attachments == () and message.reactions == ()
    assert message.referenced_message is None and message.member == Member()


def test_history_leaves_out_what_has_no_id_or_author_and_keeps_the_order():
    history = [
        gateway_message(id="3"),
        None,
        {"id": "2", "content": "no author"},
        {"author": ALICE, "content": "no id"},
        gateway_message(id="1", author={"id": "1; DROP"}),
        gateway_message(id="0"),
    ]
    assert [message.id for message in parse_history(history)] == ["3", "0"]


def test_a_guild_member_from_rest_reads_with_its_user():
    # Given what GET /guilds/{id}/members/{user} and the member search answer
    data = {
        "user": {"id": "101", "username": "alice", "global_name": "Alice", "bot": False},
        "nick": "Ally",
        "roles": ["201", 7],
    }
    # Then it reads into the one Member, its user parsed once
    assert parse_guild_member(data) == Member(
        nick="Ally", roles=("201",), user=User(id="101", username="alice", global_name="Alice")
    )


@pytest.mark.parametrize("user", [None, "alice", {"username": "alice"}, {"id": 101}])
def test_a_guild_member_whose_user_does_not_read_has_none(user):
    assert parse_guild_member({"user": user, "nick": "Ally"}) == Member(nick="Ally")


def test_a_guild_member_that_is_no_object_is_none():
    assert parse_guild_member(["not", "a", "member"]) is None
