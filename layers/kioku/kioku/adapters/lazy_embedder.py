"""The embedded model as the ``Embedder`` a container hands out: loaded on the first text it is asked
to embed (never at import, so a cold start that ranks nothing pays for none of it), then kept for the
container's life. When the layer or a model file is missing, that is logged once and every later
call is ``EmbedderAbsent`` at once: the turn ranks by words, as with ``EMBEDDINGS_MODEL=none``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from kioku.domain.ltm.ports import Embedder, EmbedderAbsent

logger = logging.getLogger(__name__)


def load_embedded_model() -> Embedder:
    """``EmbeddedModel.load()``; raises ``EmbedderAbsent`` when its packages or files are missing."""
    try:
        from kioku.adapters.embedded_model import EmbeddedModel, EmbeddedModelUnavailable
    except ImportError as exc:
        raise EmbedderAbsent(f"the embedded model's runtime cannot be imported: {exc}") from exc
    try:
        return EmbeddedModel.load()
    except EmbeddedModelUnavailable as exc:
        raise EmbedderAbsent(str(exc)) from exc


class LazyEmbedder:
    """The ``Embedder`` port over ``load``'s embedder, loaded on the first ``embed``."""

    def __init__(self, load: Callable[[], Embedder] = load_embedded_model) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._absent: EmbedderAbsent | None = None

    @property
    def loaded(self) -> bool:
        return self._embedder is not None

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        return self._loaded().embed(texts)

    def _loaded(self) -> Embedder:
        with self._lock:
            if self._embedder is None and self._absent is None:
                try:
                    self._embedder = self._load()
                except EmbedderAbsent as exc:
                    logger.warning(
                        "the embedded model is not available; memories are ranked by words: %s", exc
                    )
                    self._absent = exc
        if self._absent is not None:
            raise self._absent
        assert self._embedder is not None
        return self._embedder
