"""When each memory was last shown, on moto: the turn's record is indexed in its own commit (no
request of its own), and the janitor folds the records into each memory's ``last_shown``: bounded
per run, resumable, never backwards, never recreating a deleted memory."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.keys import memory_key
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope, ScopeKind
from kioku.domain.privacy import Origin
from kioku.domain.trace import MemoryUse, TurnTrace, UsedMemory
from kioku.domain.turn import TurnOutcome

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
SERVER, ALICE, BOB = "500", "101", "102"
HERE = Origin(SERVER, "700", private=False)


@pytest.fixture(autouse=True)
def at_the_tests_time(table):
    table.clock = lambda: NOW  # records and memories are read at the tests' time


def saved(store: DynamoMemoryStore, scope: MemoryScope, content: str) -> str:
    draft = MemoryDraft(
        scope=scope, content=content, author_id=ALICE, created_at=NOW - 200 * DAY, origin=HERE
    )
    return store.create(draft, limit=50).memory_id


def committed(table, turn_id: str, at: datetime, *used: tuple[ScopeKind, str, str, MemoryUse]) -> None:
    """A turn at ``at`` that used ``used`` (kind, owner, id, use), recorded as the turn records it."""
    memories = tuple(
        UsedMemory(kind, owner, memory_id, use, owner if kind is ScopeKind.PERSONAL else None)
        for kind, owner, memory_id, use in used
    )
    trace = TurnTrace(SERVER, "700", 1, at, channel_private=False, memories=memories)
    table.transact_write([TurnLedger(table).op_record("message", turn_id, TurnOutcome(trace=trace), at)])


def last_shown(store: DynamoMemoryStore, kind: ScopeKind, owner: str, memory_id: str) -> datetime | None:
    memory = store.find(kind, owner, memory_id)
    return memory.last_shown if memory else None


def test_the_janitor_folds_the_turns_records_into_each_memorys_last_shown_time(table):
    # Given a personal memory shown twice, a server memory shown once, one only saved, one deleted
    store = DynamoMemoryStore(table)
    bob = saved(store, MemoryScope.personal(BOB, 1), "{user} plays chess")
    club = saved(store, MemoryScope.server(SERVER, 1), "the club meets on Fridays")
    fresh = saved(store, MemoryScope.server(SERVER, 1), "a fact just saved")
    gone = saved(store, MemoryScope.server(SERVER, 1), "a fact deleted since")
    personal, server = ScopeKind.PERSONAL, ScopeKind.SERVER
    committed(
        table,
        "1",
        NOW - 5 * DAY,
        (personal, BOB, bob, MemoryUse.RECALLED),
        (server, SERVER, club, MemoryUse.FOUND),
    )
    committed(table, "2", NOW - DAY, (personal, BOB, bob, MemoryUse.RECALLED))
    committed(table, "3", NOW - DAY, (server, SERVER, fresh, MemoryUse.SAVED))
    committed(table, "4", NOW - DAY, (server, SERVER, gone, MemoryUse.RECALLED))
    store.delete(store.find(server, SERVER, gone))
    committed(table, "5", NOW - timedelta(minutes=5), (server, SERVER, fresh, MemoryUse.RECALLED))

    # When the janitor runs
    report = store.fold_last_shown(NOW)

    # Then each shown memory holds when it was last shown; the deleted one is not recreated; a
    # record committed minutes ago waits for the next run (the index may show it late)
    assert last_shown(store, personal, BOB, bob) == NOW - DAY
    assert last_shown(store, server, SERVER, club) == NOW - 5 * DAY
    assert last_shown(store, server, SERVER, fresh) is None
    assert table.get(memory_key(server, SERVER, gone)) is None
    assert (report.records, report.folded, report.kept) == (3, 3, 1)
    assert store.fold_last_shown(NOW).records == 0  # resumes after what it folded
    assert store.fold_last_shown(NOW + DAY).records == 1
    assert last_shown(store, server, SERVER, fresh) == NOW - timedelta(minutes=5)


def twenty_records_showing_a_and_their_own(store, table):
    """Memory A and twenty others, and twenty turn records ten minutes apart, each showing A and its own."""
    scope = MemoryScope.server(SERVER, 1)
    a = saved(store, scope, "fact A")
    own = [saved(store, scope, f"fact {n}") for n in range(20)]
    for n, memory_id in enumerate(own):
        at = NOW - DAY + n * timedelta(minutes=10)
        committed(
            table,
            str(100 + n),
            at,
            (ScopeKind.SERVER, SERVER, a, MemoryUse.RECALLED),
            (ScopeKind.SERVER, SERVER, memory_id, MemoryUse.RECALLED),
        )
    return a, own


class Killed(BaseException):
    """The janitor's Lambda stopped (a timeout): nothing after it runs, no handler catches it."""


