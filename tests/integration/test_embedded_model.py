"""The embedded sentence-embedding model (kioku.adapters.embedded_model), run for real: the int8
all-MiniLM-L6-v2 of the installed packages, its vectors quantised byte for byte as an embeddings
endpoint's are, its meaning that of the model card, and every missing part a clear refusal."""

from __future__ import annotations

import sys
import threading

import pytest
from scripts.local_embeddings import serve

from kioku.adapters import embedded_model
from kioku.adapters.embedded_model import EmbeddedModel, EmbeddedModelUnavailable
from kioku.adapters.llm.embeddings import OpenAIEmbeddings
from kioku.domain.ltm.ports import EmbeddingsUnavailable
from kioku.domain.ltm.vectors import VECTOR_BYTES, cosine


@pytest.fixture(scope="module")
def model() -> EmbeddedModel:
    return EmbeddedModel.load()


class _Floats:
    """The embedded model's floats as scripts/local_embeddings serves a model's."""

    def __init__(self, model: EmbeddedModel) -> None:
        self.model = model

    def encode(self, texts, normalize_embeddings):
        assert normalize_embeddings
        return self.model.floats(texts)


def test_its_vectors_are_the_bytes_an_endpoint_serving_its_floats_gives(model):
    texts = ["Melanie painted a lake at sunrise.", "Caroline is a counselor.", "ok"]
    running = serve(0, _Floats(model))
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    endpoint = OpenAIEmbeddings(
        base_url=f"http://127.0.0.1:{running.server_address[1]}/v1", model="all-MiniLM-L6-v2", api_key=None
    )
    try:
        over_http = endpoint.embed(texts)
    finally:
        endpoint.close()
        running.shutdown()
        running.server_close()

    assert model.embed(texts) == over_http
    assert all(len(vector) == VECTOR_BYTES for vector in over_http)


def test_it_means_what_the_model_card_says(model):
    """sentence-transformers' own example pairs: 0.7553 and 0.8939 with the full-precision model."""
    eating, bread, awesome, great, guitar = model.floats(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The new movie is awesome",
            "The new movie is so great",
            "A man is playing guitar",
        ]
    )
    assert float(eating @ bread) == pytest.approx(0.7553, abs=0.02)
    assert float(awesome @ great) == pytest.approx(0.8939, abs=0.02)
    assert float(eating @ awesome) < 0.1
    assert float(eating @ eating) == pytest.approx(1.0, abs=1e-5)  # L2-normalised
    assert float(guitar @ eating) < float(bread @ eating)


def test_quantised_vectors_rank_by_meaning(model):
    query, pottery, taxes = model.embed(
        ["What hobbies does Melanie have?", "Melanie does pottery on weekends.", "Caroline filed her taxes."]
    )
    assert cosine(query, pottery) > cosine(query, taxes) + 0.1


def test_texts_keep_their_order_across_batches_and_a_long_one_is_cut(model):
    texts = [f"fact number {n} is about the colour {n % 7}" for n in range(embedded_model.BATCH + 5)]
    texts.append("word " * 2_000)  # past the 256 word pieces the model reads

    together = model.embed(texts)
    alone = [model.embed([text])[0] for text in (texts[0], texts[-2], texts[-1])]

    assert len(together) == len(texts)
    # padding a batch to its longest text leaves each text's vector as it was, up to rounding
    for mine, single in zip((together[0], together[-2], together[-1]), alone, strict=True):
        assert cosine(mine, single) > 0.999


@pytest.mark.parametrize("texts", [["fine", ""], [""]])
def test_an_empty_text_is_refused_as_an_endpoint_refuses_it(model, texts):
    with pytest.raises(EmbeddingsUnavailable, match="non-empty"):
        model.embed(texts)


def test_nothing_to_embed_is_no_vector(model):
    assert model.embed([]) == []


def test_its_name_is_stored_with_its_vectors(model):
    assert model.model_name == "all-MiniLM-L6-v2"


def test_a_missing_runtime_package_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    with pytest.raises(EmbeddedModelUnavailable, match="onnxruntime"):
        EmbeddedModel.load()


def test_a_missing_model_package_is_unavailable(monkeypatch):
    monkeypatch.setattr(embedded_model, "MODEL_PACKAGE", "kioku_no_such_model_package")
    with pytest.raises(EmbeddedModelUnavailable, match="kioku_no_such_model_package"):
        EmbeddedModel.load()


def test_a_missing_model_file_is_unavailable(monkeypatch):
    monkeypatch.setattr(embedded_model, "TOKENIZER_FILE", "model/no-tokenizer.json")
    with pytest.raises(EmbeddedModelUnavailable, match=r"no-tokenizer\.json"):
        EmbeddedModel.load()


def test_a_file_that_is_no_model_is_unavailable(monkeypatch, tmp_path):
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not a model")
    real = embedded_model._packaged
    monkeypatch.setattr(
        embedded_model,
        "_packaged",
        lambda package, name: broken if package == embedded_model.MODEL_PACKAGE else real(package, name),
    )
    with pytest.raises(EmbeddedModelUnavailable, match="could not be loaded"):
        EmbeddedModel.load()


def test_a_failing_model_is_embeddings_unavailable(model, monkeypatch):
    def broken(texts):
        raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION")

    monkeypatch.setattr(model, "floats", broken)
    with pytest.raises(EmbeddingsUnavailable, match="embedded model failed"):
        model.embed(["hello"])
