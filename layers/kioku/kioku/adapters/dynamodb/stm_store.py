"""Short-term memory rows: one live item per (server, channel, persona), or per (user, persona) in DMs
(``keys.stm_row_key``), in the ``Recency`` index by scope and lineage (a private channel's row in a
partition of its own) and by ``gsi1sk = last_updated`` (ISO UTC), in ``JanitorAge`` by
``gsi2sk = last_updated``, and a thread's row, once a turn described it, in ``ThreadParent``.

The rows are read and written by a repository per job: ``stm_reads`` (a turn's read),
``stm_writes`` (captures and the tool's write), ``stm_person`` (a person's own data),
``stm_channels`` (channel events and ``GUILD_CREATE``) and ``stm_janitor``, all mapping items
through ``stm_items``. ``StmStore`` is every one of them on one table, for the callers that do
several jobs (the turn repository, the turn and the commands).
"""

from __future__ import annotations

from kioku.adapters.dynamodb.stm_channels import StmChannelRows
from kioku.adapters.dynamodb.stm_items import crude_lines_from_items, crude_lines_to_items
from kioku.adapters.dynamodb.stm_janitor import StmJanitor
from kioku.adapters.dynamodb.stm_person import StmPersonRows
from kioku.adapters.dynamodb.stm_reads import StmReads
from kioku.adapters.dynamodb.stm_writes import StmWrites
from kioku.domain.turn_read import TurnMemoryLoad, TurnMemoryQuery

__all__ = [
    "StmStore",
    "TurnMemoryLoad",
    "TurnMemoryQuery",
    "crude_lines_from_items",
    "crude_lines_to_items",
]
"""What ``turn_repository`` imports from here (until it imports each from its own module)."""


class StmStore(StmReads, StmWrites, StmPersonRows, StmChannelRows, StmJanitor):
    """Every short-term memory job on one table."""