def test_a_run_killed_midway_is_resumed_and_no_time_goes_backwards(table, monkeypatch):
    # Given twenty records, each showing memory A (in turn order) and its own memory
    store = DynamoMemoryStore(table)
    a, own = twenty_records_showing_a_and_their_own(store, table)

    # When a first run is killed after twelve memory writes, then a bounded run and a full one
    writes, update = [0], table.update

    def killed_after_twelve(*args, **kwargs):
        if args and str(args[0].sk).startswith("M#"):
            writes[0] += 1
            if writes[0] > 12:
                raise Killed
        return update(*args, **kwargs)

    monkeypatch.setattr(table, "update", killed_after_twelve)
    with pytest.raises(Killed):
        store.fold_last_shown(NOW)
    monkeypatch.setattr(table, "update", update)
    seen = {m: last_shown(store, ScopeKind.SERVER, SERVER, m) for m in [a, *own]}
    bounded = store.fold_last_shown(NOW, at_most=5)
    rest = store.fold_last_shown(NOW)

    # Then every memory ends at its latest record, none went back from what the killed run wrote
    assert bounded.records == 5 and bounded.records + rest.records >= 20 - 6
    latest = NOW - DAY + 19 * timedelta(minutes=10)
    assert last_shown(store, ScopeKind.SERVER, SERVER, a) == latest
    for n, memory_id in enumerate(own):
        now_shown = last_shown(store, ScopeKind.SERVER, SERVER, memory_id)
        assert now_shown == NOW - DAY + n * timedelta(minutes=10)
        assert seen[memory_id] is None or seen[memory_id] <= now_shown
    assert store.fold_last_shown(NOW).records == 0


def test_the_janitor_handler_reports_the_records_it_folded(env, table):
    from kioku.entrypoints.janitor import handle

    store = DynamoMemoryStore(table)
    memory_id = saved(store, MemoryScope.server(SERVER, 1), "the club meets on Fridays")
    today = datetime.now(UTC)  # the handler's table reads records by the real clock
    committed(table, "1", today - DAY, (ScopeKind.SERVER, SERVER, memory_id, MemoryUse.RECALLED))
    report = handle({}, now=today)
    assert (report["shown_records"], report["last_shown_set"]) == (1, 1)


def test_a_turn_in_a_private_channel_is_not_folded(table):
    # (a list shows last_shown wherever it is asked from; a private channel's activity only there)
    store = DynamoMemoryStore(table)
    memory_id = saved(store, MemoryScope.server(SERVER, 1), "the club meets on Fridays")
    used = (UsedMemory(ScopeKind.SERVER, SERVER, memory_id, MemoryUse.RECALLED, None),)
    trace = TurnTrace(SERVER, "701", 1, NOW - DAY, channel_private=True, memories=used)
    table.transact_write([TurnLedger(table).op_record("message", "9", TurnOutcome(trace=trace), NOW - DAY)])
    assert store.fold_last_shown(NOW).records == 1
    assert last_shown(store, ScopeKind.SERVER, SERVER, memory_id) is None


def test_only_a_record_whose_turn_was_shown_memories_is_indexed_and_within_the_records_own_put(table):
    # (a plain turn's requests stay five: the index key is two attributes of the record it puts
    # already; ``python -m bench.turn`` measures it, recall with memories included)
    from kioku.adapters.dynamodb.keys import turn_record_key

    store = DynamoMemoryStore(table)
    memory_id = saved(store, MemoryScope.server(SERVER, 1), "the club meets on Fridays")
    committed(table, "1", NOW - DAY, (ScopeKind.SERVER, SERVER, memory_id, MemoryUse.RECALLED))
    committed(table, "2", NOW - DAY)
    committed(table, "3", NOW - DAY, (ScopeKind.SERVER, SERVER, memory_id, MemoryUse.SAVED))
    shown, plain, saved_only = (table.get(turn_record_key("message", n)) for n in "123")
    assert shown["gsi2pk"].startswith("LTMSHOWN#") and shown["gsi2sk"].endswith("#message#1")
    assert "gsi2pk" not in plain and "gsi2pk" not in saved_only
