"""``/personal memories list|forget|forget-all|export`` through the real interactions handler, on moto."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope, ScopeKind
from kioku.domain.privacy import Origin
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmLimits
from kioku.domain.turn_jobs import TurnJob, TurnSource
from kioku.playground.events import slash_command
from kioku.services import personal_memories
from kioku.services.commands.personal_memories import PAGE_SIZE
from tests.conftest import APPLICATION_ID
from tests.integration.stm_rows import identity

GUILD, OTHER_GUILD = "200000000000000001", "200000000000000002"
GENERAL, SECRET = "300000000000000001", "300000000000000003"
ALICE, BOB = "400000000000000001", "400000000000000002"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LIMITS = StmLimits()
COMPONENT = 3


def personal(
    *path: str, user: str = ALICE, guild: str | None = GUILD, channel: str = GENERAL, **options
) -> dict:
    return slash_command(
        APPLICATION_ID, "personal", " ".join(path), options, guild_id=guild, channel_id=channel, user_id=user
    )


def click(command: dict, custom_id: str, *, user: str | None = None) -> dict:
    payload = {**command, "type": COMPONENT, "data": {"custom_id": custom_id, "component_type": 2}}
    if user is not None:
        key = "member" if "member" in payload else "user"
        person = payload[key]["user"] if key == "member" else payload[key]
        payload[key] = (
            {**payload[key], "user": {**person, "id": user}} if key == "member" else {**person, "id": user}
        )
    return payload


@pytest.fixture
def ltm(table) -> DynamoMemoryStore:
    return DynamoMemoryStore(table)


@pytest.fixture
def stm(table) -> StmStore:
    return StmStore(table)


def save(ltm: DynamoMemoryStore, about: str, text: str, *, by: str, where: Origin, lineage: int = 1) -> str:
    draft = MemoryDraft(MemoryScope.personal(about, lineage), text, by, NOW, origin=where, subject_id=about)
    return ltm.create(draft, limit=100).memory_id


IN_GENERAL = Origin(GUILD, GENERAL, private=False)
IN_SECRET = Origin(GUILD, SECRET, private=True)
ELSEWHERE = Origin(OTHER_GUILD, "310000000000000001", private=False)


def shown(body: dict) -> str:
    return json.dumps(body["data"]["embeds"])


def buttons(body: dict) -> list[dict]:
    return [button for row in body["data"].get("components", []) for button in row["components"]]


# -- list ---------------------------------------------------------------------------------------------


def test_the_list_shows_what_this_context_may_show_with_who_where_and_when(interact, ltm):
    # Given memories about Alice: her own (one from a private channel), Bob's here, Bob's elsewhere
    mine = save(ltm, ALICE, "{user} likes tea", by=ALICE, where=ELSEWHERE)
    mine_secret = save(ltm, ALICE, "{user} is job hunting", by=ALICE, where=IN_SECRET)
    bobs_here = save(ltm, ALICE, "{user} owes Bob lunch", by=BOB, where=IN_GENERAL)
    bobs_secret = save(ltm, ALICE, "{user} was late again", by=BOB, where=IN_SECRET)
    bobs_elsewhere = save(ltm, ALICE, "{user} plays chess", by=BOB, where=ELSEWHERE)
    save(ltm, BOB, "{user} is Bob", by=BOB, where=IN_GENERAL)
    # When Alice lists them in #general, in #secret, and in our DM
    in_general = shown(interact(personal("memories", "list")))
    in_secret = shown(interact(personal("memories", "list", channel=SECRET)))
    in_dm = shown(interact(personal("memories", "list", guild=None, channel="310000000000000009")))
    # Then her own follow her; Bob's stay where they could be recalled; nobody else's appear
    for memory_id in (mine, mine_secret, bobs_here):
        assert f"#{memory_id}" in in_general
    assert f"#{bobs_secret}" not in in_general and f"#{bobs_secret}" in in_secret
    assert f"#{bobs_elsewhere}" not in in_general + in_secret + in_dm
    assert f"#{bobs_here}" not in in_dm and f"#{mine}" in in_dm
    assert "you likes tea" in in_general and f"<@{BOB}>" in in_general and "Bob is Bob" not in in_general
    assert f"<#{SECRET}>" in in_general and "<t:" in in_general


def test_the_list_pages_within_discords_limits(interact, ltm):
    # Given more memories than a page holds
    ids = {save(ltm, ALICE, f"{{user}} fact {n} " + "x" * 990, by=ALICE, where=IN_GENERAL) for n in range(12)}
    command = personal("memories", "list")
    first = interact(command)
    # When Alice pages through with the buttons
    pages = [first]
    while not next(b for b in buttons(pages[-1]) if b["label"] == "Next")["disabled"]:
        following = interact(
            click(command, next(b for b in buttons(pages[-1]) if b["label"] == "Next")["custom_id"])
        )
        assert following["type"] == 7  # the same message, updated
        pages.append(following)
    # Then every memory appears on exactly one page, and every page fits Discord's limits
    seen = [
        field["name"].split(" ")[0][1:] for page in pages for field in page["data"]["embeds"][0]["fields"]
    ]
    assert sorted(seen) == sorted(ids) and len(pages) == -(-12 // PAGE_SIZE)
    for page in pages:
        embed = page["data"]["embeds"][0]
        total = (
            len(embed["title"])
            + len(embed["description"])
            + sum(len(f["name"]) + len(f["value"]) for f in embed["fields"])
        )
        assert total <= 6000 and all(
            len(f["value"]) <= 1024 and len(f["name"]) <= 256 for f in embed["fields"]
        )
    assert first["data"]["flags"] == 64  # updates of an ephemeral message stay ephemeral
    assert next(b for b in buttons(first) if b["label"] == "Previous")["disabled"]


def test_someone_elses_list_button_is_refused(interact, ltm):
    for n in range(PAGE_SIZE + 1):
        save(ltm, ALICE, f"{{user}} fact {n}", by=ALICE, where=IN_GENERAL)
    command = personal("memories", "list")
    body = interact(click(command, f"personal:list:{ALICE}:1", user=BOB))
    assert body["type"] == 4 and "someone else" in shown(body)


# -- forget -------------------------------------------------------------------------------------------


def test_forget_deletes_a_memory_about_me_whoever_wrote_it(interact, ltm):
    memory_id = save(ltm, ALICE, "{user} owes Bob lunch", by=BOB, where=ELSEWHERE)
    body = interact(personal("memories", "forget", memory_id=int(memory_id)))
    assert "Forgotten" in body["data"]["content"]
    assert ltm.memories_of(ScopeKind.PERSONAL, ALICE) == []


def test_forget_refuses_alike_what_is_not_mine_and_what_does_not_exist(interact, ltm):
    bobs = save(ltm, BOB, "{user} is Bob", by=BOB, where=IN_GENERAL)
    answers = []
    for memory_id in (int(bobs), 99999):
        body = interact(personal("memories", "forget", memory_id=memory_id))
        assert f"I keep no memory #{memory_id} about you." in shown(body)
        answers.append(shown(body).replace(str(memory_id), "ID"))
    # the answer for Bob's memory reads exactly as for one that does not exist
    assert answers[0] == answers[1]
    assert len(ltm.memories_of(ScopeKind.PERSONAL, BOB)) == 1


@pytest.mark.parametrize("memory_id", ["12345", 0, -1, 10**13, True])
def test_forget_refuses_ids_that_are_not_memory_ids(interact, ltm, memory_id):
    save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    body = interact(personal("memories", "forget", memory_id=memory_id))
    assert body["data"]["flags"] == 64 and "memory_id" in shown(body)
    assert len(ltm.memories_of(ScopeKind.PERSONAL, ALICE)) == 1


# -- forget-all ----------------------------------------------------------------------------------------


def alices_footprint(ltm: DynamoMemoryStore, stm: StmStore) -> None:
    """Memories about Alice in two lineages, her DM row, and her lines in two channels' rows."""
    save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    save(ltm, ALICE, "{user} likes chess", by=BOB, where=IN_GENERAL, lineage=0)
    for channel, server in ((GENERAL, GUILD), (SECRET, GUILD), ("310000000000000009", None)):
        lines = [
            CrudeMessage("Alice", ALICE, CrudeRole.USER, f"alice in {channel}", NOW, f"{channel}-a"),
            CrudeMessage("Bob", BOB, CrudeRole.USER, f"bob in {channel}", NOW, f"{channel}-b"),
        ]
        row = identity(channel, server_id=server)
        address = row.address if server else StmAddress.of(None, ALICE, channel, "kioku")
        row = type(row)(address=address, lineage_id=1, private=False)
        notes = [stm.op_note_lines(ALICE, address, NOW, LIMITS.retention)] if server else []
        stm.capture(row, None, lines, NOW, LIMITS, also=notes)


