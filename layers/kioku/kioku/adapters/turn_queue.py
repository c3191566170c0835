"""The FIFO queue of chat turns: one message group per channel, deduplicated per Discord id."""

from __future__ import annotations

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from kioku.domain.turn_jobs import TurnJob

_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=1, read_timeout=2)


class QueueUnavailable(Exception):
    """The turn could not be queued."""


class TurnQueue:
    def __init__(self, queue_url: str, client=None) -> None:
        self._url = queue_url
        self._client = client if client is not None else boto3.client("sqs", config=_CLIENT_CONFIG)

    def enqueue(self, job: TurnJob) -> None:
        """Queue ``job``; SQS drops a second copy with the same id within five minutes."""
        try:
            self._client.send_message(
                QueueUrl=self._url,
                MessageBody=job.to_json(),
                MessageGroupId=job.channel_id,
                MessageDeduplicationId=f"{job.source.value}-{job.turn_id}",
            )
        except (BotoCoreError, ClientError) as exc:
            raise QueueUnavailable(f"could not queue turn {job.turn_id}: {exc.__class__.__name__}") from exc

    def retry_soon(self, receipt_handle: str, seconds: int) -> None:
        """Make a failed turn visible again after ``seconds`` instead of the queue's visibility
        timeout, so a transient failure holds its channel's message group up only briefly."""
        try:
            self._client.change_message_visibility(
                QueueUrl=self._url, ReceiptHandle=receipt_handle, VisibilityTimeout=seconds
            )
        except (BotoCoreError, ClientError) as exc:
            raise QueueUnavailable(f"could not reschedule a turn: {exc.__class__.__name__}") from exc
