"""A turn waiting in the queue: a relayed channel message or a ``/chat`` interaction."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

MAX_JOB_BYTES = 200 * 1024


class TurnSource(StrEnum):
    MESSAGE = "message"
    SLASH_COMMAND = "slash_command"
    EXPORT = "export"
    """``/personal memories export``: not a chat turn; the worker attaches the person's data."""

    @property
    def answers_an_interaction(self) -> bool:
        return self is not TurnSource.MESSAGE


class InvalidTurnJob(ValueError):
    """A queued body that is not a turn job (it will never succeed: send it to the DLQ)."""


@dataclass(frozen=True, slots=True)
class TurnJob:
    """``turn_id`` is the Discord message id or interaction id: the idempotency key of the turn."""

    source: TurnSource
    turn_id: str
    channel_id: str
    guild_id: str | None
    author: dict[str, Any]
    content: str
    message: dict[str, Any] = field(default_factory=dict)
    member: dict[str, Any] | None = None
    interaction_token: str | None = None
    application_id: str | None = None

    def to_json(self) -> str:
        # ASCII escapes: SQS refuses some code points (U+FFFE, U+FFFF) that Discord lets through.
        body = json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=True)
        if len(body.encode()) > MAX_JOB_BYTES:
            raise InvalidTurnJob("turn job is larger than an SQS message may be")
        return body

    @classmethod
    def from_json(cls, body: str) -> TurnJob:
        try:
            data = json.loads(body)
            job = cls(**{**data, "source": TurnSource(data["source"])})
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidTurnJob(f"not a turn job: {exc.__class__.__name__}") from None
        if not job.turn_id.isdigit() or not job.channel_id.isdigit() or not isinstance(job.author, dict):
            raise InvalidTurnJob("turn job ids must be snowflakes")
        if job.source.answers_an_interaction and not (job.interaction_token and job.application_id):
            raise InvalidTurnJob("a slash-command turn needs its interaction token")
        return job

    @classmethod
    def from_gateway_message(cls, message: dict[str, Any]) -> TurnJob:
        return cls(
            source=TurnSource.MESSAGE,
            turn_id=str(message["id"]),
            channel_id=str(message["channel_id"]),
            guild_id=message.get("guild_id"),
            author=dict(message["author"]),
            member=message.get("member"),
            content=str(message.get("content") or ""),
            message=dict(message),
        )