def test_forget_all_asks_first_then_deletes_everything_and_reports_the_counts(interact, ltm, stm):
    # Given what kioku keeps about Alice
    alices_footprint(ltm, stm)
    command = personal("memories", "forget-all")
    # When she asks, then confirms
    asked = interact(command)
    confirm = next(b for b in buttons(asked) if b["label"] == "Forget everything")
    assert ltm.memories_of(ScopeKind.PERSONAL, ALICE)  # asking deletes nothing
    done = interact(click(command, confirm["custom_id"]))
    # Then everything of hers is gone and the reported counts are what was deleted
    assert done["type"] == 7 and done["data"]["components"] == []
    assert (
        "2 long-term memories" in shown(done)
        and "1 DM short-term" in shown(done)
        and "2 of your messages" in shown(done)
    )
    assert ltm.memories_of(ScopeKind.PERSONAL, ALICE) == []
    assert stm.dm_rows_of(ALICE) == []
    remaining = [
        m.user_id
        for channel in (GENERAL, SECRET)
        for m in stm.get(StmAddress.of(GUILD, "", channel, "kioku")).crude
    ]
    assert remaining == [BOB, BOB]
    # and a repeated click finds nothing left, changing nothing
    again = interact(click(command, confirm["custom_id"]))
    assert "nothing left" in shown(again)


