"""Channel events the relay forwards: a channel or thread changed or was deleted.

Each is validated like a message (never trust the relay, even signed) and reduced to what stored
memory needs: which channel, of which guild, and what Discord now says of its privacy, when the
event alone can tell (an overwrite of @everyone that allows or denies View Channel, a private
thread). When it cannot, the privacy is left as stored: the next turn there describes it in full.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from kioku.domain.privacy import (
    THREAD_TYPES,
    VIEW_CHANNEL,
    ChannelType,
    everyone_overwrite,
)

MAX_OVERWRITES: Final = 1000
MAX_NAME_CHARS: Final = 100
MAX_PERMISSION_DIGITS: Final = 40


class ChannelEventType(StrEnum):
    CHANNEL_UPDATE = "CHANNEL_UPDATE"
    CHANNEL_DELETE = "CHANNEL_DELETE"
    THREAD_UPDATE = "THREAD_UPDATE"
    THREAD_DELETE = "THREAD_DELETE"

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


class InvalidChannelEvent(ValueError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_channel_event(kind: ChannelEventType, data: Any) -> ChannelEvent:
    """Validate the ``d`` of a channel event; raises ``InvalidChannelEvent`` with the reason."""
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
        private=None if kind.deletes or guild_id is None else _privacy(guild_id, channel_type, overwrites),
    )


def _privacy(guild_id: str, channel_type: int, overwrites: list[Any]) -> bool | None:
    if channel_type == ChannelType.PRIVATE_THREAD:
        return True
    if channel_type in THREAD_TYPES:
        return None  # a public thread follows its parent: its parent's events re-stamp it
    allow, deny = everyone_overwrite(guild_id, overwrites)
    if deny & VIEW_CHANNEL:
        return True
    if allow & VIEW_CHANNEL:
        return False
    return None


def _check_overwrite(overwrite: Any) -> None:
    if not isinstance(overwrite, Mapping):
        raise InvalidChannelEvent("permission_overwrites[] is not an object")
    _snowflake(overwrite.get("id"), "permission_overwrites[].id")
    for field in ("allow", "deny"):
        value = overwrite.get(field, "0")
        if not (
            isinstance(value, str)
            and value.isascii()
            and value.isdigit()
            and len(value) <= MAX_PERMISSION_DIGITS
        ):
            raise InvalidChannelEvent(f"permission_overwrites[].{field} is not a permission bit string")


def _snowflake(value: Any, name: str) -> str:
    if isinstance(value, str) and 0 < len(value) <= 20 and value.isascii() and value.isdigit():
        return value
    raise InvalidChannelEvent(f"{name} is not a snowflake id string")


def _optional_snowflake(value: Any, name: str) -> str | None:
    return None if value is None else _snowflake(value, name)
