"""A server that removes kioku has its memory deleted: GUILD_DELETE through the signed relay endpoint
schedules it, GUILD_CREATE takes it back, and JanitorFunction deletes everything the server kept
once SERVER_DATA_GRACE_DAYS have passed, and nothing of any other server (moto)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.keys import counter_key, memory_key, server_removal_key
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.server_removal import ServerRemovals
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.adapters.dynamodb.turn_repository import TurnRepository
from kioku.adapters.dynamodb.webhook_store import WebhookStore
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope, ScopeKind
from kioku.domain.models import ServerConfig
from kioku.domain.personas import ChannelWebhook
from kioku.domain.privacy import Origin
from kioku.domain.turn import Outbox, TurnKey, TurnOutcome
from kioku.domain.why import MemoryUse, TurnTrace, UsedMemory
from kioku.playground.events import signed_event
from kioku.playground.functions import LambdaContext, load_handler
from kioku.services.server_removal import erase_removed_servers
from tests.integration import stm_rows

GONE, KEPT = "811111111111111111", "822222222222222222"  # the server that removes kioku, and another
GONE_CHANNELS, KEPT_CHANNEL = ("811111111111111101", "811111111111111102"), "822222222222222201"
ALICE, BOB = "733333333333333331", "733333333333333332"
REMOVED_AT = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
SAID_AT = REMOVED_AT - timedelta(days=1)
DAY = timedelta(days=1)
TURNS = {
    GONE: ("911111111111111111", "911111111111111112"),
    KEPT: ("922222222222222221", "922222222222222222"),
}
"""Per server: a turn answered there (its record, notes and reply pointers), and one left with an
outbox; the ids name no server, so ``naming`` looks for them too."""


@pytest.fixture
def relay(env, relay_keys):
    """Send a signed envelope to RelayFunction; the HTTP status."""
    handler = load_handler("relay")

    def send(event: str, data, received_at: datetime | None = None) -> int:
        envelope = {"t": event, "d": data}
        if received_at is not None:
            envelope["received_at"] = received_at.isoformat()
        return handler(signed_event(envelope, relay_keys.signing_hex), LambdaContext())["statusCode"]

    return send


def janitor(at: datetime) -> dict[str, int]:
    from kioku.entrypoints.janitor import handle

    return handle({}, now=at)


def keep_a_server(table: KiokuTable, guild: str, channels: tuple[str, ...]) -> None:
    """What a server accumulates: every channel's short-term row (Alice's lines, noted in her
    partition), a server memory by Alice about Bob (noted in both partitions), a personal memory
    about Bob said there, its configuration and a persona webhook."""
    stm, ltm = StmStore(table), DynamoMemoryStore(table)
    for channel in channels:
        stm_rows.remember(stm, guild, channel, f"lines said in {channel}", SAID_AT)
        WebhookStore(table).keep(guild, channel, ChannelWebhook(f"9{channel[1:]}", f"token-{channel}"))
    here = Origin(guild, channels[0])
    for scope, content in (
        (MemoryScope.server(guild, 1), f"the quiz of {guild} is on Fridays"),
        (MemoryScope.personal(BOB, 1), f"Bob told {guild} he likes tea"),
    ):
        draft = MemoryDraft(scope, content, ALICE, SAID_AT, origin=here, subject_id=BOB)
        assert ltm.create(draft, limit=100).created
    ConfigStore(table).save_server_config(ServerConfig(guild_id=guild))
    said_before_the_index = MemoryDraft(
        MemoryScope.personal(ALICE, 1), f"Alice told {guild} about her cat", ALICE, SAID_AT, origin=here
    )
    saved = ltm.create(said_before_the_index, limit=100)
    # as a release before the SAIDIN# index wrote it: nothing but its origin says where it was said
    table.update(memory_key(ScopeKind.PERSONAL, ALICE, saved.memory_id), "REMOVE gsi3pk")
    keep_turns(table, guild, channels[0], ltm.find(ScopeKind.PERSONAL, BOB, _bobs_id(ltm, guild)))


def _bobs_id(ltm: DynamoMemoryStore, guild: str) -> str:
    return next(m.memory_id for m in ltm.memories_of(ScopeKind.PERSONAL, BOB) if guild in m.content)


def keep_turns(table: KiokuTable, guild: str, channel: str, bobs) -> None:
    """A turn answered in ``guild`` that was shown Bob's memory (its record with the trace, a reply
    pointer per message, Bob's note, an attempt that failed first) and one whose outbox was left."""
    repository = TurnRepository(table, StmStore(table), DynamoMemoryStore(table))
    trace = TurnTrace(
        guild_id=guild,
        channel_id=channel,
        lineage=1,
        at=SAID_AT,
        channel_private=False,
        memories=(UsedMemory(ScopeKind.PERSONAL, BOB, bobs.memory_id, MemoryUse.RECALLED, BOB),),
    )
    answered, left = (TurnKey("message", turn, ALICE, SAID_AT) for turn in TURNS[guild])
    TurnLedger(table).count_failed_attempt("message", answered.turn_id, "delivery-1", SAID_AT)
    replies = (f"{answered.turn_id}1", f"{answered.turn_id}2")
    repository.commit(answered, TurnOutcome(reply_ids=replies, trace=trace), SAID_AT, None)
    outbox = Outbox(reply="hi", chunks=("hi",), quoted=(BOB,), trace=trace, claim="attempt-1")
    assert repository.keep(left, outbox, SAID_AT)


