"""A turn waiting in the queue: a relayed channel message or a ``/chat`` interaction.

The queue's body is JSON, format 2: the message the relay validated, as ``Message.to_dict`` writes
it, read back as strictly as the relay read it. A body without a ``format`` is format 1, queued
before: it carried the gateway's message object as sent, and is read the way a channel's history
is (what does not read is left out), so the turns waiting in the queue (or the dead-letter queue)
when kioku is updated are still answered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Final

from kioku.discord.models import (
    MalformedMessage,
    Member,
    Message,
    User,
    parse_member,
    parse_message,
    parse_user,
)
from kioku.discord.snowflake import is_snowflake

JOB_FORMAT: Final = 2
LEGACY_JOB_FORMAT: Final = 1
MAX_JOB_BYTES = 200 * 1024
MAX_ATTACHMENTS_KEPT = 4
TRIMMED_MARK = " …[trimmed]"


class TurnSource(StrEnum):
    MESSAGE = "message"
    SLASH_COMMAND = "slash_command"
    EXPORT = "export"
    """``/personal memories export``: not a chat turn; the worker attaches the person's data."""
    MEMORY = "memory"
    """A memory written by hand (``/… memories add``, ``Remember this``): the worker, which can ask
    Discord how private the channel is, saves it and answers the interaction."""

    @property
    def answers_an_interaction(self) -> bool:
        return self is not TurnSource.MESSAGE


class InvalidTurnJob(ValueError):
    """A queued body that is not a turn job (it will never succeed: send it to the DLQ); its message,
    the dead letter's reason, says why after ``not a turn job: ``."""


class NewerTurnJob(InvalidTurnJob):
    """A turn job of a format newer than this release reads: a newer relay queued it (a deploy under
    way), and a newer worker can answer it."""


@dataclass(frozen=True, slots=True)
class PersonaCue:
    """The alter persona a turn speaks as, as RelayFunction read it from the configuration: its id,
    its lineage and its name are the keys and the name the turn's first read guesses (the turn
    checks them against the configuration that read returns)."""

    persona_id: str
    lineage_id: int
    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.persona_id, "lineage": self.lineage_id, "name": self.name}

    @classmethod
    def from_dict(cls, data: Any) -> PersonaCue:
        if not isinstance(data, dict):
            raise ValueError("persona is not an object")
        lineage = data.get("lineage")
        if not isinstance(lineage, int) or isinstance(lineage, bool) or lineage < 1:
            raise ValueError("persona.lineage is not a positive integer")
        name = data.get("name")
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_PERSONA_CUE_NAME:
            raise ValueError("persona.name is not a short string")
        return cls(_snowflake(data, "id"), lineage, name)


MAX_PERSONA_CUE_NAME: Final = 100


@dataclass(frozen=True, slots=True)
class MemoryRequest:
    """What a person asked to remember besides its text (the job's ``content``): a personal memory
    about themself or a server memory, of persona lineage ``lineage`` (0: every persona's), for
    ``expires_in_days`` days (None: for good); ``manages_server`` as the interaction said, for the
    review mode; ``message_id``: the message remembered (``Remember this``), if any."""

    personal: bool
    lineage: int
    expires_in_days: int | None = None
    manages_server: bool = False
    message_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "personal": self.personal,
            "lineage": self.lineage,
            "expires_in_days": self.expires_in_days,
            "manages_server": self.manages_server,
            "message_id": self.message_id,
        }

    @classmethod
    def from_dict(cls, data: Any) -> MemoryRequest:
        if not isinstance(data, dict):
            raise ValueError("memory is not an object")
        personal, manages, lineage = data.get("personal"), data.get("manages_server"), data.get("lineage")
        days = data.get("expires_in_days")
        if not isinstance(personal, bool) or not isinstance(manages, bool):
            raise ValueError("memory.personal and memory.manages_server are not booleans")
        if not isinstance(lineage, int) or isinstance(lineage, bool) or lineage < 0:
            raise ValueError("memory.lineage is not a lineage")
        if days is not None and (not isinstance(days, int) or isinstance(days, bool) or days < 1):
            raise ValueError("memory.expires_in_days is not a number of days")
        message_id = None if data.get("message_id") is None else _snowflake(data, "message_id")
        return cls(personal, lineage, days, manages, message_id)


