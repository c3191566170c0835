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
    from kioku.config import Settings
    from kioku.services.commands.ports import (
        ChannelWebhooks,
        CommandMemories,
        Configurations,
        ShortTermRows,
        TurnJobs,
        TurnNotes,
    )


class CommandContext(Protocol):
    """Typed by ports (``commands.ports``), never by an adapter's class."""

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def config_store(self) -> Configurations: ...

    @property
    def stm_store(self) -> ShortTermRows: ...

    @property
    def ltm_store(self) -> CommandMemories: ...

    @property
    def webhook_store(self) -> ChannelWebhooks: ...

    @property
    def turn_ledger(self) -> TurnNotes: ...

    @property
    def turn_queue(self) -> TurnJobs: ...
