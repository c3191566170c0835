"""JanitorFunction purges idle short-term memory rows through the JanitorAge index, never a row
that resumed meanwhile, never a fresh one."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kioku.adapters.dynamodb.keys import stm_row_key
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.stm.update_tool import StmUpdate
from kioku.playground.functions import LambdaContext, load_handler
from tests.integration.stm_rows import identity
from tests.integration.test_ltm_store import SEEN_HERE, SERVER
from tests.unit.stm_builders import LIMITS, NOW

DAY = timedelta(days=1)
NO_SERVER_REMOVED = {"servers_erased": 0, "server_items_deleted": 0, "server_items_kept": 0}
NO_VECTORS = {"vectors_written": 0, "vectors_skipped": 0}
NO_EXPIRED = {"expired_found": 0, "expired_deleted": 0, "shown_records": 0, "last_shown_set": 0}


@pytest.fixture
def table(resources) -> KiokuTable:
    """The table read at these tests' time (``NOW``): a fresh row is not yet past its time."""
    return KiokuTable(resources.table_name, clock=lambda: NOW)


def write(store: StmStore, channel: str, at) -> None:
    store.write_memory(identity(channel), StmUpdate(summary=f"about {channel}"), (), at, LIMITS.retention)


def test_idle_rows_go_fresh_rows_stay_across_every_shard(env, table):
    store = StmStore(table)
    for n in range(40):
        write(store, f"old-{n}", NOW - 120 * DAY)
    for n in range(5):
        write(store, f"new-{n}", NOW - DAY)
    report = store.purge_idle(NOW - 90 * DAY, page_size=3)
    assert (report.found, report.deleted, report.kept) == (40, 40, 0)
    assert all(store.get(identity(f"old-{n}").address) is None for n in range(40))
    assert all(store.get(identity(f"new-{n}").address) is not None for n in range(5))


def test_a_row_that_resumed_after_the_index_was_read_is_kept(env, table):
    store = StmStore(table)
    write(store, "resumed", NOW - 120 * DAY)
    # the conversation resumed: the row is fresh, though the (eventually consistent) index lags
    table.update(
        stm_row_key(identity("resumed").address),
        "SET last_updated = :now, expires_at = :expires",
        values={":now": NOW.isoformat(), ":expires": int((NOW + LIMITS.retention).timestamp())},
    )
    report = store.purge_idle(NOW - 90 * DAY)
    assert (report.found, report.deleted, report.kept) == (1, 0, 1)
    assert store.get(identity("resumed").address) is not None


def test_the_janitor_uses_the_configured_retention(env, table, monkeypatch):
    from kioku.entrypoints.janitor import handle

    monkeypatch.setenv("STM_JANITOR_RETENTION_DAYS", "30")
    store = StmStore(table)
    write(store, "month-old", NOW - 45 * DAY)
    write(store, "week-old", NOW - 7 * DAY)
    assert (
        handle({}, now=NOW)
        == {"found": 1, "deleted": 1, "kept": 0} | NO_EXPIRED | NO_SERVER_REMOVED | NO_VECTORS
    )
    assert store.get(identity("month-old").address) is None
    assert store.get(identity("week-old").address) is not None


def test_the_scheduled_lambda_handler_reports_what_it_did(env, table):
    write(StmStore(table), "ancient", NOW - 3650 * DAY)
    scheduler_event = {"source": "aws.scheduler", "detail-type": "Scheduled Event", "detail": {}}
    assert (
        load_handler("janitor")(scheduler_event, LambdaContext())
        == {"found": 1, "deleted": 1, "kept": 0} | NO_EXPIRED | NO_SERVER_REMOVED | NO_VECTORS
    )


def test_the_janitor_embeds_memories_saved_without_a_vector_as_many_as_its_setting_allows(
    env, table, monkeypatch
):
    from kioku.config import get_settings
    from kioku.entrypoints.composition import forget as forget_parts
    from kioku.entrypoints.janitor import handle
    from tests.integration.test_vector_backfill import saved, vectors_recalled

    # Given three memories saved before embeddings were on
    store = DynamoMemoryStore(table)
    saved(store, 3)

    def forget() -> None:  # a new container, reading the environment anew
        get_settings.cache_clear()
        forget_parts()

    # When the janitor runs with EMBEDDINGS_MODEL=none, nothing is embedded
    monkeypatch.setenv("EMBEDDINGS_MODEL", "none")
    forget()
    assert handle({}, now=NOW)["vectors_written"] == 0
    assert set(vectors_recalled(store).values()) == {None}

    # When it runs with nothing set (the embedded model), two a run
    monkeypatch.delenv("EMBEDDINGS_MODEL")
    monkeypatch.setenv("EMBEDDINGS_BACKFILL_PER_RUN", "2")
    forget()
    assert handle({}, now=NOW)["vectors_written"] == 2
    assert handle({}, now=NOW)["vectors_written"] == 1
    assert handle({}, now=NOW)["vectors_written"] == 0

    # Then every memory has the embedded model's vector of its own text
    from kioku.adapters.embedded_model import EmbeddedModel

    model = EmbeddedModel.load()
    for memory in store.recall(SERVER, 1, [], **SEEN_HERE).server:
        (expected,) = model.embed([memory.content.replace("{user}", "they")])
        assert memory.embedding == expected
