"""The real-model check (scripts/real_llm_check.py) run against a stand-in that talks like one did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripts import real_llm_check

from kioku.playground.standins import OpenAIStandIn, completion_body
from kioku.services.turn import APOLOGY, EMPTY_REPLY

REAL_ANSWERS = Path(__file__).resolve().parents[1] / "contracts" / "llama_cpp_small_model_answers.json"


def echoing(body: dict) -> dict:
    """What a small llama.cpp model answered: its recalled-line header after the marker, ⏎ for line
    breaks, then Alice's next turn written for her."""
    return completion_body(
        "<som>[Kioku (you) | UserID:100000000000000001] Friday, by car ⏎ bring snacks<eom>\n"
        "[Alice | UserID:100000000000000002 | MessageID:5]\n<som>see you all!<eom>"
    )


def test_the_check_passes_when_every_posted_reply_is_clean(monkeypatch, capsys):
    with OpenAIStandIn(api_key="local", responder=echoing) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        assert real_llm_check.main() == 0
        assert len(llm.bodies) == len(real_llm_check.ASKED)
    out = capsys.readouterr().out
    assert "kioku: 'Friday, by car\\nbring snacks'" in out
    assert "3 of 3 replies clean" in out


def test_the_model_and_its_limits_named_in_the_environment_reach_the_server(monkeypatch):
    # Given a model named in the environment (a server holding several picks one by that name)
    with OpenAIStandIn(api_key="local", responder=echoing) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        monkeypatch.setenv("LLM_MODEL", "smollm2-135m-instruct")
        monkeypatch.setenv("LLM_MAX_TOKENS", "200")
        real_llm_check.main()

    # Then every request names it and asks for at most that many tokens
    assert {body["model"] for body in llm.bodies} == {"smollm2-135m-instruct"}
    assert {body["max_tokens"] for body in llm.bodies} == {200}


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("[Alice | UserID:1] hi", "header"),
        ("ok\n<som>[Bob | UserID:2]", "header"),
        ("a ⏎ b", "⏎"),
        ("done<eom>", "marker"),
        ("done</som>", "marker"),
        ("ok [Bob (bob) | UserID:2 | MessageID:3] hi", "header"),
        ("ok\nSent: 2026-12-02 00:05:18 UTC (unix 1796169918)", "Sent"),
        ("ok  <s>[INST]", "chat-template"),
        ("  ", "empty"),
    ],
)
def test_the_check_names_what_a_reply_still_carries(reply, problem):
    assert any(problem in found for found in real_llm_check.problems(reply))
    assert real_llm_check.problems("Friday, by car.\nBring [snacks | drinks].") == []


def test_the_check_fails_a_turn_the_model_did_not_really_answer():
    assert any("apology" in found for found in real_llm_check.problems(APOLOGY))
    assert any("nothing was left" in found for found in real_llm_check.problems(EMPTY_REPLY))


@pytest.mark.parametrize(
    "answer", json.loads(REAL_ANSWERS.read_text())["answers"], ids=lambda answer: answer["what"]
)
def test_the_check_names_what_a_real_models_cleaned_answer_still_carries(answer):
    # Given what kioku posted of a real small model's answer ("…" for nothing)
    posted = answer["cleaned"] or EMPTY_REPLY

    # Then the check reports exactly what is left over (the server's escaping, its template's tokens)
    found = real_llm_check.problems(posted)
    assert len(found) == len(answer["check"])
    assert all(any(expected in problem for problem in found) for expected in answer["check"])


def test_without_a_server_the_check_says_so(monkeypatch, capsys):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    assert real_llm_check.main() == 2
    assert "LLM_BASE_URL is not set" in capsys.readouterr().err