def test_forget_all_can_be_cancelled_and_only_by_its_owner(interact, ltm, stm):
    alices_footprint(ltm, stm)
    command = personal("memories", "forget-all")
    asked = interact(command)
    confirm, cancel = (
        next(b for b in buttons(asked) if b["label"] == label) for label in ("Forget everything", "Cancel")
    )
    assert "someone else" in shown(interact(click(command, confirm["custom_id"], user=BOB)))
    assert "Nothing was forgotten" in shown(interact(click(command, cancel["custom_id"])))
    assert len(ltm.memories_of(ScopeKind.PERSONAL, ALICE)) == 2


def test_forget_all_catches_a_memory_saved_while_it_runs(ltm, stm, table):
    # Given a turn that saves a memory about Alice just after forget-all first listed hers
    save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    listings = 0
    real = ltm.memories_of

    def racing(kind, owner):
        nonlocal listings
        listings += 1
        found = real(kind, owner)
        if listings == 1:
            save(ltm, ALICE, "{user} just said this", by=BOB, where=IN_GENERAL)
        return found

    ltm.memories_of = racing
    # When forget-all runs
    report = personal_memories.forget_everything(ALICE, ltm, stm, ledger=TurnLedger(table))
    # Then the racing memory is gone too, and counted
    ltm.memories_of = real
    assert ltm.memories_of(ScopeKind.PERSONAL, ALICE) == [] and report.memories == 2


# -- export ---------------------------------------------------------------------------------------------


def test_export_answers_thinking_ephemerally_and_queues_the_job(interact, resources):
    body = interact(personal("memories", "export"))
    assert body == {"type": 5, "data": {"flags": 64}}
    (sent,) = boto3.client("sqs").receive_message(QueueUrl=resources.turn_queue_url)["Messages"]
    job = TurnJob.from_json(sent["Body"])
    assert (job.source, job.author["id"], job.interaction_token) == (
        TurnSource.EXPORT,
        ALICE,
        "interaction-token",
    )


def test_the_export_holds_my_memories_my_dm_row_and_only_my_lines(ltm, stm):
    alices_footprint(ltm, stm)
    document = personal_memories.export(ALICE, ltm, stm, NOW + timedelta(minutes=1))
    assert sorted(m["text"] for m in document["long_term_memories"]) == [
        "{user} likes chess",
        "{user} likes tea",
    ]
    assert {m["saved_by"] for m in document["long_term_memories"]} == {ALICE, BOB}
    (dm,) = document["direct_message_short_term_memory"]
    assert [m["user_id"] for m in dm["messages"]] == [ALICE, BOB]  # our DM is ours: both sides
    lines = [m for row in document["your_lines_in_server_short_term_memory"] for m in row["messages"]]
    assert sorted(m["text"] for m in lines) == [f"alice in {GENERAL}", f"alice in {SECRET}"]
    json.dumps(document)  # a JSON document
