"""One client of AWS's JSON protocol (``application/x-amz-json-1.0``: a POST to ``/`` naming its
operation in ``X-Amz-Target``), signed with Signature Version 4 with the standard library alone:
botocore's import and client cost a cold ``/chat`` or relayed message about 210 ms of CPU
(docs/operations.md's Cold starts), this http.client, hmac and json. The turn queue's SQS calls
(``sqs_http``) and the relay's configuration read (``dynamodb.lambda_client``) use it.

A call is tried again as the pinned botocore's standard retries do: after a throttling code or a
429, a 5xx, a transient code, a connection failure or a timeout (and, for DynamoDB, a response whose
CRC32 is not its body's), waiting a random part of 1 s doubled per attempt (at most 20 s), at least
what ``x-amz-retry-after`` asks (up to 5 s more); up to ``retries`` times after the first attempt
(botocore's ``max_attempts``). A client given a ``budget`` tries again only while the wait ends
inside it, counted from the call's start, and waits for a connection or an answer no longer than
what is left of it: ``/chat`` must answer Discord within three seconds, and a clear "try again"
beats no answer. A connection kept from an earlier call that the service has closed meanwhile is
replaced at once, without a wait or an attempt counted. Anything else, or the last failure, raises ``AwsRequestFailed``.
Only where Lambda runs with its credentials in the environment (``from_environ``); elsewhere botocore.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Self
from urllib.parse import SplitResult, urlsplit

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
BACKOFF_BASE_SECONDS: Final = 1.0
MAX_BACKOFF_SECONDS: Final = 20.0
RETRY_AFTER_EXTRA_SECONDS: Final = 5.0
BOTOCORE_ONLY: Final = ("AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT")
"""Endpoint variants left to botocore's endpoint rules: set, a service's client is botocore's."""


