"""The stores commands use, one of each per warm container. AWS adapters are imported on first use,
so loading the command registry (on the first non-PING interaction) does not import boto3."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from kioku.config import get_settings

if TYPE_CHECKING:
    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.adapters.dynamodb.stm_store import StmStore


def config_store() -> ConfigStore:
    return _stores(get_settings().TABLE_NAME)[0]


def stm_store() -> StmStore:
    return _stores(get_settings().TABLE_NAME)[1]


def forget() -> None:
    """Drop the warm clients (a new local stack, a new test)."""
    _stores.cache_clear()


@lru_cache(maxsize=1)
def _stores(table_name: str) -> tuple[ConfigStore, StmStore]:
    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.adapters.dynamodb.stm_store import StmStore
    from kioku.adapters.dynamodb.table import KiokuTable

    table = KiokuTable(table_name)
    return ConfigStore(table), StmStore(table)
