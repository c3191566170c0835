"""The STM rows on moto: round trips, expiry, caps, the item size bound, request counts, two containers."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.keys import stm_row_key, turn_record_key
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.domain.forgetting import Said, SpeakerForgotten
from kioku.domain.models import Persona, PrivacyLevel, ServerConfig, StmCategory, UserProfile
from kioku.domain.stm.capture import NewerMemoryExists
from kioku.domain.stm.context import build_short_term_memory_context
from kioku.domain.stm.entries import StmLimits
from kioku.domain.stm.update_tool import StmUpdate
from kioku.domain.turn import TurnOutcome
from kioku.services.stm import PersonaGuesses, ShortTermMemoryTurn, turn_memory_query
from tests.integration.stm_rows import MAX_ITEM_BYTES, identity, item_size_bytes
from tests.unit.stm_builders import CHANNEL, LIMITS, NOW, SERVER, USER, message, turn


@pytest.fixture
def table(resources) -> KiokuTable:
    """The table read at these tests' time (``NOW``): what it keeps for a while is not yet past it."""
    return KiokuTable(resources.table_name, clock=lambda: NOW)


MINUTE = timedelta(minutes=1)


CONTAINERS: dict[str, PersonaGuesses] = {}


@pytest.fixture(autouse=True)
def _fresh_container():
    """Each test is a cold container: no persona guesses carried over from another test."""
    CONTAINERS["this test"] = PersonaGuesses()


def load(store: StmStore, *, guild_id=SERVER, channel_id=CHANNEL, limits=LIMITS, now=NOW):
    """The turn's read of its short-term memory, as the turn service makes it."""
    personas = CONTAINERS["this test"]
    query = turn_memory_query(
        guild_id=guild_id,
        channel_id=channel_id,
        user_id=USER,
        parent_channel_id=None,
        now=now,
        limits=limits,
        guessed=personas.guess(guild_id),
    )
    loaded = store.load_turn(query)
    personas.saw(guild_id, loaded.config.persona)
    return loaded


class RequestCounter:
    def __init__(self, table: KiokuTable) -> None:
        self.calls: list[str] = []
        table.client.meta.events.register("before-call.dynamodb", self._count)

    def _count(self, model, **kwargs) -> None:
        self.calls.append(model.name)


def test_capture_then_tool_write_round_trip(table):
    store = StmStore(table)
    # Given two captured turns in a channel
    store.capture(identity(), None, [message("hello", age=2 * MINUTE, message_id="1")], NOW, LIMITS)
    read = store.get(identity().address)
    store.capture(identity(), read, [message("hi!", role="assistant", message_id="2")], NOW, LIMITS)
    # When the tool writes a summary
    store.write_memory(identity(), StmUpdate(summary="Alice said hello."), (), NOW, LIMITS.retention)
    # Then the row has both, and the counter is back to 0
    entry = store.get(identity().address)
    assert [m.text for m in entry.crude] == ["hello", "hi!"]
    assert entry.crude[0].ts == NOW - 2 * MINUTE
    assert entry.summary == "Alice said hello." and entry.summary_updated_at == NOW
    assert entry.turns_since_refresh == 0
    assert entry.last_updated == NOW
    raw = table.get(stm_row_key(identity().address))
    assert raw["gsi1pk"] == f"STM#S#{SERVER}#L#1" and raw["gsi1sk"] == raw["gsi2sk"] == raw["last_updated"]
    assert raw["gsi2pk"].startswith("STMAGE#")
    assert int(raw["expires_at"]) == int((NOW + LIMITS.retention).timestamp())


def test_summary_and_categories_are_written_independently(table):
    store = StmStore(table)
    categories = (StmCategory(slug="mood", label="Mood", description="", position=0),)
    store.write_memory(identity(), StmUpdate(summary="S"), (), NOW, LIMITS.retention)
    store.write_memory(identity(), StmUpdate(categories={"mood": "calm"}), categories, NOW, LIMITS.retention)
    entry = store.get(identity().address)
    assert entry.summary == "S"
    assert entry.categories == {"mood": "calm"}
    assert entry.category_labels == (("mood", "Mood"),)
    store.write_memory(
        identity(), StmUpdate(categories={"mood": "", "x": "new"}), categories, NOW, LIMITS.retention
    )
    assert store.get(identity().address).categories == {"x": "new"}  # a category write replaces the map


def test_an_older_tool_write_never_overwrites_a_newer_one(table):
    store = StmStore(table)
    store.write_memory(identity(), StmUpdate(summary="newer"), (), NOW, LIMITS.retention)
    with pytest.raises(NewerMemoryExists):
        store.write_memory(identity(), StmUpdate(summary="older"), (), NOW - MINUTE, LIMITS.retention)
    assert store.get(identity().address).summary == "newer"


