"""Channel events the relay forwards: a channel or thread changed or was deleted, or a guild's
whole channel list arrived (``GUILD_CREATE``, sent by Discord for every guild on each new session),
or the bot left a guild (``GUILD_DELETE``).

Each is validated like a message (never trust the relay, even signed) and reduced to what stored
memory needs: which channel, of which guild, and what Discord now says of its privacy, when the
event alone can tell (an overwrite of @everyone that allows or denies View Channel, a private
thread). When it cannot, the privacy is left as stored: the next turn there describes it in full.
A ``GUILD_CREATE`` always can: it carries the @everyone role with the channels, so every channel and
active thread it lists is described in full (unknown is private, as for a turn).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from kioku.clock import InvalidTime, parse_time
from kioku.discord.guild import Overwrite, parse_channel, parse_roles
from kioku.discord.protocol import THREAD_TYPES, ChannelType, GatewayEvent, Permission, permission_bits
from kioku.discord.snowflake import is_snowflake
from kioku.domain.privacy import ChannelDescription, describe_channel, everyone_overwrite

MAX_OVERWRITES: Final = 1000
MAX_NAME_CHARS: Final = 100
MAX_GUILD_CHANNELS: Final = 1000
"""Discord allows 500 channels (categories included) a guild; twice that is malformed."""
MAX_GUILD_THREADS: Final = 5000
MAX_GUILD_ROLES: Final = 1000
"""Discord allows 250 roles a guild."""


class ChannelEventType(StrEnum):
    CHANNEL_UPDATE = GatewayEvent.CHANNEL_UPDATE
    CHANNEL_DELETE = GatewayEvent.CHANNEL_DELETE
    THREAD_UPDATE = GatewayEvent.THREAD_UPDATE
    THREAD_DELETE = GatewayEvent.THREAD_DELETE

    @property
    def deletes(self) -> bool:
        return self in (ChannelEventType.CHANNEL_DELETE, ChannelEventType.THREAD_DELETE)


@dataclass(frozen=True, slots=True)
class ChannelEvent:
    """``private``: True or False when the event itself tells; None when only a full description can."""

    kind: ChannelEventType
    channel_id: str
    guild_id: str | None
    parent_id: str | None
    channel_type: int
    name: str | None
    private: bool | None
    taken_at: datetime | None = None
    """When the relay received the event (its envelope's ``received_at``); None: unknown."""


class InvalidChannelEvent(ValueError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_channel_event(kind: ChannelEventType, data: Any, received_at: Any = None) -> ChannelEvent:
    """Validate the ``d`` of a channel event (and the envelope's ``received_at``); raises
    ``InvalidChannelEvent`` with the reason."""
    if not isinstance(data, Mapping):
        raise InvalidChannelEvent("d is not an object")
    channel_id = _snowflake(data.get("id"), "id")
    guild_id = _optional_snowflake(data.get("guild_id"), "guild_id")
    parent_id = _optional_snowflake(data.get("parent_id"), "parent_id")
    channel_type = data.get("type")
    if not isinstance(channel_type, int) or isinstance(channel_type, bool):
        raise InvalidChannelEvent("type is not an integer")
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME_CHARS):
        raise InvalidChannelEvent(f"name is not a string of at most {MAX_NAME_CHARS} characters")
    overwrites = data.get("permission_overwrites", [])
    if not isinstance(overwrites, list) or len(overwrites) > MAX_OVERWRITES:
        raise InvalidChannelEvent(f"permission_overwrites is not a list of at most {MAX_OVERWRITES}")
    for overwrite in overwrites:
        _check_overwrite(overwrite)
    return ChannelEvent(
        kind=kind,
        channel_id=channel_id,
        guild_id=guild_id,
        parent_id=parent_id,
        channel_type=channel_type,
        name=name,
        private=None
        if kind.deletes or guild_id is None
        else _privacy(guild_id, channel_type, parse_channel(data).overwrites),
        taken_at=_optional_time(received_at, "received_at"),
    )


def _privacy(guild_id: str, channel_type: int, overwrites: tuple[Overwrite, ...]) -> bool | None:
    if channel_type == ChannelType.PRIVATE_THREAD:
        return True
    if channel_type in THREAD_TYPES:
        return None  # a public thread follows its parent: its parent's events re-stamp it
    allow, deny = everyone_overwrite(guild_id, overwrites)
    if deny & Permission.VIEW_CHANNEL:
        return True
    if allow & Permission.VIEW_CHANNEL:
        return False
    return None


def _check_overwrite(overwrite: Any) -> None:
    if not isinstance(overwrite, Mapping):
        raise InvalidChannelEvent("permission_overwrites[] is not an object")
    _snowflake(overwrite.get("id"), "permission_overwrites[].id")
    for bits in ("allow", "deny"):
        _permission_bits(overwrite.get(bits, "0"), f"permission_overwrites[].{bits}")


def _snowflake(value: Any, name: str) -> str:
    if is_snowflake(value):
        return value
    raise InvalidChannelEvent(f"{name} is not a snowflake id string")


def _optional_snowflake(value: Any, name: str) -> str | None:
    return None if value is None else _snowflake(value, name)


@dataclass(frozen=True, slots=True)
class GuildSnapshot:
    """A guild's channels as ``GUILD_CREATE`` listed them, each described as a turn would describe it.

    ``channels``: every channel and active thread listed, by id. ``taken_at``: when the relay received
    it (None: not said; the function's clock stands in). ``available`` False: Discord sent the guild
    as unavailable (an outage), with no channels to go by.
    """

    guild_id: str
    channels: Mapping[str, ChannelDescription] = field(default_factory=dict)
    thread_ids: frozenset[str] = frozenset()
    category_ids: frozenset[str] = frozenset()
    taken_at: datetime | None = None
    available: bool = True

    def fate_of(self, channel_id: str, parent_channel_id: str | None, private_thread: bool) -> RowFate:
        """What becomes of a stored row of ``channel_id`` (its thread parent and private-thread flag as
        stored): described as listed; deleted when its channel is not listed (deleted while nobody
        was listening, or the bot can no longer see it: either way nothing of it may be shown); a
        thread not listed (archived: the list holds active threads only) follows its channel, but
        only toward private, since the list cannot say it is still a public thread."""
        listed = self.channels.get(channel_id)
        if listed is not None:
            return RowFate(description=listed)
        parent = self.channels.get(parent_channel_id or "")
        if parent is None or parent_channel_id in self.thread_ids or parent_channel_id in self.category_ids:
            return RowFate(delete=True)
        if private_thread or parent.private:
            return RowFate(
                description=ChannelDescription(
                    channel_id, None, parent_channel_id, private=True, private_thread=private_thread
                )
            )
        return RowFate()


@dataclass(frozen=True, slots=True)
class RowFate:
    """``delete`` the row, or stamp it with ``description``; neither: leave it as it is."""

    delete: bool = False
    description: ChannelDescription | None = None


def parse_guild_create(data: Any, received_at: Any = None) -> GuildSnapshot:
    """Validate the ``d`` of a ``GUILD_CREATE`` (and the envelope's ``received_at``); raises
    ``InvalidChannelEvent`` with the reason."""
    if not isinstance(data, Mapping):
        raise InvalidChannelEvent("d is not an object")
    guild_id = _snowflake(data.get("id"), "id")
    taken_at = _optional_time(received_at, "received_at")
    if data.get("unavailable") is True:
        return GuildSnapshot(guild_id, taken_at=taken_at, available=False)
    channels = _list(data.get("channels"), "channels", MAX_GUILD_CHANNELS)
    threads = _list(data.get("threads", []), "threads", MAX_GUILD_THREADS)
    roles = _list(data.get("roles", []), "roles", MAX_GUILD_ROLES)  # none: only overwrites can say public
    for role in roles:
        if not isinstance(role, Mapping):
            raise InvalidChannelEvent("roles[] is not an object")
        _snowflake(role.get("id"), "roles[].id")
        _permission_bits(role.get("permissions", "0"), "roles[].permissions")
    for kind, listed in (("channels", channels), ("threads", threads)):
        for channel in listed:
            _check_listed_channel(channel, kind)
    guild_roles = parse_roles(roles)
    by_id = {str(channel["id"]): parse_channel(channel) for channel in channels}
    described = {
        channel_id: describe_channel(guild_id, channel, guild_roles) for channel_id, channel in by_id.items()
    }
    thread_ids: set[str] = set()
    for thread in map(parse_channel, threads):
        described[thread.id] = describe_channel(
            guild_id, thread, guild_roles, by_id.get(str(thread.parent_id))
        )
        thread_ids.add(thread.id)
    categories = frozenset(i for i, c in by_id.items() if c.type == ChannelType.GUILD_CATEGORY)
    return GuildSnapshot(guild_id, described, frozenset(thread_ids), categories, taken_at)


@dataclass(frozen=True, slots=True)
class GuildRemoval:
    """A ``GUILD_DELETE``: the bot was removed from the guild (or the guild deleted); ``outage`` when
    Discord sent it as ``unavailable``, which removes nothing. ``taken_at``: as for ``GuildSnapshot``."""

    guild_id: str
    outage: bool = False
    taken_at: datetime | None = None


def parse_guild_delete(data: Any, received_at: Any = None) -> GuildRemoval:
    """Validate the ``d`` of a ``GUILD_DELETE`` (``{"id", "unavailable"?}``); raises
    ``InvalidChannelEvent`` with the reason."""
    if not isinstance(data, Mapping):
        raise InvalidChannelEvent("d is not an object")
    guild_id = _snowflake(data.get("id"), "id")
    unavailable = data.get("unavailable")
    if unavailable is not None and not isinstance(unavailable, bool):
        raise InvalidChannelEvent("unavailable is not a boolean")
    return GuildRemoval(
        guild_id, outage=unavailable is True, taken_at=_optional_time(received_at, "received_at")
    )


def _check_listed_channel(channel: Any, kind: str) -> None:
    if not isinstance(channel, Mapping):
        raise InvalidChannelEvent(f"{kind}[] is not an object")
    _snowflake(channel.get("id"), f"{kind}[].id")
    _optional_snowflake(channel.get("parent_id"), f"{kind}[].parent_id")
    channel_type = channel.get("type")
    if not isinstance(channel_type, int) or isinstance(channel_type, bool):
        raise InvalidChannelEvent(f"{kind}[].type is not an integer")
    if kind == "threads" and channel_type not in THREAD_TYPES:
        raise InvalidChannelEvent("threads[].type is not a thread type")
    name = channel.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME_CHARS):
        raise InvalidChannelEvent(f"{kind}[].name is not a string of at most {MAX_NAME_CHARS} characters")
    overwrites = _list(
        channel.get("permission_overwrites", []), f"{kind}[].permission_overwrites", MAX_OVERWRITES
    )
    for overwrite in overwrites:
        _check_overwrite(overwrite)


def _list(value: Any, name: str, limit: int) -> list[Any]:
    if not isinstance(value, list) or len(value) > limit:
        raise InvalidChannelEvent(f"{name} is not a list of at most {limit}")
    return value


def _permission_bits(value: Any, name: str) -> None:
    if not isinstance(value, str) or permission_bits(value) is None:
        raise InvalidChannelEvent(f"{name} is not a permission bit string")


def _optional_time(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except InvalidTime:
        raise InvalidChannelEvent(f"{name} is not an RFC 3339 time with an offset") from None
