"""Where memory may be recalled: the privacy rules every read of memory goes through.

Privacy is Discord's: a guild channel is private when @everyone (the role whose id is the guild id)
cannot view it after the channel's permission overwrites; a private thread is private; other
threads are as private as their parent. What is written is stamped with where it was written (an
``Origin``); what a turn may see is decided by ``may_recall`` from that stamp and the turn's
``Place``. The rule is stricter than seed 000: memory written in a private channel or private
thread is recalled only in that channel and its threads, never in another channel.

Whatever cannot be told for sure counts as private: a leak is worse than a missing memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final

from kioku.discord.guild import Channel, Overwrite, Role
from kioku.discord.protocol import THREAD_TYPES, ChannelType, Permission
from kioku.discord.snowflake import is_snowflake

MAX_PRIVACY_OVERRIDES: Final = 500
"""Channel overrides a server may hold: enough for any real server, small enough for its config item."""


class PrivacyMode(StrEnum):
    """An admin's override of a channel's privacy (``/server privacy channel``)."""

    AUTO = "auto"
    PRIVATE = "private"
    PUBLIC = "public"


@dataclass(frozen=True, slots=True)
class Place:
    """Where a turn happens: a guild channel (maybe a thread, with its parent) or a DM (no guild)."""

    guild_id: str | None
    channel_id: str
    parent_channel_id: str | None = None


@dataclass(frozen=True, slots=True)
class Origin:
    """Where something was written, and whether Discord made that place private then.

    ``private_thread``: a private thread never follows its parent's privacy or overrides.
    """

    guild_id: str | None
    channel_id: str | None
    parent_channel_id: str | None = None
    private: bool = True
    private_thread: bool = False

    @classmethod
    def unknown(cls, guild_id: str | None = None) -> Origin:
        """Something stored before origins were recorded: private, with no channel to be recalled in."""
        return cls(guild_id=guild_id, channel_id=None, private=True)

    @classmethod
    def direct_message(cls, channel_id: str) -> Origin:
        return cls(guild_id=None, channel_id=channel_id, private=False)


@dataclass(frozen=True, slots=True)
class PrivacyPolicy:
    """A server's privacy settings: per-channel overrides and seed 000's bypass."""

    guild_id: str | None = None
    overrides: Mapping[str, PrivacyMode] = field(default_factory=dict)
    bypass: bool = False

    @property
    def reads_private_rows(self) -> bool:
        """Whether a turn may be shown private memory of other channels of this server at all."""
        return self.bypass or PrivacyMode.PUBLIC in self.overrides.values()


@dataclass(frozen=True, slots=True)
class ChannelDescription:
    """What a turn knows of its channel: its name, thread parent, and Discord's privacy."""

    channel_id: str
    name: str | None = None
    parent_channel_id: str | None = None
    private: bool = True
    private_thread: bool = False

    def origin(self, guild_id: str) -> Origin:
        """Where this channel is, as what is written there is stamped."""
        return Origin(guild_id, self.channel_id, self.parent_channel_id, self.private, self.private_thread)


def everyone_can_view(
    guild_id: str, roles: Iterable[Role] | None, overwrites: Iterable[Overwrite]
) -> bool | None:
    """Whether @everyone may view a channel, computed as Discord does; None when it cannot be told
    (the @everyone role unknown and no overwrite of it deciding)."""
    everyone_role = next((role for role in roles or () if role.id == guild_id), None)
    base = everyone_role.permissions if everyone_role is not None else None
    if base is not None and base & Permission.ADMINISTRATOR:
        return True
    allow, deny = everyone_overwrite(guild_id, overwrites)
    if deny & Permission.VIEW_CHANNEL:
        return False
    if allow & Permission.VIEW_CHANNEL:
        return True
    return None if base is None else bool(base & Permission.VIEW_CHANNEL)


def everyone_overwrite(guild_id: str, overwrites: Iterable[Overwrite]) -> tuple[int, int]:
    """The (allow, deny) bits of the channel's overwrite for the @everyone role; (0, 0) if none."""
    for overwrite in overwrites:
        if overwrite.id == guild_id and overwrite.for_role:
            return overwrite.allow, overwrite.deny
    return 0, 0


def manages_server(
    guild_id: str,
    user_id: str,
    *,
    owner_id: str | None,
    member_role_ids: Iterable[str],
    roles: Iterable[Role] | None,
) -> bool:
    """Whether a member may manage the server: its owner, or a member whose roles (with @everyone)
    grant Manage Server or Administrator. Unknown roles grant nothing."""
    if owner_id is not None and owner_id == user_id:
        return True
    held = {guild_id, *(str(role_id) for role_id in member_role_ids)}
    granted = 0
    for role in roles or ():
        if role.id in held:
            granted |= role.permissions or 0
    return bool(granted & (Permission.ADMINISTRATOR | Permission.MANAGE_GUILD))


