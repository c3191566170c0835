"""The memory benchmark: the generated conversation keeps its promises, the JSON format of
docs/memory.md is read as documented (refusing what it cannot measure), the faster moto answers as
moto does, and a conversation is played through the real save path and real turns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import boto3
import pytest
from bench.memory import Mode, ask_all, faster_moto, local_stack, save_conversation
from bench.memory_conversation import conversation_json, generate, read_conversation
from moto import mock_aws

from kioku.domain.ltm.statuses import SaveStatus
from kioku.playground.aws import create_table, load_template

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


def test_the_generated_questions_are_mostly_in_other_words_and_some_about_corrected_facts():
    questions = generate(1000).questions
    kinds = [q.kind for q in questions]
    assert kinds.count("same words") < len(questions) / 4
    assert {"other words", "corrected", "two people", "event"} <= set(kinds)
    assert all(q.superseded for q in questions if q.kind == "corrected")
    assert any(len(q.evidence) == 2 for q in questions)  # "do Alice and Bob live in the same city?"


ITEM = {
    "pk": {"S": "book#1"},
    "sk": {"S": "0"},
    "e1": {"M": {"c": {"S": "{user} lives in Porto"}, "v": {"B": bytes(range(256))}, "n": {"N": "3"}}},
    "l": {"L": [{"S": "a"}, {"NULL": True}, {"BOOL": False}, {"M": {}}]},
    "bs": {"BS": [b"\x00\xff", b"ok"]},
    "ss": {"SS": ["x", "y"]},
}


def _read_back(client) -> dict:
    response = client.batch_get_item(
        RequestItems={"kioku-moto": {"Keys": [{"pk": ITEM["pk"], "sk": ITEM["sk"]}], "ConsistentRead": True}}
    )
    return response["Responses"]["kioku-moto"][0]


def test_the_faster_moto_answers_as_moto_does_and_rolls_a_refused_transaction_back_whole():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, load_template(), "kioku-moto")
        client.put_item(TableName="kioku-moto", Item=ITEM)
        as_moto_answers = _read_back(client)
        with faster_moto():
            assert _read_back(client) == as_moto_answers
            # a transaction refused by its last part leaves none of its parts behind
            refused = [
                {"Put": {"TableName": "kioku-moto", "Item": {"pk": {"S": "new"}, "sk": {"S": "0"}}}},
                {
                    "Update": {
                        "TableName": "kioku-moto",
                        "Key": {"pk": ITEM["pk"], "sk": ITEM["sk"]},
                        "UpdateExpression": "SET ss = :other",
                        "ExpressionAttributeValues": {":other": {"SS": ["z"]}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": "kioku-moto",
                        "Key": {"pk": {"S": "absent"}, "sk": {"S": "0"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
            with pytest.raises(client.exceptions.TransactionCanceledException):
                client.transact_write_items(TransactItems=refused)
            assert _read_back(client) == as_moto_answers
            assert "Item" not in client.get_item(
                TableName="kioku-moto", Key={"pk": {"S": "new"}, "sk": {"S": "0"}}
            )
            assert client.query(
                TableName="kioku-moto",
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": ITEM["pk"]},
            )["Items"] == [as_moto_answers]


def test_a_conversation_is_saved_by_the_tool_and_asked_in_real_turns_whose_requests_are_read():
    # Given the example of the docs, saved through create_long_term_memory
    example = re.search(r"```json\n(.*?)```", DOCS.read_text(), re.DOTALL).group(1)
    import json

    conversation = read_conversation(json.loads(example))
    with mock_aws(), faster_moto(), local_stack(conversation, "kioku-bench-test") as stack:
        saved = save_conversation(stack, conversation, None)
        assert saved.statuses == {SaveStatus.SAVED: 2}

        # When each question is asked as a turn
        (measured,) = ask_all(stack, conversation, saved, [Mode("words", None)]).values()

        # Then the model was sent the memories that answer them, and nothing was left in the channel
        assert measured.questions == measured.found == 2
        first_request = stack.sent[0]["messages"]
        assert any("lives in Lisbon" in str(message.get("content")) for message in first_request)
        general = stack.channels["general"]
        assert [m["content"] for m in stack.discord.channel_messages(general)] == [
            u.text for u in conversation.utterances if u.channel == "general"
        ]


def test_the_ranking_of_a_thousand_is_timed_in_a_process_of_its_own_and_judged_against_the_target():
    from bench.memory import RANKING_TARGET_MS, ranking_in_a_fresh_process

    lines = ranking_in_a_fresh_process()

    timed = [line for line in lines if line.startswith("memory.ranking_ms_1000 ")]
    assert [line.split()[1] for line in timed] == ["words", "embeddings"]
    for line in timed:
        figures = dict(re.findall(r"(\w+)=([\d.]+)", line))
        assert set(figures) >= {"warm", "cold", "fastest_warm", "fastest_cold"}
        assert float(figures["fastest_cold"]) <= float(figures["cold"])
    (verdict,) = [line for line in lines if line.startswith("memory.ranking_within_target ")]
    words = dict(re.findall(r"(\w+)=([\d.]+)", timed[0]))
    assert f"target_ms={RANKING_TARGET_MS}" in verdict
    assert f"cold={float(words['fastest_cold']) <= RANKING_TARGET_MS}" in verdict
    assert f"warm={float(words['fastest_warm']) <= RANKING_TARGET_MS}" in verdict


def test_the_replay_counts_each_question_at_each_budget_and_skips_missing_dev_conversations(
    tmp_path, monkeypatch
):
    from bench import memory_replay

    # Given a generated conversation
    conversation = generate(200)

    # When its recall stage is replayed without the stack
    replayed = memory_replay.replay(conversation, (1_000, 8_000))

    # Then every question is counted at each budget, by kind, the larger budget finding at least as much
    assert sum(replayed.asked.values()) == len(conversation.questions)
    assert replayed.share(8_000) >= replayed.share(1_000) > 0
    assert max(replayed.chars[1_000]) <= 1_000 and max(replayed.chars[8_000]) <= 8_000
    lines = list(memory_replay.report("generated", replayed))
    assert len(lines) == 2 and all("chars_per_turn=" in line for line in lines)
    # and where the dev conversations are not, make bench says so and goes on
    monkeypatch.setattr(memory_replay, "DEV_DIRECTORY", tmp_path / "absent")
    assert memory_replay.recall_lines() == [
        f"memory.dev_evidence_recall skipped: no conversations in {(tmp_path / 'absent').resolve()}"
    ]


def _facts_file() -> dict:
    """Two people's facts over two sessions (one a rewording the save refuses) and four questions:
    one whose evidence needs two facts, one no fact cites."""
    day1, day2 = "2023-05-08T13:56:00+00:00", "2023-06-09T10:00:00+00:00"
    facts = [
        ("F1", "Mel", day1, "Mel took up pottery classes at the community studio.", ["D1:1"]),
        ("F2", "Mel", day1, "Mel took up pottery classes at the community studio!", ["D1:2"]),
        ("F3", "Cam", day1, "Cam works as a counselor for teenagers in Lisbon.", ["D1:3"]),
        ("F4", "Mel", day2, "Mel went camping with her kids by the lake.", ["D2:1"]),
        ("F5", "Cam", day2, "Cam adopted a grey cat named Oscar from the shelter.", ["D2:2"]),
    ]
    filler = [
        (f"G{n}", "Cam", day2, f"Cam read chapter {n} of a long novel about sailors {n}.", [f"D3:{n}"])
        for n in range(40)
    ]
    return {
        "speakers": ["Mel", "Cam"],
        "facts": [
            {"id": i, "about": a, "date": d, "text": t, "cites": c} for i, a, d, t, c in facts + filler
        ],
        "questions": [
            {"id": "q1", "text": "What is Cam's cat called?", "evidence": ["D2:2"], "kind": "single-hop"},
            {"id": "q2", "text": "Where does Cam work?", "evidence": ["D1:3"], "kind": "single-hop"},
            {
                "id": "q3",
                "text": "What did Mel do: pottery and camping?",
                "evidence": ["D1:1", "D2:1"],
                "kind": "multi-hop",
            },
            {"id": "q4", "text": "What did Cam eat?", "evidence": ["D9:9"], "kind": "single-hop"},
            {"id": "q5", "text": "Which classes?", "evidence": ["D1:2"], "kind": "open-domain"},
        ],
    }


def test_the_facts_replay_saves_each_fact_about_its_person_and_asks_what_the_facts_cite(
    tmp_path, monkeypatch, capsys
):
    from bench import memory_facts, memory_replay

    # Given a facts file
    data = _facts_file()
    path = tmp_path / "facts-1.json"
    path.write_text(json.dumps(data))

    # When it is replayed by words
    replayed = memory_facts.replay_facts(data, None, (400, 8_000))

    # Then the rewording is refused, so the question citing only it finds nothing; the one no fact
    # cites is not asked; at 8,000 characters everything else is shown, at 400 what fits
    assert replayed.unsaved == 1
    assert replayed.asked == {"single-hop": 2, "multi-hop": 1, "open-domain": 1}
    assert replayed.share(8_000, "open-domain") == 0.0
    assert replayed.share(8_000) == 0.75 and replayed.share(8_000, "multi-hop") == 1.0
    assert max(replayed.chars[400]) <= 400 < min(replayed.chars[8_000])
    # and the command prints one line a budget, as the shared contract writes it
    memory_replay.main(["--facts", str(path), "--ranking", "words"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" budget=")[1].split()[0] for line in lines] == ["2000", "4000", "8000"]
    assert re.fullmatch(
        r"memory\.facts_recall=0\.75 file=facts-1\.json budget=8000 questions=4 uncovered=1 "
        r"multi-hop=1\.00/1 open-domain=0\.00/1 single-hop=1\.00/2 chars_per_turn=\d+",
        lines[2],
    )
    # and where the dev facts are not, make bench says so and goes on
    monkeypatch.setattr(memory_facts, "DEV_DIRECTORY", tmp_path / "absent")
    assert memory_facts.facts_lines(ranking="words") == [
        f"memory.facts_recall skipped: no facts files in {(tmp_path / 'absent').resolve()}"
    ]


def test_the_miss_analysis_tells_a_question_no_fact_says_from_one_the_ranking_missed(tmp_path):
    from bench import memory_misses

    # Given the facts file whose open-domain question cites only the refused rewording
    path = tmp_path / "facts-1.json"
    path.write_text(json.dumps(_facts_file()))

    # When its misses are analysed by words at 8,000 characters
    lines = memory_misses.analyse(path, None, listing=True, budgets=(8_000,))

    # Then that question is the one miss, unsaid (no fact saying anything of it cites its evidence),
    # and the ceiling of any ranking is the three others
    assert lines[0].startswith("  miss facts-1.json 8000 q5 open-domain unsaid ")
    assert lines[1].startswith(
        "memory.facts_misses file=facts-1.json budget=8000 recall=0.75 ceiling=0.75 found_unsaid=0 unsaid=1 "
    )
