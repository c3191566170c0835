"""A guild's channels, roles and permission overwrites, typed and parsed once where they enter
(the guild directory, a GUILD_CREATE): the privacy rules read these, never Discord's dicts.

Parsing never fails: what does not read is left out (a role or an overwrite that is not an object)
or unknown (a type, a parent, bits), and the privacy rules count the unknown as private.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kioku.discord.protocol import THREAD_TYPES, OverwriteType, permission_bits


@dataclass(frozen=True, slots=True)
class Role:
    id: str
    name: str = ""
    permissions: int | None = None
    """None: bits that do not read, which grant nothing and tell nothing."""


@dataclass(frozen=True, slots=True)
class Overwrite:
    """A channel's permission overwrite, for a role (``for_role``) or a member."""

    id: str
    for_role: bool = True
    allow: int = 0
    deny: int = 0


@dataclass(frozen=True, slots=True)
class Channel:
    id: str
    type: int | None = None
    name: str | None = None
    parent_id: str | None = None
    """A thread's channel, or a channel's category."""
    overwrites: tuple[Overwrite, ...] = ()

    @property
    def is_thread(self) -> bool:
        return self.type in THREAD_TYPES


def parse_roles(items: Any) -> tuple[Role, ...] | None:
    """The roles of ``GET /guilds/{id}/roles`` (or a GUILD_CREATE); None stays None (not read)."""
    if items is None:
        return None
    return tuple(
        Role(
            id=str(item.get("id")),
            name=str(item.get("name") or ""),
            permissions=permission_bits(item.get("permissions")),
        )
        for item in _iterable(items)
        if isinstance(item, Mapping)
    )


def parse_channel(data: Mapping[str, Any]) -> Channel:
    """A channel object (``GET /channels/{id}``, a guild's list, a GUILD_CREATE's)."""
    name = data.get("name")
    return Channel(
        id=str(data.get("id")),
        type=_integer(data.get("type")),
        name=name if isinstance(name, str) else None,
        parent_id=_optional_id(data.get("parent_id")),
        overwrites=tuple(
            _overwrite(item)
            for item in _iterable(data.get("permission_overwrites"))
            if isinstance(item, Mapping)
        ),
    )


def parse_channels(items: Any) -> tuple[Channel, ...]:
    """The channels of ``GET /guilds/{id}/channels`` that are objects, in order."""
    return tuple(parse_channel(item) for item in _iterable(items) if isinstance(item, Mapping))


def _overwrite(data: Mapping[str, Any]) -> Overwrite:
    return Overwrite(
        id=str(data.get("id")),
        for_role=data.get("type", OverwriteType.ROLE) in (OverwriteType.ROLE, str(OverwriteType.ROLE)),
        allow=permission_bits(data.get("allow")) or 0,
        deny=permission_bits(data.get("deny")) or 0,
    )


def _iterable(value: Any) -> Iterable[Any]:
    return value if isinstance(value, list | tuple) else ()


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _optional_id(value: Any) -> str | None:
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) and str(value) else None
