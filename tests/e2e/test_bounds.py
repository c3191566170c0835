"""What one message may cost at most: model tokens, Discord messages, tool calls (INTERFACES' bounds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import ScopeKind
from kioku.playground.stack import LocalStack
from kioku.playground.standins import OpenAIStandIn, completion_body
from tests.e2e.conftest import relay_post, running_stack, same_minute

pytestmark = pytest.mark.e2e

GUILD, CHANNEL = "200000000000000001", "300000000000000001"
REAL_ANSWERS = Path(__file__).resolve().parents[1] / "contracts" / "llama_cpp_small_model_answers.json"


@pytest.fixture
def stack(llm: OpenAIStandIn) -> Iterator[LocalStack]:
    with running_stack(llm, LLM_MAX_TOKENS="321") as running:
        running.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        yield running


def turn(stack: LocalStack, text: str, alice: dict | None = None) -> dict:
    if alice is None:
        alice = stack.discord.seed_user("alice", global_name="Alice")
        stack.discord.seed_member(GUILD, alice)
    message = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> {text}")
    assert relay_post(stack, message, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    return message


def bot_messages(stack: LocalStack) -> list[dict]:
    return [m for m in stack.discord.channel_messages(CHANNEL) if m["author"]["id"] == stack.application_id]


def test_forty_tool_calls_run_six_and_tell_the_model_about_the_rest(stack, llm):
    # Given a model answering one message with 40 memory saves
    calls = [
        ("create_long_term_memory", {"memory_content": f"fact {n}", "memory_scope": "server_wide"})
        for n in range(40)
    ]
    llm.enqueue(completion_body(tool_calls=calls), completion_body("Done."))
    # When the turn runs
    turn(stack, "remember all of this")
    # Then six are saved and announced, and the other 34 come back to the model as not run
    saved = DynamoMemoryStore(KiokuTable(stack.resources.table_name)).memories_of(ScopeKind.SERVER, GUILD)
    assert len(saved) == 6
    assert sum(1 for m in bot_messages(stack) if m.get("embeds")) == 6
    results = [json.loads(m["content"]) for m in llm.bodies[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 40
    assert sum("not run" in r["message"] for r in results if r["status"] == "error") == 34


def test_a_very_long_answer_is_cut_to_three_messages_with_a_visible_mark(stack, llm):
    llm.enqueue(completion_body("word " * 3000))
    trigger = turn(stack, "tell me everything")
    replies = bot_messages(stack)
    assert len(replies) == 3 and all(len(m["content"]) <= 2000 for m in replies)
    assert replies[-1]["content"].endswith("…")
    assert replies[0]["message_reference"]["message_id"] == trigger["id"]


def real_answer(what: str) -> dict:
    """A response body a real small model gave (tests/contracts/llama_cpp_small_model_answers.json)."""
    answers = json.loads(REAL_ANSWERS.read_text())["answers"]
    (answer,) = [answer for answer in answers if answer["what"].startswith(what)]
    return answer


def test_an_answer_the_model_stopped_at_the_token_limit_ends_with_a_visible_mark(stack, llm):
    # Given a real small model's answer that stopped at max_tokens mid-thought, after its own header
    answer = real_answer("its own header, Sent line and <som> first, stopped at max_tokens")
    assert answer["body"]["choices"][0]["finish_reason"] == "length"
    llm.enqueue(answer["body"])

    # When the turn runs
    turn(stack, "anything else to remember for Friday?")

    # Then the reply is the answer without the header, marked as cut
    (reply,) = bot_messages(stack)
    assert reply["content"] == answer["cleaned"] + " …"


def test_a_cut_answer_whose_tail_was_someone_elses_turn_is_not_marked(stack, llm):
    # Given a real answer stopped at max_tokens while writing Bob's next turn for him
    answer = real_answer("Bob's header and next turn mid-reply")
    assert "[Bob (bob) | UserID:" in answer["body"]["choices"][0]["message"]["content"]
    llm.enqueue(answer["body"])

    turn(stack, "what did alice say about the trip?")

    # Then the reply ends where Bob's turn began: nothing of it was cut, so no mark
    (reply,) = bot_messages(stack)
    assert reply["content"] == answer["cleaned"]


def test_every_model_request_is_bounded_in_tokens(stack, llm):
    turn(stack, "hello")
    assert [body["max_tokens"] for body in llm.bodies] == [321]


def test_over_the_rate_one_notice_then_silence(llm):
    # Given a limit of two turns a minute
    with running_stack(llm, TURN_RATE_LIMIT_PER_MINUTE="2") as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        # When one person sends five messages within a minute (not across the turn of a minute)
        same_minute()
        alice = stack.discord.seed_user("alice", global_name="Alice")
        for n in range(5):
            turn(stack, f"message {n}", alice)
        # Then two are answered, the third gets one short notice, the last two nothing, and the model
        # was asked twice
        texts = [m["content"] for m in bot_messages(stack)]
        assert texts[:2] == ["Sure.", "Sure."]
        assert len(texts) == 3 and "faster than I can keep up" in texts[2]
        assert len(llm.bodies) == 2
