"""A guild's channels, roles and overwrites as the guild directory parses them: once, never failing,
what does not read left out or unknown (which the privacy rules count as private)."""

from __future__ import annotations

from kioku.discord.guild import Channel, Overwrite, Role, parse_channel, parse_channels, parse_roles
from kioku.discord.protocol import ChannelType

GUILD = "900"


def test_a_channel_reads_its_type_name_parent_and_overwrites():
    # Given a thread's parent channel as GET /channels/{id} returns it
    data = {
        "id": "100",
        "type": ChannelType.GUILD_TEXT,
        "name": "general",
        "parent_id": "77",
        "permission_overwrites": [
            {"id": GUILD, "type": 0, "allow": "0", "deny": "1024"},
            {"id": "5", "type": "1", "allow": "1024"},
            "not an overwrite",
        ],
    }
    # When it is parsed
    channel = parse_channel(data)
    # Then it reads as Discord means it; a member overwrite is not a role's
    assert channel == Channel(
        id="100",
        type=ChannelType.GUILD_TEXT,
        name="general",
        parent_id="77",
        overwrites=(
            Overwrite(GUILD, for_role=True, allow=0, deny=1024),
            Overwrite("5", for_role=False, allow=1024),
        ),
    )
    assert not channel.is_thread


def test_what_does_not_read_is_unknown():
    channel = parse_channel(
        {"id": "250", "type": "11", "name": 5, "parent_id": True, "permission_overwrites": 7}
    )
    assert channel == Channel(id="250")
    assert parse_channel({"id": "250", "type": ChannelType.PUBLIC_THREAD, "parent_id": 100}).is_thread
    assert parse_channel({"id": "250", "parent_id": 100}).parent_id == "100"


def test_an_overwrite_without_a_type_is_a_roles_and_bits_that_do_not_read_grant_nothing():
    (overwrite,) = parse_channel(
        {"id": "1", "permission_overwrites": [{"id": GUILD, "allow": "x"}]}
    ).overwrites
    assert overwrite == Overwrite(GUILD, for_role=True, allow=0, deny=0)


def test_roles_read_their_bits_and_names_and_unread_roles_stay_unknown():
    roles = parse_roles(
        [{"id": GUILD, "name": "@everyone", "permissions": "1024"}, {"id": 6, "permissions": "x"}, "x"]
    )
    assert roles == (Role(GUILD, "@everyone", 1024), Role("6", "", None))
    assert parse_roles(None) is None


def test_a_guilds_channel_list_keeps_the_objects_in_order():
    assert [channel.id for channel in parse_channels([{"id": "2"}, None, {"id": "1"}])] == ["2", "1"]
    assert parse_channels({"id": "1"}) == ()