class AwsRequestFailed(Exception):
    """A call that did not succeed. ``code`` is the service's error code, or the failure's class;
    ``response`` is the error as botocore's ``ClientError.response`` holds it (``{"Error": {"Code",
    "Message"}}`` and the error's own fields), empty when no answer came."""

    def __init__(
        self,
        code: str,
        *,
        retryable: bool = False,
        throttled: bool = False,
        response: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(code)
        self.code, self.retryable, self.throttled = code, retryable, throttled
        self.response: dict[str, Any] = dict(response or {})
        self.retry_after = retry_after


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str = field(default="", repr=False)  # never in a log line or a traceback's locals
    token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Service:
    """What tells one service's JSON protocol from another's."""

    name: str  # the signing name and the endpoint's first label
    target_prefix: str  # X-Amz-Target's, before the operation
    checks_crc32: bool = False


_PARTITIONS: Final = (
    (re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx)-\w+-\d+$"), "amazonaws.com"),
    (re.compile(r"^us-gov-\w+-\d+$"), "amazonaws.com"),
    (re.compile(r"^cn-\w+-\d+$"), "amazonaws.com.cn"),
)
"""botocore's ``partitions.json`` regions whose endpoints are ``<service>.<region>.<domain>``."""


def partition_domain(region: str) -> str | None:
    """The endpoints' domain of ``region``'s partition; None for any other partition (the isolated
    ones, the European Sovereign Cloud's, one not yet known), left to botocore's endpoint rules."""
    for pattern, domain in _PARTITIONS:
        if pattern.match(region):
            return domain
    return None


class AwsJsonClient:
    service: Service

    def __init__(
        self,
        region: str,
        credentials: Credentials,
        *,
        endpoint: str | None = None,
        retries: int = 3,
        timeouts: tuple[float, float] = (1.0, 2.0),
        budget: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._region, self._credentials, self._endpoint = region, credentials, endpoint
        self._retries, self._timeouts, self._budget = retries, timeouts, budget
        self._sleep, self._now, self._clock = sleep, now, clock
        self._open: tuple[tuple[str, str], http.client.HTTPConnection] | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ, **options: Any) -> Self | None:
        """The client where Lambda runs a function with its role's credentials in the environment,
        as Lambda sets them; None anywhere else (botocore then: profiles, moto's in-process mock)."""
        region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
        if not (environ.get("AWS_LAMBDA_FUNCTION_NAME") and region and key and secret):
            return None
        if partition_domain(region) is None:
            return None
        if any(environ.get(name, "").lower() == "true" for name in BOTOCORE_ONLY):
            return None
        own = f"AWS_ENDPOINT_URL_{cls.service.name.upper()}"
        endpoint = environ.get(own) or environ.get("AWS_ENDPOINT_URL")
        credentials = Credentials(key, secret, environ.get("AWS_SESSION_TOKEN") or None)
        return cls(region, credentials, endpoint=endpoint, **options)

    def default_endpoint(self, params: Mapping[str, Any]) -> str:
        return f"https://{self.service.name}.{self._region}.{partition_domain(self._region)}"

    def _connection_to(
        self, scheme: str, host: str, deadline: float | None
    ) -> tuple[http.client.HTTPConnection, bool]:
        """The connection kept open from the last call (a warm container's next message pays no
        handshake, as with botocore's pool), or a new one; and whether it was kept. Connecting, then
        reading, each ends by ``deadline`` (the call's budget), if sooner than its timeout."""
        connect, read = self._timeouts
        kept = self._open is not None and self._open[0] == (scheme, host)
        if self._open is not None and kept:
            connection = self._open[1]
        else:
            self._drop()
            kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
            connection = kind(host, timeout=self._within(connect, deadline))
            connection.connect()
            self._open = ((scheme, host), connection)
        if connection.sock is not None:
            connection.sock.settimeout(self._within(read, deadline))
        return connection, kept

    def _within(self, timeout: float, deadline: float | None) -> float:
        """``timeout``, or what is left before ``deadline`` if sooner (never nothing at all)."""
        return timeout if deadline is None else max(min(timeout, deadline - self._clock()), 0.05)

    def _drop(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def call(self, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """``operation`` with ``params`` (bytes sent as base64, as botocore sends blobs)."""
        url = urlsplit(self._endpoint or self.default_endpoint(params))
        body = json.dumps(params, separators=(",", ":"), default=_blob).encode()
        deadline = None if self._budget is None else self._clock() + self._budget
        for attempt in range(1, self._retries + 2):
            try:
                return self._once(url, operation, body, deadline)
            except AwsRequestFailed as failed:
                if not failed.retryable or attempt > self._retries:
                    raise
                delay = self._delay(failed, attempt)
                if deadline is not None and self._clock() + delay >= deadline:
                    raise
                self._sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    @staticmethod
    def _delay(failed: AwsRequestFailed, attempt: int) -> float:
        delay = random.random() * min(BACKOFF_BASE_SECONDS * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS)
        if failed.retry_after is not None:
            return max(delay, min(failed.retry_after, delay + RETRY_AFTER_EXTRA_SECONDS))
        return delay

    def _once(self, url: SplitResult, operation: str, body: bytes, deadline: float | None) -> dict[str, Any]:
        headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "Host": url.netloc,
            "X-Amz-Date": self._now().strftime("%Y%m%dT%H%M%SZ"),
            "X-Amz-Target": f"{self.service.target_prefix}.{operation}",
        }
        if self._credentials.token:
            headers["X-Amz-Security-Token"] = self._credentials.token
        headers["Authorization"] = authorization(
            headers, body, self._region, self._credentials, service=self.service.name
        )
        for fresh in (False, True):
            kept = False
            try:
                connection, kept = self._connection_to(url.scheme, url.netloc, deadline)
                connection.request("POST", "/", body=body, headers=headers)
                response = connection.getresponse()
                status, payload = response.status, response.read()
                break
            except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, garbled
                self._drop()
                # a kept connection the service closed while the container was idle: once more at
                # once on a new one (urllib3, under botocore, drops such a connection before using it)
                stale = kept and isinstance(exc, _CLOSED_BY_PEER)
                if fresh or not stale:
                    raise AwsRequestFailed(exc.__class__.__name__, retryable=True) from exc
        if response.will_close:
            self._drop()
        crc32 = response.getheader("x-amz-crc32")
        if self.service.checks_crc32 and crc32 is not None and crc32 != str(zlib.crc32(payload)):
            raise AwsRequestFailed("CRC32Mismatch", retryable=True)
        return _answer(status, payload, response.getheader)


_CLOSED_BY_PEER: Final = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _blob(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    raise TypeError(f"{value.__class__.__name__} is not JSON")


def _answer(status: int, payload: bytes, header: Callable[[str], str | None]) -> dict[str, Any]:
    try:
        answer = json.loads(payload) if payload else {}
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    if status == 200:
        return answer
    # botocore's reading of the error's type: the status when none is given
    code = str(answer.get("__type") or status).split(":", 1)[0].rsplit("#", 1)[-1]
    message = str(answer.get("message") or answer.get("Message") or "")
    error: dict[str, str] = {"Code": code, "Message": message}
    query_error = _query_error(header("x-amzn-query-error"))
    if query_error is not None:  # botocore reports (and retries by) the older protocol's code
        code, error["QueryErrorCode"], error["Type"] = query_error[0], code, query_error[1]
        error["Code"] = code
    throttled = code in THROTTLING_CODES or status == 429
    retryable = throttled or code in TRANSIENT_CODES or status in TRANSIENT_STATUSES
    fields = {name: value for name, value in answer.items() if name not in {"__type", "message", "Message"}}
    retry_after_ms = header("x-amz-retry-after")
    retry_after = int(retry_after_ms) / 1000 if retry_after_ms and retry_after_ms.isdigit() else None
    response = {"Error": error, **fields}
    raise AwsRequestFailed(
        code, retryable=retryable, throttled=throttled, response=response, retry_after=retry_after
    )


def _query_error(value: str | None) -> tuple[str, str] | None:
    """``x-amzn-query-error``'s code and type (``AWS.SimpleQueueService.NonExistentQueue;Sender``),
    by which SQS names its errors as its older protocol did; None when absent or malformed."""
    parts = (value or "").split(";")
    return (parts[0], parts[1]) if len(parts) == 2 and parts[0] else None


def authorization(
    headers: Mapping[str, str], body: bytes, region: str, credentials: Credentials, *, service: str
) -> str:
    """The ``Authorization`` header of a POST to ``/`` signing every header given (SigV4)."""
    stamp = headers["X-Amz-Date"]
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    names = sorted(name.lower() for name in headers)
    canonical_headers = "".join(
        f"{name.lower()}:{' '.join(value.split())}\n"
        for name, value in sorted(headers.items(), key=lambda item: item[0].lower())
    )
    signed = ";".join(names)
    request = f"POST\n/\n\n{canonical_headers}\n{signed}\n{hashlib.sha256(body).hexdigest()}"
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
    key = f"AWS4{credentials.secret_key}".encode()
    for part in (stamp[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"
