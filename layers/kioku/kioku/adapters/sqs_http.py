"""The turn queue's two SQS calls over SQS's JSON protocol, signed with Signature Version 4, with the
standard library alone: botocore's import and client cost a cold ``/chat`` or relayed message about
210 ms of CPU (docs/operations.md's Cold starts), this http.client, hmac and json.

``send_message`` and ``change_message_visibility`` take botocore's parameters and do what its
client does with its standard retries: up to three attempts, again after a throttling code, a
5xx, a connection failure or a timeout, waiting a random part of 1 s (throttled) or 50 ms (else)
doubled per attempt; anything else, or the last failure, raises ``SqsRequestFailed``. Only where
Lambda runs with its credentials in the environment (``from_environ``); elsewhere botocore.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import urlsplit

THROTTLING_CODES: Final = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
"""botocore's standard mode's throttling codes; with its transient ones, what is tried again."""
TRANSIENT_CODES: Final = frozenset({"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete"})
TRANSIENT_STATUSES: Final = frozenset({500, 502, 503, 504})
MAX_BACKOFF_SECONDS: Final = 20.0
BOTOCORE_ONLY: Final = ("AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT")
"""Endpoint variants left to botocore's endpoint rules: set, the queue's client is botocore's."""


class SqsRequestFailed(Exception):
    """An SQS call that did not succeed; ``code`` is SQS's error code, or the failure's class."""

    def __init__(self, code: str, *, retryable: bool = False, throttled: bool = False) -> None:
        super().__init__(code)
        self.code, self.retryable, self.throttled = code, retryable, throttled


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str = ""
    token: str | None = None


class SqsHttp:
    def __init__(
        self,
        region: str,
        credentials: Credentials,
        *,
        endpoint: str | None = None,
        max_attempts: int = 3,
        timeouts: tuple[float, float] = (1.0, 2.0),
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._region, self._credentials, self._endpoint = region, credentials, endpoint
        self._max_attempts, self._timeouts, self._sleep, self._now = max_attempts, timeouts, sleep, now
        self._open: tuple[tuple[str, str], http.client.HTTPConnection] | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ, **options: Any) -> SqsHttp | None:
        """The client where Lambda runs a function with its role's credentials in the environment,
        as Lambda sets them; None anywhere else (botocore then: profiles, moto's in-process mock)."""
        region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
        if not (environ.get("AWS_LAMBDA_FUNCTION_NAME") and region and key and secret):
            return None
        if any(environ.get(name, "").lower() == "true" for name in BOTOCORE_ONLY):
            return None
        endpoint = environ.get("AWS_ENDPOINT_URL_SQS") or environ.get("AWS_ENDPOINT_URL")
        credentials = Credentials(key, secret, environ.get("AWS_SESSION_TOKEN") or None)
        return cls(region, credentials, endpoint=endpoint, **options)

    def _connection_to(self, scheme: str, host: str) -> http.client.HTTPConnection:
        """The connection kept open from the last call (a warm container's next message pays no
        handshake, as with botocore's pool), or a new one."""
        if self._open is not None and self._open[0] == (scheme, host):
            return self._open[1]
        self._drop()
        connect, read = self._timeouts
        kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        connection = kind(host, timeout=connect)
        connection.connect()  # within the connect timeout; then each read within the read timeout
        if connection.sock is not None:
            connection.sock.settimeout(read)
        self._open = ((scheme, host), connection)
        return connection

    def _drop(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def send_message(self, **params: Any) -> dict[str, Any]:
        return self._call("SendMessage", params)

    def change_message_visibility(self, **params: Any) -> dict[str, Any]:
        return self._call("ChangeMessageVisibility", params)

    def _call(self, action: str, params: Mapping[str, Any]) -> dict[str, Any]:
        url = urlsplit(self._endpoint or regional_endpoint(str(params["QueueUrl"]), self._region))
        body = json.dumps(params, separators=(",", ":")).encode()
        for attempt in range(1, self._max_attempts + 1):
            try:
                return self._once(url.scheme, url.netloc, action, body)
            except SqsRequestFailed as failed:
                if not failed.retryable or attempt == self._max_attempts:
                    raise
                base = 1.0 if failed.throttled else 0.05
                self._sleep(random.random() * min(base * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS))
        raise AssertionError("unreachable")  # the loop returns or raises

    def _once(self, scheme: str, host: str, action: str, body: bytes) -> dict[str, Any]:
        headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "Host": host,
            "X-Amz-Date": self._now().strftime("%Y%m%dT%H%M%SZ"),
            "X-Amz-Target": f"AmazonSQS.{action}",
        }
        if self._credentials.token:
            headers["X-Amz-Security-Token"] = self._credentials.token
        headers["Authorization"] = authorization(headers, body, self._region, self._credentials)
        try:
            connection = self._connection_to(scheme, host)
            connection.request("POST", "/", body=body, headers=headers)
            response = connection.getresponse()
            status, payload = response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, garbled
            self._drop()
            raise SqsRequestFailed(exc.__class__.__name__, retryable=True) from exc
        if response.will_close:
            self._drop()
        return _answer(status, payload)


def regional_endpoint(queue_url: str, region: str) -> str:
    """SQS's endpoint in ``region``, as botocore resolves it: the queue URL's own host when it is
    one (``https://sqs.<region>.<partition's domain>/<account>/<name>``, as CloudFormation gives
    it), else ``sqs.<region>`` in the partition of ``region``."""
    queue = urlsplit(queue_url)
    if queue.scheme == "https" and queue.netloc == f"sqs.{region}.{queue.netloc.split('.', 2)[-1]}":
        return f"https://{queue.netloc}"
    return f"https://sqs.{region}.amazonaws.com{'.cn' if region.startswith('cn-') else ''}"


def _answer(status: int, payload: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(payload) if payload else {}
    except ValueError:
        answer = {}
    if status == 200:
        return answer if isinstance(answer, dict) else {}
    kind = str(answer.get("__type", "")) if isinstance(answer, dict) else ""
    code = kind.rsplit("#", 1)[-1] or f"HTTP{status}"
    throttled = code in THROTTLING_CODES
    retryable = throttled or code in TRANSIENT_CODES or status in TRANSIENT_STATUSES
    raise SqsRequestFailed(code, retryable=retryable, throttled=throttled)


def authorization(headers: Mapping[str, str], body: bytes, region: str, credentials: Credentials) -> str:
    """The ``Authorization`` header of a POST to ``/`` signing every header given (SigV4, service sqs)."""
    stamp = headers["X-Amz-Date"]
    scope = f"{stamp[:8]}/{region}/sqs/aws4_request"
    names = sorted(name.lower() for name in headers)
    canonical_headers = "".join(
        f"{name.lower()}:{' '.join(value.split())}\n"
        for name, value in sorted(headers.items(), key=lambda item: item[0].lower())
    )
    signed = ";".join(names)
    request = f"POST\n/\n\n{canonical_headers}\n{signed}\n{hashlib.sha256(body).hexdigest()}"
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
    key = f"AWS4{credentials.secret_key}".encode()
    for part in (stamp[:8], region, "sqs", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"
