"""A turn's claim on its outbox: which attempt may post it (``Outbox.held_from``), and what that
attempt notes before each next post (``TurnStore.record_posted``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import NoReturn

from kioku.domain.turn import Outbox, TurnClaimed
from kioku.services.turn_ports import TurnStore
from kioku.services.turn_state import TurnState

logger = logging.getLogger(__name__)


def claimed(turns: TurnStore, state: TurnState, outbox: Outbox) -> Outbox:
    """An earlier attempt's outbox, taken over by this one; ``TurnClaimed`` (and the outbox marked
    as waited for) if that attempt may still be posting it."""
    if outbox.held_from(state.claim):  # its answer, or its notices only: the model may answer next
        assert outbox.claim is not None  # held
        give_back(turns, state, outbox.claim)
    if outbox.claim is not None and outbox.claim != str(state.claim):
        state.taking_from = outbox.claim
    return replace(outbox, claim=str(state.claim))


def give_back(turns: TurnStore, state: TurnState, claim: str) -> NoReturn:
    """Give the turn back to the attempt holding ``claim``: mark the outbox as waited for, so the
    message's next receive may take it over once that attempt is surely over (``TurnClaimed``)."""
    logger.warning("turn %s: another attempt holds its outbox; given back", state.job.turn_id)
    turns.wait_for(state.key, claim, str(state.claim))
    raise TurnClaimed(claim)


def noting(turns: TurnStore, state: TurnState) -> Callable[[Outbox], bool]:
    """What ``Delivery.post`` asks before each next post: the posts so far noted, while the outbox
    is kept and this attempt's (its first note takes it over from ``state.taking_from``)."""

    def note(posted: Outbox) -> bool:
        kept = turns.record_posted(state.key, posted, state.taking_from)
        state.taking_from = None
        return kept

    return note
