"""The ``order`` option of ``/personal memories list`` and ``/server memories list``, and the mark of
a memory no turn was shown for 90 days (``domain.ltm.usage``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from kioku.discord.interaction import Interaction
from kioku.discord.protocol import OptionType
from kioku.domain.ltm.memory import Memory
from kioku.domain.ltm.usage import UNUSED_MARK, ListOrder, unused_long
from kioku.services.commands.custom_ids import Field, one_of
from kioku.services.commands.error_replies import Refusal, Refused

ORDER_OPTION: Final = "order"
ORDER_FIELD: Final[Field] = one_of("order", *(order.value for order in ListOrder))
"""The order a list's page buttons keep."""
ORDER_NAMES: Final = {
    None: "oldest first",
    ListOrder.RECENT: "newest first",
    ListOrder.LEAST_USED: "least used first (never shown, then the longest since I was shown it)",
}
BAD_ORDER: Final = "`order` is `recent` or `least_used`."


def order_of(interaction: Interaction) -> ListOrder | None:
    """The list's order as asked (None: oldest first, as it always was)."""
    raw = interaction.option_values().get(ORDER_OPTION)
    if raw is None:
        return None
    try:
        return ListOrder(raw)
    except ValueError:
        raise Refused(Refusal.NOT_UNDERSTOOD, BAD_ORDER) from None


def unused_text(
    memory: Memory, order: ListOrder | None, now: datetime, noted: Mapping[str, datetime] | None = None
) -> str:
    """`` · unused 90+ days`` for a memory no turn was shown for that long, in the least-used order
    (the one that asks how much memories are used); nothing otherwise."""
    marked = order is ListOrder.LEAST_USED and unused_long(memory, now, noted)
    return f" · {UNUSED_MARK}" if marked else ""


OPTION: Final[dict[str, Any]] = {
    "type": OptionType.STRING,
    "name": ORDER_OPTION,
    "description": "recent: newest first; least_used: the ones I was shown least lately first",
    "choices": [
        {"name": "recent: newest first", "value": ListOrder.RECENT.value},
        {"name": "least_used: least recently shown first", "value": ListOrder.LEAST_USED.value},
    ],
}