@pytest.fixture
def world(table: KiokuTable, monkeypatch) -> KiokuTable:
    # the janitor would also give these memories vectors: only the removal is compared here
    monkeypatch.setenv("EMBEDDINGS_MODEL", "none")
    keep_a_server(table, GONE, GONE_CHANNELS)
    keep_a_server(table, KEPT, (KEPT_CHANNEL,))
    said_in_dm = MemoryDraft(
        MemoryScope.personal(BOB, 1), "Bob likes green tea", ALICE, SAID_AT, subject_id=BOB
    )
    assert DynamoMemoryStore(table).create(said_in_dm, limit=100).created
    return table


def every_item(table: KiokuTable) -> list[dict]:
    items, start = [], None
    while True:
        page = table.client.scan(TableName=table.name, **({"ExclusiveStartKey": start} if start else {}))
        items += [{k: next(iter(v.values())) for k, v in item.items()} for item in page["Items"]]
        start = page.get("LastEvaluatedKey")
        if start is None:
            return items


def naming(table: KiokuTable, guild: str) -> list[dict]:
    """Every item whose key or any value names ``guild`` or one of its turns."""
    return [item for item in every_item(table) if any(name in repr(item) for name in (guild, *TURNS[guild]))]


def unrelated(table: KiokuTable) -> dict[tuple[str, str], dict]:
    """Every item that names neither the removed server (nor its turns) nor Bob's personal scope
    (whose counter and book lose the removed server's memory), nor Alice's counter, books and guards (which
    lose hers), nor the janitor's own marks (each run moves them, removal or not): what the removal
    must leave exactly as it was."""
    return {
        (item["pk"], item["sk"]): item
        for item in every_item(table)
        if not any(name in repr(item) for name in (GONE, *TURNS[GONE]))
        and item["pk"] not in (f"USER#{BOB}", "JANITOR")
        and not (item["pk"] == f"USER#{ALICE}" and item["sk"].startswith(("COUNT", "LTM#BOOK", "H#")))
    }


def bobs_memories(table: KiokuTable) -> list[str]:
    return sorted(memory.content for memory in DynamoMemoryStore(table).memories_of(ScopeKind.PERSONAL, BOB))


