"""What a turn asks Discord about its guild: channel privacy every turn, roles and members cached."""

from __future__ import annotations

import pytest

from kioku.adapters.discord_rest import DiscordError
from kioku.adapters.guild_directory import GuildDirectory
from kioku.discord.guild import Channel, parse_channel
from kioku.discord.models import Member, parse_guild_member
from kioku.domain.privacy import Place, PrivacyMode, PrivacyPolicy

GUILD, CHANNEL, THREAD = "900", "100", "150"
VIEW = 1 << 10
ELSEWHERE = Place(GUILD, "199")
NO_SETTINGS = PrivacyPolicy(GUILD)


class FakeDiscord:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.everyone = VIEW
        self.fail_roles = False
        self.fail_channels = False
        self.channels = {
            CHANNEL: {"id": CHANNEL, "type": 0, "permission_overwrites": []},
            THREAD: {"id": THREAD, "type": 11, "parent_id": CHANNEL},
        }
        self.members = {"7": {"user": {"id": "7", "username": "alice"}}}

    def get_guild_roles(self, guild_id: str) -> list[dict]:
        self.calls.append(("roles", guild_id))
        if self.fail_roles:
            raise DiscordError(500, None, "down")
        return [{"id": guild_id, "permissions": str(self.everyone)}]

    def get_channel(self, channel_id: str) -> Channel:
        self.calls.append(("channel", channel_id))
        if channel_id not in self.channels:
            raise DiscordError(404, 10003, "Unknown Channel")
        return parse_channel(self.channels[channel_id])

    def get_guild_channels(self, guild_id: str) -> list[dict]:
        self.calls.append(("channels", guild_id))
        if self.fail_channels:
            raise DiscordError(403, 50001, "Missing Access")
        hidden = [{"id": guild_id, "type": 0, "allow": "0", "deny": str(VIEW)}]
        return [
            {"id": CHANNEL, "type": 0, "name": "general", "permission_overwrites": []},
            {"id": "101", "type": 0, "name": "random", "permission_overwrites": []},
            {"id": "102", "type": 0, "name": "mods-only", "permission_overwrites": hidden},
            {"id": "103", "type": 4, "name": "Text Channels"},
        ]

    def get_guild_member(self, guild_id: str, user_id: str) -> Member | None:
        self.calls.append(("member", user_id))
        return parse_guild_member(self.members.get(user_id))


@pytest.fixture
def clock() -> list[float]:
    return [0.0]


@pytest.fixture
def discord() -> FakeDiscord:
    return FakeDiscord()


@pytest.fixture
def directory(discord: FakeDiscord, clock: list[float]) -> GuildDirectory:
    return GuildDirectory(discord, cache_seconds=60, clock=lambda: clock[0])


def test_roles_are_cached_for_a_while_and_then_read_again(directory, discord, clock):
    channel = parse_channel(discord.channels[CHANNEL])
    assert directory.describe_channel(GUILD, channel).private is False
    discord.everyone = 0  # the server hides every channel from @everyone
    assert directory.describe_channel(GUILD, channel).private is False  # within the minute: cached
    clock[0] = 61
    assert directory.describe_channel(GUILD, channel).private is True
    assert discord.calls.count(("roles", GUILD)) == 2


def test_a_threads_parent_is_read_every_time(directory, discord):
    thread = parse_channel(discord.channels[THREAD])
    assert directory.describe_channel(GUILD, thread).private is False
    discord.channels[CHANNEL] = {
        "id": CHANNEL,
        "type": 0,
        "permission_overwrites": [{"id": GUILD, "type": 0, "allow": "0", "deny": str(VIEW)}],
    }
    described = directory.describe_channel(GUILD, thread)
    assert (described.private, described.parent_channel_id) == (True, CHANNEL)
    assert discord.calls.count(("channel", CHANNEL)) == 2


def test_what_discord_will_not_tell_makes_the_channel_private(directory, discord):
    discord.fail_roles = True
    assert directory.describe_channel(GUILD, parse_channel(discord.channels[CHANNEL])).private is True
    del discord.channels[CHANNEL]
    discord.fail_roles = False
    assert directory.describe_channel(GUILD, parse_channel(discord.channels[THREAD])).private is True


def test_members_and_strangers_are_cached(directory, discord, clock):
    assert directory.member(GUILD, "7").user.username == "alice"
    assert directory.member(GUILD, "8") is None
    assert directory.member(GUILD, "7") is not None and directory.member(GUILD, "8") is None
    assert discord.calls == [("member", "7"), ("member", "8")]
    clock[0] = 61
    directory.member(GUILD, "8")
    assert discord.calls[-1] == ("member", "8")


def test_the_guilds_public_channels_are_named_from_one_cached_request(directory, discord, clock):
    # a private channel's name is not for every channel to read: mentions of it stay unnamed
    expected = {CHANNEL: "general", "101": "random", "103": "Text Channels"}
    assert directory.channel_names(GUILD, ELSEWHERE, NO_SETTINGS) == expected
    assert directory.channel_names(GUILD, ELSEWHERE, NO_SETTINGS) == expected
    assert discord.calls.count(("channels", GUILD)) == 1  # within the minute: no new request
    clock[0] = 61
    directory.channel_names(GUILD, ELSEWHERE, NO_SETTINGS)
    assert discord.calls.count(("channels", GUILD)) == 2


def test_a_channel_is_named_where_its_memory_may_be_recalled_after_the_servers_overrides(directory):
    # Given the manager made #general private and #mods-only public
    overrides = {CHANNEL: PrivacyMode.PRIVATE, "102": PrivacyMode.PUBLIC}
    policy = PrivacyPolicy(GUILD, overrides)
    # Then elsewhere #general is not named and #mods-only is; in #general and its threads, both are
    assert directory.channel_names(GUILD, ELSEWHERE, policy).keys() == {"101", "102", "103"}
    in_thread = Place(GUILD, THREAD, CHANNEL)
    assert directory.channel_names(GUILD, in_thread, policy).keys() == {CHANNEL, "101", "102", "103"}
    # and the bypass, which widens what may be read, names no private channel
    bypass = PrivacyPolicy(GUILD, {CHANNEL: PrivacyMode.PRIVATE}, bypass=True)
    assert directory.channel_names(GUILD, ELSEWHERE, bypass).keys() == {"101", "103"}


def test_channels_discord_will_not_list_are_not_named(directory, discord):
    discord.fail_channels = True
    assert directory.channel_names(GUILD, ELSEWHERE, NO_SETTINGS) == {}
    discord.fail_channels, discord.fail_roles = False, True
    # without the roles every channel is private
    assert directory.channel_names(GUILD, ELSEWHERE, NO_SETTINGS) == {}
