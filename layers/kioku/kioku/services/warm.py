"""The clients a warm container keeps: one of each per configured table or queue. Adapters (and
with them boto3) are imported on first use, so a PING or a rejected request never pays for them."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from kioku.config import get_settings

if TYPE_CHECKING:
    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
    from kioku.adapters.dynamodb.stm_store import StmStore
    from kioku.adapters.dynamodb.turn_ledger import TurnLedger
    from kioku.adapters.turn_queue import DeadLetterQueue, TurnQueue


def config_store() -> ConfigStore:
    return _stores(get_settings().TABLE_NAME)[0]


def stm_store() -> StmStore:
    return _stores(get_settings().TABLE_NAME)[1]


def ltm_store() -> DynamoMemoryStore:
    return _stores(get_settings().TABLE_NAME)[2]


def turn_ledger() -> TurnLedger:
    return _stores(get_settings().TABLE_NAME)[3]


def turn_queue() -> TurnQueue:
    return _turn_queue(get_settings().TURN_QUEUE_URL)


def dead_letter_queue() -> DeadLetterQueue | None:
    """None when ``TURN_DEAD_LETTER_QUEUE_URL`` is unset: failures are left to the queue's redrive."""
    url = get_settings().TURN_DEAD_LETTER_QUEUE_URL
    return _dead_letter_queue(url) if url else None


def forget() -> None:
    """Drop the warm clients (a new local stack, a new test)."""
    _stores.cache_clear()
    _turn_queue.cache_clear()
    _dead_letter_queue.cache_clear()


@lru_cache(maxsize=1)
def _stores(table_name: str) -> tuple[ConfigStore, StmStore, DynamoMemoryStore, TurnLedger]:
    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.adapters.dynamodb.ltm_store import BookLayout, DynamoMemoryStore
    from kioku.adapters.dynamodb.stm_store import StmStore
    from kioku.adapters.dynamodb.table import KiokuTable
    from kioku.adapters.dynamodb.turn_ledger import TurnLedger

    table = KiokuTable(table_name)
    layout = BookLayout.from_settings(get_settings())
    return ConfigStore(table), StmStore(table), DynamoMemoryStore(table, layout=layout), TurnLedger(table)


@lru_cache(maxsize=1)
def _turn_queue(queue_url: str) -> TurnQueue:
    from kioku.adapters.turn_queue import TurnQueue

    return TurnQueue(queue_url)


@lru_cache(maxsize=1)
def _dead_letter_queue(queue_url: str) -> DeadLetterQueue:
    from kioku.adapters.turn_queue import DeadLetterQueue

    return DeadLetterQueue(queue_url)
