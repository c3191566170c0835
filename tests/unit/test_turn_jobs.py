"""Turn jobs survive the queue unchanged, and anything else is refused with a reason."""

from __future__ import annotations

import pytest

from kioku.domain.turn_jobs import InvalidTurnJob, TurnJob, TurnSource

MESSAGE = {
    "id": "700000000000000001",
    "channel_id": "300000000000000001",
    "guild_id": "200000000000000001",
    "author": {"id": "400000000000000001", "username": "alice"},
    "member": {"nick": "Ali"},
    "content": "こんにちは <@1>",
}


def test_a_gateway_message_round_trips():
    job = TurnJob.from_gateway_message(MESSAGE)
    assert TurnJob.from_json(job.to_json()) == job
    assert job.source is TurnSource.MESSAGE and job.member == {"nick": "Ali"}


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[]",
        '{"source": "message"}',
        '{"source": "carrier-pigeon", "turn_id": "1", "channel_id": "2", "guild_id": null, "author": {}, "content": ""}',
        '{"source": "message", "turn_id": "x", "channel_id": "2", "guild_id": null, "author": {}, "content": ""}',
        '{"source": "slash_command", "turn_id": "1", "channel_id": "2", "guild_id": null, "author": {}, "content": ""}',
    ],
    ids=["not-json", "array", "missing-fields", "unknown-source", "bad-id", "slash-without-token"],
)
def test_anything_else_is_an_invalid_job(body):
    with pytest.raises(InvalidTurnJob):
        TurnJob.from_json(body)


def test_an_oversized_job_is_refused_before_sending():
    with pytest.raises(InvalidTurnJob):
        TurnJob.from_gateway_message({**MESSAGE, "content": "x" * 300_000}).to_json()


def test_code_points_sqs_refuses_travel_escaped():
    body = TurnJob.from_gateway_message({**MESSAGE, "content": "odd \ufffe\uffff text"}).to_json()
    assert body.isascii()
    assert TurnJob.from_json(body).content == "odd \ufffe\uffff text"


def test_a_job_too_large_for_the_queue_sheds_what_the_turn_needs_least_then_cuts_its_content():
    from kioku.domain.turn_jobs import MAX_JOB_BYTES, TRIMMED_MARK, TurnJob, TurnSource

    wide = "\N{GRINNING FACE}"
    message = {
        "content": wide * 20_000,
        "embeds": [{"description": wide * 1000}],
        "referenced_message": {"id": "5", "content": wide * 1000, "author": {"id": "6"}},
        "attachments": [{"filename": f"{n}.png"} for n in range(10)],
    }
    job = TurnJob(TurnSource.MESSAGE, "1", "2", "3", {"id": "4"}, message["content"], message=message)
    fitted = job.fitted()
    assert len(fitted.to_json().encode()) <= MAX_JOB_BYTES
    assert fitted.message["embeds"] == [] and fitted.message["referenced_message"]["content"] == ""
    assert len(fitted.message["attachments"]) == 4
    assert fitted.content.endswith(TRIMMED_MARK) and fitted.message["content"] == fitted.content
    small = TurnJob(
        TurnSource.MESSAGE, "1", "2", "3", {"id": "4"}, "hi", message={"content": "hi", "embeds": [{}]}
    )
    assert small.fitted() == small
