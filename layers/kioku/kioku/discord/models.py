"""Discord's message object as kioku reads it, typed and parsed once, where it enters.

``parse_message`` reads a message the relay forwards (or a queued turn job carries): whatever the
addressing rules decide on must be well formed, or it raises ``MalformedMessage`` naming the field
(``author.id is not a snowflake id string``). ``parse_history`` reads what ``GET
/channels/{id}/messages`` returns: a message without an id or an author is left out, never fatal.
Either way, what only colours the dialogue (nicknames, attachments, embeds, stickers, reactions)
is kept when it reads and dropped when it does not. ``Message.to_dict`` writes the same shape back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, TypeGuard

from kioku.clock import InvalidTime, parse_time
from kioku.discord.protocol import MessageReferenceType, MessageType, permission_bits
from kioku.discord.snowflake import is_snowflake

MAX_CONTENT_CHARS: Final = 4000
"""Discord's own ceiling (Nitro): anything longer is not a real message."""
MAX_ATTACHMENTS: Final = 10
MAX_EMBEDS: Final = 10
MAX_MENTIONS: Final = 100


class MalformedMessage(ValueError):
    """A message kioku cannot take; ``reason`` names the field and what is wrong with it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class User:
    id: str
    username: str = ""
    global_name: str | None = None
    bot: bool = False

    def to_dict(self) -> dict[str, Any]:
        return _without_defaults(
            {"id": self.id, "username": self.username, "global_name": self.global_name, "bot": self.bot}
        )


@dataclass(frozen=True, slots=True)
class Member:
    """A guild member as a message or an interaction carries it."""

    nick: str | None = None
    roles: tuple[str, ...] = ()
    permissions: int | None = None
    """Only an interaction's member carries its permissions (in that channel)."""
    user: User | None = None
    """Only an interaction's member carries its user (a message's author is beside it); a message's
    member is what ``to_dict`` writes and ``parse_member`` reads, so neither carries it."""

    def to_dict(self) -> dict[str, Any]:
        permissions = None if self.permissions is None else str(self.permissions)
        return _without_defaults({"nick": self.nick, "roles": list(self.roles), "permissions": permissions})


@dataclass(frozen=True, slots=True)
class Mention:
    """A user a message mentions, with their member object when the message is from a guild."""

    user: User
    member: Member | None = None

    def to_dict(self) -> dict[str, Any]:
        return _without_defaults({**self.user.to_dict(), "member": _dict_of(self.member)})


@dataclass(frozen=True, slots=True)
class Attachment:
    filename: str = ""
    content_type: str = ""
    url: str = ""

    def to_dict(self) -> dict[str, Any]:
        return _without_defaults(
            {"filename": self.filename, "content_type": self.content_type, "url": self.url}
        )


@dataclass(frozen=True, slots=True)
class Embed:
    title: str | None = None
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _without_defaults({"title": self.title, "description": self.description})


@dataclass(frozen=True, slots=True)
class Reaction:
    emoji_name: str
    count: int
    emoji_id: str | None = None
    """A server's own emoji has an id (and a bare name, "kekw"); a Unicode emoji has none."""

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "emoji": {"id": self.emoji_id, "name": self.emoji_name}}


