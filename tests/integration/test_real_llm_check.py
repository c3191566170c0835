"""The real-model check (scripts/real_llm_check.py) run against a stand-in that talks like one did."""

from __future__ import annotations

import pytest
from scripts import real_llm_check

from kioku.playground.standins import OpenAIStandIn, completion_body


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


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("[Alice | UserID:1] hi", "header"),
        ("ok\n<som>[Bob | UserID:2]", "header"),
        ("a ⏎ b", "⏎"),
        ("done<eom>", "marker"),
        ("  ", "empty"),
    ],
)
def test_the_check_names_what_a_reply_still_carries(reply, problem):
    assert any(problem in found for found in real_llm_check.problems(reply))
    assert real_llm_check.problems("Friday, by car.\nBring [snacks | drinks].") == []


def test_without_a_server_the_check_says_so(monkeypatch, capsys):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    assert real_llm_check.main() == 2
    assert "LLM_BASE_URL is not set" in capsys.readouterr().err
