"""The OpenAI-compatible client against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from kioku.adapters.llm import ChatRequest, LlmUnavailable, make_chat_model
from kioku.adapters.llm.openai import OpenAIChatModel, RetryPolicy
from kioku.config import ConfigurationError, Settings
from kioku.playground.standins import CannedResponse, OpenAIStandIn, completion_body

REAL_ANSWERS = Path(__file__).resolve().parents[1] / "contracts" / "llama_cpp_small_model_answers.json"
API_KEY = "sk-test-secret-key-123"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
REQUEST = ChatRequest(messages=[{"role": "user", "content": "hi"}])


class RecordingSleep:
    """Sleeps without waiting: records the wait and moves its own clock forward."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.now = 0.0

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


@pytest.fixture
def server():
    with OpenAIStandIn(api_key=API_KEY) as stand_in:
        yield stand_in


@pytest.fixture
def sleep():
    return RecordingSleep()


def client_for(server: OpenAIStandIn, sleep: RecordingSleep, **policy) -> OpenAIChatModel:
    retry = RetryPolicy(
        **{"max_attempts": 3, "base_delay_seconds": 0.01, "max_delay_seconds": 0.05, **policy}
    )
    return OpenAIChatModel(
        base_url=server.base_url,
        model="test-model",
        api_key=API_KEY,
        timeout_seconds=5,
        retry=retry,
        sleep=sleep,
        clock=sleep.clock,
    )


def test_sends_model_messages_tools_and_bearer_key(server, sleep):
    # Given a text answer queued
    server.enqueue(completion_body("hello back"))

    # When a request with tools is sent
    response = client_for(server, sleep).complete(ChatRequest(messages=REQUEST.messages, tools=TOOLS))

    # Then the body is the chat-completions format and the answer is parsed
    (recorded,) = server.requests
    assert recorded.headers["authorization"] == f"Bearer {API_KEY}"
    assert recorded.body == {"model": "test-model", "messages": REQUEST.messages, "tools": TOOLS}
    assert response.content == "hello back"
    assert response.tool_calls == ()


def test_omits_tools_when_none_are_offered(server, sleep):
    server.enqueue(completion_body("ok"))

    client_for(server, sleep).complete(REQUEST)

    assert "tools" not in server.bodies[0]


def test_parses_tool_calls(server, sleep):
    server.enqueue(completion_body(tool_calls=[("lookup", {"q": "kioku"})]))

    response = client_for(server, sleep).complete(REQUEST)

    (call,) = response.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == ("call_0", "lookup", {"q": "kioku"})
    assert response.assistant_message()["tool_calls"][0]["function"]["name"] == "lookup"


def test_an_answer_stopped_at_the_token_limit_is_known_as_cut_short(server, sleep):
    # Given what llama-cpp-python's server answered with a small model, stopped at max_tokens or not
    answers = json.loads(REAL_ANSWERS.read_text())["answers"]
    for answer in answers:
        server.enqueue(answer["body"])

    # When each is read
    responses = [client_for(server, sleep).complete(REQUEST) for _ in answers]

    # Then an answer is cut short exactly when the server says it stopped at the limit ("length")
    assert [response.cut_short for response in responses] == [
        answer["body"]["choices"][0]["finish_reason"] == "length" for answer in answers
    ]
    assert any(response.cut_short for response in responses)
    assert not all(response.cut_short for response in responses)


def test_waits_out_429_retry_after_then_succeeds(server, sleep):
    # Given one rate-limit answer asking for a 2 second wait
    server.enqueue(CannedResponse(429, {"error": {"message": "slow down"}}, {"Retry-After": "2"}))
    server.enqueue(completion_body("finally"))

    # When the client completes
    response = client_for(server, sleep).complete(REQUEST)

    # Then it waited what the server asked and retried the same body
    assert response.content == "finally"
    assert sleep.waits == [2.0]
    assert server.bodies[0] == server.bodies[1]


def test_retry_after_is_capped(server, sleep):
    server.enqueue(CannedResponse(429, headers={"Retry-After": "3600"}), completion_body("ok"))

    client_for(server, sleep, max_retry_after_seconds=5).complete(REQUEST)

    assert sleep.waits == [5]


def test_persistent_5xx_gives_up_after_max_attempts_with_backoff(server, sleep):
    server.enqueue(*[CannedResponse(500, {"error": {"message": "boom"}})] * 5)

    with pytest.raises(LlmUnavailable) as raised:
        client_for(server, sleep).complete(REQUEST)

    assert len(server.requests) == 3
    assert raised.value.status == 500
    assert len(sleep.waits) == 2
    assert all(0 < wait <= 0.05 for wait in sleep.waits)