def test_a_removal_deletes_everything_the_server_kept_after_the_grace_and_nothing_else(world, relay):
    before = unrelated(world)
    assert len(naming(world, GONE)) >= 10
    # Given kioku removed from the server
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT) == 204
    assert world.get(server_removal_key(GONE)) is not None
    # When the janitor runs a day before the grace (30 days) ends, nothing is deleted
    assert janitor(REMOVED_AT + 29 * DAY)["server_items_deleted"] == 0
    assert len(naming(world, GONE)) >= 10
    # When it runs once the grace has passed
    report = janitor(REMOVED_AT + 30 * DAY + timedelta(minutes=1))
    # Then nothing names the server anymore: rows, memories, notes, webhooks, configuration, the mark
    assert report["servers_erased"] == 1 and report["server_items_deleted"] >= 10
    assert naming(world, GONE) == []
    # ...Bob keeps his memories said elsewhere, with his counter and book consistent
    assert bobs_memories(world) == ["Bob likes green tea", f"Bob told {KEPT} he likes tea"]
    assert world.get(counter_key(ScopeKind.PERSONAL, BOB))["n_1"] == 2
    from tests.integration.test_ltm_store import assert_books_match_memories

    assert_books_match_memories(world, ScopeKind.PERSONAL, BOB)
    # ...and Alice hers, the one said there before the SAIDIN# index existed gone too
    alices = DynamoMemoryStore(world).memories_of(ScopeKind.PERSONAL, ALICE)
    assert [memory.content for memory in alices] == [f"Alice told {KEPT} about her cat"]
    assert_books_match_memories(world, ScopeKind.PERSONAL, ALICE)
    # ...and every item of the other server, and of everyone else, is exactly as it was
    assert unrelated(world) == before
    # A second run has nothing left to do
    assert janitor(REMOVED_AT + 31 * DAY)["server_items_deleted"] == 0


def test_the_grace_is_the_configured_one(world, relay, monkeypatch):
    monkeypatch.setenv("SERVER_DATA_GRACE_DAYS", "7")
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT) == 204
    assert janitor(REMOVED_AT + 6 * DAY)["servers_erased"] == 0
    assert janitor(REMOVED_AT + 7 * DAY + timedelta(minutes=1))["servers_erased"] == 1
    assert naming(world, GONE) == []


def test_an_outage_removes_nothing(world, relay):
    janitor(REMOVED_AT)  # its other jobs done first (memories' last-shown times folded in)
    before = every_item(world)
    assert relay("GUILD_DELETE", {"id": GONE, "unavailable": True}, REMOVED_AT) == 204
    assert janitor(REMOVED_AT + 31 * DAY)["servers_erased"] == 0
    assert every_item(world) == before
    assert world.get(server_removal_key(GONE)) is None
    assert f"Bob told {GONE} he likes tea" in bobs_memories(world)


def test_being_added_back_within_the_grace_cancels_the_deletion(world, relay):
    kept = len(naming(world, GONE))
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT) == 204
    # a channel list the relay received before the removal (delivered late) cancels nothing
    listed = {"id": GONE, "channels": [{"id": c, "type": 0} for c in GONE_CHANNELS], "roles": []}
    assert relay("GUILD_CREATE", listed, REMOVED_AT - timedelta(minutes=1)) == 204
    assert world.get(server_removal_key(GONE)) is not None
    # kioku added back: the guild's GUILD_CREATE on its next session
    assert relay("GUILD_CREATE", listed, REMOVED_AT + 3 * DAY) == 204
    assert world.get(server_removal_key(GONE)) is None
    assert janitor(REMOVED_AT + 31 * DAY)["server_items_deleted"] == 0
    assert f"Bob told {GONE} he likes tea" in bobs_memories(world)
    assert len(naming(world, GONE)) == kept


