"""What a turn asks Discord about its guild: how private its channel is, and who is a member.

Channels and roles enter here: each is parsed once into ``kioku.discord.guild``'s types, which the
privacy rules read.

The channel is asked every turn (its permission overwrites decide what may be recalled elsewhere,
and a channel can turn private at any moment); the @everyone role, the guild's channel list (to
name the channels a message mentions) and member lookups change rarely and are kept for a short
while per container.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from kioku.adapters.discord_rest import DiscordError, DiscordRest
from kioku.discord.guild import Channel, Role, parse_channels, parse_roles
from kioku.discord.models import Member
from kioku.discord.protocol import Permission
from kioku.domain.privacy import (
    ChannelDescription,
    Place,
    PrivacyPolicy,
    describe_channel,
    manages_server,
    may_name_channel,
)

logger = logging.getLogger(__name__)

CACHE_SECONDS: Final = 60.0
MAX_CACHED: Final = 1000


@dataclass
class _TtlCache:
    seconds: float
    clock: Callable[[], float]
    _entries: dict[tuple[str, ...], tuple[float, Any]] = field(default_factory=dict)

    def get(self, key: tuple[str, ...], load: Callable[[], Any]) -> Any:
        now = self.clock()
        hit = self._entries.get(key)
        if hit is not None and now - hit[0] < self.seconds:
            return hit[1]
        value = load()
        if len(self._entries) >= MAX_CACHED:
            self._entries.clear()
        self._entries[key] = (now, value)
        return value


class GuildDirectory:
    def __init__(
        self,
        discord: DiscordRest,
        *,
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._discord = discord
        self._roles = _TtlCache(cache_seconds, clock)
        self._members = _TtlCache(cache_seconds, clock)
        self._guilds = _TtlCache(cache_seconds, clock)
        self._channels = _TtlCache(cache_seconds, clock)

    def describe_channel(self, guild_id: str, channel: Channel) -> ChannelDescription:
        """``channel``'s privacy (as ``GET /channels/{id}`` read it); whatever Discord will not
        tell (the roles, a thread's parent) makes it private."""
        parent = None
        if channel.is_thread and channel.parent_id:
            try:
                parent = self._discord.get_channel(channel.parent_id)
            except (DiscordError, ValueError) as exc:
                logger.warning("the thread's parent channel could not be read (%s); treated as private", exc)
        return describe_channel(guild_id, channel, self.guild_roles(guild_id), parent)

    def guild_roles(self, guild_id: str) -> tuple[Role, ...] | None:
        """The guild's roles; None when Discord will not tell."""
        try:
            return self._roles.get(
                ("roles", guild_id), lambda: parse_roles(self._discord.get_guild_roles(guild_id))
            )
        except DiscordError as exc:
            logger.warning("the guild's roles could not be read (%s); its channels count as private", exc)
            return None

    def channel_names(self, guild_id: str, place: Place, policy: PrivacyPolicy) -> dict[str, str]:
        """The names of the guild's channels a turn at ``place`` may read, by id: a message may
        mention any channel, and a channel whose memory the turn could not be shown keeps its name
        (``may_name_channel``: Discord's privacy after the server's overrides). Nothing when Discord
        will not tell."""
        try:
            channels = self._channels.get(
                ("channels", guild_id), lambda: parse_channels(self._discord.get_guild_channels(guild_id))
            )
        except DiscordError as exc:
            logger.warning("the guild's channels could not be read (%s); mentions of them stay unnamed", exc)
            return {}
        roles = self.guild_roles(guild_id)
        named = {}
        for channel in channels:
            if not channel.name:
                continue
            description = describe_channel(guild_id, channel, roles)
            if description.name and may_name_channel(description.origin(guild_id), place, policy):
                named[description.channel_id] = description.name
        return named

    def manages_server(self, guild_id: str, user_id: str, member: Member | None) -> bool:
        """Whether the member may manage the server: the interaction's ``permissions`` when Discord
        gave them, else the owner or the member's roles (from MESSAGE_CREATE) against the guild's
        roles. Whatever cannot be read grants nothing."""
        member = member or Member()
        if member.permissions is not None:
            return bool(member.permissions & (Permission.ADMINISTRATOR | Permission.MANAGE_GUILD))
        try:
            owner = self._guilds.get(("guild", guild_id), lambda: self._discord.get_guild(guild_id)).get(
                "owner_id"
            )
        except DiscordError as exc:
            logger.warning("the guild could not be read (%s); its owner is not known", exc)
            owner = None
        return manages_server(
            guild_id,
            user_id,
            owner_id=str(owner) if owner else None,
            member_role_ids=member.roles,
            roles=self.guild_roles(guild_id),
        )

    def member(self, guild_id: str, user_id: str) -> Member | None:
        """The member, None for someone not in the guild; raises ``DiscordError`` when Discord fails."""
        return self._members.get(
            ("member", guild_id, user_id), lambda: self._discord.get_guild_member(guild_id, user_id)
        )