def describe_channel(
    guild_id: str, channel: Channel, roles: Iterable[Role] | None, parent: Channel | None = None
) -> ChannelDescription:
    """The privacy of ``channel`` (a thread: with its ``parent`` channel); unknown is private."""
    channel_id, name, parent_id = channel.id, channel.name, channel.parent_id
    if channel.type == ChannelType.PRIVATE_THREAD:
        return ChannelDescription(channel_id, name, parent_id, private=True, private_thread=True)
    if channel.type in THREAD_TYPES:
        if parent is None or parent.id != parent_id:
            return ChannelDescription(channel_id, name, parent_id, private=True)
        viewable = everyone_can_view(guild_id, roles, parent.overwrites)
    else:
        # A channel in a category has a parent_id too, but its own overwrites already decide.
        viewable = everyone_can_view(guild_id, roles, channel.overwrites)
        parent_id = None
    return ChannelDescription(channel_id, name, parent_id, private=viewable is not True)


def effective_private(origin: Origin, policy: PrivacyPolicy) -> bool:
    """``origin``'s privacy after the admin overrides of its own server (a thread follows its parent's
    override, a private thread does not)."""
    if origin.channel_id is None:
        return True
    if origin.guild_id is None or origin.guild_id != policy.guild_id:
        return origin.private
    if origin.private_thread:
        return True  # a private thread is private whatever an override says
    mode = policy.overrides.get(origin.channel_id)
    if mode is None and origin.parent_channel_id:
        mode = policy.overrides.get(origin.parent_channel_id)
    if mode is PrivacyMode.PRIVATE:
        return True
    if mode is PrivacyMode.PUBLIC:
        return False
    return origin.private


def rewritten_origin(old: Origin, new: Origin, policy: PrivacyPolicy) -> Origin:
    """Where a memory belongs once rewritten at ``new``: the more private of the two origins.

    ``new``, unless ``old`` is recalled in fewer places: a private channel is narrower than a public
    one, and of two private places only the same channel or one of its threads is. So a memory the
    bypass let a turn reach in another channel keeps its origin: the bypass widens what may be read,
    never where a memory was said.
    """
    if not effective_private(old, policy):
        return new
    if not effective_private(new, policy):
        return old
    within_old = new.guild_id == old.guild_id and old.channel_id in (new.channel_id, new.parent_channel_id)
    return new if within_old else old


def may_recall(origin: Origin, place: Place, policy: PrivacyPolicy) -> bool:
    """Whether memory written at ``origin`` may be shown in a turn at ``place`` of ``policy``'s server.

    Only within the server it was written in; there, public memory anywhere, private memory only in
    its own channel and that channel's threads (or anywhere, with the server's bypass on).
    """
    if origin.guild_id is None or origin.guild_id != place.guild_id or origin.channel_id is None:
        return False
    if place.guild_id != policy.guild_id:
        return False
    if not effective_private(origin, policy) or policy.bypass:
        return True
    return origin.channel_id in (place.channel_id, place.parent_channel_id)


def may_name_channel(channel: Origin, place: Place, policy: PrivacyPolicy) -> bool:
    """Whether a turn at ``place`` may read a mention of ``channel`` as its name: where the channel's
    memory may be recalled, after the server's overrides, the bypass aside. The name stays in what
    the turn keeps (its own line in short-term memory), which is recalled after the bypass is off."""
    return may_recall(channel, place, replace(policy, bypass=False))


def origin_known_to(origin: Origin, *, person_id: str, author_id: str, place: Place) -> bool:
    """Whether ``person_id`` may be told where something about them was said: in a DM (theirs), in a
    channel that was public then, by themself, or in the channel (or a thread of it) they ask from.
    Anywhere else kioku cannot tell that they see the channel, so it does not name it to them."""
    if origin.channel_id is None:
        return False
    if origin.guild_id is None or not origin.private or author_id == person_id:
        return True
    return origin.guild_id == place.guild_id and origin.channel_id in (
        place.channel_id,
        place.parent_channel_id,
    )


def may_recall_personal(
    origin: Origin, *, subject_id: str, author_id: str, place: Place, policy: PrivacyPolicy
) -> bool:
    """A personal memory about ``subject_id``, shown in a turn where the subject takes part.

    What the subject said about themself follows them (every server, their DM), except what they said
    in a private channel: that stays in that channel and its threads, like all private memory (not
    even the subject's DM shows it). What someone else said about them stays in the server where it
    was said, under the channel rule.
    """
    if author_id == subject_id:
        if origin.guild_id is None:
            return origin.channel_id is not None and not origin.private
        if not effective_private(origin, policy):
            return True
        return may_recall(origin, place, policy)
    return may_recall(origin, place, policy)


def parse_overrides(raw: Any) -> dict[str, PrivacyMode]:
    """Stored overrides, damaged entries skipped; ``auto`` is the absence of an override."""
    overrides: dict[str, PrivacyMode] = {}
    if isinstance(raw, Mapping):
        for channel_id, mode in raw.items():
            try:
                parsed = PrivacyMode(str(mode))
            except ValueError:
                continue
            if parsed is not PrivacyMode.AUTO and is_snowflake(channel_id):
                overrides[channel_id] = parsed
    return overrides
