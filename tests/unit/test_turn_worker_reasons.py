"""What the worker says when it dead-letters a body that is not a turn job."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from kioku.entrypoints import turn_worker

NOT_JOBS = [
    ("not json", "not a turn job: not JSON"),
    ("[1, 2]", "not a turn job: not a JSON object"),
    ('{"format": 9}', "not a turn job: unknown format 9"),
    ('{"format": 2, "source": "message"}', "not a turn job: ValueError turn_id is not a snowflake id string"),
]


@pytest.mark.parametrize(("body", "reason"), NOT_JOBS)
def test_a_body_that_is_not_a_turn_job_is_dead_lettered_saying_so_once(monkeypatch, body, reason):
    dead: list[tuple[str, int]] = []

    def dead_letter(record: SQSRecord, reason: str, *, attempt: int, error: Exception) -> bool:
        dead.append((reason, attempt))
        return True

    monkeypatch.setattr(turn_worker, "_dead_letter", dead_letter)
    record: dict[str, Any] = {"messageId": "m-1", "receiptHandle": "r-1", "body": body, "attributes": {}}

    assert turn_worker.record_handler(SQSRecord(record)) == {"dead_lettered": reason}
    assert dead == [(reason, 1)]