@dataclass(frozen=True, slots=True)
class MessageReference:
    message_id: str | None = None
    type: int | None = MessageReferenceType.DEFAULT
    """None: a type that is not a number, so neither a reply nor a forward."""

    def to_dict(self) -> dict[str, Any]:
        return {"message_id": self.message_id, "type": self.type}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a forwarded message quotes of the original (``message_snapshots[0].message``)."""

    content: str = ""
    attachments: tuple[Attachment, ...] = ()
    embeds: tuple[Embed, ...] = ()
    sticker_names: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return _without_defaults(
            {
                "content": self.content,
                "attachments": [attachment.to_dict() for attachment in self.attachments],
                "embeds": [embed.to_dict() for embed in self.embeds],
                "sticker_items": [{"name": name} for name in self.sticker_names],
            }
        )


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    author: User
    content: str = ""
    timestamp: datetime | None = None
    """When it was sent, in UTC; None when a history message's time does not read."""
    type: int = MessageType.DEFAULT
    channel_id: str | None = None
    guild_id: str | None = None
    channel_type: int | None = None
    """The gateway's ``channel_type`` of MESSAGE_CREATE (REST history has none): None when absent."""
    member: Member | None = None
    webhook_id: str | None = None
    application_id: str | None = None
    mentions: tuple[Mention, ...] = ()
    mention_roles: tuple[str, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    embeds: tuple[Embed, ...] = ()
    sticker_names: tuple[str, ...] = ()
    reactions: tuple[Reaction, ...] = ()
    reference: MessageReference | None = None
    referenced_message: Message | None = None
    """The message this one answers (or forwards), as Discord quotes it."""
    referenced_message_deleted: bool = False
    """A reply whose message Discord says is gone (``referenced_message`` null)."""
    forwarded: Snapshot | None = None

    def to_dict(self) -> dict[str, Any]:
        """The message as Discord writes it (the fields kioku reads), for ``parse_message`` to read back."""
        data = _without_defaults(
            {
                "id": self.id,
                "channel_id": self.channel_id,
                "guild_id": self.guild_id,
                "channel_type": self.channel_type,
                "author": self.author.to_dict(),
                "member": _dict_of(self.member),
                "content": self.content,
                "timestamp": self.timestamp.isoformat() if self.timestamp else None,
                "type": self.type,
                "webhook_id": self.webhook_id,
                "application_id": self.application_id,
                "mentions": [mention.to_dict() for mention in self.mentions],
                "mention_roles": list(self.mention_roles),
                "attachments": [attachment.to_dict() for attachment in self.attachments],
                "embeds": [embed.to_dict() for embed in self.embeds],
                "sticker_items": [{"name": name} for name in self.sticker_names],
                "reactions": [reaction.to_dict() for reaction in self.reactions],
                "message_reference": _dict_of(self.reference),
                "referenced_message": _dict_of(self.referenced_message),
                "message_snapshots": [{"message": self.forwarded.to_dict()}] if self.forwarded else [],
            }
        )
        data["content"] = self.content
        if self.referenced_message_deleted:
            data["referenced_message"] = None
        return data


def _channel_type(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_message(data: Any, *, strict: bool = True) -> Message:
    """Read a message object; raises ``MalformedMessage``. ``strict``: what decides whether and how
    the bot answers (ids, author, content, type, timestamp, mentions, the list sizes) must be well
    formed; otherwise only the id and the author must be, the rest is read as far as it goes."""
    return _Reader(strict).message(data, "")


def parse_history(items: Iterable[Any]) -> list[Message]:
    """The messages of a REST answer that can be read at all (an id, an author), in order."""
    messages = []
    for item in items:
        try:
            messages.append(parse_message(item, strict=False))
        except MalformedMessage:
            continue
    return messages


def parse_user(data: Any, *, strict: bool = True, path: str = "author") -> User:
    return _Reader(strict).user(data, f"{path}.")


def parse_member(data: Any) -> Member | None:
    """A member object, read as far as it goes (None when it is not an object)."""
    return _member(data)


def parse_guild_member(data: Any) -> Member | None:
    """A member as Discord REST returns it (``GET /guilds/{id}/members/{user}``, the member search),
    with its user: None when it is not an object; its ``user`` None when that does not read."""
    member = _member(data)
    if member is None:
        return None
    try:
        user = _Reader(strict=False).user(data.get("user"), "user.")
    except MalformedMessage:
        user = None
    return replace(member, user=user)


@dataclass(frozen=True, slots=True)
class _Reader:
    strict: bool

    def message(self, data: Any, path: str) -> Message:
        if not isinstance(data, Mapping):
            raise MalformedMessage(f"{path.rstrip('.') or 'message'} is not an object")
        strict = self.strict
        author = self.user(data.get("author"), f"{path}author.")
        content = data.get("content")
        if strict and not isinstance(content, str):
            raise MalformedMessage("content is not a string")
        if strict and isinstance(content, str) and len(content) > MAX_CONTENT_CHARS:
            raise MalformedMessage(f"content is longer than {MAX_CONTENT_CHARS} characters")
        message_type = data.get("type")
        if not isinstance(message_type, int) or isinstance(message_type, bool):
            if strict:
                raise MalformedMessage("type is not an integer")
            message_type = MessageType.DEFAULT
        referenced, deleted = self._referenced(data, message_type, path)
        return Message(
            id=_snowflake(data, "id", path),
            author=author,
            content=content if isinstance(content, str) else "",
            timestamp=self._timestamp(data.get("timestamp")),
            type=message_type,
            channel_id=self._id(data, "channel_id", path, required=True),
            guild_id=self._id(data, "guild_id", path),
            channel_type=_channel_type(data.get("channel_type")),
            member=_member(data.get("member")),
            webhook_id=self._id(data, "webhook_id", path),
            application_id=self._id(data, "application_id", path),
            mentions=self._mentions(data),
            mention_roles=self._mention_roles(data),
            attachments=tuple(_attachments(self._bounded(data, "attachments", MAX_ATTACHMENTS))),
            embeds=tuple(_embeds(self._bounded(data, "embeds", MAX_EMBEDS))),
            sticker_names=_sticker_names(data.get("sticker_items")),
            reactions=_reactions(data.get("reactions")),
            reference=self._reference(data.get("message_reference")),
            referenced_message=referenced,
            referenced_message_deleted=deleted,
            forwarded=_snapshot(data.get("message_snapshots")),
        )

    def user(self, data: Any, path: str) -> User:
        if not isinstance(data, Mapping):
            raise MalformedMessage(f"{path.rstrip('.')} is not an object")
        bot = data.get("bot", False)
        if not isinstance(bot, bool):
            if self.strict:
                raise MalformedMessage(f"{path}bot is not a boolean")
            bot = False
        username, global_name = data.get("username"), data.get("global_name")
        return User(
            id=_snowflake(data, "id", path),
            username=username if isinstance(username, str) else "",
            global_name=global_name if isinstance(global_name, str) else None,
            bot=bot,
        )

    def _timestamp(self, value: Any) -> datetime | None:
        try:
            return parse_time(value)
        except InvalidTime:
            if self.strict:
                raise MalformedMessage("timestamp is not an RFC 3339 time with an offset") from None
            return None

    def _id(self, data: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> str | None:
        """An id that strictly must be well formed when present (or ``required``), else may be left out."""
        value = data.get(key)
        if is_snowflake(value):
            return value
        if self.strict and (required or value is not None):
            raise MalformedMessage(f"{path}{key} is not a snowflake id string")
        return None

    def _bounded(self, data: Mapping[str, Any], key: str, limit: int) -> list[Any]:
        value = data.get(key, [])
        if not self.strict:
            return value if isinstance(value, list) else []
        if not isinstance(value, list):
            raise MalformedMessage(f"{key} is not a list")
        if len(value) > limit:
            raise MalformedMessage(f"{key} has more than {limit} items")
        return value

    def _mentions(self, data: Mapping[str, Any]) -> tuple[Mention, ...]:
        mentions = []
        for mention in self._bounded(data, "mentions", MAX_MENTIONS):
            if not isinstance(mention, Mapping):
                if self.strict:
                    raise MalformedMessage("mentions[] is not an object")
                continue
            try:
                # only the id decides (is the bot mentioned?); the rest is read as far as it goes
                user = _Reader(strict=False).user(mention, "mentions[].")
            except MalformedMessage:
                if self.strict:
                    raise
                continue
            mentions.append(Mention(user, _member(mention.get("member"))))
        return tuple(mentions)

    def _mention_roles(self, data: Mapping[str, Any]) -> tuple[str, ...]:
        roles = self._bounded(data, "mention_roles", MAX_MENTIONS)
        if self.strict and not all(is_snowflake(role) for role in roles):
            raise MalformedMessage("mention_roles[] is not a snowflake id string")
        return tuple(role for role in roles if is_snowflake(role))

    def _reference(self, value: Any) -> MessageReference | None:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            if self.strict:
                raise MalformedMessage("message_reference is not an object")
            return None
        kind = value.get("type", MessageReferenceType.DEFAULT)
        message_id = value.get("message_id")
        return MessageReference(
            message_id=message_id if is_snowflake(message_id) else None,
            type=kind if isinstance(kind, int) and not isinstance(kind, bool) else None,
        )

    def _referenced(
        self, data: Mapping[str, Any], message_type: int, path: str
    ) -> tuple[Message | None, bool]:
        """The quoted message (its own fields read leniently) and whether a reply's message is gone."""
        if path:
            return None, False  # Discord quotes one level deep
        raw = data.get("referenced_message")
        if raw is not None:
            try:
                return _Reader(strict=False).message(raw, "referenced_message."), False
            except MalformedMessage:
                if self.strict:
                    raise
        gone = message_type == MessageType.REPLY and "referenced_message" in data
        return None, gone


def _snowflake(data: Mapping[str, Any], key: str, path: str) -> str:
    value = data.get(key)
    if not is_snowflake(value):
        raise MalformedMessage(f"{path}{key} is not a snowflake id string")
    return value


def _member(value: Any) -> Member | None:
    if not isinstance(value, Mapping):
        return None
    nick, roles = value.get("nick"), value.get("roles")
    return Member(
        nick=nick if isinstance(nick, str) else None,
        roles=tuple(role for role in roles if is_snowflake(role)) if isinstance(roles, list) else (),
        permissions=permission_bits(value.get("permissions")),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _attachments(items: Any) -> list[Attachment]:
    if not isinstance(items, list):
        return []
    return [
        Attachment(_text(item.get("filename")), _text(item.get("content_type")), _text(item.get("url")))
        for item in items
        if isinstance(item, Mapping)
    ]


def _embeds(items: Any) -> list[Embed]:
    if not isinstance(items, list):
        return []
    return [
        Embed(
            item.get("title") if isinstance(item.get("title"), str) else None,
            item.get("description") if isinstance(item.get("description"), str) else None,
        )
        for item in items
        if isinstance(item, Mapping)
    ]


def _sticker_names(items: Any) -> tuple[str, ...]:
    if not isinstance(items, list):
        return ()
    names = (item.get("name") for item in items if isinstance(item, Mapping))
    return tuple(name for name in names if isinstance(name, str) and name.strip())


def _reactions(items: Any) -> tuple[Reaction, ...]:
    if not isinstance(items, list):
        return ()
    reactions = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        raw_emoji = item.get("emoji")
        emoji: Mapping[str, Any] = raw_emoji if isinstance(raw_emoji, Mapping) else {}
        name, count = emoji.get("name"), item.get("count")
        if isinstance(name, str) and name and _is_count(count):
            emoji_id = emoji.get("id")
            reactions.append(Reaction(name, count, emoji_id if is_snowflake(emoji_id) else None))
    return tuple(reactions)


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _snapshot(items: Any) -> Snapshot | None:
    if not isinstance(items, list) or not items or not isinstance(items[0], Mapping):
        return None
    original = items[0].get("message")
    if not isinstance(original, Mapping) or not original:
        return None
    return Snapshot(
        content=_text(original.get("content")),
        attachments=tuple(_attachments(original.get("attachments"))),
        embeds=tuple(_embeds(original.get("embeds"))),
        sticker_names=_sticker_names(original.get("sticker_items")),
    )


def _dict_of(value: Any) -> dict[str, Any] | None:
    return None if value is None else value.to_dict()


def _without_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """The fields that say something: unset ids, empty texts and lists, and False are left out."""
    return {
        key: value
        for key, value in data.items()
        if value is not None and value is not False and value != "" and value != []
    }
