"""tests/embedded_model_once.py (installed by the conftest): one load per process while the packages
stay as they are; a test that breaks them still meets the failure it set up."""

from __future__ import annotations

import sys

import pytest

from kioku.adapters import embedded_model
from kioku.adapters.embedded_model import EmbeddedModel, EmbeddedModelUnavailable


def test_a_second_load_hands_out_the_model_the_first_loaded():
    assert EmbeddedModel.load() is EmbeddedModel.load()


def test_a_moved_package_or_file_is_unavailable_even_after_a_load(monkeypatch):
    EmbeddedModel.load()
    with monkeypatch.context() as patched:
        patched.setattr(embedded_model, "MODEL_PACKAGE", "kioku_no_such_model_package")
        with pytest.raises(EmbeddedModelUnavailable, match="kioku_no_such_model_package"):
            EmbeddedModel.load()
    with monkeypatch.context() as patched:
        patched.setattr(embedded_model, "TOKENIZER_FILE", "model/no-tokenizer.json")
        with pytest.raises(EmbeddedModelUnavailable, match="no-tokenizer"):
            EmbeddedModel.load()
    with monkeypatch.context() as patched:
        patched.setitem(sys.modules, "onnxruntime", None)
        with pytest.raises(EmbeddedModelUnavailable, match="onnxruntime"):
            EmbeddedModel.load()


def test_a_load_that_failed_is_not_kept(monkeypatch, tmp_path):
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not a model")
    real = embedded_model._packaged

    def packaged(package: str, name: str):
        return broken if name == embedded_model.MODEL_FILE else real(package, name)

    monkeypatch.setattr(embedded_model, "_packaged", packaged)
    for _ in range(2):
        with pytest.raises(EmbeddedModelUnavailable, match="could not be loaded"):
            EmbeddedModel.load()
    monkeypatch.setattr(embedded_model, "_packaged", real)
    assert EmbeddedModel.load().embed(["green tea"])