def test_capture_caps_the_list_and_counts_every_turn(table):
    store = StmStore(table)
    for index in range(15):
        read = store.get(identity().address)
        store.capture(identity(), read, [message(f"m{index}", age=(20 - index) * MINUTE)], NOW, LIMITS)
    entry = store.get(identity().address)
    assert [m.text for m in entry.crude] == [f"m{i}" for i in range(5, 15)]
    assert entry.turns_since_refresh == 15


def test_a_redelivered_turn_is_captured_and_counted_once(table):
    store = StmStore(table)
    turn_messages = [message("hello", age=MINUTE, message_id="700000000000000001")]
    store.capture(identity(), None, turn_messages, NOW, LIMITS)
    # the same turn again, from a container whose read predates the first capture
    store.capture(identity(), None, turn_messages, NOW, LIMITS)
    entry = store.get(identity().address)
    assert [m.text for m in entry.crude] == ["hello"]
    assert entry.turns_since_refresh == 1


def test_capture_with_a_stale_read_loses_nothing(table):
    store = StmStore(table)
    store.capture(identity(), None, [message("first", age=2 * MINUTE)], NOW, LIMITS)
    # a second container captured with no read at all (it loaded before the row existed)
    store.capture(identity(), None, [message("second", age=MINUTE)], NOW, LIMITS)
    entry = store.get(identity().address)
    assert [m.text for m in entry.crude] == ["first", "second"]
    assert entry.turns_since_refresh == 2


def test_expired_lines_are_dropped_when_the_list_is_rewritten(table):
    store = StmStore(table)
    store.capture(identity(), None, [message("old", age=MINUTE)], NOW, LIMITS)
    later = NOW + LIMITS.crude_ttl
    store.capture(
        identity(), store.get(identity().address), [message("new", age=-LIMITS.crude_ttl)], later, LIMITS
    )
    assert [m.text for m in store.get(identity().address).crude] == ["new"]


def test_full_privacy_counts_the_turn_and_stores_no_text(table):
    store = StmStore(table)
    base = turn()
    private = replace(base, profile=UserProfile(user_id=USER, privacy_level=PrivacyLevel.FULL))
    store.capture_turn(
        ShortTermMemoryTurn(store, private, load(store).state, LIMITS).capture_of([message("secret")])
    )
    entry = store.get(identity().address)
    assert entry.crude == () and entry.turns_since_refresh == 1


def test_the_item_stays_under_400_kb_at_maximum_settings(table):
    # Given every limit at its allowed maximum and text of four-byte characters
    limits = replace(LIMITS, max_summary_length=4000, max_categories=10, max_messages_per_channel=50)
    categories = tuple(
        StmCategory(slug=f"category_{i}_" + "x" * 40, label="🏷" * 100, description="", position=i)
        for i in range(10)
    )
    store = StmStore(table)
    big = replace(identity(), parent_channel_id="9" * 20, channel_name="📣" * 200)
    store.write_memory(big, StmUpdate(summary="😀" * 4000), (), NOW, limits.retention)
    texts = {c.slug: "🧠" * 4000 for c in categories}
    store.write_memory(big, StmUpdate(categories=texts), categories, NOW, limits.retention)
    for batch in range(5):
        read = store.get(big.address)
        lines = [
            replace(
                message("🎉" * 5000, age=(60 - batch * 10 - i) * MINUTE, message_id=f"{batch}-{i}"),
                speaker="🙂" * 500,
            )
            for i in range(10)
        ]
        store.capture(big, read, lines, NOW, limits)
    # Then the stored item is within DynamoDB's limit (moto enforces it too) and nothing was lost
    raw = table.get(stm_row_key(big.address))
    assert item_size_bytes(raw) <= MAX_ITEM_BYTES
    entry = store.get(big.address)
    assert len(entry.categories) == 10 and len(entry.summary) == 4000
    assert entry.turns_since_refresh == 5
    assert entry.crude[-1].message_id == "4-9"


def test_a_turn_loads_in_two_requests_and_sees_other_channels_newest_first(table):
    store = StmStore(table)
    for offset, channel in enumerate(["200", "300", "400", "500"]):
        store.write_memory(
            identity(channel), StmUpdate(summary=f"in {channel}"), (), NOW - offset * MINUTE, LIMITS.retention
        )
    store.write_memory(identity(), StmUpdate(summary="here"), (), NOW, LIMITS.retention)
    counter = RequestCounter(table)

    loaded = load(store)

    assert counter.calls == ["BatchGetItem", "Query"]
    assert loaded.state.current.summary == "here"
    assert [e.channel_id for e in loaded.state.others][:3] == ["200", "300", "400"]
    context = build_short_term_memory_context(turn(loaded.config), loaded.state, LIMITS)
    assert len(context.memory_items) == 4


