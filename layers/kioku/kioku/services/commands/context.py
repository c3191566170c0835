"""What a command handler is handed besides the interaction: the stores, the turn queue, the
settings and the clock of its container.

The composition root (``kioku.entrypoints.composition.Container``) builds them once per container,
each on first use; a test hands in its own. A command never looks a store up anywhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
    from kioku.adapters.dynamodb.stm_store import StmStore
    from kioku.adapters.dynamodb.turn_ledger import TurnLedger
    from kioku.adapters.dynamodb.webhook_store import WebhookStore
    from kioku.adapters.turn_queue import TurnQueue
    from kioku.config import Settings


class CommandContext(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def config_store(self) -> ConfigStore: ...

    @property
    def stm_store(self) -> StmStore: ...

    @property
    def ltm_store(self) -> DynamoMemoryStore: ...

    @property
    def webhook_store(self) -> WebhookStore: ...

    @property
    def turn_ledger(self) -> TurnLedger: ...

    @property
    def turn_queue(self) -> TurnQueue: ...
