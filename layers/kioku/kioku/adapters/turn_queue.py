"""The FIFO queue of chat turns: one message group per channel, deduplicated per Discord id; and
its dead-letter queue, where the worker moves a turn that cannot succeed, saying why."""

from __future__ import annotations

from typing import Any, Final

from kioku.adapters.sqs_http import SqsHttp, SqsRequestFailed
from kioku.domain.turn_jobs import QueueUnavailable, TurnJob

REASON_ATTRIBUTE: Final = "DeadLetterReason"
ATTEMPTS_ATTRIBUTE: Final = "FailedAttempts"
MAX_REASON_CHARS: Final = 500
RETRIES: Final = 3
"""Tries after the first (botocore's ``max_attempts``), by either client."""
TIMEOUTS: Final = (1.0, 2.0)
BUDGET_SECONDS: Final = 2.0
"""How long ``SqsHttp`` keeps trying one call: ``/chat`` queues its turn before it answers, and
Discord waits three seconds for that answer (botocore's waits, 1 s doubled, would spend them)."""


def sqs_client() -> Any:
    """Where Lambda runs a function, ``SqsHttp`` (the two calls, signed with the standard library:
    botocore's import and client were most of a cold /chat or relayed message); elsewhere
    botocore's client, honouring ``AWS_ENDPOINT_URL_SQS`` and moto's in-process mock alike."""
    light = SqsHttp.from_environ(retries=RETRIES, timeouts=TIMEOUTS, budget=BUDGET_SECONDS)
    if light is not None:
        return light
    from botocore.config import Config

    from kioku.adapters.aws_clients import client

    connect, read = TIMEOUTS
    config = Config(
        retries={"mode": "standard", "max_attempts": RETRIES}, connect_timeout=connect, read_timeout=read
    )
    return client("sqs", config)


def _call_failed(exc: Exception) -> bool:
    """Whether ``exc`` is an SQS call's failure: ``SqsHttp``'s, or botocore's when its client is used."""
    if isinstance(exc, SqsRequestFailed):
        return True
    from botocore.exceptions import BotoCoreError, ClientError  # loaded already if its client raised

    return isinstance(exc, BotoCoreError | ClientError)


class TurnQueue:
    def __init__(self, queue_url: str, client=None) -> None:
        self._url = queue_url
        self._client = client if client is not None else sqs_client()

    def enqueue(self, job: TurnJob) -> None:
        """Queue ``job``; SQS drops a second copy with the same id within five minutes."""
        try:
            self._client.send_message(
                QueueUrl=self._url,
                MessageBody=job.to_json(),
                MessageGroupId=job.channel_id,
                MessageDeduplicationId=f"{job.source.value}-{job.record_id}",
            )
        except Exception as exc:
            if not _call_failed(exc):
                raise
            raise QueueUnavailable(f"could not queue turn {job.turn_id}: {exc.__class__.__name__}") from exc

    def retry_soon(self, receipt_handle: str, seconds: int) -> None:
        """Make a failed turn visible again after ``seconds`` instead of the queue's visibility
        timeout, so a transient failure holds its channel's message group up only briefly."""
        try:
            self._client.change_message_visibility(
                QueueUrl=self._url, ReceiptHandle=receipt_handle, VisibilityTimeout=seconds
            )
        except Exception as exc:
            if not _call_failed(exc):
                raise
            raise QueueUnavailable(f"could not reschedule a turn: {exc.__class__.__name__}") from exc


class DeadLetterQueue:
    """The turn queue's dead-letter queue, written by the worker itself."""

    def __init__(self, queue_url: str, client=None) -> None:
        self._url = queue_url
        self._client = client if client is not None else sqs_client()

    def send(self, body: str, *, group_id: str, deduplication_id: str, reason: str, attempts: int) -> None:
        """Move a message here as it was queued, with ``reason`` and ``attempts`` as message
        attributes; the same ``deduplication_id`` within five minutes lands once."""
        try:
            self._client.send_message(
                QueueUrl=self._url,
                MessageBody=body,
                MessageGroupId=group_id,
                MessageDeduplicationId=deduplication_id,
                MessageAttributes={
                    REASON_ATTRIBUTE: {"DataType": "String", "StringValue": reason[:MAX_REASON_CHARS]},
                    ATTEMPTS_ATTRIBUTE: {"DataType": "Number", "StringValue": str(attempts)},
                },
            )
        except Exception as exc:
            if not _call_failed(exc):
                raise
            raise QueueUnavailable(f"could not dead-letter a turn: {exc.__class__.__name__}") from exc
