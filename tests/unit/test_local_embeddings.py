"""The optional real-model embeddings server of the memory bench (scripts/local_embeddings.py),
with a counting model in place of all-MiniLM-L6-v2: the OpenAI answer, the refusals, the cache."""

from __future__ import annotations

import threading

import httpx
import pytest
from scripts.local_embeddings import serve


class CountingModel:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def encode(self, texts, normalize_embeddings):
        assert normalize_embeddings
        self.asked.append(list(texts))
        return [[float(len(text)), 1.0] for text in texts]


@pytest.fixture
def server():
    model, cache = CountingModel(), {}
    running = serve(0, model, cache)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{running.server_address[1]}/v1/embeddings", model, cache
    running.shutdown()
    running.server_close()


def test_each_text_is_embedded_once_and_answered_in_the_order_asked(server):
    url, model, cache = server
    first = httpx.post(url, json={"model": "m", "input": ["cat", "a dog"]}, timeout=5).json()
    again = httpx.post(url, json={"model": "m", "input": ["a dog", "fish", "cat", "fish"]}, timeout=5).json()

    assert [item["embedding"] for item in first["data"]] == [[3.0, 1.0], [5.0, 1.0]]
    assert [item["index"] for item in again["data"]] == [0, 1, 2, 3]
    assert [item["embedding"][0] for item in again["data"]] == [5.0, 4.0, 3.0, 4.0]
    assert model.asked == [["cat", "a dog"], ["fish"]]  # the second request asked only for "fish"
    assert set(cache) == {"cat", "a dog", "fish"}


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "input": []},
        {"model": "m", "input": [""]},
        {"model": "m", "input": "x", "dimensions": 256},
    ],
)
def test_what_openai_refuses_is_refused_and_nothing_is_embedded(server, body):
    url, model, _ = server
    response = httpx.post(url, json=body, timeout=5)
    assert response.status_code == 400
    assert model.asked == []
