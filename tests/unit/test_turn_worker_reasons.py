"""What the worker says when it dead-letters a body that is not a turn job."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from kioku.entrypoints import turn_worker

NOT_JOBS = [
    ("not json", "not a turn job: not JSON"),
    ("[1, 2]", "not a turn job: not a JSON object"),
    ('{"format": 0}', "not a turn job: unknown format 0"),
    ('{"format": "3"}', "not a turn job: unknown format '3'"),
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


def test_a_job_of_a_newer_format_is_given_back_until_its_last_attempt_then_dead_lettered_saying_why(
    monkeypatch,
):
    dead: list[tuple[str, int]] = []
    given_back: list[str] = []

    def dead_letter(record: SQSRecord, reason: str, *, attempt: int, error: Exception) -> bool:
        dead.append((reason, attempt))
        return True

    monkeypatch.setattr(turn_worker, "_dead_letter", dead_letter)
    monkeypatch.setattr(turn_worker, "_retry_soon", lambda handle, *_: given_back.append(handle))
    monkeypatch.setattr(turn_worker, "get_settings", lambda: type("S", (), {"TURN_MAX_ATTEMPTS": 3})())

    def received(count: int) -> SQSRecord:
        attributes = {"ApproximateReceiveCount": str(count)}
        return SQSRecord(
            {
                "messageId": "m-1",
                "receiptHandle": f"r-{count}",
                "body": '{"format": 3}',
                "attributes": attributes,
            }
        )

    # A job queued by a newer relay goes back to the queue (a batch item failure) on its first reads
    for count in (1, 2):
        with pytest.raises(turn_worker.NewerTurnJob):
            turn_worker.record_handler(received(count))
    assert given_back == ["r-1", "r-2"] and dead == []

    # and is dead-lettered on its last attempt, saying why
    reason = (
        "given back 3 of 3 times, no worker read it: not a turn job of this release: format 3 is newer than 2"
    )
    assert turn_worker.record_handler(received(3)) == {"dead_lettered": reason}
    assert dead == [(reason, 3)]


def test_a_turn_whose_covered_message_was_answered_meanwhile_is_read_again_not_counted_failed(monkeypatch):
    # Given a burst's turn whose keep finds a message it covers answered by another turn since its read
    from types import SimpleNamespace

    from kioku.discord.models import User
    from kioku.domain.turn import CoveredElsewhere
    from kioku.domain.turn_jobs import TurnJob, TurnSource

    def run(*args: Any, **kwargs: Any) -> None:
        raise CoveredElsewhere("message 2 was answered by turn 7")

    failed: list[Exception] = []
    given_back: list[tuple[str, int]] = []
    monkeypatch.setattr(
        turn_worker, "container", lambda: SimpleNamespace(turn_service=SimpleNamespace(run=run))
    )
    monkeypatch.setattr(turn_worker, "_failed", lambda record, job, exc: failed.append(exc))
    monkeypatch.setattr(
        turn_worker, "_retry_soon", lambda handle, seconds=30: given_back.append((handle, seconds))
    )
    job = TurnJob(
        source=TurnSource.SLASH_COMMAND,
        turn_id="500000000000000001",
        channel_id="300000000000000001",
        guild_id="200000000000000001",
        author=User("400000000000000001", "alice"),
        content="hello",
        interaction_token="t",
        application_id="100000000000000001",
    )
    attributes = {"ApproximateReceiveCount": "3"}
    record = SQSRecord(
        {"messageId": "m-1", "receiptHandle": "r-3", "body": job.to_json(), "attributes": attributes}
    )

    # Then it goes back to the queue at once (a batch item failure), not as a failed attempt: on its
    # last receive too, it is neither dead-lettered nor retried after the usual wait
    with pytest.raises(CoveredElsewhere):
        turn_worker.record_handler(record)
    assert given_back == [("r-3", 0)] and failed == []
