"""What ``EMBEDDINGS_MODEL`` chooses: unset, the embedded model (loaded on the first text, never
before); ``none``, ranking by words; any other value, that model of an outside endpoint. A missing
layer is said once, and the turns rank by words."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from kioku.adapters.lazy_embedder import LazyEmbedder
from kioku.adapters.llm.embeddings import OpenAIEmbeddings
from kioku.config import Settings
from kioku.domain.ltm.ports import EmbedderAbsent
from kioku.domain.ltm.vectors import DIMENSIONS
from kioku.entrypoints.composition import Container
from kioku.services.embeddings import TurnEmbeddings
from tests.unit.test_composition_root import deployment_settings


def settings(**values: str) -> Settings:
    return deployment_settings(LLM_API_KEY="test-llm-key", DISCORD_BOT_TOKEN="test-bot-token", **values)


def fresh_interpreter(*lines: str) -> subprocess.CompletedProcess[str]:
    """``lines`` run in a new Python, as a cold worker would, after building the container's embedder."""
    script = ";".join(
        (
            "import logging, sys",
            *lines[:-1],
            "from tests.unit.test_embeddings_choice import settings",
            "from kioku.entrypoints.composition import Container",
            "e = Container(settings()).embedder",
            lines[-1],
        )
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)


@pytest.mark.parametrize("value", ["none", "NONE", " None "])
def test_none_ranks_by_words(value):
    assert settings(EMBEDDINGS_MODEL=value).embeddings_choice == "none"
    assert Container(settings(EMBEDDINGS_MODEL=value)).embedder is None
    assert OpenAIEmbeddings.from_settings(settings(EMBEDDINGS_MODEL=value)) is None


def test_a_model_name_is_the_outside_endpoint_as_before():
    embedder = Container(settings(EMBEDDINGS_MODEL="text-embedding-3-small")).embedder
    assert isinstance(embedder, OpenAIEmbeddings)
    assert embedder._model == "text-embedding-3-small"


@pytest.mark.parametrize("environ", [{}, {"EMBEDDINGS_MODEL": ""}, {"EMBEDDINGS_MODEL": "  "}])
def test_unset_is_the_embedded_model_loaded_on_the_first_text(environ):
    embedder = Container(settings(**environ)).embedder
    assert isinstance(embedder, LazyEmbedder) and not embedder.loaded
    (vector,) = embedder.embed(["Melanie paints sunsets"])
    assert embedder.loaded and len(vector) == DIMENSIONS


def test_the_container_hands_out_the_embedder_without_importing_the_runtime():
    done = fresh_interpreter(
        "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'numpy', 'kioku.adapters.embedded_model')"
        " if m in sys.modules))"
    )
    assert done.stdout.strip() == "[]"


def test_a_missing_runtime_is_logged_once_and_turns_rank_by_words():
    # A worker where onnxruntime cannot be imported (the layer is missing)
    done = fresh_interpreter(
        "sys.modules['onnxruntime'] = None",
        "logging.basicConfig(level=logging.INFO)",
        "from kioku.services.embeddings import TurnEmbeddings",
        "print([TurnEmbeddings(e).embed(t) for t in ('first turn', 'second turn', 'third turn')])",
    )
    assert done.stdout.strip() == "[None, None, None]"
    assert done.stderr.count("the embedded model is not available") == 1, done.stderr
    assert "embeddings failed" not in done.stderr


def test_an_absent_embedder_is_loaded_once_and_a_turn_stops_asking_it(caplog):
    loads = []

    def absent():
        loads.append(1)
        raise EmbedderAbsent("no layer")

    embedder = LazyEmbedder(absent)
    with caplog.at_level(logging.WARNING):
        for text in ("one", "two"):
            turn = TurnEmbeddings(embedder)
            assert turn.embed(text) is None and turn.failed
    assert len(loads) == 1
    assert [r.message for r in caplog.records].count(
        "the embedded model is not available; memories are ranked by words: no layer"
    ) == 1
