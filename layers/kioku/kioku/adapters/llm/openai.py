"""Any OpenAI-compatible chat-completions endpoint, non-streaming, with bounded retries."""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx

from kioku import __version__
from kioku.adapters.llm.base import ChatRequest, ChatResponse
from kioku.adapters.llm.completion import parse_chat_completion
from kioku.config import ConfigurationError, Settings
from kioku.domain.turn import LlmUnavailable

logger = logging.getLogger(__name__)

HTTP_CLIENT_ERROR: Final = 400
HTTP_UNAUTHORIZED: Final = 401
HTTP_FORBIDDEN: Final = 403
HTTP_TOO_MANY_REQUESTS: Final = 429
HTTP_SERVER_ERROR: Final = 500
MAX_CONNECT_TIMEOUT_SECONDS: Final = 10.0
MAX_ERROR_DETAIL_CHARS: Final = 200
KEY_FRAGMENT_CHARS: Final = 4
REDACTED: Final = "[redacted]"
_WORD: Final = re.compile(r"[^\s\"'`,;()\[\]{}<>]+")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try: attempts, exponential backoff with jitter, and an overall time budget."""

    max_attempts: int = 4
    base_delay_seconds: float = 1.0
    max_delay_seconds: float = 8.0
    max_retry_after_seconds: float = 20.0
    total_budget_seconds: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def backoff(self, attempt: int, jitter: float) -> float:
        """Delay before attempt ``attempt + 1``; ``jitter`` in [0, 1) spreads retries of many workers."""
        ceiling = min(self.max_delay_seconds, self.base_delay_seconds * 2 ** (attempt - 1))
        return ceiling / 2 + jitter * ceiling / 2


@dataclass(frozen=True, slots=True)
class _Retryable:
    reason: str
    status: int | None = None
    retry_after: float | None = None  # the server's own wait, already capped


def provider_client(base_url: str, api_key: str | None, timeout_seconds: float) -> httpx.Client:
    """The HTTP client of an OpenAI-compatible endpoint: kioku's user agent, the bearer key if any,
    a connect timeout no longer than ``MAX_CONNECT_TIMEOUT_SECONDS``."""
    headers = {"User-Agent": f"kioku/{__version__}", "Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    timeout = httpx.Timeout(timeout_seconds, connect=min(timeout_seconds, MAX_CONNECT_TIMEOUT_SECONDS))
    return httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)


class OpenAIChatModel:
    """``POST {base_url}/chat/completions`` with ``Authorization: Bearer <key>``."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout_seconds: float = 60.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._client = provider_client(base_url, api_key, timeout_seconds)
        self._api_key = api_key or ""
        self._model = model
        self._timeout_seconds = timeout_seconds
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIChatModel:
        if not settings.LLM_MODEL:
            raise ConfigurationError(
                "invalid configuration: LLM_MODEL is required when LLM_PROVIDER is openai"
            )
        api_key = settings.LLM_API_KEY.get_secret_value() if settings.LLM_API_KEY else None
        return cls(
            base_url=settings.LLM_BASE_URL,
            model=settings.LLM_MODEL,
            api_key=api_key,
            timeout_seconds=settings.LLM_TIMEOUT_SECONDS,
        )

    def close(self) -> None:
        self._client.close()

    def complete(self, request: ChatRequest) -> ChatResponse:
        body: dict[str, Any] = {"model": self._model, "messages": request.messages}
        if request.tools:
            body["tools"] = request.tools
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        started = self._clock()
        policy = self._retry
        budget = policy.total_budget_seconds
        if request.time_budget_seconds is not None:
            budget = min(budget, request.time_budget_seconds)
        for attempt in range(1, policy.max_attempts + 1):
            remaining = budget - (self._clock() - started)
            if remaining <= 0:
                raise LlmUnavailable("the model is unavailable: no time left for another attempt")
            outcome = self._attempt(body, timeout=min(self._timeout_seconds, remaining))
            if isinstance(outcome, httpx.Response):
                return self._parse(outcome)
            failure = outcome
            if attempt == policy.max_attempts:
                break
            delay = failure.retry_after
            if delay is None:
                delay = policy.backoff(attempt, self._jitter())
            if self._clock() - started + delay > budget:
                raise LlmUnavailable(f"the model is unavailable ({failure.reason}); out of time to retry")
            logger.warning(
                "LLM attempt %d failed (%s); retrying in %.2fs",
                attempt,
                failure.reason,
                delay,
                extra={"retry_in_seconds": round(delay, 2)},
            )
            self._sleep(delay)
        raise LlmUnavailable(
            f"the model is unavailable ({failure.reason}) after {policy.max_attempts} attempts",
            status=failure.status,
        )

    def _attempt(self, body: dict[str, Any], *, timeout: float) -> httpx.Response | _Retryable:
        try:
            response = self._client.post("/chat/completions", json=body, timeout=timeout)
        except httpx.TransportError as exc:
            return _Retryable(reason=type(exc).__name__)
        status = response.status_code
        if status == HTTP_TOO_MANY_REQUESTS or status >= HTTP_SERVER_ERROR:
            return _Retryable(f"HTTP {status}", status, self._retry_after(response))
        if status in (HTTP_UNAUTHORIZED, HTTP_FORBIDDEN):
            # Providers quote (part of) a rejected key in the message; never repeat it.
            raise LlmUnavailable(f"the model endpoint rejected the credentials: HTTP {status}", status=status)
        if status >= HTTP_CLIENT_ERROR:
            raise LlmUnavailable(
                f"the model refused the request: HTTP {status} {provider_error_detail(response, self._api_key)}",
                status=status,
            )
        return response

    def _retry_after(self, response: httpx.Response) -> float | None:
        """The server's ``Retry-After`` in seconds, capped; None for absent or HTTP-date values."""
        try:
            seconds = float(response.headers.get("retry-after", ""))
        except ValueError:
            return None
        if not 0 <= seconds < float("inf"):  # also rejects NaN
            return None
        return min(seconds, self._retry.max_retry_after_seconds)

    @staticmethod
    def _parse(response: httpx.Response) -> ChatResponse:
        try:
            body = response.json()
        except ValueError as exc:
            raise LlmUnavailable(
                "the model answered with malformed JSON", status=response.status_code
            ) from exc
        return parse_chat_completion(body)


def provider_error_detail(response: httpx.Response, api_key: str) -> str:
    """The provider's error message, shortened, without the key or any part of it it quotes."""
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = response.text[: MAX_ERROR_DETAIL_CHARS * 4]
    return _without_key(str(message or ""), api_key)[:MAX_ERROR_DETAIL_CHARS]


def _without_key(text: str, api_key: str) -> str:
    """``text`` with every word that shares a run of ``KEY_FRAGMENT_CHARS`` with the key redacted:
    providers quote a rejected key whole or masked (``sk-proj-abc*****wxyz``)."""
    if not api_key:
        return text
    fragments = {api_key[i : i + KEY_FRAGMENT_CHARS] for i in range(len(api_key) - KEY_FRAGMENT_CHARS + 1)}
    fragments = fragments or {api_key}

    def redact(word: re.Match[str]) -> str:
        return REDACTED if any(fragment in word.group() for fragment in fragments) else word.group()

    return _WORD.sub(redact, text.replace(api_key, REDACTED))
