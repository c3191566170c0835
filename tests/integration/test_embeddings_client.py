"""The embeddings client against a real ``POST /v1/embeddings`` server on 127.0.0.1: what it sends
is what OpenAI's API reference documents (our schema of it), and every failure is ``EmbeddingsUnavailable``
(never the key, never a hang)."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

import httpx
import pytest
from jsonschema import Draft202012Validator

from kioku.adapters.llm.embeddings import OpenAIEmbeddings
from kioku.config import Settings
from kioku.domain.ltm.ports import EmbeddingsUnavailable
from kioku.domain.ltm.vectors import DIMENSIONS, cosine, quantise
from kioku.playground.standins import CannedResponse, EmbeddingsStandIn, standin_embedding

API_KEY = "sk-embed-secret-key-456"
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "contracts" / "openai_embeddings.schema.json").read_text()
)
"""Our own schema of what OpenAI's API reference documents for POST /v1/embeddings."""
UPSTREAM_ENV = "KIOKU_OPENAI_OPENAPI"
"""Names a local copy of OpenAI's published OpenAPI document to check against too (never fetched)."""


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{name}"})


@pytest.fixture
def server():
    with EmbeddingsStandIn(api_key=API_KEY) as stand_in:
        yield stand_in


def client_for(server: EmbeddingsStandIn, **options) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(
        base_url=server.base_url, model="text-embedding-3-small", api_key=API_KEY, **options
    )


def test_the_request_is_a_valid_create_embedding_request_and_the_answer_is_quantised(server):
    # When two texts are embedded
    vectors = client_for(server).embed(["Bob lives in Porto", "which city is Bob based in?"])

    # Then one request went, with the key, valid as OpenAI documents it, asking for 256 dimensions
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    validator("request").validate(request.body)
    assert request.body == {
        "model": "text-embedding-3-small",
        "input": ["Bob lives in Porto", "which city is Bob based in?"],
        "encoding_format": "float",
        "dimensions": DIMENSIONS,
    }
    # and the vectors are the server's, 256 signed bytes each, in order
    assert vectors == [quantise(standin_embedding(text, DIMENSIONS)) for text in request.body["input"]]
    assert cosine(*vectors) > 0.3


def test_the_stand_in_answers_as_openai_documents_it(server):
    body = {"model": "m", "input": ["a dog"], "dimensions": 8}
    answer = httpx.post(
        server.base_url + "/embeddings", json=body, headers={"Authorization": f"Bearer {API_KEY}"}
    )
    validator("response").validate(answer.json())
    assert len(answer.json()["data"][0]["embedding"]) == 8


def test_a_model_refusing_dimensions_is_asked_without_once_and_its_vectors_are_cut():
    # Given a model that takes no dimensions (as text-embedding-ada-002) and answers 1,536
    with EmbeddingsStandIn(supports_dimensions=False) as stand_in:
        client = client_for(stand_in)

        # When it embeds twice
        first = client.embed(["Bob lives in Porto"])
        second = client.embed(["Alice has a dog"])

    # Then the refusal cost one request, the next asked without at once, every body valid
    bodies = stand_in.bodies
    assert ["dimensions" in body for body in bodies] == [True, False, False]
    for body in bodies:
        validator("request").validate(body)
    # and the vectors are the first 256 of the 1,536, renormalised
    assert first == [quantise(standin_embedding("Bob lives in Porto", 1536)[:DIMENSIONS])]
    assert len(second[0]) == DIMENSIONS