def test_total_time_budget_stops_retrying_early(server, sleep):
    server.enqueue(*[CannedResponse(503, headers={"Retry-After": "10"})] * 5)

    with pytest.raises(LlmUnavailable, match="out of time"):
        client_for(server, sleep, max_attempts=5, total_budget_seconds=15).complete(REQUEST)

    assert len(server.requests) == 2
    assert sleep.waits == [10.0]


@pytest.mark.parametrize(
    "answer",
    [
        CannedResponse(200, "{not json"),
        CannedResponse(200, {"choices": []}),
        CannedResponse(200, {"choices": [{"message": {"content": None}}]}),
        CannedResponse(200, {"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}),
        # shapes the old reading let through to a TypeError further in
        CannedResponse(200, {"choices": [{"message": {"content": [{"text": None}]}}]}),
        CannedResponse(200, {"choices": [{"message": {"content": [{"type": "text", "text": 7}]}}]}),
        CannedResponse(200, {"choices": [{"message": {"content": "hi", "tool_calls": [None]}}]}),
        CannedResponse(200, {"choices": [{"message": {"content": "hi", "tool_calls": {"a": 1}}}]}),
        CannedResponse(200, {"choices": [None]}),
        CannedResponse(200, []),
    ],
)
def test_malformed_responses_are_unavailable_without_retrying(server, sleep, answer):
    server.enqueue(answer)

    with pytest.raises(LlmUnavailable):
        client_for(server, sleep).complete(REQUEST)

    assert len(server.requests) == 1


def test_a_rejected_key_is_not_retried_and_never_repeated(server, sleep, caplog):
    client = OpenAIChatModel(base_url=server.base_url, model="m", api_key="sk-wrong-key", sleep=sleep)

    with caplog.at_level(logging.DEBUG), pytest.raises(LlmUnavailable) as raised:
        client.complete(REQUEST)

    assert raised.value.status == 401
    assert "sk-wrong-key" not in str(raised.value)
    assert "sk-wrong-key" not in caplog.text
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "quoted",
    [API_KEY, f"{API_KEY[:8]}{'*' * 12}{API_KEY[-4:]}"],
    ids=["whole", "masked"],
)
def test_a_refusal_quoting_the_key_is_cut_short_and_never_repeats_it(server, sleep, caplog, quoted):
    # Given a provider that refuses the request with a long message quoting the key
    message = f"Invalid request for key {quoted}. " + "The details go on. " * 100
    server.enqueue(CannedResponse(400, {"error": {"message": message}}))

    with caplog.at_level(logging.DEBUG), pytest.raises(LlmUnavailable) as raised:
        client_for(server, sleep).complete(REQUEST)

    # Then what reaches the turn's log line says why, briefly, with no part of the key
    text = str(raised.value)
    assert raised.value.status == 400 and "Invalid request for key [redacted]" in text
    assert len(text) < 300
    for shown in (API_KEY, API_KEY[:8], API_KEY[-4:]):
        assert shown not in text and shown not in caplog.text
    assert len(server.requests) == 1


def test_transport_errors_are_retried_then_unavailable(sleep):
    # Given a server that is gone
    stand_in = OpenAIStandIn().start()
    base_url = stand_in.base_url
    stand_in.stop()
    client = OpenAIChatModel(
        base_url=base_url,
        model="m",
        api_key=None,
        retry=RetryPolicy(max_attempts=2, base_delay_seconds=0.01),
        sleep=sleep,
    )

    with pytest.raises(LlmUnavailable, match="ConnectError"):
        client.complete(REQUEST)

    assert len(sleep.waits) == 1


def test_registry_builds_the_openai_client_and_requires_a_model(server):
    base = {
        "TABLE_NAME": "kioku",
        "TURN_QUEUE_URL": "http://queue",
        "DISCORD_APPLICATION_ID": "1",
        "DISCORD_PUBLIC_KEY": "a" * 64,
        "RELAY_PUBLIC_KEY": "b" * 64,
        "LLM_BASE_URL": server.base_url,
        "LLM_API_KEY": API_KEY,
    }
    server.enqueue(completion_body("via settings"))

    model = make_chat_model(Settings(**base, LLM_MODEL="gpt-test"))

    assert model.complete(REQUEST).content == "via settings"
    assert server.bodies[0]["model"] == "gpt-test"
    with pytest.raises(ConfigurationError, match="LLM_MODEL"):
        make_chat_model(Settings(**base))


def test_a_hung_model_is_given_up_within_the_turns_time_budget():
    import threading
    import time

    release = threading.Event()

    def hang(body):
        release.wait(5)
        return completion_body("too late")

    with OpenAIStandIn(responder=hang) as stand_in:
        model = OpenAIChatModel(base_url=stand_in.base_url, model="m", api_key="k", timeout_seconds=60)
        started = time.monotonic()
        with pytest.raises(LlmUnavailable):
            model.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}], time_budget_seconds=0.5))
        elapsed = time.monotonic() - started
        release.set()
    assert elapsed < 3