def test_a_wrong_persona_guess_costs_one_get_and_still_reads_the_right_row(table):
    ConfigStore(table).save_server_config(ServerConfig(guild_id=SERVER, persona=Persona(persona_id="aoi")))
    store = StmStore(table)
    store.write_memory(identity(persona="aoi"), StmUpdate(summary="aoi's"), (), NOW, LIMITS.retention)
    store.write_memory(identity(persona="kioku"), StmUpdate(summary="kioku's"), (), NOW, LIMITS.retention)
    counter = RequestCounter(table)
    first = load(store, guild_id=SERVER)
    second = load(store, guild_id=SERVER)  # the container now knows the persona
    assert first.state.current.summary == second.state.current.summary == "aoi's"
    assert counter.calls == ["BatchGetItem", "GetItem", "Query", "BatchGetItem", "Query"]


def test_cross_server_folding_adds_the_users_dm_row_without_another_request(table):
    ConfigStore(table).save_user_profile(UserProfile(user_id=USER, cross_server_opt_in=True))
    store = StmStore(table)
    store.write_memory(
        identity("dm-1", guild_id=None), StmUpdate(summary="from DMs"), (), NOW, LIMITS.retention
    )
    counter = RequestCounter(table)
    loaded = load(store)
    assert counter.calls == ["BatchGetItem", "Query"]
    context = build_short_term_memory_context(turn(loaded.config, opted_in=True), loaded.state, LIMITS)
    assert any("from DMs" in item.content for item in context.memory_items)


def test_without_the_opt_in_the_dm_row_stays_out_even_though_it_was_read(table):
    store = StmStore(table)
    store.write_memory(
        identity("dm-1", guild_id=None), StmUpdate(summary="from DMs"), (), NOW, LIMITS.retention
    )
    store.write_memory(identity("200"), StmUpdate(summary="from #200"), (), NOW, LIMITS.retention)
    loaded = load(store)
    assert [entry.address for entry in loaded.state.others] == [identity("200").address]
    context = build_short_term_memory_context(turn(loaded.config), loaded.state, LIMITS)
    assert not any("from DMs" in item.content for item in context.memory_items)


def test_a_dm_row_idle_past_the_retention_is_not_folded(table):
    ConfigStore(table).save_user_profile(UserProfile(user_id=USER, cross_server_opt_in=True))
    store = StmStore(table)
    stale = NOW - LIMITS.retention - MINUTE
    store.write_memory(
        identity("dm-1", guild_id=None), StmUpdate(summary="old DMs"), (), stale, LIMITS.retention
    )
    assert load(store).state.others == ()


def test_rows_idle_past_the_retention_are_not_read(table):
    store = StmStore(table)
    store.write_memory(
        identity("200"), StmUpdate(summary="ancient"), (), NOW - LIMITS.retention - MINUTE, LIMITS.retention
    )
    assert load(store).state.others == ()


def test_another_channels_summary_outlives_the_summary_ttl_and_raw_only_rows_do_not_crowd_it_out(table):
    # Issue 11.2: a summary lasts until the janitor removes its row; rows whose raw lines all expired
    # hold nothing to show and do not take its place
    store = StmStore(table)
    store.write_memory(
        identity("200"), StmUpdate(summary="two days old"), (), NOW - 2 * LIMITS.summary_ttl, LIMITS.retention
    )
    for n in range(LIMITS.max_other_channels + 6):
        line = message("said long ago", age=LIMITS.crude_ttl + 2 * MINUTE, message_id=f"9{n}")
        store.capture(identity(f"3{n:02d}"), None, [line], NOW - LIMITS.crude_ttl - MINUTE, LIMITS)
    others = load(store).state.others
    assert [entry.summary for entry in others] == ["two days old"]


def test_a_write_in_one_container_is_seen_by_the_next_read_in_another(table):
    # Given two containers: two repositories, each with its own client
    first = StmStore(KiokuTable(table.name, clock=table.clock))
    second = StmStore(KiokuTable(table.name, clock=table.clock))
    # When one writes and the other then loads, on and on
    for round_number in range(3):
        first.write_memory(
            identity(),
            StmUpdate(summary=f"v{round_number}"),
            (),
            NOW + round_number * MINUTE,
            LIMITS.retention,
        )
        assert load(second).state.current.summary == f"v{round_number}"
        read = load(second).state.current
        second.capture(identity(), read, [message(f"line {round_number}")], NOW, LIMITS)
        assert load(first).state.current.turns_since_refresh == 1


def test_a_turn_captured_in_a_server_notes_where_the_speakers_lines_are_and_a_dm_needs_no_note(table):
    store = StmStore(table)
    for guild_id in (SERVER, None):
        here = turn(guild_id=guild_id)
        memory = ShortTermMemoryTurn(store, here, load(store, guild_id=guild_id).state, LIMITS)
        store.capture_turn(memory.capture_of([message(f"hello from {guild_id}")]))
    assert store.get(identity(guild_id=None).address).crude[0].text == "hello from None"
    assert [row.address for row in store.rows_with_lines_of(USER)] == [identity().address]


