"""The Discord REST client against the Discord stand-in, a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import logging
import os

import pytest

from kioku.adapters.discord_rest import DiscordError, DiscordRest
from kioku.domain.dialogue import read_dialogue
from kioku.playground.standins import DiscordStandIn

TOKEN = "bot-token-very-secret"
CHANNEL = "5000"
GUILD = "7000"


@pytest.fixture
def discord():
    with DiscordStandIn(token=TOKEN) as stand_in:
        stand_in.seed_channel(CHANNEL)
        yield stand_in


@pytest.fixture
def waits():
    return []


@pytest.fixture
def rest(discord, waits):
    client = DiscordRest(
        discord.base_url, TOKEN, max_retries=2, max_retry_after_seconds=5, sleep=waits.append
    )
    yield client
    client.close()


def test_fetches_history_newest_first_with_bot_auth_and_user_agent(discord, rest):
    # Given a conversation in the channel
    alice = discord.seed_user("alice", global_name="Alice")
    first = discord.seed_message(CHANNEL, alice, "first")
    second = discord.seed_message(CHANNEL, alice, "second", reply_to=first["id"])

    # When the client fetches the history
    messages = rest.get_channel_messages(CHANNEL, limit=10)

    # Then it is newest first, and the request was authenticated as the bot
    assert [m.id for m in messages] == [second["id"], first["id"]]
    assert messages[0].referenced_message.id == first["id"]
    (request,) = discord.requests
    assert request.headers["authorization"] == f"Bot {TOKEN}"
    assert request.headers["user-agent"].startswith("DiscordBot (")
    assert request.query == {"limit": ["10"]}


def test_fetched_history_converts_to_dialogue(discord, rest):
    alice = discord.seed_user("alice", global_name="Alice")
    question = discord.seed_message(CHANNEL, alice, "are you there?")
    rest.create_message(CHANNEL, "I am here.", reply_to=question["id"])

    items = read_dialogue(
        rest.get_channel_messages(CHANNEL, limit=10),
        bot_user_id=discord.bot_user["id"],
        supports_vision=True,
        limit=10,
    ).items

    assert [item.role for item in items] == ["user", "assistant"]
    # issue 11.8: a reply to the message right above it needs no "Replying to" line
    assert "Replying to" not in items[1].content
    assert "<som>I am here.<eom>" in items[1].content


def test_reply_references_the_trigger_and_never_mass_mentions(discord, rest):
    trigger = discord.seed_message(CHANNEL, discord.seed_user("bob"), "hi @everyone")

    posted = rest.create_message(CHANNEL, "hello @everyone", reply_to=trigger["id"])

    (request,) = discord.requests_to("POST", rf"/api/v10/channels/{CHANNEL}/messages")
    assert request.body["allowed_mentions"] == {"parse": [], "replied_user": True}
    assert request.body["message_reference"] == {"message_id": trigger["id"], "fail_if_not_exists": False}
    assert posted["author"]["id"] == discord.bot_user["id"]
    assert discord.channel_messages(CHANNEL)[-1]["content"] == "hello @everyone"


def test_reply_to_a_deleted_message_is_still_sent(discord, rest):
    posted = rest.create_message(CHANNEL, "still here", reply_to="123456")

    assert posted["content"] == "still here"
    assert "referenced_message" not in posted


def test_trigger_typing(discord, rest):
    assert rest.trigger_typing(CHANNEL) is None

    assert len(discord.requests_to("POST", rf"/api/v10/channels/{CHANNEL}/typing")) == 1


def test_waits_out_a_429_using_the_json_retry_after(discord, rest, waits):
    discord.fail_next(429, {"message": "You are being rate limited.", "retry_after": 0.25, "global": False})

    rest.trigger_typing(CHANNEL)

    assert waits == [0.25]
    assert len(discord.requests) == 2


def test_falls_back_to_the_retry_after_header(discord, rest, waits):
    discord.fail_next(429, "not json", {"Retry-After": "1.5"})

    rest.trigger_typing(CHANNEL)

    assert waits == [1.5]


def test_a_wait_beyond_the_bound_is_not_waited(discord, rest, waits):
    discord.fail_next(429, {"message": "You are being rate limited.", "retry_after": 60})

    with pytest.raises(DiscordError) as raised:
        rest.trigger_typing(CHANNEL)

    assert raised.value.status == 429
    assert waits == []


def test_gives_up_after_max_retries(discord, rest, waits):
    for _ in range(3):
        discord.fail_next(429, {"message": "rate limited", "retry_after": 0.01})

    with pytest.raises(DiscordError):
        rest.trigger_typing(CHANNEL)

    assert len(waits) == 2
    assert len(discord.requests) == 3


def test_errors_carry_status_code_and_message(rest):
    with pytest.raises(DiscordError) as raised:
        rest.get_channel_messages("999", limit=5)

    assert (raised.value.status, raised.value.code, raised.value.message) == (404, 10003, "Unknown Channel")


def test_empty_message_is_refused_by_discord(rest):
    with pytest.raises(DiscordError) as raised:
        rest.create_message(CHANNEL, "   ")

    assert raised.value.code == 50006


def test_a_wrong_token_is_unauthorised_and_never_logged(discord, caplog):
    client = DiscordRest(discord.base_url, "wrong-token")

    with caplog.at_level(logging.DEBUG), pytest.raises(DiscordError) as raised:
        client.trigger_typing(CHANNEL)

    assert raised.value.status == 401
    assert "wrong-token" not in caplog.text
    assert "wrong-token" not in str(raised.value)


@pytest.mark.parametrize("bad_id", ["../guilds/1", "12a", "", "1" * 21])
def test_ids_that_are_not_snowflakes_are_refused_before_any_request(discord, rest, bad_id):
    with pytest.raises(ValueError):
        rest.get_channel_messages(bad_id, limit=5)

    assert discord.requests == []


def test_edit_original_response_uses_the_interaction_token_not_the_bot_token(discord, rest):
    rest.edit_original_response(discord.application_id, "tok-en_1.2", "done", embeds=[{"title": "Saved"}])

    (request,) = discord.requests
    assert request.method == "PATCH"
    assert request.path == f"/api/v10/webhooks/{discord.application_id}/tok-en_1.2/messages/@original"
    assert "authorization" not in request.headers
    assert discord.interaction_response("tok-en_1.2")["embeds"] == [{"title": "Saved"}]


def test_edit_original_response_refuses_a_token_that_could_change_the_path(rest):
    with pytest.raises(ValueError):
        rest.edit_original_response("1", "../../channels/5/messages", "x")


def test_search_guild_members(discord, rest):
    for name, nick in (("alice", None), ("alfred", "Fred"), ("bob", "Al")):
        discord.seed_member(GUILD, discord.seed_user(name), nick=nick)

    found = rest.search_guild_members(GUILD, "al", limit=10)

    assert sorted(member.user.username for member in found) == ["alfred", "alice", "bob"]
    assert discord.requests[0].query == {"query": ["al"], "limit": ["10"]}


def test_bulk_overwrite_commands_global_and_per_guild(discord, rest):
    commands = [{"name": "memory", "description": "Manage memories", "type": 1}]

    rest.bulk_overwrite_commands(discord.application_id, commands)
    rest.bulk_overwrite_commands(discord.application_id, commands, guild_id=GUILD)

    assert [r.path for r in discord.requests_to("PUT", r".*")] == [
        f"/api/v10/applications/{discord.application_id}/commands",
        f"/api/v10/applications/{discord.application_id}/guilds/{GUILD}/commands",
    ]
    assert [c["name"] for c in discord.commands()] == ["memory"]
    assert [c["name"] for c in discord.commands(GUILD)] == ["memory"]


def test_unreachable_discord_is_a_discord_error():
    stand_in = DiscordStandIn().start()
    base_url = stand_in.base_url
    stand_in.stop()

    with pytest.raises(DiscordError) as raised:
        DiscordRest(base_url, TOKEN).trigger_typing(CHANNEL)

    assert raised.value.status == 0


def test_a_post_retried_with_the_same_nonce_creates_one_message():
    with DiscordStandIn() as discord:
        discord.seed_channel("300000000000000009")
        rest = DiscordRest(discord.base_url, discord.token)
        first = rest.create_message("300000000000000009", "hello", nonce="7000000000000000010")
        again = rest.create_message("300000000000000009", "hello", nonce="7000000000000000010")
        assert first["id"] == again["id"]
        assert len(discord.channel_messages("300000000000000009")) == 1
        assert discord.requests[-1].body["enforce_nonce"] is True


def test_a_thread_names_its_parent():
    with DiscordStandIn() as discord:
        discord.seed_channel(
            "300000000000000010", name="plans", guild_id="200000000000000001", parent_id="300000000000000001"
        )
        channel = DiscordRest(discord.base_url, discord.token).get_channel("300000000000000010")
        assert (channel.name, channel.parent_id, channel.type) == ("plans", "300000000000000001", 11)
        with pytest.raises(DiscordError) as raised:
            DiscordRest(discord.base_url, discord.token).get_channel("300000000000000099")
        assert raised.value.status == 404


def test_interaction_tokens_never_reach_the_logs(caplog):
    caplog.set_level(logging.DEBUG)
    with DiscordStandIn() as discord:
        rest = DiscordRest(discord.base_url, discord.token)
        rest.edit_original_response(discord.application_id, "SECRETINTERACTIONTOKEN", "done")
    assert "SECRETINTERACTIONTOKEN" not in caplog.text
    assert discord.token not in caplog.text


def test_guild_roles_and_members(discord, rest):
    # Given a guild whose @everyone role lost View Channel, and one member
    discord.seed_role(GUILD, GUILD, permissions=1 << 11, name="@everyone")
    alice = discord.seed_user("alice")
    discord.seed_member(GUILD, alice, nick="Ally")
    # When the roles and two members are asked for
    roles = rest.get_guild_roles(GUILD)
    found = rest.get_guild_member(GUILD, alice["id"])
    stranger = rest.get_guild_member(GUILD, "123456789012345678")
    # Then the @everyone role carries the guild's id, a member comes back whole, a stranger is None
    assert [role["permissions"] for role in roles if role["id"] == GUILD] == [str(1 << 11)]
    assert (found.user.id, found.nick) == (alice["id"], "Ally")
    assert stranger is None
    assert [r.path for r in discord.requests] == [
        f"/api/v10/guilds/{GUILD}/roles",
        f"/api/v10/guilds/{GUILD}/members/{alice['id']}",
        "/api/v10/guilds/7000/members/123456789012345678",
    ]


def test_guild_channels_list_the_guilds_channels_without_threads(discord, rest):
    # Given a guild with two channels and a thread, and a channel of another guild
    discord.seed_channel("300000000000000031", name="general", guild_id=GUILD)
    discord.seed_channel("300000000000000032", name="random", guild_id=GUILD)
    discord.seed_channel(
        "300000000000000033", name="a-thread", guild_id=GUILD, parent_id="300000000000000031"
    )
    discord.seed_channel("300000000000000034", name="elsewhere", guild_id="7001")
    # When its channels are asked for
    channels = rest.get_guild_channels(GUILD)
    # Then its own channels come back in one request, as Discord lists them (threads aside)
    assert sorted(channel["name"] for channel in channels) == ["general", "random"]
    assert [r.path for r in discord.requests] == [f"/api/v10/guilds/{GUILD}/channels"]


def test_a_member_lookup_that_discord_refuses_is_an_error_not_a_stranger(discord, rest):
    discord.fail_next(403, {"code": 50001, "message": "Missing Access"})
    with pytest.raises(DiscordError):
        rest.get_guild_member(GUILD, "123456789012345678")


def test_a_channel_webhook_is_created_then_posts_as_a_persona_without_the_bot_token_or_pings(
    discord, rest, caplog
):
    from tests.discord_contract import checked_posts

    caplog.set_level(logging.DEBUG)
    # When kioku creates the channel's webhook and posts through it as Luna, into a thread too
    hook = rest.create_webhook(CHANNEL, "kioku personas")
    discord.seed_channel("5001", parent_id=CHANNEL)
    posted = rest.execute_webhook(
        hook["id"], hook["token"], "hi @everyone", username="Luna", avatar_url="https://example.com/l.png"
    )
    in_thread = rest.execute_webhook(
        hook["id"], hook["token"], "in the thread", username="Luna", thread_id="5001"
    )
    # Then the posts are Luna's, through the webhook, of the application; nobody is pinged
    assert (posted["author"]["username"], posted["webhook_id"], posted["application_id"]) == (
        "Luna",
        hook["id"],
        discord.application_id,
    )
    assert in_thread["channel_id"] == "5001"
    executes = discord.requests_to("POST", r"/api/v10/webhooks/.*")
    assert all(request.body["allowed_mentions"] == {"parse": []} for request in executes)
    assert all(
        "authorization" not in request.headers for request in executes
    )  # the token in the path is the key
    assert executes[0].query["wait"] == ["true"] and executes[1].query["thread_id"] == ["5001"]
    # every body is one Discord's docs accept (tests/discord_contract.py), and no token is logged
    assert checked_posts(discord.requests) == [
        "/channels/{channel_id}/webhooks",
        "/webhooks/{webhook_id}/{webhook_token}",
        "/webhooks/{webhook_id}/{webhook_token}",
    ]
    assert hook["token"] not in caplog.text and TOKEN not in caplog.text


def test_without_manage_webhooks_creating_one_is_a_403(discord, rest):
    discord.forbid_webhooks(CHANNEL)
    with pytest.raises(DiscordError) as refused:
        rest.create_webhook(CHANNEL, "kioku personas")
    assert refused.value.status == 403


def test_a_webhook_token_that_could_change_the_path_is_refused(rest):
    with pytest.raises(ValueError):
        rest.execute_webhook("5000", "../../channels/1", "x", username="Luna")


@pytest.mark.skipif(
    not os.environ.get("KIOKU_DISCORD_OPENAPI"),
    reason="KIOKU_DISCORD_OPENAPI names no local copy of Discord's OpenAPI document (tests never fetch it)",
)
def test_the_bodies_also_meet_a_local_copy_of_discord_s_openapi_document(discord, rest):
    from tests.discord_contract import checked_posts, upstream_validator

    hook = rest.create_webhook(CHANNEL, "kioku personas")
    rest.execute_webhook(
        hook["id"], hook["token"], "hi", username="Luna", avatar_url="https://example.com/l.png"
    )
    rest.create_message(CHANNEL, "hello", nonce="n1")
    assert upstream_validator("/channels/{channel_id}/messages") is not None
    assert len(checked_posts(discord.requests)) == 3  # each against ours and the local copy
