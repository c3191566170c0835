"""Positional injection into an assembled context: by dialogue depth, counted from the bottom."""

from __future__ import annotations

from collections.abc import Sequence

from kioku.domain.models import ANCHORED_TOP_DEPTH, ContextItem, ContextTag

_DIALOGUE_TAGS = frozenset({ContextTag.DIALOGUE_SAMPLE, ContextTag.DIALOGUE_HISTORY})


def insert_at_dialogue_depth(
    items: Sequence[ContextItem], inserted: Sequence[ContextItem] | ContextItem, depth: int
) -> list[ContextItem]:
    """``items`` with ``inserted`` spliced in before the ``depth``-th dialogue turn from the bottom.

    Only DIALOGUE_HISTORY items count (a user turn and a bot turn are two turns; sample dialogues
    never count). 0 is the tail; a depth beyond the history clamps to the earliest turn; with no
    history at all the items go at the tail.
    """
    if depth < 0:
        raise ValueError(f"a dialogue depth is 0 or more, got {depth}")
    block = [inserted] if isinstance(inserted, ContextItem) else list(inserted)
    turns = [index for index, item in enumerate(items) if item.tag is ContextTag.DIALOGUE_HISTORY]
    position = turns[-min(depth, len(turns))] if depth and turns else len(items)
    return [*items[:position], *block, *items[position:]]


def insert_anchored_top(items: Sequence[ContextItem], inserted: Sequence[ContextItem]) -> list[ContextItem]:
    """``inserted`` after the system and knowledge items, before any sample or history dialogue."""
    position = next((i for i, item in enumerate(items) if item.tag in _DIALOGUE_TAGS), len(items))
    return [*items[:position], *inserted, *items[position:]]


def place_short_term_memory(
    items: Sequence[ContextItem],
    memory_items: Sequence[ContextItem],
    memory_depth: int,
    nudge: ContextItem | None,
    nudge_depth: int,
) -> list[ContextItem]:
    """The content block first (anchored at the top for depth -1), then the nudge, so that at equal
    depths the nudge sits directly below the block."""
    placed = list(items)
    if memory_items:
        if memory_depth <= ANCHORED_TOP_DEPTH:
            placed = insert_anchored_top(placed, memory_items)
        else:
            placed = insert_at_dialogue_depth(placed, memory_items, memory_depth)
    if nudge is not None:
        placed = insert_at_dialogue_depth(placed, nudge, max(nudge_depth, 0))
    return placed