def test_a_redelivered_removal_keeps_the_first_time(world, relay):
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT) == 204
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT + 20 * DAY) == 204
    assert relay("GUILD_DELETE", {"id": GONE}) == 204
    assert janitor(REMOVED_AT + 30 * DAY + timedelta(minutes=1))["servers_erased"] == 1
    assert naming(world, GONE) == []


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        "811111111111111111",
        {},
        {"id": 811111111111111111},
        {"id": "general"},
        {"id": GONE, "unavailable": "yes"},
    ],
)
def test_a_malformed_removal_is_400_and_schedules_nothing(world, relay, data):
    assert relay("GUILD_DELETE", data) == 400
    assert world.get(server_removal_key(GONE)) is None


def test_a_row_written_after_the_removal_is_kept(world, relay):
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT) == 204
    stm_rows.remember(StmStore(world), GONE, "811111111111111109", "said later", REMOVED_AT + DAY)
    report = janitor(REMOVED_AT + 31 * DAY)
    assert report["server_items_kept"] == 1 and report["servers_erased"] == 1
    assert [item["sk"] for item in naming(world, GONE) if item["pk"] == f"STM#S#{GONE}"] == [
        "C#811111111111111109#P#kioku"
    ]


def test_a_bounded_run_goes_on_where_the_last_one_stopped(world, relay):
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT) == 204
    removals, memories = ServerRemovals(world), DynamoMemoryStore(world)
    at = REMOVED_AT + 31 * DAY
    runs, remaining = 0, len(naming(world, GONE))
    while world.get(server_removal_key(GONE)) is not None:
        report = erase_removed_servers(removals, memories, at, 30 * DAY, budget=2)
        assert report.deleted <= 2
        now_remaining = len(naming(world, GONE))
        assert now_remaining <= remaining  # a run of the sweep may only read
        runs, remaining = runs + 1, now_remaining
        assert runs < 200
    assert runs >= 4 and naming(world, GONE) == []
    assert bobs_memories(world) == ["Bob likes green tea", f"Bob told {KEPT} he likes tea"]


def test_a_janitor_killed_midway_finishes_on_its_next_run(world, relay, monkeypatch):
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT) == 204
    writes, real = [], KiokuTable.transact_write

    def dies_on_the_third(self, operations):
        writes.append(1)
        if len(writes) == 3:
            raise SystemExit("killed")  # Lambda's timeout: nothing after this point runs
        real(self, operations)

    monkeypatch.setattr(KiokuTable, "transact_write", dies_on_the_third)
    with pytest.raises(SystemExit):
        janitor(REMOVED_AT + 31 * DAY)
    assert world.get(server_removal_key(GONE)) is not None
    assert naming(world, GONE)
    monkeypatch.setattr(KiokuTable, "transact_write", real)
    assert janitor(REMOVED_AT + 32 * DAY)["servers_erased"] == 1
    assert naming(world, GONE) == []
    assert world.get(counter_key(ScopeKind.PERSONAL, BOB))["n_1"] == 2


def test_a_server_added_back_midway_keeps_what_is_left(world, relay):
    assert relay("GUILD_DELETE", {"id": GONE}, REMOVED_AT) == 204
    removals, memories = ServerRemovals(world), DynamoMemoryStore(world)
    erase_removed_servers(removals, memories, REMOVED_AT + 31 * DAY, 30 * DAY, budget=2)
    listed = {"id": GONE, "channels": [{"id": c, "type": 0} for c in GONE_CHANNELS], "roles": []}
    assert relay("GUILD_CREATE", listed, REMOVED_AT + 31 * DAY) == 204
    left = naming(world, GONE)
    # a janitor that read the mark before it was taken back deletes nothing more
    from kioku.adapters.dynamodb.server_removal import ServerReadded, ServerRemoval

    with pytest.raises(ServerReadded):
        removals.erase_partitions(ServerRemoval(GONE, REMOVED_AT), budget=100)
    assert janitor(REMOVED_AT + 32 * DAY)["server_items_deleted"] == 0
    assert len(naming(world, GONE)) == len(left) > 0
