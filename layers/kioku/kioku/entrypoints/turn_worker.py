"""TurnFunction: the FIFO queue of turns, processed with partial batch failures, each turn once.

A turn that raises is reported as a batch item failure (and, in its channel's message group, so
are the turns queued behind it, to keep their order); SQS retries it and, after the queue's
``maxReceiveCount``, moves it to the dead-letter queue. Idempotency on the Discord message id means
a redelivered or duplicated job returns the first run's result instead of replying again.
"""

from __future__ import annotations

import logging
from collections import deque
from functools import lru_cache
from typing import Any, Final

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from pydantic import SecretStr

from kioku.config import Settings, get_settings
from kioku.domain.turn_jobs import TurnJob
from kioku.services.turn import TurnRecord, TurnService

logger = logging.getLogger(__name__)

IDEMPOTENCY_PARTITION: Final = "IDEMPOTENCY#turn"
IDEMPOTENCY_SECONDS: Final = 24 * 3600

recent_turns: deque[TurnRecord] = deque(maxlen=5)
"""The last few turns of this container, for the playground's ``/context``."""


@lru_cache(maxsize=1)
def turn_service(settings: Settings) -> TurnService:
    from kioku.adapters.discord_rest import DiscordRest
    from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
    from kioku.adapters.dynamodb.stm_store import StmStore
    from kioku.adapters.dynamodb.table import KiokuTable
    from kioku.adapters.llm.registry import make_chat_model
    from kioku.adapters.secrets import load_secrets

    secrets = load_secrets(settings)
    table = KiokuTable(settings.TABLE_NAME)
    model_settings = settings
    if secrets.llm_api_key:
        model_settings = settings.model_copy(update={"LLM_API_KEY": SecretStr(secrets.llm_api_key)})
    return TurnService(
        settings=settings,
        discord=DiscordRest(settings.DISCORD_API_BASE_URL, secrets.discord_bot_token),
        model=make_chat_model(model_settings),
        stm_store=StmStore(table),
        ltm_store=DynamoMemoryStore(table),
    )


@lru_cache(maxsize=1)
def idempotency(table_name: str) -> tuple[DynamoDBPersistenceLayer, IdempotencyConfig]:
    persistence = DynamoDBPersistenceLayer(
        table_name=table_name,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value=IDEMPOTENCY_PARTITION,
        expiry_attr="expires_at",
    )
    config = IdempotencyConfig(
        event_key_jmespath="[source, turn_id]",
        expires_after_seconds=IDEMPOTENCY_SECONDS,
        raise_on_no_idempotency_key=True,
    )
    return persistence, config


def run_turn_once(job: TurnJob) -> dict[str, Any]:
    persistence, config = idempotency(get_settings().TABLE_NAME)

    @idempotent_function(data_keyword_argument="turn", persistence_store=persistence, config=config)
    def run(turn: dict[str, Any]) -> dict[str, Any]:
        record = turn_service(get_settings()).run(job)
        recent_turns.append(record)
        return {"reply_ids": record.reply_ids, "apologised": record.apologised}

    return run(turn={"source": job.source.value, "turn_id": job.turn_id})


def record_handler(record: SQSRecord) -> dict[str, Any]:
    return run_turn_once(TurnJob.from_json(record.body))


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    _, config = idempotency(get_settings().TABLE_NAME)
    config.register_lambda_context(context)
    turn_service(get_settings()).time_left = lambda: context.get_remaining_time_in_millis() / 1000
    processor = SqsFifoPartialProcessor(skip_group_on_error=True)
    # A batch whose every turn failed is still answered with its failures, not an exception: the
    # same records go back to the queue, and the invocation itself is not reported as an error.
    processor.raise_on_entire_batch_failure = False
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
