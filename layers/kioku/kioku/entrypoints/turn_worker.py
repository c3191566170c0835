"""TurnFunction: the FIFO queue of turns, processed with partial batch failures, each turn once.

A turn that fails and may yet succeed (Discord or DynamoDB throttled or down, a timeout) is
reported as a batch item failure, and so are the turns queued behind it in its channel's message
group, to keep their order; SQS hands it out again in 30 s. The worker counts the failed attempts
itself (``TurnLedger.count_failed_attempt``), because a turn skipped behind a failing one is
received, and its receive count climbs, without being tried. A message that cannot succeed (not a
turn job, Discord refusing the request itself) or a turn that failed ``TURN_MAX_ATTEMPTS`` times
is moved to the dead-letter queue by the worker, with its reason as a message attribute, and the
channel's next turns go on (a worker that dies after moving it has it back within SQS's
deduplication window: its second move lands once, see ``DEAD_LETTER_HOLD_SECONDS``). The queue's own ``maxReceiveCount`` is only the backstop for attempts
that die without an exception (a timeout of the whole invocation).

Each turn is done once: its completion record is written in the same DynamoDB transaction as its
short-term memory capture and read in the turn's first BatchGetItem, so a redelivered or
duplicated job neither replies nor counts again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from kioku import clock
from kioku.config import get_settings
from kioku.domain.ltm.statuses import SaveStatus
from kioku.domain.ltm.tools import CREATE_TOOL_NAME
from kioku.domain.turn import CoveredElsewhere, TurnClaimed
from kioku.domain.turn_jobs import InvalidTurnJob, NewerTurnJob, TurnJob, TurnSource
from kioku.entrypoints.composition import container
from kioku.observability import Metric, correlate, count, invocation, logger, milliseconds
from kioku.services.turn import TurnRecord

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

RETRY_DELAY_SECONDS: Final = 30
DEAD_LETTER_HOLD_SECONDS: Final = 180
"""How long a message the worker dead-letters stays hidden: past the end of the invocation
(TurnFunction's timeout, 120 s), when Lambda deletes it, yet inside SQS's five-minute deduplication
window, so that a worker dying after the send has it back in time for its second send (under the
same deduplication id) to be dropped, not to wait out the queue's 12-minute visibility timeout."""
CLAIM_WAIT_SECONDS: Final = 150
"""How long a turn whose outbox another attempt holds is given back for: past that attempt's end
(TurnFunction's timeout, 120 s), however far its clock is from this worker's."""
RETRYABLE_4XX: Final = frozenset({408, 429})
UNGROUPED: Final = "ungrouped"
CORRELATED: Final = ("turn_id", "channel_id", "guild_id", "source")
SAVED_STATUSES: Final = frozenset({SaveStatus.SAVED, SaveStatus.PENDING_REVIEW})
turn_observers: list[Callable[[TurnRecord], None]] = []
"""Told of each turn this container finishes. A deployed worker has none, so it keeps no turn; the
playground registers one to show a turn's model requests (``:context``, the web inspector)."""


def record_handler(record: SQSRecord, lambda_context: Any = None) -> dict[str, Any]:
    """One turn; Powertools hands in the Lambda context, whose remaining time bounds the model."""
    logger.remove_keys(CORRELATED)
    try:
        job = TurnJob.from_json(record.body)
    except NewerTurnJob as exc:
        count(Metric.FAILED_TURNS)
        return _newer(record, exc)
    except InvalidTurnJob as exc:
        count(Metric.FAILED_TURNS)
        reason = str(exc)  # the parser's reason says "not a turn job: " already
        if _dead_letter(record, reason, attempt=1, error=exc):
            return {"dead_lettered": reason}
        _retry_soon(record.receipt_handle)
        raise
    correlate(turn_id=job.turn_id, channel_id=job.channel_id, guild_id=job.guild_id, source=job.source.value)
    try:
        if job.source is TurnSource.EXPORT:
            return _export(job)
        if job.source is TurnSource.MEMORY:
            return _remember(job)
        turn = container().turn_service.run(
            job,
            redelivered=_receive_count(record) > 1,
            time_left=lambda: lambda_context.get_remaining_time_in_millis() / 1000,
            delivery=(record.message_id, _receive_count(record)),
        )
    except TurnClaimed as exc:
        # not a failed attempt: another one is at it; back once its invocation is surely over
        count(Metric.DUPLICATE_TURNS)
        logger.warning("turn given back for %d s: %s", CLAIM_WAIT_SECONDS, exc)
        _retry_soon(record.receipt_handle, CLAIM_WAIT_SECONDS)
        raise
    except CoveredElsewhere as exc:
        # not a failed attempt either: a message it would cover was answered since its read; read again
        logger.warning("turn given back to be read again: %s", exc)
        _retry_soon(record.receipt_handle, 0)
        raise
    except Exception as exc:
        count(Metric.FAILED_TURNS)
        return _failed(record, job, exc)
    for observe in turn_observers:
        observe(turn)
    count_turn(turn)
    return {"reply_ids": turn.reply_ids, "apologised": turn.apologised, "duplicate": turn.duplicate}


def _newer(record: SQSRecord, exc: NewerTurnJob) -> dict[str, Any]:
    """A job queued by a newer relay than this worker (a deploy under way): given back for a newer
    worker to take, its receives counted by SQS; dead-lettered after ``TURN_MAX_ATTEMPTS`` of them."""
    limit, attempt = get_settings().TURN_MAX_ATTEMPTS, _receive_count(record)
    if attempt >= limit:
        reason = f"given back {attempt} of {limit} times, no worker read it: {exc}"
        if _dead_letter(record, reason, attempt=attempt, error=exc):
            return {"dead_lettered": reason}
    logger.warning(
        "SQS message %s given back on receive %d of %d, for a newer worker: %s",
        record.message_id,
        attempt,
        limit,
        exc,
    )
    _retry_soon(record.receipt_handle)
    raise exc


def cannot_succeed(exc: Exception) -> bool:
    """Whether another attempt would fail the same way: the job itself is invalid, or Discord
    refused the request as such (4xx other than a timeout or a rate limit). Anything else may pass
    (throttling, 5xx, timeouts, and bugs too, which only the attempt count tells apart)."""
    if isinstance(exc, InvalidTurnJob):
        return True
    from kioku.adapters.discord_rest import DiscordError

    return isinstance(exc, DiscordError) and 400 <= exc.status < 500 and exc.status not in RETRYABLE_4XX


def _failed(record: SQSRecord, job: TurnJob, exc: Exception) -> dict[str, Any]:
    """Dead-letter the turn if it cannot succeed or has had its attempts; else raise, to retry."""
    from kioku.adapters.dynamodb.errors import StoreError

    limit = get_settings().TURN_MAX_ATTEMPTS
    delivery = f"{record.message_id}#{_receive_count(record)}"
    try:
        attempt = container().turn_ledger.count_failed_attempt(
            job.source.value, job.record_id, delivery, clock.now()
        )
    except StoreError:
        attempt = None  # uncounted: retried, with the queue's maxReceiveCount as the backstop
    hopeless = cannot_succeed(exc)
    if hopeless or (attempt is not None and attempt >= limit):
        why = "cannot succeed" if hopeless else f"failed {attempt} of {limit} attempts"
        reason = f"{why}: {_describe(exc)}"
        if _dead_letter(record, reason, attempt=attempt or 1, error=exc):
            try:
                container().turn_ledger.forget_attempts(job.source.value, job.record_id, job.author.id)
            except StoreError:
                logger.warning("turn %s, if redriven, starts with its attempts counted", job.turn_id)
            return {"dead_lettered": reason}
    # Powertools' batch processor logs a record's exception only at DEBUG: say it here.
    logger.warning(
        "turn failed on attempt %s of %d (SQS message %s), retried in %d s: %s",
        attempt or "?",
        limit,
        record.message_id,
        RETRY_DELAY_SECONDS,
        _describe(exc),
        exc_info=exc,
    )
    _retry_soon(record.receipt_handle)
    raise exc


def _dead_letter(record: SQSRecord, reason: str, *, attempt: int, error: Exception) -> bool:
    """Move ``record`` to the dead-letter queue as it was queued, logged at ERROR once; False when
    it cannot be moved (no dead-letter queue configured, SQS unreachable): the caller retries."""
    from kioku.domain.turn_jobs import QueueUnavailable

    queue = container().dead_letter_queue
    if queue is None:
        logger.error("TURN_DEAD_LETTER_QUEUE_URL is not set: SQS message %s stays queued", record.message_id)
        return False
    _retry_soon(record.receipt_handle, DEAD_LETTER_HOLD_SECONDS)
    try:
        queue.send(
            record.body,
            group_id=record.attributes.message_group_id or UNGROUPED,
            deduplication_id=record.message_id,
            reason=reason,
            attempts=attempt,
        )
    except QueueUnavailable as exc:
        logger.error("could not dead-letter SQS message %s (%s): %s", record.message_id, exc, reason)
        return False
    logger.error(
        "turn dead-lettered on attempt %d of %d (SQS message %s): %s",
        attempt,
        get_settings().TURN_MAX_ATTEMPTS,
        record.message_id,
        reason,
        exc_info=error,
    )
    return True


def _describe(exc: Exception) -> str:
    return f"{exc.__class__.__name__}: {exc}"


def _receive_count(record: SQSRecord) -> int:
    return int(record.attributes.approximate_receive_count or 1)


def count_turn(turn: TurnRecord) -> None:
    """The metrics of one finished turn, read off what it did."""
    count(Metric.TURNS)
    count(Metric.APOLOGIES, turn.apologised)
    count(Metric.DUPLICATE_TURNS, turn.duplicate)
    count(Metric.RATE_LIMITED_TURNS, turn.rate_limited)
    count(Metric.UNANSWERABLE_TURNS, turn.unanswerable)
    count(Metric.REPLY_MESSAGES, len(turn.reply_ids))
    count(Metric.MODEL_CALLS, len(turn.model_seconds))
    for seconds in turn.model_seconds:
        milliseconds(Metric.MODEL_LATENCY, seconds)
    count(Metric.TOOL_CALLS, len(turn.tool_results))
    count(Metric.TOOL_CALLS_NOT_RUN, turn.tool_calls_not_run)
    statuses = [result.status for name, result in turn.tool_results if name == CREATE_TOOL_NAME]
    count(Metric.MEMORIES_SAVED, statuses.count(SaveStatus.SAVED))
    count(Metric.MEMORIES_PENDING, statuses.count(SaveStatus.PENDING_REVIEW))
    count(Metric.MEMORIES_REFUSED, sum(status not in SAVED_STATUSES for status in statuses))


def _export(job: TurnJob) -> dict[str, Any]:

    from kioku.services.memory_control import send_export

    parts = container()
    send_export(
        job,
        parts.discord,
        parts.ltm_store,
        parts.stm_store,
        parts.clock(),
        ledger=parts.turn_ledger,
        policy_of=lambda guild_id: parts.config_store.get_server_config(guild_id).privacy,
    )
    return {"exported": True}


def _remember(job: TurnJob) -> dict[str, Any]:
    from kioku.services.hand_memories import HandWriting, save_by_hand

    parts = container()
    writing = HandWriting(
        settings=parts.settings,
        discord=parts.discord,
        directory=parts.guild_directory,
        store=parts.ltm_store,
        config_of=parts.config_store.get_server_config,
        embedder=parts.embedder,
    )
    result = save_by_hand(job, writing, parts.clock())
    return {"memory": result.status}


def _retry_soon(receipt_handle: str, seconds: int = RETRY_DELAY_SECONDS) -> None:
    from kioku.domain.turn_jobs import QueueUnavailable

    try:
        container().turn_queue.retry_soon(receipt_handle, seconds)
    except QueueUnavailable:
        logger.warning("the turn's message waits for the queue's visibility timeout instead of %d s", seconds)


def handle(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    with invocation(context):
        return _process(event, context)


def _process(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    processor = SqsFifoPartialProcessor(skip_group_on_error=True)
    # A batch whose every turn failed is still answered with its failures, not an exception: the
    # same records go back to the queue, and the invocation itself is not reported as an error.
    processor.raise_on_entire_batch_failure = False
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
