"""The recall stage: what the model is shown of its memories, with ids, names, caps and privacy."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from kioku.domain.ltm.memory import Memory, MemoryScope
from kioku.domain.ltm.recall import (
    DEFAULT_RECALL_BUDGET_CHARS,
    RECALL_MAX_LINES,
    RECALL_ROLE,
    build_recall,
    recall_subjects,
)
from kioku.domain.models import Capabilities, ContextTag, PrivacyLevel
from kioku.domain.privacy import Origin
from kioku.services.ltm import recall_context
from tests.unit.ltm_fakes import (
    ALICE,
    BOB,
    BRIDGED,
    HERE,
    MARY,
    NOW,
    SERVER,
    FakeMemoryStore,
    make_turn,
    turn_recall,
)


def memory(scope: MemoryScope, memory_id: str, content: str, age_minutes: int = 0) -> Memory:
    when = NOW - timedelta(minutes=age_minutes)
    return Memory(scope, memory_id, content, ALICE.user_id, when, when, origin=HERE)


def stocked_store(**privacy: PrivacyLevel) -> FakeMemoryStore:
    store = FakeMemoryStore(privacy={user_id: level for user_id, level in privacy.items()})
    store.add(memory(MemoryScope.server(SERVER, 1), "10001", "{bot} hosts movie night for {user}"))
    store.add(memory(MemoryScope.server(SERVER, 2), "10002", "another persona's fact"))
    store.add(memory(MemoryScope.personal(ALICE.user_id, 1), "20001", "{user} is learning Rust"))
    store.add(memory(MemoryScope.personal(ALICE.user_id, 0), "20002", "{user} prefers short answers"))
    store.add(memory(MemoryScope.personal(BOB.user_id, 1), "30001", "{user} teases {bot}"))
    return store


def test_recall_shows_ids_names_and_the_right_lineages():
    # Given memories of the server, the speaker (lineage 1 and global) and Bob
    store = stocked_store()
    # When
    item = turn_recall(make_turn(), store)
    # Then
    assert item.tag is ContextTag.KNOWLEDGE_LONG_TERM_MEMORY
    assert item.role == RECALL_ROLE == "system"
    text = item.content
    assert "[#10001] 2025-05-01: Kioku hosts movie night for Alice" in text
    assert "[#20001] 2025-05-01: Alice is learning Rust" in text
    assert "[#20002] 2025-05-01: Alice prefers short answers" in text
    assert "[#30001] 2025-05-01: Bob teases Kioku" in text
    assert "another persona's fact" not in text
    assert "update_long_term_memory" in text
    # the speaker's memories first, then the server's, then the others'
    assert text.index("About Alice") < text.index("About this server") < text.index("About Bob (@bob)")


def test_recall_explains_corrections_only_when_the_update_tool_is_offered():
    # Issue 11.8: no instruction to call a tool the model was not given
    store = stocked_store()
    off = make_turn()
    off = replace(off, config=replace(off.config, capabilities=Capabilities(self_teaching_enabled=False)))
    no_tools = replace(make_turn(), llm_has_tools=False)
    for turn in (off, no_tools):
        text = turn_recall(turn, store).content
        assert "[#10001]" in text and "update_long_term_memory" not in text


def test_recall_reads_the_books_of_the_people_in_the_conversation():
    assert [person.user_id for person in recall_subjects(make_turn())] == [
        ALICE.user_id,
        BOB.user_id,
        MARY.user_id,
    ]


def test_private_users_personal_memories_are_left_out():
    store = stocked_store(**{BOB.user_id: PrivacyLevel.PARTIAL})
    text = turn_recall(make_turn(), store).content
    assert "teases" not in text
    assert "Alice is learning Rust" in text


def test_no_personal_memories_when_the_server_turns_them_off():
    # Given a turn that read its books before it knew the server had turned personal memories off
    store = stocked_store()
    where = make_turn()
    read = store.recall(
        SERVER, 1, [ALICE.user_id, BOB.user_id], place=where.place, policy=where.config.privacy
    )
    turn = make_turn(capabilities=Capabilities(personal_memories_enabled=False))
    # Then the server's are shown, nobody's own, and the next read is of nobody's books
    text = recall_context(turn, read).item.content
    assert "movie night" in text
    assert "Rust" not in text and "teases" not in text
    assert recall_subjects(turn) == ()


def test_bots_and_bridges_have_no_personal_section():
    subjects = recall_subjects(make_turn(participants=(ALICE, BRIDGED, BOB)))
    assert [s.user_id for s in subjects] == [ALICE.user_id, BOB.user_id]


def test_nothing_remembered_is_no_item():
    assert turn_recall(make_turn(), FakeMemoryStore()) is None


def test_a_direct_message_shows_personal_memories_only():
    store = stocked_store()
    text = turn_recall(make_turn(guild_id=None, participants=(ALICE,)), store).content
    assert "Rust" in text and "movie night" not in text


def test_the_line_cap_keeps_the_newest_and_says_how_many_are_left_out():
    scope = MemoryScope.server(SERVER, 1)
    memories = [
        memory(scope, str(10000 + i), f"fact {i}", age_minutes=i) for i in range(RECALL_MAX_LINES + 20)
    ]
    item = build_recall(make_turn(), memories, {}, ()).item
    lines = [line for line in item.content.splitlines() if line.startswith("[#")]
    assert len(lines) == RECALL_MAX_LINES
    assert lines[0] == "[#10000] 2025-05-01: fact 0"
    assert "(20 more memories are not shown.)" in item.content


def test_the_character_cap_holds_with_long_memories():
    scope = MemoryScope.server(SERVER, 1)
    memories = [memory(scope, str(10000 + i), "x" * 1000, age_minutes=i) for i in range(100)]
    item = build_recall(make_turn(), memories, {}, ()).item
    assert len(item.content) <= DEFAULT_RECALL_BUDGET_CHARS
    assert "more memories are not shown" in item.content


def test_only_people_taking_part_have_their_personal_memories_loaded():
    # Given Bob and Mary in the conversation, but only Bob wrote in it (Mary was merely mentioned)
    turn = make_turn(author_ids=[ALICE.user_id, BOB.user_id])
    # Then Mary's memories are not even read
    assert [person.user_id for person in recall_subjects(turn)] == [ALICE.user_id, BOB.user_id]


def test_in_a_direct_message_only_the_partners_memories_are_loaded():
    assert [person.user_id for person in recall_subjects(make_turn(guild_id=None))] == [ALICE.user_id]


def test_memories_are_recalled_only_where_their_origin_allows():
    # Given a server memory saved in a private channel, and one Bob wrote about Alice in another server
    store = FakeMemoryStore()
    secret = Origin(SERVER, "701", private=True)
    elsewhere = Origin("501", "801", private=False)
    store.add(
        Memory(
            MemoryScope.server(SERVER, 1),
            "10001",
            "the vault code is okapi",
            ALICE.user_id,
            NOW,
            NOW,
            origin=secret,
        )
    )
    store.add(
        Memory(
            MemoryScope.personal(ALICE.user_id, 1),
            "20001",
            "{user} owes Bob",
            BOB.user_id,
            NOW,
            NOW,
            origin=elsewhere,
        )
    )
    store.add(
        Memory(
            MemoryScope.personal(ALICE.user_id, 1),
            "20002",
            "{user} likes tea",
            ALICE.user_id,
            NOW,
            NOW,
            origin=elsewhere,
        )
    )
    # When Alice speaks in this server's public channel
    text = turn_recall(make_turn(), store).content
    # Then only what she said about herself follows her here
    assert "okapi" not in text and "owes Bob" not in text
    assert "likes tea" in text
    # and in the private channel itself the server memory is back
    assert "okapi" in turn_recall(make_turn(channel_id="701"), store).content


def test_each_line_tells_the_day_its_memory_was_saved_within_the_budget():
    # Given a fact and its correction a few days later (in a turn's UTC day)
    scope = MemoryScope.server(SERVER, 1)
    old = memory(scope, "10001", "The meetup is at the Red Lion", age_minutes=60 * 24 * 20)
    new = memory(scope, "10002", "The meetup moved to the Blue Boar", age_minutes=60 * 24 * 3)

    # When they are recalled
    recall = build_recall(make_turn(), [old, new], {}, ())

    # Then each line carries its day after its id, newest first, and its text is still the memory's
    assert "[#10002] 2025-04-28: The meetup moved to the Blue Boar\n[#10001] 2025-04-11: The meetup" in (
        recall.item.content
    )
    assert [c.text for c in recall.candidates] == [
        "The meetup moved to the Blue Boar",
        "The meetup is at the Red Lion",
    ]
    # and a memory rewritten later with the same words shows its new day (nothing kept stale)
    rewritten = replace(old, updated_at=NOW)
    assert (
        "[#10001] 2025-05-01: The meetup is at"
        in build_recall(make_turn(), [rewritten, new], {}, ()).item.content
    )
    # and the days are paid from the budget
    assert len(build_recall(make_turn(), [old, new], {}, (), budget=300).item.content) <= 300
