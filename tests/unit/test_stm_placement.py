"""insert_at_dialogue_depth and the content-then-nudge placement (seed 000, "injection depth")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kioku.domain.models import ContextItem, ContextTag
from kioku.domain.placement import insert_at_dialogue_depth, place_short_term_memory

H, S, K = ContextTag.DIALOGUE_HISTORY, ContextTag.DIALOGUE_SAMPLE, ContextTag.KNOWLEDGE_LONG_TERM_MEMORY


def items(*tags: ContextTag) -> list[ContextItem]:
    return [ContextItem(role="user", tag=tag, content=f"{tag.value}-{i}") for i, tag in enumerate(tags)]


MARK = ContextItem(role="user", tag=ContextTag.KNOWLEDGE_SHORT_TERM_MEMORY, content="stm")
NUDGE = ContextItem(role="user", tag=ContextTag.KNOWLEDGE_SHORT_TERM_MEMORY, content="nudge")

# (tags, depth, index the inserted item lands at)
DEPTHS = [
    ((ContextTag.SYSTEM_PROMPT, H, H, H, H), 0, 5),  # tail
    ((ContextTag.SYSTEM_PROMPT, H, H, H, H), 1, 4),  # before the final turn
    ((ContextTag.SYSTEM_PROMPT, H, H, H, H), 2, 3),  # before the latest user/bot pair
    ((ContextTag.SYSTEM_PROMPT, H, H, H, H), 4, 1),
    ((ContextTag.SYSTEM_PROMPT, H, H, H, H), 9, 1),  # clamps to the earliest turn, not the tail
    ((ContextTag.SYSTEM_PROMPT, S, S, H, H), 3, 3),  # sample dialogues never count
    ((ContextTag.SYSTEM_PROMPT, S, S), 2, 3),  # no history at all: tail
    ((), 2, 0),
    ((H, ContextTag.TOOL_HINT), 0, 2),  # 0 is the literal last position
    ((H, ContextTag.TOOL_HINT), 1, 0),
]


@pytest.mark.parametrize(("tags", "depth", "expected_index"), DEPTHS)
def test_depth_counts_dialogue_turns_from_the_bottom(tags, depth, expected_index):
    placed = insert_at_dialogue_depth(items(*tags), MARK, depth)
    assert placed.index(MARK) == expected_index
    assert len(placed) == len(tags) + 1


def test_a_negative_depth_is_refused():
    with pytest.raises(ValueError, match="0 or more"):
        insert_at_dialogue_depth(items(H), MARK, -1)


@pytest.mark.parametrize("depth", [0, 1, 2, 7])
def test_at_equal_depths_the_nudge_sits_directly_below_the_block(depth):
    # Given a content block and a nudge at the same depth
    context = items(ContextTag.SYSTEM_PROMPT, H, H, H)
    # When both are placed
    placed = place_short_term_memory(context, [MARK], depth, NUDGE, depth)
    # Then the nudge follows the block immediately
    assert placed.index(NUDGE) == placed.index(MARK) + 1


def test_content_depth_minus_one_anchors_the_block_above_samples_and_history():
    context = items(ContextTag.SYSTEM_PROMPT, K, S, H, H)
    placed = place_short_term_memory(context, [MARK], -1, NUDGE, 0)
    assert [item.tag for item in placed[:3]] == [ContextTag.SYSTEM_PROMPT, K, MARK.tag]
    assert placed[2] is MARK
    assert placed[-1] is NUDGE


def test_a_nudge_depth_above_the_block_puts_the_nudge_above_it():
    placed = place_short_term_memory(items(H, H, H, H), [MARK], 1, NUDGE, 3)
    assert placed.index(NUDGE) < placed.index(MARK)


tag_lists = st.lists(st.sampled_from([H, S, K, ContextTag.SYSTEM_PROMPT, ContextTag.TOOL_HINT]), max_size=25)


@given(
    tags=tag_lists, depth=st.integers(min_value=0, max_value=30), block=st.integers(min_value=1, max_value=3)
)
def test_insertion_keeps_everything_in_order_and_lands_depth_turns_from_the_bottom(tags, depth, block):
    context = items(*tags)
    inserted = [
        ContextItem(role="user", tag=ContextTag.KNOWLEDGE_SHORT_TERM_MEMORY, content=f"x{i}")
        for i in range(block)
    ]

    placed = insert_at_dialogue_depth(context, inserted, depth)

    position = placed.index(inserted[0])
    assert placed[position : position + block] == inserted
    assert [item for item in placed if item not in inserted] == context
    history = sum(tag is H for tag in tags)
    below = sum(item.tag is H for item in placed[position + block :])
    if depth == 0 or history == 0:
        assert position == len(context)
    else:
        assert below == min(depth, history)
        assert placed[position + block].tag is H
