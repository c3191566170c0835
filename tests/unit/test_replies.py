"""The model's answer → Discord-sized messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kioku.domain.replies import split_reply, strip_echoed_metadata

REAL_ANSWERS: Final = Path(__file__).resolve().parents[1] / "contracts" / "llama_cpp_small_model_answers.json"
REAL_BOT_USER_ID: Final = "100000000000000001"


def test_short_text_is_one_chunk():
    assert split_reply("  hello there \n") == ["hello there"]


@pytest.mark.parametrize("blank", ["", "   ", "\n\n\t"])
def test_blank_text_gives_no_chunks(blank):
    assert split_reply(blank) == []


def test_limit_below_the_minimum_is_refused():
    with pytest.raises(ValueError):
        split_reply("text", limit=10)


def test_prefers_paragraph_breaks():
    # Given two paragraphs that only fit separately
    first, second = "a" * 700 + " end.", "b" * 700

    # When split
    chunks = split_reply(f"{first}\n\n{second}", limit=1000)

    # Then each paragraph is its own chunk, intact
    assert chunks == [first, second]


def test_falls_back_to_words_never_cutting_one():
    words = " ".join(f"word{i}" for i in range(600))

    chunks = split_reply(words, limit=500)

    assert all(len(chunk) <= 500 for chunk in chunks)
    assert " ".join(chunks).split() == words.split()


def test_keeps_a_code_block_whole_when_it_fits_in_one_message():
    # Given prose followed by a code block that would straddle the first cut
    code = "```python\n" + "\n".join(f"print({i})" for i in range(60)) + "\n```"
    text = "intro " * 100 + "\n" + code + "\nafter"

    # When split
    chunks = split_reply(text, limit=1000)

    # Then the block is untouched inside a single chunk
    assert all(len(chunk) <= 1000 for chunk in chunks)
    assert sum(code in chunk for chunk in chunks) == 1


def test_a_block_too_long_for_one_message_is_closed_and_reopened():
    code = "```python\n" + "\n".join(f"value_{i} = {i}" for i in range(300)) + "\n```"

    chunks = split_reply("Here it is:\n" + code, limit=500)

    assert len(chunks) > 2
    assert all(len(chunk) <= 500 for chunk in chunks)
    for chunk in chunks:
        assert chunk.count("```") % 2 == 0, chunk  # every chunk renders as balanced code
    for chunk in chunks[1:]:
        assert chunk.startswith("```python\n")
    lines = [line for chunk in chunks for line in chunk.splitlines() if line.startswith("value_")]
    assert lines == [f"value_{i} = {i}" for i in range(300)]


def test_a_single_unbreakable_run_is_hard_cut():
    chunks = split_reply("x" * 4500)

    assert [len(chunk) for chunk in chunks] == [1996, 1996, 508]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="abc \n", max_size=400),
            st.just("```py\n"),
            st.just("\n```\n"),
            st.text(alphabet="xyz", min_size=150, max_size=600),
        ),
        max_size=20,
    ).map("".join),
    st.integers(min_value=100, max_value=600),
)
def test_chunks_are_never_empty_and_never_too_long(text, limit):
    chunks = split_reply(text, limit)

    assert all(chunk.strip() and len(chunk) <= limit for chunk in chunks)
    # Nothing but whitespace and the fences we add is lost or invented.
    squeezed = "".join("".join(chunks).split()).replace("`", "").replace("py", "")
    assert squeezed == "".join(text.split()).replace("`", "").replace("py", "")


@pytest.mark.parametrize(
    ("echoed", "clean"),
    [
        ("[kioku | UserID:900 | MessageID:5]\nSent: 2024-05-01 UTC\n<som>Hello!<eom>", "Hello!"),
        ("[kioku | UserID:900 | MessageID:5] Hello!", "Hello!"),
        ("<som>Hi there<eom>", "Hi there"),
        ("Plain answer with [brackets | not a header]", "Plain answer with [brackets | not a header]"),
    ],
)
def test_strip_echoed_metadata(echoed, clean):
    assert strip_echoed_metadata(echoed) == clean


@pytest.mark.parametrize(
    ("echoed", "clean"),
    [
        # a recalled line's header, its marker first, as a llama.cpp model echoed it
        ("<som>[Kioku (you) | UserID:900] Hello there<eom>", "Hello there"),
        ("<som> [Kioku (you) | UserID:900]\nSent: 2024-05-01 UTC\nHi", "Hi"),
        # recalled lines write their line breaks as ⏎; the reply gets real ones back
        ("First line ⏎ second line⏎third", "First line\nsecond line\nthird"),
        # the bot's own header on a later line: only the header goes
        ("Sure.\n[Kioku | UserID:900 | MessageID:7]\n<som>And more.<eom>", "Sure.\nAnd more."),
        # the model writing someone else's next turn: the reply ends before it
        ("Sure thing!\n[Alice (alice) | UserID:111 | MessageID:8]\n<som>thanks bot<eom>", "Sure thing!"),
        ("Sure thing!<eom>\n<som>[Alice | UserID:111] thanks", "Sure thing!"),
        ("Done ⏎ [Alice | UserID:111] <som>thanks<eom>", "Done"),
        # what Gemma 3 270M wrote: the history's Sent line, closing-tag markers, a header mid-line
        ("Sent: 2026-12-02 00:05:18 UTC (unix 1796169918)\n<som>Hi<eom>", "Hi"),
        ("Hi there</som>", "Hi there"),
        ("Sure!</eom>  [Bob (bob) | UserID:111 | MessageID:8]\n<som>thanks", "Sure!"),
        ("Sure!\nSent: 2026-12-02 00:05:18 UTC (unix 1796169918)\n<som>next one<eom>", "Sure!"),
        ("Sure. [Kioku | UserID:900] And more.", "Sure.\nAnd more."),
        # words that only look like it stay
        ("Sent: yesterday, by mail", "Sent: yesterday, by mail"),
    ],
)
def test_strip_echoed_metadata_anywhere_a_line_starts_with_a_header(echoed, clean):
    assert strip_echoed_metadata(echoed, bot_user_id="900") == clean


def test_a_later_header_ends_the_reply_when_the_bots_id_is_not_known():
    assert strip_echoed_metadata("Yes.\n[Kioku | UserID:900] more") == "Yes."


def test_at_most_keeps_the_first_chunks_and_marks_the_cut():
    from kioku.domain.replies import at_most

    assert at_most(["a", "b"], 3) == ["a", "b"]
    kept = at_most(["one", "two", "x" * 2000, "four"], 3)
    assert kept[:2] == ["one", "two"] and kept[2].endswith(" …") and len(kept[2]) <= 2000


def real_answers() -> list[dict]:
    """What a real small model answered kioku (tests/contracts/llama_cpp_small_model_answers.json)."""
    return json.loads(REAL_ANSWERS.read_text())["answers"]


@pytest.mark.parametrize("answer", real_answers(), ids=lambda answer: answer["what"])
def test_a_real_small_models_answers_lose_the_headers_markers_and_sent_lines_it_imitated(answer):
    content = answer["body"]["choices"][0]["message"]["content"]

    cleaned = strip_echoed_metadata(content, REAL_BOT_USER_ID)

    assert cleaned == answer["cleaned"]
    assert not any(
        part in cleaned for part in ("<som>", "<eom>", "</som>", "</eom>", "UserID:", "Sent: ", "⏎")
    )


def test_the_history_s_own_sent_line_starting_a_later_line_ends_the_reply():
    # Given the Sent line kioku writes into the history (kioku.domain.dialogue), as a model copies it
    from datetime import UTC, datetime

    from kioku.domain.dialogue import _sent_line

    sent = _sent_line(datetime(2026, 12, 2, 0, 5, 18, tzinfo=UTC))
    assert sent is not None

    # Then first it is dropped, and after words it is a message of its own: the reply ends there
    assert strip_echoed_metadata(f"{sent}\n<som>Friday works.<eom>") == "Friday works."
    assert strip_echoed_metadata(f"Friday works.\n{sent}\n<som>me too<eom>") == "Friday works."


@pytest.mark.parametrize(
    "answer",
    [
        "Sure, Friday works.\n[Kioku (you) | UserID:1304926857 …",  # the bot's own, as posted (issue 31)
        "Sure, Friday works.\n[Bob (bob) | UserID:",
        "Sure, Friday works. [Kioku (you) | UserID:1304926857",  # begun after words on its line
        "Sure, Friday works.\n<som>[Kioku (you) | UserID:1304926857 | Messa",
        "Sure, Friday works.\n[Kioku (you) | User …",  # stopped before the id's name was out
        "Sure, Friday works.\n[Kioku (you) |",
    ],
)
def test_a_header_cut_short_ends_the_reply_where_it_begins(answer):
    assert strip_echoed_metadata(answer, "1304926857") == "Sure, Friday works."


def test_a_header_begun_but_not_closed_ends_the_reply_even_with_lines_after_it():
    answer = "Sure.\n[Bob (bob) | UserID:200 no closing bracket\nBob's words"

    assert strip_echoed_metadata(answer, "1304926857") == "Sure."


def test_text_that_only_looks_a_little_like_a_header_stays():
    for kept in ("Pick one: [a | b]", "See [the docs | UserGuide]", "Options: [yes |"):
        assert strip_echoed_metadata(f"Sure.\n{kept}") == f"Sure.\n{kept}"
