""" "Why this answer?": what a viewer is told of a turn's trace (``explain``), and how the trace is kept
(ids and places, a person's part apart so their forget-all removes it)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from kioku.adapters.dynamodb.turn_traces import PERSON_PREFIX, trace_attributes, trace_from_item
from kioku.domain.ltm.memory import Memory, MemoryScope, ScopeKind
from kioku.domain.privacy import Origin, Place, PrivacyPolicy
from kioku.domain.stm.entries import StmAddress, StmEntry
from kioku.domain.why import MemoryUse, Seen, TurnTrace, UsedMemory, UsedRow, Visibility, explain

GUILD, GENERAL, SECRET = "200000000000000001", "300000000000000001", "300000000000000003"
ALICE, BOB = "400000000000000001", "400000000000000002"
AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
HERE = Place(GUILD, GENERAL)


def memory(kind: ScopeKind, owner: str, memory_id: str, about: str | None = None) -> Memory:
    scope = MemoryScope(kind, owner, 1)
    return Memory(
        scope, memory_id, "{user} likes tea", ALICE, AT, AT, Origin(GUILD, GENERAL, private=False), about
    )


SERVER_SEEN = UsedMemory(ScopeKind.SERVER, GUILD, "11111", MemoryUse.RECALLED)
SERVER_HIDDEN = UsedMemory(ScopeKind.SERVER, GUILD, "22222", MemoryUse.RECALLED)
SERVER_GONE = UsedMemory(ScopeKind.SERVER, GUILD, "33333", MemoryUse.FOUND)
ALICES = UsedMemory(ScopeKind.PERSONAL, ALICE, "44444", MemoryUse.SAVED, ALICE)
SECRET_ROW = UsedRow(StmAddress(SECRET, "kioku", guild_id=GUILD), AT - timedelta(hours=1))
ALICES_DM = UsedRow(StmAddress("310000000000000009", "kioku", user_id=ALICE), AT)
TRACE = TurnTrace(
    GUILD,
    GENERAL,
    1,
    AT,
    memories=(SERVER_SEEN, SERVER_HIDDEN, SERVER_GONE, ALICES),
    rows=(SECRET_ROW, ALICES_DM),
    left_out=3,
)


def seen_by(viewer: str, *, secret_private: bool) -> Seen:
    visible = {SERVER_SEEN.key: memory(ScopeKind.SERVER, GUILD, "11111")}
    if viewer == ALICE:
        visible[ALICES.key] = memory(ScopeKind.PERSONAL, ALICE, "44444", ALICE)
    rows = {
        SECRET_ROW.address: StmEntry(SECRET_ROW.address, 1, AT, private=secret_private, channel_name="secret")
    }
    return Seen(
        viewer,
        HERE,
        PrivacyPolicy(GUILD),
        visible=visible,
        existing=frozenset({SERVER_HIDDEN.key}),
        rows=rows,
    )


def test_another_persons_personal_memory_is_only_counted_and_their_dm_row_not_even_that():
    from kioku.services.commands.why_answer import _row_lines

    # Given a turn shown Alice's personal memory and her DM row (folded in by her cross-server opt-in)
    # When Bob asks
    told = explain(TRACE, seen_by(BOB, secret_private=False))
    # Then her memory is only counted, and nothing tells him of her DM row (nor that she opted in)
    assert [line.memory_id for line in told.memories] == ["11111", "22222", "33333"]
    assert told.others_memories == 1
    assert all(line.used.person is None for line in told.rows)
    assert not any("DM" in line or "direct" in line for line in _row_lines(TRACE, told))
    # while Alice is told of her own
    assert ALICES_DM in [line.used for line in explain(TRACE, seen_by(ALICE, secret_private=False)).rows]


def test_what_the_viewer_may_not_see_now_is_unseen_and_what_is_gone_is_forgotten():
    told = explain(TRACE, seen_by(ALICE, secret_private=True))
    by_id = {line.memory_id: line for line in told.memories}
    assert by_id["11111"].visibility is Visibility.SHOWN and by_id["11111"].memory is not None
    assert by_id["22222"].visibility is Visibility.UNSEEN and by_id["22222"].memory is None
    assert by_id["33333"].visibility is Visibility.FORGOTTEN
    assert by_id["44444"].visibility is Visibility.SHOWN  # her own, recalled for her here
    # a channel turned private since is not named; a row no longer stored is "no longer kept"
    assert [line.visibility for line in told.rows] == [Visibility.UNSEEN, Visibility.GONE]
    assert told.left_out == 3


def test_a_row_still_recallable_here_is_shown():
    told = explain(TRACE, seen_by(BOB, secret_private=False))
    (row,) = told.rows
    assert row.visibility is Visibility.SHOWN and row.entry is not None and row.entry.channel_name == "secret"


def test_the_trace_is_kept_as_ids_with_each_persons_part_apart():
    attributes = trace_attributes(TRACE)
    # no text of any memory, and Alice's part in an attribute of its own
    assert "tea" not in json.dumps(attributes)
    assert set(attributes) == {"why", f"{PERSON_PREFIX}{ALICE}"}
    assert trace_from_item(attributes) == TRACE
    # removing her attribute (her forget-all) leaves the trace without her entries
    without_her = {name: value for name, value in attributes.items() if not name.endswith(ALICE)}
    assert trace_from_item(without_her) == TRACE.without(ALICE)
    assert ALICES not in TRACE.without(ALICE).memories and ALICES_DM not in TRACE.without(ALICE).rows


def test_a_memorys_use_names_a_private_channel_only_to_someone_asking_from_there():
    from kioku.domain.why import ShownNote, memory_key_text
    from kioku.services.commands.personal_memories import _memory_field, memory_uses

    mine = memory(ScopeKind.PERSONAL, ALICE, "44444", ALICE)
    key = memory_key_text(ScopeKind.PERSONAL, ALICE, "44444")
    notes = [
        ShownNote("message", str(n), AT + timedelta(minutes=n), GUILD, channel, None, private, (key,))
        for n, (channel, private) in enumerate(((GENERAL, False), (SECRET, True)))
    ]
    uses = memory_uses(notes)
    assert uses[key][0] == 2 and uses[key][1].channel_id == SECRET
    from_general = _memory_field(mine, ALICE, HERE, uses)["name"]
    from_secret = _memory_field(mine, ALICE, Place(GUILD, SECRET), uses)["name"]
    assert "used in 2 turns" in from_general and "last in a channel you can't see" in from_general
    assert SECRET not in from_general and f"last in <#{SECRET}>" in from_secret


def test_a_server_memory_about_someone_else_names_them_and_never_calls_the_viewer_you():
    from kioku.domain.why import MemoryLine
    from kioku.services.commands.why_answer import _memory_line

    about_bob = replace(
        memory(ScopeKind.SERVER, GUILD, "11111", BOB),
        content="{user} is afraid of dogs and {user}'s cat is Mochi",
    )
    line = MemoryLine(MemoryUse.RECALLED, "11111", Visibility.SHOWN, about_bob)

    to_alice = _memory_line(line, ALICE, HERE, "Luna")
    to_bob = _memory_line(line, BOB, HERE, "Luna")

    assert f"<@{BOB}> is afraid of dogs and <@{BOB}>'s cat is Mochi" in to_alice
    assert "you" not in to_alice.lower().replace("you can't", "")
    assert "You are afraid of dogs and your cat is Mochi" in to_bob


def test_people_beyond_the_cap_leave_no_id_in_the_trace_only_a_count():
    from kioku.domain.why import MAX_PEOPLE_NOTED

    # Given a turn shown one personal memory of each of 25 people
    people = [f"4100000000000000{n:02d}" for n in range(MAX_PEOPLE_NOTED + 5)]
    used = tuple(
        UsedMemory(ScopeKind.PERSONAL, p, f"1{n:04d}", MemoryUse.RECALLED, p) for n, p in enumerate(people)
    )
    # When it is kept
    attributes = trace_attributes(replace(TRACE, memories=used, rows=()))
    # Then the first 20 each have their own part (their forget-all removes it), and nothing of the
    # other 5 is kept anywhere on the record: they are only counted
    assert sorted(k for k in attributes if k.startswith(PERSON_PREFIX)) == sorted(
        f"{PERSON_PREFIX}{p}" for p in people[:MAX_PEOPLE_NOTED]
    )
    assert not any(p in json.dumps(attributes) for p in people[MAX_PEOPLE_NOTED:])
    kept = trace_from_item({"pk": "x", **attributes})
    assert kept is not None and kept.unnoted == 5 and len(kept.memories) == MAX_PEOPLE_NOTED