@dataclass(frozen=True, slots=True)
class TurnJob:
    """``turn_id`` is the Discord message id or interaction id: the idempotency key of the turn.
    ``message``: the relayed message (a ``/chat`` or an export has none)."""

    source: TurnSource
    turn_id: str
    channel_id: str
    guild_id: str | None
    author: User
    content: str
    message: Message | None = None
    member: Member | None = None
    interaction_token: str | None = None
    application_id: str | None = None
    persona: PersonaCue | None = None
    """The alter persona that answers; None: the main persona."""
    memory: MemoryRequest | None = None
    """A memory written by hand (``TurnSource.MEMORY``): what it is, besides its text."""
    always: bool = False
    """The message was sent in an ``always`` channel (as the relay read the configuration): its turn
    reads the channel's latest messages, to answer a burst in one reply (``domain/bursts.py``)."""

    @property
    def record_id(self) -> str:
        """What the turn's own items (its record, outbox and attempts) and its queue deduplication
        are keyed by: a message answered by several personas is a turn for each."""
        return self.record_id_for(self.turn_id)

    def record_id_for(self, message_id: str) -> str:
        """The record id of ``message_id``'s turn spoken by this turn's persona (a burst's message)."""
        return record_id_of(message_id, self.persona.persona_id if self.persona else None)

    @classmethod
    def from_message(
        cls, message: Message, persona: PersonaCue | None = None, *, always: bool = False
    ) -> TurnJob:
        """The turn of a message the relay validated, answered by ``persona`` (None: the main one);
        ``always``: in an ``always`` channel."""
        if message.channel_id is None:
            raise InvalidTurnJob("a relayed message needs its channel")
        return cls(
            source=TurnSource.MESSAGE,
            turn_id=message.id,
            channel_id=message.channel_id,
            guild_id=message.guild_id,
            author=message.author,
            member=message.member,
            content=message.content,
            message=message,
            persona=persona,
            always=always,
        )

    def to_json(self) -> str:
        # ASCII escapes: SQS refuses some code points (U+FFFE, U+FFFF) that Discord lets through.
        body = self._encoded()
        if len(body.encode()) > MAX_JOB_BYTES:
            raise InvalidTurnJob("turn job is larger than an SQS message may be")
        return body

    def fitted(self) -> TurnJob:
        """This job within what a queued message may hold: a message of up to 4,000 characters in
        escaped non-Latin script, with embeds and a quoted reply, can outgrow it. What the turn needs
        least goes first (embeds, the quoted message's body, attachments past the first few), then the
        content is cut, with a mark the model can see."""
        job = self
        for trim in (_without_embeds, _without_quoted_body, _fewer_attachments):
            if len(job._encoded()) <= MAX_JOB_BYTES:
                return job
            job = trim(job)
        while len(job._encoded()) > MAX_JOB_BYTES and len(job.content) > 1:
            cut = job.content[: len(job.content) * 3 // 4].rstrip() + TRIMMED_MARK
            message = replace(job.message, content=cut) if job.message else None
            job = replace(job, content=cut, message=message)
        return job

    def _encoded(self) -> str:
        body = {
            "format": JOB_FORMAT,
            "source": self.source.value,
            "turn_id": self.turn_id,
            "channel_id": self.channel_id,
            "guild_id": self.guild_id,
            "author": self.author.to_dict(),
            "member": self.member.to_dict() if self.member else None,
            "content": self.content,
            "message": self.message.to_dict() if self.message else None,
            "interaction_token": self.interaction_token,
            "application_id": self.application_id,
        }
        if self.persona is not None:
            body["persona"] = self.persona.to_dict()
        if self.memory is not None:
            body["memory"] = self.memory.to_dict()
        if self.always:  # absent otherwise: a worker of the release before reads the job as before
            body["always"] = True
        return json.dumps(body, separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def from_json(cls, body: str) -> TurnJob:
        """Read a queued body of either format; anything else raises ``InvalidTurnJob`` with why."""
        try:
            data = json.loads(body)
        except ValueError:
            raise InvalidTurnJob("not a turn job: not JSON") from None
        if not isinstance(data, dict):
            raise InvalidTurnJob("not a turn job: not a JSON object")
        job_format = data.get("format", LEGACY_JOB_FORMAT)
        if isinstance(job_format, int) and not isinstance(job_format, bool) and job_format > JOB_FORMAT:
            raise NewerTurnJob(
                f"not a turn job of this release: format {job_format} is newer than {JOB_FORMAT}"
            )
        if job_format not in (JOB_FORMAT, LEGACY_JOB_FORMAT) or isinstance(job_format, bool):
            raise InvalidTurnJob(f"not a turn job: unknown format {job_format!r}")
        strict = job_format == JOB_FORMAT
        try:
            source = TurnSource(data["source"])
            message = data.get("message")
            job = cls(
                source=source,
                turn_id=_snowflake(data, "turn_id"),
                channel_id=_snowflake(data, "channel_id"),
                guild_id=None if data.get("guild_id") is None else _snowflake(data, "guild_id"),
                author=parse_user(data["author"], strict=strict),
                member=parse_member(data.get("member")),
                content=_text(data, "content"),
                message=parse_message(message, strict=strict) if message else None,
                interaction_token=_optional_text(data, "interaction_token"),
                application_id=None
                if data.get("application_id") is None
                else _snowflake(data, "application_id"),
                persona=None if data.get("persona") is None else PersonaCue.from_dict(data["persona"]),
                memory=None if data.get("memory") is None else MemoryRequest.from_dict(data["memory"]),
                always=data.get("always") is True,
            )
        except MalformedMessage as exc:
            raise InvalidTurnJob(f"not a turn job: {exc.reason}") from None
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidTurnJob(f"not a turn job: {exc.__class__.__name__} {exc}") from None
        if source is TurnSource.MESSAGE and job.message is None:
            raise InvalidTurnJob("not a turn job: a relayed turn needs its message")
        if source.answers_an_interaction and not (job.interaction_token and job.application_id):
            raise InvalidTurnJob("not a turn job: a slash-command turn needs its interaction token")
        if (source is TurnSource.MEMORY) != (job.memory is not None):
            raise InvalidTurnJob("not a turn job: a memory written by hand, and only it, says what it is")
        return job


def record_id_of(turn_id: str, persona_id: str | None) -> str:
    """The record id of the turn of ``turn_id`` spoken by ``persona_id`` (None: the main persona)."""
    return turn_id if persona_id is None else f"{turn_id}.{persona_id}"


def _snowflake(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not is_snowflake(value):
        raise ValueError(f"{key} is not a snowflake id string")
    return value


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{key} is not a string")
    return value


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    return None if data.get(key) is None else _text(data, key)


def _without_embeds(job: TurnJob) -> TurnJob:
    return replace(job, message=replace(job.message, embeds=())) if job.message else job


def _without_quoted_body(job: TurnJob) -> TurnJob:
    quoted = job.message.referenced_message if job.message else None
    if job.message is None or quoted is None:
        return job
    kept = Message(id=quoted.id, author=quoted.author, member=quoted.member, timestamp=quoted.timestamp)
    return replace(job, message=replace(job.message, referenced_message=kept))


def _fewer_attachments(job: TurnJob) -> TurnJob:
    if job.message is None:
        return job
    attachments = job.message.attachments[:MAX_ATTACHMENTS_KEPT]
    return replace(job, message=replace(job.message, attachments=attachments))


class QueueUnavailable(Exception):
    """The turn could not be queued."""
