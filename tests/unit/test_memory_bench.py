"""The memory benchmark's conversations: the generated one keeps its promises, and the JSON format
of docs/memory.md is read as documented, refusing what it cannot measure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bench.memory import conversation_json, generate, read_conversation

DOCS = Path(__file__).resolve().parents[2] / "docs" / "memory.md"


@pytest.mark.parametrize("size", [20, 200, 1000])
def test_a_generated_conversation_saves_as_many_memories_as_asked_with_answerable_questions(size):
    conversation = generate(size)
    saved = {u.id for u in conversation.utterances if u.memory is not None}
    assert len(saved) == size
    assert conversation.questions
    for question in conversation.questions:
        assert set(question.evidence) <= saved and set(question.superseded) <= saved
    dates = [u.date for u in conversation.utterances]
    assert dates == sorted(dates) and (dates[-1] - dates[0]).days >= 60  # months long
    assert len({u.channel for u in conversation.utterances}) > 1
    assert any(q.superseded for q in conversation.questions) or size < 100


def test_the_generated_conversation_reads_back_from_its_json():
    conversation = generate(200)
    assert read_conversation(conversation_json(conversation)) == conversation


def test_the_example_of_the_docs_is_read_with_its_defaults():
    example = re.search(r"```json\n(.*?)```", DOCS.read_text(), re.DOTALL).group(1)
    import json

    conversation = read_conversation(json.loads(example))
    first, chatter, server = conversation.utterances
    assert first.memory == "{user} lives in Lisbon" and chatter.memory is None and server.scope == "server"
    asked = conversation.questions[1]
    assert asked.speaker == "Bob" and asked.channel == "general" and asked.date is None


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"utterances": [{"id": "u1", "speaker": "A", "date": "2025-01-01"}], "questions": []},
        {
            "utterances": [{"id": "u1", "speaker": "A", "date": "2025-01-01", "text": "hi"}],
            "questions": [{"text": "what?", "evidence": ["u9"]}],
        },
        {"utterances": [{"id": "u1", "speaker": "A", "date": "2025-01-01", "text": "hi"}], "questions": []},
    ],
)
def test_a_conversation_that_cannot_be_measured_is_refused(data):
    with pytest.raises(ValueError):
        read_conversation(data)


def test_a_plain_transcript_saves_each_utterance_as_said():
    data = {
        "utterances": [{"id": "u1", "speaker": "Ann", "date": "2025-01-01T10:00:00", "text": "I like tea"}],
        "questions": [{"text": "what does Ann like?", "evidence": ["u1"]}],
    }
    (utterance,) = read_conversation(data).utterances
    assert utterance.memory == "{user} said: I like tea" and utterance.date.tzinfo is not None
