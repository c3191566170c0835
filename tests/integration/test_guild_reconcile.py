"""GUILD_CREATE through RelayFunction: what lost channel events left behind is repaired.

Discord sends GUILD_CREATE for every guild on each new gateway session, with the guild's channels,
active threads and roles; RelayFunction stamps every stored short-term row of the guild as that list
describes its channel, and deletes the rows of channels that are gone.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from bench.memory import faster_moto

from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.webhook_store import WebhookStore
from kioku.domain.addressing import MAX_GUILD_BODY_BYTES, MAX_RELAY_BODY_BYTES
from kioku.domain.channel_events import parse_guild_create
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmLimits
from kioku.playground.events import signed_event
from kioku.playground.functions import LambdaContext, load_handler
from kioku.services.channel_events import reconcile_guild
from tests.integration import stm_rows
from tests.integration.stm_rows import identity, item_size_bytes
from tests.unit.stm_builders import USER

GUILD = "900"
GENERAL, SECRET, THREAD, PRIVATE_THREAD, OTHER, GONE, CATEGORY = (
    "100",
    "200",
    "250",
    "260",
    "300",
    "400",
    "500",
)
VIEW_CHANNEL = 1 << 10
EVERYONE_VIEWS = {"id": GUILD, "permissions": str(VIEW_CHANNEL | 1 << 11)}
NOW = datetime.now(UTC)


def channel(channel_id: str, *, deny: int = 0, allow: int = 0, kind: int = 0, parent: str | None = None):
    """A channel as GUILD_CREATE lists it (no guild_id on its channels)."""
    overwrites = [{"id": GUILD, "type": 0, "allow": str(allow), "deny": str(deny)}] if deny or allow else []
    data = {"id": channel_id, "type": kind, "name": f"chan-{channel_id}", "permission_overwrites": overwrites}
    return data | ({"parent_id": parent} if parent else {})


def thread(thread_id: str, parent: str, *, kind: int = 11):
    return {
        "id": thread_id,
        "guild_id": GUILD,
        "parent_id": parent,
        "type": kind,
        "name": f"thread-{thread_id}",
    }


def guild(channels, threads=(), roles=(EVERYONE_VIEWS,)) -> dict:
    return {
        "id": GUILD,
        "name": "g",
        "channels": list(channels),
        "threads": list(threads),
        "roles": list(roles),
    }


@pytest.fixture
def store(table) -> StmStore:
    return StmStore(table)


@pytest.fixture
def guild_create(env, relay_keys):
    """Send a signed GUILD_CREATE envelope to RelayFunction; the HTTP status."""
    handler = load_handler("relay")

    def send(data, received_at: datetime | str | None = None) -> int:
        envelope = {"t": "GUILD_CREATE", "d": data}
        if received_at is not None:
            envelope["received_at"] = received_at if isinstance(received_at, str) else received_at.isoformat()
        return handler(signed_event(envelope, relay_keys.signing_hex), LambdaContext())["statusCode"]

    return send


def remember(store: StmStore, channel_id: str, text: str, **identity_fields) -> None:
    identity_fields.setdefault("described_at", NOW - timedelta(minutes=5))
    stm_rows.remember(store, GUILD, channel_id, text, NOW, **identity_fields)


def seen_from(store: StmStore, channel_id: str, parent: str | None = None) -> str:
    return stm_rows.seen_from(store, GUILD, channel_id, NOW, parent)


def row(store: StmStore, channel_id: str, persona: str = "kioku"):
    return store.get(StmAddress.of(GUILD, USER, channel_id, persona))


def test_a_channel_whose_update_was_lost_is_made_private_by_the_next_guild_create(guild_create, store):
    # Given a public channel and its thread whose memory #other recalls
    remember(store, SECRET, "the vault code is okapi")
    remember(store, THREAD, "the thread agrees", parent=SECRET)
    assert "okapi" in seen_from(store, OTHER) and "thread agrees" in seen_from(store, OTHER)
    # When the channel turned private while the relay was down (its CHANNEL_UPDATE never arrived)
    # and the relay's new session brings the guild's channel list
    status = guild_create(
        guild(
            [channel(GENERAL), channel(SECRET, deny=VIEW_CHANNEL), channel(OTHER)], [thread(THREAD, SECRET)]
        )
    )
    # Then both are stamped private, and #other recalls neither, while the thread still sees its channel
    assert status == 204
    assert row(store, SECRET).private is True and row(store, THREAD).private is True
    assert seen_from(store, OTHER) == ""
    assert "okapi" in seen_from(store, THREAD, parent=SECRET)


def test_the_persona_webhooks_of_channels_gone_while_nobody_listened_are_deleted(guild_create, table):
    from kioku.domain.personas import ChannelWebhook

    # Given the persona webhooks kioku keeps for two channels
    webhooks = WebhookStore(table)
    for channel_id in (GENERAL, GONE):
        webhooks.keep(GUILD, channel_id, ChannelWebhook(f"7{channel_id}", "tok-en"))
    # When the next session's channel list no longer holds one (deleted while the relay was down)
    assert guild_create(guild([channel(GENERAL), channel(OTHER)])) == 204
    # Then its webhook item (and token) is deleted; the listed channel's stays
    assert webhooks.get(GUILD, GONE) is None and webhooks.get(GUILD, GENERAL) is not None


def test_the_everyone_roles_permissions_decide_a_channel_without_an_overwrite(guild_create, store):
    # Given memory of two channels without an @everyone overwrite, stamped public
    remember(store, SECRET, "hidden by the role")
    remember(store, GENERAL, "shown by the role")
    # When @everyone lost View Channel server-wide (only the roles in GUILD_CREATE tell)
    hidden = {"id": GUILD, "permissions": "0"}
    assert guild_create(guild([channel(GENERAL, allow=VIEW_CHANNEL), channel(SECRET)], roles=[hidden])) == 204
    # Then the channel the role hides is private, the one its overwrite opens stays public
    assert row(store, SECRET).private is True and row(store, GENERAL).private is False
    assert "hidden by the role" not in seen_from(store, OTHER)
    assert "shown by the role" in seen_from(store, OTHER)


@pytest.mark.parametrize("without", ["the role", "any roles"])
def test_without_the_everyone_role_a_channel_no_overwrite_decides_is_private(guild_create, store, without):
    remember(store, SECRET, "cannot tell")
    remember(store, GENERAL, "opened by its overwrite")
    data = guild([channel(SECRET), channel(GENERAL, allow=VIEW_CHANNEL)], roles=[])
    assert (
        guild_create(data if without == "the role" else {k: v for k, v in data.items() if k != "roles"})
        == 204
    )
    assert row(store, SECRET).private is True and row(store, GENERAL).private is False
    assert seen_from(store, OTHER) == "opened by its overwrite"


def test_a_channel_made_public_while_its_update_was_lost_is_recalled_again(guild_create, store):
    remember(store, SECRET, "plans for the party", private=True)
    assert seen_from(store, OTHER) == ""
    assert guild_create(guild([channel(SECRET), channel(OTHER)])) == 204
    assert row(store, SECRET).private is False
    assert "party" in seen_from(store, OTHER)


def test_a_channel_deleted_while_nobody_listened_is_forgotten_with_its_threads(guild_create, store):
    # Given memory of a channel, its thread, and a channel in a category
    remember(store, GONE, "in the deleted channel")
    remember(store, THREAD, "in its thread", parent=GONE)
    remember(store, GENERAL, "in general")
    remember(store, SECRET, "in a categorised channel", parent=CATEGORY)
    # When the list no longer holds the channel (its CHANNEL_DELETE was lost), nor its thread
    listed = [channel(CATEGORY, kind=4), channel(GENERAL), channel(SECRET, parent=CATEGORY)]
    assert guild_create(guild(listed)) == 204
    # Then its and its thread's memory are gone; the others stay
    assert row(store, GONE) is None and row(store, THREAD) is None
    assert row(store, GENERAL) is not None and row(store, SECRET) is not None
    assert "deleted channel" not in seen_from(store, OTHER) and "its thread" not in seen_from(store, OTHER)


def test_a_channel_in_a_deleted_category_is_not_taken_for_a_thread(guild_create, store):
    # Given an older row of a channel that still names its category as its parent
    remember(store, SECRET, "in a categorised channel", parent=CATEGORY)
    # When the channel is gone but its category is listed
    assert guild_create(guild([channel(CATEGORY, kind=4), channel(GENERAL)])) == 204
    # Then it is deleted, not kept as an archived thread of the category
    assert row(store, SECRET) is None


def test_an_archived_thread_is_kept_and_follows_its_channel_only_toward_private(guild_create, store):
    # Given threads of two channels, not listed because they are archived (GUILD_CREATE lists active ones)
    remember(store, THREAD, "archived under secret", parent=SECRET)
    remember(store, "251", "archived under general", parent=GENERAL)
    remember(store, "252", "archived, private until described", parent=GENERAL, private=True)
    # When SECRET turned private and GENERAL is public
    assert guild_create(guild([channel(GENERAL), channel(SECRET, deny=VIEW_CHANNEL)])) == 204
    # Then no thread is deleted; SECRET's thread is private; GENERAL's keep their stamps
    assert row(store, THREAD).private is True
    assert row(store, "251").private is False and row(store, "252").private is True
    assert seen_from(store, OTHER) == "archived under general"


def test_a_private_thread_stays_private_listed_or_not(guild_create, store):
    remember(store, PRIVATE_THREAD, "just us two", parent=GENERAL, private=True, private_thread=True)
    remember(store, "261", "us too", parent=GENERAL, private=True, private_thread=True)
    status = guild_create(
        guild([channel(GENERAL, allow=VIEW_CHANNEL)], [thread(PRIVATE_THREAD, GENERAL, kind=12)])
    )
    assert status == 204
    assert row(store, PRIVATE_THREAD).private is True and row(store, "261").private is True
    assert seen_from(store, OTHER) == ""


def test_a_thread_listed_without_its_channel_is_private(guild_create, store):
    remember(store, THREAD, "parent unknown", parent=SECRET)
    assert guild_create(guild([channel(GENERAL)], [thread(THREAD, SECRET)])) == 204
    assert row(store, THREAD).private is True


def test_a_list_older_than_a_turns_look_never_stamps_its_privacy_back(guild_create, store):
    # Given a turn that described the channel as private after the relay received the list
    received = NOW - timedelta(minutes=1)
    remember(store, SECRET, "made private a moment ago", private=True, described_at=NOW)
    remember(store, GONE, "created after the list was taken", described_at=NOW)
    # When the list (which still shows the channel public, and not the newer one) arrives late
    assert guild_create(guild([channel(SECRET)]), received_at=received) == 204
    # Then the newer looks stand
    assert row(store, SECRET).private is True and row(store, GONE) is not None


def test_a_capture_that_looked_before_the_list_cannot_make_the_channel_public_again(guild_create, store):
    remember(store, SECRET, "first", described_at=NOW - timedelta(minutes=5))
    received = NOW - timedelta(minutes=1)
    assert guild_create(guild([channel(SECRET, deny=VIEW_CHANNEL)]), received_at=received) == 204
    # When a turn that looked (public) before the list was received captures afterwards
    stale = identity(SECRET, guild_id=GUILD, private=False, described_at=received - timedelta(seconds=1))
    said = CrudeMessage("Alice", USER, CrudeRole.USER, "second", NOW, "x2")
    store.capture(stale, row(store, SECRET), [said], NOW, StmLimits())
    # Then the list's private stamp stands
    assert row(store, SECRET).private is True
    assert seen_from(store, OTHER) == ""


def test_a_received_at_in_the_future_counts_as_now(guild_create, store):
    remember(store, SECRET, "secret", described_at=NOW - timedelta(minutes=5))
    future = datetime.now(UTC) + timedelta(days=1)
    assert guild_create(guild([channel(SECRET, deny=VIEW_CHANNEL)]), received_at=future) == 204
    assert row(store, SECRET).described_at < future - timedelta(hours=1)
    # so a turn that looks a minute from now may describe the channel again
    later = identity(
        SECRET, guild_id=GUILD, private=False, described_at=datetime.now(UTC) + timedelta(minutes=1)
    )
    store.capture(
        later,
        row(store, SECRET),
        [CrudeMessage("Alice", USER, CrudeRole.USER, "t", NOW, "x3")],
        NOW,
        StmLimits(),
    )
    assert row(store, SECRET).private is False


def test_an_unavailable_guild_changes_nothing(guild_create, store):
    remember(store, SECRET, "kept")
    before = row(store, SECRET)
    assert guild_create({"id": GUILD, "unavailable": True}) == 204
    assert row(store, SECRET) == before


def test_every_persona_and_only_this_guilds_rows_are_reconciled(guild_create, store):
    remember(store, SECRET, "kioku's row")
    remember(store, SECRET, "another persona's row", persona="p2")
    stm_rows.remember(
        store, "901", SECRET, "another guild's row", NOW, described_at=NOW - timedelta(minutes=5)
    )
    stm_rows.remember(store, None, "dm-channel", "a DM row", NOW, described_at=NOW - timedelta(minutes=5))
    assert guild_create(guild([channel(SECRET, deny=VIEW_CHANNEL)])) == 204
    assert row(store, SECRET).private is True and row(store, SECRET, "p2").private is True
    assert store.get(StmAddress.of("901", USER, SECRET, "kioku")).private is False
    assert store.get(StmAddress.of(None, USER, "dm-channel", "kioku")) is not None


def _hiding(data: dict) -> dict:
    """``data`` with SECRET listed as hidden from @everyone."""
    return data | {"channels": [*data.get("channels", []), channel(SECRET, deny=VIEW_CHANNEL)]}


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d | {"id": "not-a-snowflake"},
        lambda d: d | {"roles": {"id": GUILD}},
        lambda d: d | {"channels": "all of them"},
        lambda d: d | {"roles": [{"id": GUILD, "permissions": 1024}]},
        lambda d: d | {"channels": [*d["channels"], {"id": OTHER, "type": "0"}]},
        lambda d: (
            d
            | {
                "channels": [
                    *d["channels"],
                    channel(OTHER) | {"permission_overwrites": [{"id": GUILD, "deny": 1024}]},
                ]
            }
        ),
        lambda d: d | {"threads": [{"id": THREAD, "type": 0, "parent_id": SECRET}]},
        lambda d: d | {"channels": [*d["channels"], *({"id": str(n), "type": 0} for n in range(1, 1001))]},
        lambda d: [d],
    ],
)
def test_a_malformed_guild_create_is_400_and_changes_nothing(guild_create, store, damage):
    # Given a public channel's memory and the list that would make it private
    remember(store, SECRET, "kept")
    before, well_formed = row(store, SECRET), _hiding(guild([channel(GENERAL)]))
    # When the list arrives damaged, it is refused and changes nothing
    assert guild_create(damage(well_formed)) == 400
    assert row(store, SECRET) == before
    # while the list itself is applied
    assert guild_create(well_formed) == 204
    assert row(store, SECRET).private is True


@pytest.mark.parametrize("received_at", ["yesterday", "2026-12-01T10:00:00"])
def test_a_received_at_that_is_not_an_rfc3339_time_with_offset_is_400(guild_create, store, received_at):
    remember(store, SECRET, "kept")
    assert guild_create(guild([]), received_at=received_at) == 400
    assert row(store, SECRET) is not None
    assert guild_create(guild([]), received_at=NOW) == 204
    assert row(store, SECRET) is None


def test_only_a_guild_create_may_be_larger_than_a_message(guild_create, env, relay_keys):
    handler = load_handler("relay")
    padding = "x" * 90
    big_update = {
        "t": "CHANNEL_UPDATE",
        "d": channel(SECRET) | {"topic": padding * (MAX_RELAY_BODY_BYTES // 90)},
    }
    assert handler(signed_event(big_update, relay_keys.signing_hex), LambdaContext())["statusCode"] == 400
    many = guild([channel(str(1000 + n)) | {"topic": padding} for n in range(900)])
    assert MAX_RELAY_BODY_BYTES < len(json.dumps({"t": "GUILD_CREATE", "d": many})) < MAX_GUILD_BODY_BYTES
    assert guild_create(many) == 204
    too_big = {"t": "GUILD_CREATE", "d": guild([]) | {"pad": "x" * MAX_GUILD_BODY_BYTES}}
    assert handler(signed_event(too_big, relay_keys.signing_hex), LambdaContext())["statusCode"] == 400


def test_a_guild_holding_more_rows_than_the_cap_is_reconciled_up_to_it(store, table):
    for n in range(5):
        remember(store, str(1000 + n), f"row {n}")
    snapshot = parse_guild_create(guild([channel(str(1000 + n), deny=VIEW_CHANNEL) for n in range(5)]))
    report = reconcile_guild(snapshot, store, WebhookStore(table), max_rows=3)
    assert (report.rows, report.restamped, report.complete) == (3, 3, False)
    assert sum(row(store, str(1000 + n)).private is True for n in range(5)) == 3


@pytest.fixture
def faster_moto_here():
    """moto as the memory bench runs it (``bench.memory.faster_moto``, the same answers): moto's own
    copies the whole table for each of the 500 captures' transactions (28.6 -> 23.3 s of CPU)."""
    with faster_moto():
        yield


