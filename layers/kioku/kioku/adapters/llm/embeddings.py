"""Any OpenAI-compatible ``POST /embeddings``, for ranking long-term memories by meaning.

Optional and never in a turn's way: one attempt, a short timeout, and every failure is
``EmbeddingsUnavailable`` (the caller ranks by words then). ``dimensions`` is asked for; a model
that refuses it (text-embedding-ada-002 and many local servers) is asked again without, once, and
its vectors are cut to ``vectors.DIMENSIONS`` instead. The key is a secret: sent, never logged or
repeated in an error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

import httpx

from kioku.adapters.llm.openai import (
    HTTP_CLIENT_ERROR,
    HTTP_FORBIDDEN,
    HTTP_UNAUTHORIZED,
    provider_client,
    provider_error_detail,
)
from kioku.config import Settings
from kioku.domain.ltm.ports import EmbeddingsUnavailable
from kioku.domain.ltm.vectors import DIMENSIONS, InvalidVector, quantise

logger = logging.getLogger(__name__)

EMBEDDINGS_TIMEOUT_SECONDS: Final = 5.0
"""A turn waits this long at most for one embeddings call: ranking by words is the fallback."""
MAX_INPUTS_PER_REQUEST: Final = 256
HTTP_OK: Final = 200


class OpenAIEmbeddings:
    """``POST {base_url}/embeddings`` with ``Authorization: Bearer <key>``; the ``Embedder`` port."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout_seconds: float = EMBEDDINGS_TIMEOUT_SECONDS,
    ) -> None:
        self._client = provider_client(base_url, api_key, timeout_seconds)
        self._api_key = api_key or ""
        self._model = model
        self.asks_dimensions = True
        """False once the model refused ``dimensions``: its vectors are cut instead."""

    @classmethod
    def from_settings(cls, settings: Settings, api_key: str | None = None) -> OpenAIEmbeddings | None:
        """The embeddings ``EMBEDDINGS_MODEL`` names (on ``EMBEDDINGS_BASE_URL``, else ``LLM_BASE_URL``,
        with the chat model's key), or None when it names none (unset, or ``none``)."""
        if settings.embeddings_choice != "endpoint" or not settings.EMBEDDINGS_MODEL:
            return None
        if api_key is None and settings.LLM_API_KEY is not None:
            api_key = settings.LLM_API_KEY.get_secret_value()
        return cls(
            base_url=settings.EMBEDDINGS_BASE_URL or settings.LLM_BASE_URL,
            model=settings.EMBEDDINGS_MODEL,
            api_key=api_key,
            timeout_seconds=min(settings.LLM_TIMEOUT_SECONDS, EMBEDDINGS_TIMEOUT_SECONDS),
        )

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        """One quantised vector per text, in order; raises ``EmbeddingsUnavailable``."""
        vectors: list[bytes] = []
        for start in range(0, len(texts), MAX_INPUTS_PER_REQUEST):
            vectors += self._embed(list(texts[start : start + MAX_INPUTS_PER_REQUEST]))
        return vectors

    def _embed(self, texts: list[str]) -> list[bytes]:
        if not texts or not all(texts):
            raise EmbeddingsUnavailable("only non-empty texts can be embedded")
        body: dict[str, Any] = {"model": self._model, "input": texts, "encoding_format": "float"}
        response = self._post({**body, "dimensions": DIMENSIONS} if self.asks_dimensions else body)
        if self.asks_dimensions and _refuses_dimensions(response, self._api_key):
            logger.info("the embeddings model takes no dimensions; its vectors are cut to %d", DIMENSIONS)
            self.asks_dimensions = False
            response = self._post(body)
        status = response.status_code
        if status != HTTP_OK:
            # a rejected key is quoted in the message; never repeat it, even scrubbed
            quoted = status >= HTTP_CLIENT_ERROR and status not in (HTTP_UNAUTHORIZED, HTTP_FORBIDDEN)
            detail = provider_error_detail(response, self._api_key) if quoted else ""
            raise EmbeddingsUnavailable(f"the embeddings endpoint answered HTTP {status} {detail}".strip())
        return _vectors(response, len(texts))

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return self._client.post("/embeddings", json=body)
        except httpx.HTTPError as exc:
            raise EmbeddingsUnavailable(
                f"the embeddings endpoint is unreachable: {type(exc).__name__}"
            ) from exc


def _refuses_dimensions(response: httpx.Response, api_key: str) -> bool:
    return (
        response.status_code == HTTP_CLIENT_ERROR
        and "dimensions" in provider_error_detail(response, api_key).lower()
    )


def _vectors(response: httpx.Response, expected: int) -> list[bytes]:
    """The response's vectors by ``index``, quantised; anything else is ``EmbeddingsUnavailable``."""
    try:
        data = response.json()["data"]
        by_index = {int(entry["index"]): entry["embedding"] for entry in data}
        if sorted(by_index) != list(range(expected)):
            raise EmbeddingsUnavailable(f"the embeddings endpoint answered {len(by_index)} of {expected}")
        return [quantise(by_index[index]) for index in range(expected)]
    except (ValueError, KeyError, TypeError, InvalidVector) as exc:
        raise EmbeddingsUnavailable(f"the embeddings endpoint answered malformed data: {exc}") from exc