def test_the_service_runs_a_whole_turn(table):
    store = StmStore(table)
    limits = StmLimits()
    loaded = load(store)
    here = turn(loaded.config)
    memory = ShortTermMemoryTurn(store, here, loaded.state, limits, channel_name="general")
    assert memory.run_update_tool('{"summary": "Alice is planning a picnic."}').ok
    store.capture_turn(
        memory.capture_of(
            [
                message("let's go Sunday", message_id="10"),
                message("sounds fun", role="assistant", message_id="11"),
            ]
        )
    )
    entry = store.get(identity().address)
    assert entry.summary == "Alice is planning a picnic."
    assert entry.channel_name == "general"
    assert entry.turns_since_refresh == 1
    assert [m.message_id for m in entry.crude] == ["10", "11"]


def test_a_write_that_expects_the_text_it_saw_is_refused_once_it_changed(table):
    store = StmStore(table)
    store.write_memory(identity(), StmUpdate(summary="seen"), (), NOW - MINUTE, LIMITS.retention)
    seen_at = store.get(identity().address).summary_updated_at
    store.write_memory(identity(), StmUpdate(summary="newer"), (), NOW, LIMITS.retention)
    with pytest.raises(NewerMemoryExists):
        store.write_memory(
            identity(),
            StmUpdate(summary="edit of seen"),
            (),
            NOW + MINUTE,
            LIMITS.retention,
            expect_written_at=seen_at,
        )
    with pytest.raises(NewerMemoryExists):
        store.write_memory(
            identity(),
            StmUpdate(summary="as if new"),
            (),
            NOW + MINUTE,
            LIMITS.retention,
            expect_written_at=None,
        )
    assert store.get(identity().address).summary == "newer"
    current = store.get(identity().address).summary_updated_at
    store.write_memory(
        identity(),
        StmUpdate(summary="edit of newer"),
        (),
        NOW + MINUTE,
        LIMITS.retention,
        expect_written_at=current,
    )
    assert store.get(identity().address).summary == "edit of newer"


def test_a_capture_of_a_message_sent_before_its_speakers_forget_all_writes_nothing(table):
    # Given Alice asked to forget everything a minute after sending her message
    store, ledger = StmStore(table), TurnLedger(table)
    sent = NOW - 2 * MINUTE
    ledger.forget_turns_of(USER, sent + MINUTE)
    done = ledger.op_record("message", "700000000000000001", TurnOutcome(), NOW)
    # When a late attempt captures the turn, with its completion record
    with pytest.raises(SpeakerForgotten):
        store.capture(
            identity(),
            None,
            [message("my secret", message_id="700000000000000001")],
            NOW,
            LIMITS,
            also=[done],
            said=Said(USER, sent),
        )
    # Then neither her line nor the record was written: the turn records itself alone
    assert store.get(identity().address) is None
    assert table.get(turn_record_key("message", "700000000000000001")) is None
    # and through the turn's short-term memory too: the turn's commit names it and drops the capture
    stm = ShortTermMemoryTurn(store, turn(sent_at=sent), load(store).state, LIMITS)
    with pytest.raises(SpeakerForgotten):
        store.capture_turn(stm.capture_of([message("my secret")]), also=[done])
    # while a message sent after the forget-all is captured as usual
    later = ShortTermMemoryTurn(store, turn(sent_at=sent + 2 * MINUTE), load(store).state, LIMITS)
    store.capture_turn(later.capture_of([message("a new start")]), also=[done])
    assert [m.text for m in store.get(identity().address).crude] == ["a new start"]
    assert table.get(turn_record_key("message", "700000000000000001")) is not None


def test_a_dm_summary_of_words_said_before_the_forget_all_does_not_bring_the_dm_row_back(table):
    # Given Alice forgot everything a minute after the message a DM turn answers
    store, sent = StmStore(table), NOW - 2 * MINUTE
    TurnLedger(table).forget_turns_of(USER, sent + MINUTE)
    dm = identity(guild_id=None)
    # When the turn's model writes the DM's summary
    with pytest.raises(SpeakerForgotten):
        store.write_memory(
            dm, StmUpdate(summary="Alice's secret"), (), NOW, LIMITS.retention, said=Said(USER, sent)
        )
    # Then no DM row is there; through the tool, the model is told nothing was saved
    assert store.get(dm.address) is None
    tool = ShortTermMemoryTurn(
        store, turn(guild_id=None, sent_at=sent), load(store, guild_id=None).state, LIMITS
    )
    result = tool.run_update_tool({"summary": "Alice's secret"})
    assert result.status == "error" and "forget everything" in result.data["message"]
    assert store.get(dm.address) is None