def test_a_500_channel_guild_costs_a_few_query_pages_and_one_write_per_changed_row(
    faster_moto_here, store, table, monkeypatch
):
    # Given 500 channels' memory, each row with ten raw lines (about 4 KB) and its channel's name
    channels = [str(10_000 + n) for n in range(500)]
    for channel_id in channels:
        lines = [
            CrudeMessage("Alice", USER, CrudeRole.USER, f"line {i} " + "words " * 30, NOW, f"{channel_id}{i}")
            for i in range(10)
        ]
        store.capture(
            replace(
                identity(channel_id, guild_id=GUILD, described_at=NOW - timedelta(minutes=5)),
                channel_name=f"chan-{channel_id}",
            ),
            None,
            lines,
            NOW,
            StmLimits(),
        )
    stored = sum(
        item_size_bytes(item)
        for item in table.query("#pk = :pk", names={"#pk": "pk"}, values={":pk": f"STM#S#{GUILD}"})[0]
    )
    calls: list[str] = []
    real_call = table._call
    monkeypatch.setattr(
        table, "_call", lambda operation, **params: calls.append(operation) or real_call(operation, **params)
    )

    # When the list shows every second channel turned private
    listed = [channel(c, deny=VIEW_CHANNEL if n % 2 else 0) for n, c in enumerate(channels)]
    report = reconcile_guild(parse_guild_create(guild(listed)), store, WebhookStore(table))

    # Then the guild's rows were read by Query alone (1 MB pages: no scan, no read per row; one Query
    # more for the server's persona webhooks), and only the 250 rows whose privacy changed were written
    pages = -(-stored // (1024 * 1024))
    assert (report.rows, report.restamped, report.deleted) == (500, 250, 0)
    assert "scan" not in calls and calls.count("query") <= pages + 2
    assert calls.count("update_item") == 250 and len(calls) == calls.count("query") + 250
    print(
        f"500 rows, {stored} bytes stored, {pages} page(s) of 1 MB, {calls.count('query')} Query, 250 UpdateItem"
    )
