"""One turn's use of the optional embeddings: each text embedded at most once, and never again in
the turn once the endpoint failed, so a slow or broken endpoint costs a turn one timeout at most."""

from __future__ import annotations

import logging

from kioku.domain.ltm.ports import Embedder, EmbedderAbsent, EmbeddingsUnavailable

logger = logging.getLogger(__name__)


class TurnEmbeddings:
    """``embed(text)``: the text's quantised embedding, or None (the turn ranks lexically then)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._known: dict[str, bytes] = {}
        self.failed = False

    def embed(self, text: str) -> bytes | None:
        text = text.strip()
        if not text or self.failed:
            return None
        known = self._known.get(text)
        if known is None:
            try:
                (known,) = self._embedder.embed([text])
            except EmbedderAbsent:  # logged once, where it was found
                self.failed = True
                return None
            except (EmbeddingsUnavailable, ValueError) as exc:
                logger.warning("embeddings failed; this turn ranks memories by their words: %s", exc)
                self.failed = True
                return None
            self._known[text] = known
        return known
