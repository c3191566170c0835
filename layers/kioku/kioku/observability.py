"""What the functions tell the operator: JSON log lines carrying the correlation keys of the request
in hand, and CloudWatch metrics in the embedded metric format (EMF), flushed once per invocation.

Every module logs through ``logging.getLogger(__name__)``. Those loggers are children of the
``kioku`` logger that Powertools formats here, so each of their lines carries the keys set with
:func:`correlate` (interaction id, message id, channel, guild) and the Lambda request id.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any, Final

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.lambda_context import build_lambda_context_model
from aws_lambda_powertools.metrics import MetricUnit

from kioku import __version__

SERVICE: Final = "kioku"
DEFAULT_NAMESPACE: Final = "Kioku"


class _Stdout:
    """Standard output as it is when a line is written (Lambda sends it to CloudWatch Logs). A
    stream bound once would keep whatever stdout was at import: in a process that swaps it (tests,
    the playground, the scaling script), a buffer that is closed later."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


# Every line names the release that wrote it, so a log read after a deploy or a roll back says
# which code ran.
logger = Logger(service=SERVICE, stream=_Stdout(), release=__version__)  # type: ignore[arg-type]
# At DEBUG these would log whole requests and responses: memories, and botocore's credentials.
QUIET_LIBRARIES: Final = ("botocore", "boto3", "urllib3", "s3transfer", "httpx", "httpcore")
for _library in QUIET_LIBRARIES:
    logging.getLogger(_library).setLevel(logging.WARNING)
metrics = Metrics(
    namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_NAMESPACE, service=SERVICE
)
_cold = True


class Metric(StrEnum):
    """The metric names the dashboard and the alarms in template.yaml read."""

    TURNS = "Turns"
    APOLOGIES = "Apologies"
    DUPLICATE_TURNS = "DuplicateTurns"
    RATE_LIMITED_TURNS = "RateLimitedTurns"
    UNANSWERABLE_TURNS = "UnanswerableTurns"
    FAILED_TURNS = "FailedTurns"
    MODEL_CALLS = "ModelCalls"
    MODEL_LATENCY = "ModelLatency"
    TOOL_CALLS = "ToolCalls"
    TOOL_CALLS_NOT_RUN = "ToolCallsNotRun"
    MEMORIES_SAVED = "MemoriesSaved"
    MEMORIES_PENDING = "MemoriesPendingReview"
    MEMORIES_REFUSED = "MemoriesRefused"
    REPLY_MESSAGES = "ReplyMessages"
    RELAY_QUEUED = "RelayQueued"
    RELAY_IGNORED = "RelayIgnored"
    RELAY_REJECTED = "RelayRejected"
    RELAY_CHANNEL_EVENTS = "RelayChannelEvents"
    RELAY_GUILDS_RECONCILED = "RelayGuildsReconciled"
    STM_ROWS_RECONCILED = "StmRowsReconciled"
    COMMANDS = "Commands"
    STM_ROWS_PURGED = "StmRowsPurged"
    SERVER_ITEMS_ERASED = "ServerItemsErased"
    LTM_MEMORIES_EXPIRED = "LtmMemoriesExpired"


def count(metric: Metric, value: int | bool = 1) -> None:
    if value:
        metrics.add_metric(name=metric.value, unit=MetricUnit.Count, value=value)


def milliseconds(metric: Metric, seconds: float) -> None:
    metrics.add_metric(name=metric.value, unit=MetricUnit.Milliseconds, value=round(seconds * 1000, 1))


def correlate(**keys: str | None) -> None:
    """Put ``keys`` on every later log line of this invocation; None values are left off."""
    logger.append_keys(**{name: value for name, value in keys.items() if value is not None})


@contextmanager
def invocation(context: Any = None, **keys: str | None) -> Iterator[None]:
    """One Lambda invocation: fresh log keys (the request id, cold start, ``keys``), and the
    metrics it added flushed as one EMF line when it ends, whatever way it ends."""
    global _cold
    logger.clear_state()
    if context is not None:
        logger.append_keys(cold_start=_cold, **build_lambda_context_model(context).__dict__)
    _cold = False
    correlate(**keys)
    try:
        yield
    finally:
        flush_metrics()


def flush_metrics() -> None:
    """Print the invocation's metrics as EMF (nothing when it added none)."""
    if metrics.metric_set:
        metrics.flush_metrics()
        metrics.clear_metrics()  # flush_metrics keeps them when POWERTOOLS_METRICS_DISABLED is set
