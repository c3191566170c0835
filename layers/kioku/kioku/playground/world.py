"""The simulated Discord the playground talks in: one guild, a few channels (one private, one
thread), three members, and a DM channel each.

Privacy is Discord's, as on a real server: #secret's permission overwrites deny View Channel to
@everyone (the role whose id is the guild's), and kioku works that out from ``GET /channels/{id}``
and ``GET /guilds/{id}/roles`` like it would in production.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kioku.discord.protocol import OverwriteType, Permission

GUILD_ID: Final = "200000000000000001"


def everyone_denied_view() -> list[dict]:
    """The overwrites Discord writes when a channel is made private: @everyone may not view it."""
    return [{"id": GUILD_ID, "type": OverwriteType.ROLE, "allow": "0", "deny": str(Permission.VIEW_CHANNEL)}]


@dataclass(frozen=True)
class Channel:
    name: str
    channel_id: str
    guild_id: str | None = GUILD_ID
    parent_id: str | None = None
    permission_overwrites: tuple[dict, ...] = ()

    @property
    def private(self) -> bool:
        return any(
            int(o["deny"]) & Permission.VIEW_CHANNEL
            for o in self.permission_overwrites
            if o["id"] == GUILD_ID
        )

    @property
    def label(self) -> str:
        if self.guild_id is None:
            return "DM"
        prefix = "thread " if self.parent_id else "#"
        return f"{prefix}{self.name}{' (private)' if self.private else ''}"


SEES_CHANNEL_PERMISSION: Final = str(Permission.VIEW_CHANNEL)
"""What Discord says every member who uses a command in a channel may do there: see it."""
MANAGE_SERVER_PERMISSION: Final = str(Permission.MANAGE_GUILD | Permission.VIEW_CHANNEL)


@dataclass(frozen=True)
class Member:
    key: str
    user_id: str
    username: str
    global_name: str | None
    dm_channel_id: str
    permissions: str = SEES_CHANNEL_PERMISSION

    def user(self) -> dict:
        return {"id": self.user_id, "username": self.username, "global_name": self.global_name, "bot": False}


CHANNELS: Final = (
    Channel("general", "300000000000000001"),
    Channel("random", "300000000000000002"),
    Channel("secret", "300000000000000003", permission_overwrites=tuple(everyone_denied_view())),
    Channel("plans", "300000000000000004", parent_id="300000000000000001"),
)
MEMBERS: Final = (
    Member("alice", "400000000000000001", "alice", "Alice", "310000000000000001", MANAGE_SERVER_PERMISSION),
    Member("bob", "400000000000000002", "bob", "Bobby", "310000000000000002"),
    Member("carol", "400000000000000003", "carol", None, "310000000000000003"),
)
OWNER: Final = MEMBERS[0]
"""Alice owns the guild. Discord lets the owner manage it whatever the roles say, and that is how a
chat turn, whose member carries no permissions, knows she manages the server."""


def dm_channel(member: Member) -> Channel:
    return Channel("dm", member.dm_channel_id, guild_id=None)


def find_channel(name: str, member: Member) -> Channel | None:
    name = name.lstrip("#").lower()
    if name in {"dm", "direct"}:
        return dm_channel(member)
    return next((channel for channel in CHANNELS if channel.name == name), None)


def find_member(key: str) -> Member | None:
    return next((member for member in MEMBERS if member.key == key.lower().lstrip("@")), None)
