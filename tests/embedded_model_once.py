"""The embedded model loaded once per test process: ``EmbeddedModel.load`` reads the ONNX file into a
session (0.25–0.45 s of CPU), a pure function of the packaged files, and a worker keeps what it
loaded for its life. Tests and the crash harness's forked containers start cold on purpose (no
client, no cache), so each paid for a load; here a load that succeeded is handed out again while
nothing it depends on has changed. A test that moves a package or a file out of the way (a
monkeypatched ``MODEL_PACKAGE`` or ``TOKENIZER_FILE``, ``_packaged``, a runtime module hidden in
``sys.modules``) asks under another key and loads, or fails, as before; a load that raises is never
kept."""

from __future__ import annotations

import importlib
from typing import Any

RUNTIME_MODULES = ("numpy", "onnxruntime", "tokenizers")


def load_embedded_model_once() -> None:
    """Make ``EmbeddedModel.load`` hand out the first model it loaded for the same packages."""
    from kioku.adapters import embedded_model

    model_class = embedded_model.EmbeddedModel
    load = model_class.load.__func__  # type: ignore[attr-defined]
    loaded: dict[tuple[Any, ...], Any] = {}

    def load_once(cls: type) -> Any:
        try:
            runtime = tuple(importlib.import_module(name) for name in RUNTIME_MODULES)
        except ImportError:
            return load(cls)  # raises EmbeddedModelUnavailable, naming the module, as it would
        files = (embedded_model.MODEL_PACKAGE, embedded_model.MODEL_FILE)
        files += (embedded_model.TOKENIZER_PACKAGE, embedded_model.TOKENIZER_FILE)
        key = (cls, *files, embedded_model._packaged, runtime)
        if key not in loaded:
            loaded[key] = load(cls)
        return loaded[key]

    model_class.load = classmethod(load_once)  # type: ignore[assignment,method-assign]
