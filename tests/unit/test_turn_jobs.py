"""Turn jobs survive the queue unchanged, old ones are still read, and anything else is refused with a reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from kioku.discord.models import Attachment, Embed, Member, Message, User, parse_message
from kioku.domain.turn_jobs import (
    MAX_JOB_BYTES,
    TRIMMED_MARK,
    InvalidTurnJob,
    MemoryRequest,
    TurnJob,
    TurnSource,
)

MESSAGE = {
    "id": "700000000000000001",
    "channel_id": "300000000000000001",
    "guild_id": "200000000000000001",
    "author": {"id": "400000000000000001", "username": "alice"},
    "member": {"nick": "Ali", "roles": ["800000000000000001"]},
    "content": "こんにちは <@1>",
    "timestamp": "2026-11-30T00:00:00.000000+00:00",
    "type": 0,
}

FORMAT_1_BODY = (
    '{"source":"message","turn_id":"700000000000000001","channel_id":"300000000000000001",'
    '"guild_id":"200000000000000001","author":{"id":"400000000000000001","username":"alice",'
    '"global_name":"Alice","bot":false},"content":"<@100000000000000001> hello!","message":'
    '{"id":"700000000000000001","channel_id":"300000000000000001","guild_id":"200000000000000001",'
    '"author":{"id":"400000000000000001","username":"alice","global_name":"Alice","bot":false},'
    '"member":{"nick":null,"roles":[]},"content":"<@100000000000000001> hello!",'
    '"timestamp":"2026-11-30T00:00:00.000000+00:00","type":0,"mentions":[{"id":"100000000000000001",'
    '"username":"kioku","bot":true}],"attachments":[],"embeds":[]},"member":{"nick":null,"roles":[]},'
    '"interaction_token":null,"application_id":null}'
)
"""A job as the code before format 2 queued it (``events/turn-sqs.json``): the gateway's message as sent."""


def relayed(**overrides) -> TurnJob:
    return TurnJob.from_message(parse_message({**MESSAGE, **overrides}))


def test_a_relayed_message_round_trips_typed():
    job = relayed()
    assert TurnJob.from_json(job.to_json()) == job
    assert json.loads(job.to_json())["format"] == 2
    assert job.source is TurnSource.MESSAGE and job.member == Member(
        nick="Ali", roles=("800000000000000001",)
    )
    assert job.author == User("400000000000000001", "alice") and job.message.content == MESSAGE["content"]


def test_a_message_of_an_always_channel_says_so_and_others_carry_nothing_new():
    job = TurnJob.from_message(parse_message(MESSAGE), always=True)
    assert TurnJob.from_json(job.to_json()) == job and job.always
    assert json.loads(job.to_json())["always"] is True
    assert "always" not in json.loads(relayed().to_json())  # the release before reads it as before
    assert not TurnJob.from_json(relayed().to_json()).always


def test_a_job_queued_in_format_1_is_still_read():
    # Given a body the previous code queued (no format: the gateway's message object as it was sent)
    # When the worker reads it
    job = TurnJob.from_json(FORMAT_1_BODY)
    # Then it is the same turn, its message typed
    assert (job.source, job.turn_id, job.channel_id, job.guild_id) == (
        TurnSource.MESSAGE,
        "700000000000000001",
        "300000000000000001",
        "200000000000000001",
    )
    assert job.author == User("400000000000000001", "alice", "Alice") and job.member == Member()
    assert job.message.timestamp == datetime(2026, 11, 30, tzinfo=UTC)
    assert [mention.user.id for mention in job.message.mentions] == ["100000000000000001"]
    assert job.content == "<@100000000000000001> hello!"


def test_a_format_1_message_is_read_the_way_history_is():
    # Given a format-1 job queued before the relay refused timestamps without an offset
    data = json.loads(FORMAT_1_BODY)
    data["message"]["timestamp"] = "2026-11-30T01:00:00.000000"
    data["message"]["reactions"] = "lots"
    # When it is read
    job = TurnJob.from_json(json.dumps(data))
    # Then what does not read is left out, and the turn goes on
    assert job.message.timestamp is None and job.message.reactions == ()
    # but format 2, what the relay validated, is read as strictly as the relay read it
    strict = json.loads(relayed().to_json())
    strict["message"]["timestamp"] = "2026-11-30T01:00:00.000000"
    with pytest.raises(InvalidTurnJob, match="timestamp"):
        TurnJob.from_json(json.dumps(strict))


