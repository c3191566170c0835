"""A turn waiting in the queue: a relayed channel message or a ``/chat`` interaction."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

MAX_JOB_BYTES = 200 * 1024
MAX_ATTACHMENTS_KEPT = 4
TRIMMED_MARK = " …[trimmed]"


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

    def fitted(self) -> TurnJob:
        """This job within what a queued message may hold: a message of up to 4,000 characters in
        escaped non-Latin script, with embeds and a quoted reply, can outgrow it. What the turn needs
        least goes first (embeds, the quoted message's body, attachments past the first few), then the
        content is cut, with a mark the model can see."""
        job = self
        for trim in (_without_embeds, _without_quoted_body, _fewer_attachments):
            if job._size() <= MAX_JOB_BYTES:
                return job
            job = trim(job)
        while job._size() > MAX_JOB_BYTES and len(job.content) > 1:
            cut = job.content[: len(job.content) * 3 // 4].rstrip() + TRIMMED_MARK
            job = replace(job, content=cut, message={**job.message, "content": cut})
        return job

    def _size(self) -> int:
        return len(json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=True))

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


def _without_embeds(job: TurnJob) -> TurnJob:
    return replace(job, message={**job.message, "embeds": []})


def _without_quoted_body(job: TurnJob) -> TurnJob:
    quoted = job.message.get("referenced_message")
    if not isinstance(quoted, dict):
        return job
    kept = {key: quoted[key] for key in ("id", "author", "member", "timestamp") if key in quoted}
    return replace(job, message={**job.message, "referenced_message": {**kept, "content": ""}})


def _fewer_attachments(job: TurnJob) -> TurnJob:
    attachments = job.message.get("attachments")
    if not isinstance(attachments, list):
        return job
    return replace(job, message={**job.message, "attachments": attachments[:MAX_ATTACHMENTS_KEPT]})