@pytest.mark.skipif(
    not os.environ.get(UPSTREAM_ENV),
    reason=f"{UPSTREAM_ENV} names no local copy of OpenAI's OpenAPI document (tests never fetch it)",
)
def test_the_bodies_also_meet_a_local_copy_of_openai_s_openapi_document(server):
    spec = json.loads(Path(os.environ[UPSTREAM_ENV]).read_text())

    def upstream(name: str) -> Draft202012Validator:
        return Draft202012Validator({**spec, "$ref": f"#/components/schemas/{name}"})

    client_for(server).embed(["Bob lives in Porto", "Alice has a dog"])
    (request,) = server.requests
    upstream("CreateEmbeddingRequest").validate(request.body)
    answer = httpx.post(
        server.base_url + "/embeddings", json=request.body, headers={"Authorization": f"Bearer {API_KEY}"}
    )
    upstream("CreateEmbeddingResponse").validate(answer.json())


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
def test_a_refusal_is_unavailable_and_never_repeats_the_key(status, caplog):
    caplog.set_level(logging.DEBUG)
    message = f"Incorrect API key provided: {API_KEY[:7]}*****{API_KEY[-4:]} (and {API_KEY})"
    with EmbeddingsStandIn() as stand_in:
        stand_in.answer_with(CannedResponse(status, {"error": {"message": message}}))
        with pytest.raises(EmbeddingsUnavailable) as raised:
            client_for(stand_in).embed(["hello"])
    text = str(raised.value)
    assert f"HTTP {status}" in text
    for shown in (API_KEY, API_KEY[:7] + "*", API_KEY[-4:]):
        assert shown not in text and shown not in caplog.text
    assert len(stand_in.requests) == 1  # one attempt: ranking by words is the fallback


def test_an_unreachable_or_hung_endpoint_is_unavailable_within_its_timeout():
    gone = EmbeddingsStandIn().start()
    base_url = gone.base_url
    gone.stop()
    with pytest.raises(EmbeddingsUnavailable, match="unreachable"):
        OpenAIEmbeddings(base_url=base_url, model="m", api_key=None).embed(["hello"])

    release = threading.Event()
    with EmbeddingsStandIn() as stand_in:
        stand_in.interceptor = lambda stage, request: release.wait(5) if stage == "before" else None
        started = time.monotonic()
        with pytest.raises(EmbeddingsUnavailable):
            OpenAIEmbeddings(base_url=stand_in.base_url, model="m", api_key=None, timeout_seconds=0.3).embed(
                ["hello"]
            )
        elapsed = time.monotonic() - started
        release.set()
    assert elapsed < 2


@pytest.mark.parametrize(
    "body",
    [
        {"object": "list", "data": []},
        {"object": "list", "data": [{"index": 0, "embedding": [0.0, 0.0]}]},
        {"object": "list", "data": [{"index": 0, "embedding": "not numbers"}]},
        {"object": "list", "data": [{"index": 3, "embedding": [0.1, 0.2]}]},
        "not json at all",
    ],
)
def test_a_malformed_answer_is_unavailable(body):
    with EmbeddingsStandIn() as stand_in:
        stand_in.answer_with(CannedResponse(200, body))
        with pytest.raises(EmbeddingsUnavailable):
            OpenAIEmbeddings(base_url=stand_in.base_url, model="m", api_key=None).embed(["hello"])


def test_the_settings_choose_the_endpoint_and_leave_it_off_when_unset(server):
    base = {
        "TABLE_NAME": "kioku",
        "TURN_QUEUE_URL": "http://queue",
        "DISCORD_APPLICATION_ID": "1",
        "DISCORD_PUBLIC_KEY": "a" * 64,
        "RELAY_PUBLIC_KEY": "b" * 64,
        "LLM_API_KEY": API_KEY,
    }
    assert OpenAIEmbeddings.from_settings(Settings(**base, LLM_BASE_URL=server.base_url)) is None

    on_chat_url = OpenAIEmbeddings.from_settings(
        Settings(**base, LLM_BASE_URL=server.base_url, EMBEDDINGS_MODEL="emb-a")
    )
    on_own_url = OpenAIEmbeddings.from_settings(
        Settings(
            **base,
            LLM_BASE_URL="http://127.0.0.1:9/v1",
            EMBEDDINGS_BASE_URL=server.base_url,
            EMBEDDINGS_MODEL="emb-b",
        )
    )
    assert on_chat_url is not None and on_own_url is not None
    on_chat_url.embed(["hi"])
    on_own_url.embed(["hi"])
    assert [body["model"] for body in server.bodies] == ["emb-a", "emb-b"]