def test_a_format_1_slash_command_job_is_still_read():
    body = json.dumps(
        {
            "source": "slash_command",
            "turn_id": "500000000000000001",
            "channel_id": "300000000000000001",
            "guild_id": None,
            "author": {"id": "400000000000000001", "username": "alice", "global_name": None, "bot": False},
            "content": "hello",
            "message": {},
            "member": {"nick": None, "permissions": "32"},
            "interaction_token": "tok",
            "application_id": "100000000000000001",
        }
    )
    job = TurnJob.from_json(body)
    assert job.message is None and job.member == Member(permissions=32)
    assert TurnJob.from_json(job.to_json()) == job


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[]",
        '{"source": "message"}',
        '{"source": "carrier-pigeon", "turn_id": "1", "channel_id": "2", "guild_id": null, "author": {}, "content": ""}',
        '{"source": "message", "turn_id": "x", "channel_id": "2", "guild_id": null, "author": {}, "content": ""}',
        '{"source": "slash_command", "turn_id": "1", "channel_id": "2", "guild_id": null, "author": {"id": "4"}, "content": ""}',
        '{"source": "slash_command", "turn_id": "١٢٣", "channel_id": "2", "guild_id": null, "author": {"id": "4"}, "content": "", "interaction_token": "t", "application_id": "9"}',
        '{"source": "slash_command", "turn_id": "1", "channel_id": "２", "guild_id": null, "author": {"id": "4"}, "content": "", "interaction_token": "t", "application_id": "9"}',
        '{"source": "slash_command", "turn_id": "123456789012345678901", "channel_id": "2", "guild_id": null, "author": {"id": "4"}, "content": "", "interaction_token": "t", "application_id": "9"}',
        '{"source": "message", "turn_id": "1", "channel_id": "2", "guild_id": null, "author": {"id": "4"}, "content": ""}',
        '{"format": 3, "source": "message", "turn_id": "1", "channel_id": "2", "guild_id": null, "author": {"id": "4"}, "content": ""}',
    ],
    ids=[
        "not-json",
        "array",
        "missing-fields",
        "unknown-source",
        "bad-id",
        "slash-without-token",
        "arabic-indic-digits",
        "fullwidth-digits",
        "21-digits",
        "relayed-without-its-message",
        "unknown-format",
    ],
)
def test_anything_else_is_an_invalid_job(body):
    with pytest.raises(InvalidTurnJob):
        TurnJob.from_json(body)


def memory_job(**memory) -> dict:
    job = TurnJob(
        source=TurnSource.MEMORY,
        turn_id="700000000000000009",
        channel_id="300000000000000001",
        guild_id="200000000000000001",
        author=User("400000000000000001", "alice"),
        content="I like tea",
        interaction_token="t",
        application_id="100000000000000001",
        memory=MemoryRequest(False, 0, 30, manages_server=True, message_id="700000000000000008"),
    )
    body = json.loads(job.to_json())
    body["memory"].update(memory)
    return body


def test_a_memory_written_by_hand_round_trips_with_what_it_is():
    body = memory_job()
    job = TurnJob.from_json(json.dumps(body))
    assert job.memory == MemoryRequest(False, 0, 30, True, "700000000000000008")
    assert TurnJob.from_json(job.to_json()) == job


@pytest.mark.parametrize(
    "memory",
    [
        {"lineage": -1},
        {"lineage": True},
        {"personal": "yes"},
        {"expires_in_days": 0},
        {"expires_in_days": 1.5},
        {"message_id": "abc"},
    ],
)
def test_a_memory_job_that_says_something_else_is_invalid(memory):
    with pytest.raises(InvalidTurnJob):
        TurnJob.from_json(json.dumps(memory_job(**memory)))


def test_only_a_memory_job_carries_a_memory_and_it_always_does():
    body = memory_job()
    with pytest.raises(InvalidTurnJob):
        TurnJob.from_json(json.dumps({**body, "memory": None}))
    with pytest.raises(InvalidTurnJob):
        TurnJob.from_json(json.dumps({**body, "source": "export"}))


def test_an_oversized_job_is_refused_before_sending():
    huge = TurnJob.from_message(Message(id="1", author=User("4"), content="x" * 300_000, channel_id="2"))
    with pytest.raises(InvalidTurnJob):
        huge.to_json()


def test_code_points_sqs_refuses_travel_escaped():
    body = relayed(content="odd \ufffe\uffff text").to_json()
    assert body.isascii()
    assert TurnJob.from_json(body).content == "odd \ufffe\uffff text"


def test_a_job_too_large_for_the_queue_sheds_what_the_turn_needs_least_then_cuts_its_content():
    wide = "\N{GRINNING FACE}"
    quoted = Message(id="5", author=User("6"), content=wide * 1000)
    message = Message(
        id="1",
        author=User("4"),
        channel_id="2",
        content=wide * 20_000,
        embeds=(Embed(description=wide * 1000),),
        referenced_message=quoted,
        attachments=tuple(Attachment(filename=f"{n}.png") for n in range(10)),
    )
    job = TurnJob.from_message(message)
    fitted = job.fitted()
    assert len(fitted.to_json().encode()) <= MAX_JOB_BYTES
    assert fitted.message.embeds == () and fitted.message.referenced_message.content == ""
    assert fitted.message.referenced_message.author == User("6")
    assert len(fitted.message.attachments) == 4
    assert fitted.content.endswith(TRIMMED_MARK) and fitted.message.content == fitted.content
    small = TurnJob.from_message(
        Message(id="1", author=User("4"), channel_id="2", content="hi", embeds=(Embed(),))
    )
    assert small.fitted() == small
