"""``/personal memories list|forget|forget-all|export`` through the real interactions handler, on moto."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from kioku.adapters.dynamodb.keys import ItemKey, owner_pk
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.adapters.dynamodb.turn_repository import TurnRepository
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope, ScopeKind
from kioku.domain.ltm.statuses import UpdateStatus
from kioku.domain.models import MemoryModeration
from kioku.domain.privacy import Origin, Place, PrivacyPolicy
from kioku.domain.stm.capture import TurnCapture
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmAddress, StmLimits
from kioku.domain.turn import Outbox, TurnKey
from kioku.domain.turn_jobs import TurnJob, TurnSource
from kioku.playground.events import slash_command
from kioku.services import ltm as ltm_tools
from kioku.services import memory_control
from kioku.services.commands.personal_memories import PAGE_SIZE
from tests.conftest import APPLICATION_ID
from tests.integration.stm_rows import identity
from tests.unit import ltm_fakes as fakes

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


def fields_by_id(body: dict) -> dict[str, str]:
    return {
        field["name"].split(" ")[0][1:]: field["name"] + " " + field["value"]
        for embed in body["data"]["embeds"]
        for field in embed["fields"]
    }


def test_the_list_and_the_export_show_every_memory_about_me_naming_only_channels_i_can_see(
    interact, ltm, stm, table
):
    # Given memories about Alice: her own (one from a private channel), and Bob's: in #general,
    # in #secret (which Alice may not see), in another server
    mine = save(ltm, ALICE, "{user} likes tea", by=ALICE, where=ELSEWHERE)
    mine_secret = save(ltm, ALICE, "{user} is job hunting", by=ALICE, where=IN_SECRET)
    bobs_here = save(ltm, ALICE, "{user} owes Bob lunch", by=BOB, where=IN_GENERAL)
    bobs_secret = save(ltm, ALICE, "{user} was late again", by=BOB, where=IN_SECRET)
    bobs_elsewhere = save(ltm, ALICE, "{user} plays chess", by=BOB, where=ELSEWHERE)
    bobs_own = save(ltm, BOB, "{user} is Bob", by=BOB, where=IN_GENERAL)
    about_alice = {mine, mine_secret, bobs_here, bobs_secret, bobs_elsewhere}
    # When Alice lists them in #general, in #secret and in our DM, and exports them from #general
    in_general = fields_by_id(interact(personal("memories", "list")))
    in_secret = fields_by_id(interact(personal("memories", "list", channel=SECRET)))
    in_dm = fields_by_id(interact(personal("memories", "list", guild=None, channel="310000000000000009")))
    exported = memory_control.export(
        ALICE, ltm, stm, NOW, place=Place(GUILD, GENERAL), ledger=TurnLedger(table)
    )
    records = {record["id"]: record for record in exported["long_term_memories"]}
    # Then the lists and the export hold every memory about her, wherever it was said, and no other
    for shown_ids in (in_general, in_secret, in_dm, records):
        assert set(shown_ids) == about_alice and bobs_own not in shown_ids
    assert "You were late again" in in_general[bobs_secret] and records[bobs_secret]["text"] == (
        "{user} was late again"
    )
    # and #secret is named to her only where she can tell she sees it: where she said something
    # herself, or when she asks from there; elsewhere it is "a channel you can't see"
    assert f"<#{SECRET}>" in in_general[mine_secret] and f"<#{SECRET}>" in in_secret[bobs_secret]
    for hidden in (in_general[bobs_secret], in_dm[bobs_secret]):
        assert "in a channel you can't see" in hidden and SECRET not in hidden
    assert records[bobs_secret]["saved_in"] == {"server_id": GUILD, "channel": "a channel you can't see"}
    assert SECRET not in json.dumps(records[bobs_secret])
    assert records[mine_secret]["saved_in"]["channel_id"] == SECRET
    assert records[bobs_here]["saved_in"]["channel_id"] == GENERAL
    assert f"<#{GENERAL}>" in in_dm[bobs_here] and "<t:" in in_general[mine]
    assert f"<@{BOB}>" in in_general[bobs_here] and "You like tea" in in_general[mine]


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
        row = identity(channel, guild_id=server)
        address = row.address if server else StmAddress.of(None, ALICE, channel, "kioku")
        row = type(row)(address=address, lineage_id=1, private=False)
        # captured as a turn of Alice's: in a server's shared row, with the note of where her lines are
        stm.capture_turn(TurnCapture(row, None, tuple(lines), ALICE, NOW, LIMITS))


def test_forget_all_asks_first_then_deletes_everything_and_reports_the_counts(interact, ltm, stm):
    # Given what kioku keeps about Alice
    alices_footprint(ltm, stm)
    command = personal("memories", "forget-all")
    # When she asks, then confirms
    asked = interact(command)
    confirm = next(b for b in buttons(asked) if b["label"] == "Forget everything")
    assert ltm.memories_of(ScopeKind.PERSONAL, ALICE)  # asking deletes nothing
    assert "server memories that name you too" in shown(asked)
    assert (
        "Memories you saved that are not about you (about someone else, or server memories that do not "
        "name you) stay, without your name"
    ) in shown(asked)
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

    def racing(kind, owner, **options):
        nonlocal listings
        listings += 1
        found = real(kind, owner, **options)
        if listings == 1:
            save(ltm, ALICE, "{user} just said this", by=BOB, where=IN_GENERAL)
        return found

    ltm.memories_of = racing
    # When forget-all runs
    report = memory_control.forget_all(ALICE, ltm, stm, ledger=TurnLedger(table))
    # Then the racing memory is gone too, and counted
    ltm.memories_of = real
    assert ltm.memories_of(ScopeKind.PERSONAL, ALICE) == [] and report.memories == 2


def save_server_memory(store: DynamoMemoryStore, text: str, *, by=fakes.ALICE, reviewed: bool = False) -> str:
    """A server memory saved by the model's tool in a turn of ``by`` (``reviewed``: on a server that
    reviews memories, so it waits as pending)."""
    turn = fakes.make_turn(user=by)
    if reviewed:
        turn = replace(turn, config=replace(turn.config, memory_moderation=MemoryModeration.APPROVAL))
    result = ltm_tools.create_long_term_memory(
        {"memory_content": text, "memory_scope": "server_wide"},
        turn,
        store=store,
        members=fakes.members(None, fakes.member_lookup),
        settings=fakes.settings(),
        speaker_manages_server=lambda: False,
    )
    assert "memory_id" in result.data, result
    return result.data["memory_id"]


def test_forget_all_deletes_the_server_memories_that_name_me_and_unnames_those_i_only_saved(ltm, stm, table):
    # Given server memories Alice's turns saved: two that write {user} for her (one awaiting
    # review), one that does not name her; and one about Bob
    about_her = save_server_memory(ltm, "{user} runs the Friday quiz")
    pending = save_server_memory(ltm, "{user} wants a quiz channel", reviewed=True)
    rules = save_server_memory(ltm, "No spoilers before Monday")
    bobs = save_server_memory(ltm, "{user} hosts movie night", by=fakes.BOB)
    # When Alice forgets everything
    report = memory_control.forget_all(fakes.ALICE.user_id, ltm, stm, ledger=TurnLedger(table))
    # Then those about her are gone, pending or not; the one she only saved stays without her name
    kept = {memory.memory_id: memory for memory in ltm.memories_of(ScopeKind.SERVER, fakes.SERVER)}
    assert about_her not in kept and pending not in kept
    assert set(kept) == {rules, bobs} and (report.memories, report.unnamed) == (2, 1)
    assert (kept[rules].author_id, kept[rules].content) == ("", "No spoilers before Monday")
    assert kept[bobs].author_id == fakes.BOB.user_id
    # and the server's next turn recalls nothing about her, nor lets her change what she saved
    recalled = ltm.recall(
        fakes.SERVER, 1, [], place=Place(fakes.SERVER, fakes.CHANNEL), policy=PrivacyPolicy(fakes.SERVER)
    )
    assert {memory.memory_id for memory in recalled.server} == {rules, bobs}
    assert memory_control.forget_all(fakes.ALICE.user_id, ltm, stm, ledger=TurnLedger(table)).nothing


def stored_outside_the_partition_of(user_id: str, table) -> list[dict]:
    """Every item of the table, but those in ``user_id``'s own partition, that holds their id."""
    items = boto3.client("dynamodb").scan(TableName=table.name)["Items"]
    return [item for item in items if user_id in json.dumps(item) and item["pk"]["S"] != f"USER#{user_id}"]


def test_forget_all_unlinks_the_personal_memories_i_saved_about_someone_else(interact, ltm, stm, table):
    # Given a memory about Bob that Alice saved (issue 26, item 9: Victor's about Ben)
    about_bob = save(ltm, BOB, "{user} is allergic to nuts", by=ALICE, where=IN_GENERAL)
    assert stored_outside_the_partition_of(ALICE, table)  # the memory, its book entry, its guard
    # When Alice forgets everything
    report = memory_control.forget_all(ALICE, ltm, stm, ledger=TurnLedger(table))
    # Then Bob keeps it, saved by someone who asked to be forgotten, recalled where it was
    listed = fields_by_id(interact(personal("memories", "list", user=BOB)))[about_bob]
    assert "allergic to nuts" in listed and "saved by someone who asked to be forgotten" in listed
    assert report.unnamed == 1
    recalled = ltm.recall(GUILD, 1, [BOB], place=Place(GUILD, GENERAL), policy=PrivacyPolicy(GUILD))
    assert [memory.memory_id for memory in recalled.personal[BOB]] == [about_bob]
    # and nothing outside her own partition keeps her id: not the memory, its book entry or its guard
    assert stored_outside_the_partition_of(ALICE, table) == []
    # while Bob can still forget it, and the same fact said again is saved as usual
    assert save(ltm, BOB, "{user} is allergic to nuts", by=ALICE, where=IN_GENERAL) != about_bob
    forgotten = interact(personal("memories", "forget", user=BOB, memory_id=int(about_bob)))
    assert "Forgotten" in forgotten["data"]["content"]
    assert memory_control.forget_all(ALICE, ltm, stm, ledger=TurnLedger(table)).unnamed == 1


def test_forget_deletes_a_listed_server_memory_about_me_and_no_other(interact, ltm):
    about_her = save_server_memory(ltm, "{user} runs the Friday quiz")
    rules = save_server_memory(ltm, "No spoilers before Monday")
    alice = {"user": fakes.ALICE.user_id, "guild": fakes.SERVER, "channel": fakes.CHANNEL}
    listed = fields_by_id(interact(personal("memories", "list", **alice)))
    assert set(listed) == {about_her} and "server memory" in listed[about_her]
    refused = interact(personal("memories", "forget", memory_id=int(rules), **alice))
    assert f"I keep no memory #{rules} about you." in shown(refused)
    forgotten = interact(personal("memories", "forget", memory_id=int(about_her), **alice))
    assert "Forgotten" in forgotten["data"]["content"]
    assert [m.memory_id for m in ltm.memories_of(ScopeKind.SERVER, fakes.SERVER)] == [rules]


def test_the_export_holds_the_server_memories_about_me_and_those_i_saved(ltm, stm, table):
    about_her = save_server_memory(ltm, "{user} runs the Friday quiz")
    pending = save_server_memory(ltm, "{user} wants a quiz channel", reviewed=True)
    rules = save_server_memory(ltm, "No spoilers before Monday")
    save_server_memory(ltm, "{user} hosts movie night", by=fakes.BOB)
    document = memory_control.export(
        fakes.ALICE.user_id, ltm, stm, NOW, place=Place(fakes.SERVER, fakes.CHANNEL), ledger=TurnLedger(table)
    )
    about = {record["id"]: record for record in document["long_term_memories"]}
    assert set(about) == {about_her, pending}
    assert about[about_her]["text"] == "Alice runs the Friday quiz" and about[pending]["status"] == "pending"
    assert [record["id"] for record in document["server_memories_you_saved"]] == [rules]


def test_the_export_lists_the_personal_memories_i_saved_about_someone_else_without_their_text(
    ltm, stm, table
):
    # Given memories about Bob that Alice saved (issue 26, item 8: Victor's about Ben), one in a
    # private channel, one that Bob forgets, one that Bob rewrites, and one Bob saved himself
    kept = save(ltm, BOB, "{user} is allergic to nuts", by=ALICE, where=IN_GENERAL)
    in_secret = save(ltm, BOB, "{user} is moving to Oslo", by=ALICE, where=IN_SECRET, lineage=2)
    forgotten = save(ltm, BOB, "{user} owes Alice lunch", by=ALICE, where=IN_GENERAL)
    rewritten = save(ltm, BOB, "{user} plays chess badly", by=ALICE, where=IN_GENERAL)
    save(ltm, BOB, "{user} is Bob", by=BOB, where=IN_GENERAL)
    memory_control.forget_memory_about(BOB, forgotten, ltm)
    bobs_words = ltm.find(ScopeKind.PERSONAL, BOB, rewritten)
    ltm.replace_content(bobs_words, "{user} plays chess well", NOW, author_id=BOB)

    def exported() -> list[dict]:
        return memory_control.export(
            ALICE, ltm, stm, NOW, place=Place(OTHER_GUILD, ELSEWHERE.channel_id), ledger=TurnLedger(table)
        )["personal_memories_you_saved_about_others"]

    # When Alice exports what is kept about her, from another server
    (about_bob,) = exported()
    # Then the memories she saved about Bob that are still hers are listed: whom, where, when, which
    # persona; not one Bob forgot or rewrote, and never their text (it is Bob's memory)
    assert about_bob["about"] == BOB
    records = {record["id"]: record for record in about_bob["memories"]}
    assert set(records) == {kept, in_secret}
    assert records[kept] == {
        "id": kept,
        "status": "active",
        "persona_lineage": 1,
        "saved_at": NOW.isoformat(),
        "updated_at": NOW.isoformat(),
        "saved_in": {"server_id": GUILD, "channel_id": GENERAL, "private_channel": False},
    }
    assert records[in_secret]["saved_in"]["channel_id"] == SECRET  # where she said it herself
    document = json.dumps(exported())
    for text in ("allergic", "Oslo", "lunch", "chess", "is Bob"):
        assert text not in document
    # and once she forgets everything, nothing of it is left to list
    memory_control.forget_all(ALICE, ltm, stm, ledger=TurnLedger(table))
    assert exported() == []


def test_forget_all_leaves_no_note_naming_me_with_those_who_saved_memories_about_me(ltm, stm, table):
    # Given a memory about Bob that Alice saved: her partition notes that she saved one about him
    save(ltm, BOB, "{user} is allergic to nuts", by=ALICE, where=IN_GENERAL)
    # When Bob forgets everything
    memory_control.forget_all(BOB, ltm, stm, ledger=TurnLedger(table))
    # Then nothing outside his partition keeps his id, and Alice's export no longer names him
    assert stored_outside_the_partition_of(BOB, table) == []
    document = memory_control.export(
        ALICE, ltm, stm, NOW, place=Place(GUILD, GENERAL), ledger=TurnLedger(table)
    )
    assert document["personal_memories_you_saved_about_others"] == []


def test_the_export_holds_the_replies_still_waiting_to_be_posted_to_me(ltm, stm, table):
    # Given a turn of Alice's whose reply Discord refused: her message and the answer wait in its
    # outbox (up to 16 days), and a turn of Bob's whose notice shows a memory about her
    turns = TurnRepository(table, stm, ltm)
    said = CrudeMessage("Alice", ALICE, CrudeRole.USER, "my locker code is 4471", NOW, "700000000000000001")
    answer = CrudeMessage("kioku", "kioku", CrudeRole.ASSISTANT, "Noted: 4471.", NOW, "")
    mine = TurnKey("message", "700000000000000001", ALICE, NOW - timedelta(seconds=5))
    kept = Outbox(reply="Noted: 4471.", chunks=("Noted: 4471.",), lines=(said, answer))
    assert turns.keep(mine, kept, NOW)
    bobs = TurnKey("message", "700000000000000002", BOB, NOW - timedelta(seconds=5))
    notice = {"title": "Memory saved", "description": "Bob's private note"}
    assert turns.keep(bobs, Outbox(reply="ok", chunks=("ok",), notices=(notice,), quoted=(ALICE,)), NOW)
    # When Alice exports what is kept about her
    document = memory_control.export(
        ALICE, ltm, stm, NOW, place=Place(GUILD, GENERAL), ledger=TurnLedger(table)
    )
    # Then her waiting turn is there, her words and the answer; of Bob's only that it quotes her
    waiting = document["replies_waiting_to_be_posted"]
    own = next(record for record in waiting if record.get("turn_id") == mine.turn_id)
    assert own["reply"] == "Noted: 4471."
    assert [m["text"] for m in own["messages"]] == ["my locker code is 4471", "Noted: 4471."]
    assert own["kept_until"] is not None
    others = [record for record in waiting if record is not own]
    assert others == [
        {"kept_until": others[0]["kept_until"], "a_reply_to_someone_else_shows_a_memory_about_you": True}
    ]
    assert "Bob's private note" not in json.dumps(document)


# -- export ---------------------------------------------------------------------------------------------


def test_export_answers_thinking_ephemerally_and_queues_the_job(interact, resources):
    body = interact(personal("memories", "export"))
    assert body == {"type": 5, "data": {"flags": 64}}
    (sent,) = boto3.client("sqs").receive_message(QueueUrl=resources.turn_queue_url)["Messages"]
    job = TurnJob.from_json(sent["Body"])
    assert (job.source, job.author.id, job.interaction_token) == (
        TurnSource.EXPORT,
        ALICE,
        "interaction-token",
    )


def test_the_export_holds_my_memories_my_dm_row_and_only_my_lines(ltm, stm, table):
    alices_footprint(ltm, stm)
    document = memory_control.export(
        ALICE, ltm, stm, NOW + timedelta(minutes=1), place=Place(GUILD, GENERAL), ledger=TurnLedger(table)
    )
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


def test_one_memory_is_counted_as_one_memory_and_reads_as_your(interact, ltm):
    save(ltm, ALICE, "{user}'s favourite colour is green", by=ALICE, where=IN_GENERAL)

    body = interact(personal("memories", "list"))

    embed = body["data"]["embeds"][0]
    assert embed["description"].startswith("1 memory · page 1 of 1.")
    assert [field["value"] for field in embed["fields"]] == ["Your favourite colour is green"]


# -- saved by others about you ------------------------------------------------------------------------


def test_a_memory_someone_else_saved_about_me_has_a_forget_button_only_i_may_use_after_a_warning(
    interact, ltm
):
    from tests.integration.test_server_memories_commands import run as server_run

    # Given a server memory Bob saved about Alice, and one Alice saved herself
    draft = MemoryDraft(
        MemoryScope.server(GUILD, 1), "Alice owes Bob lunch", BOB, NOW, origin=IN_GENERAL, subject_id=ALICE
    )
    bobs = ltm.create(draft, limit=100).memory_id
    mine = save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    command = personal("memories", "list")
    listed = interact(command)
    forget_buttons = [b for b in buttons(listed) if b["label"].startswith("Forget #")]
    # Then the list names the section and offers a Forget button for Bob's memory alone
    assert "Saved by others about you: 1 memory" in shown(listed)
    assert sorted(b["label"] for b in forget_buttons) == sorted([f"Forget #{bobs}", f"Forget #{mine}"])
    forget_buttons = [b for b in forget_buttons if b["label"] == f"Forget #{bobs}"]
    # When Bob clicks it, nothing is forgotten
    refused = interact(click(command, forget_buttons[0]["custom_id"], user=BOB))
    assert "someone else" in shown(refused)
    assert ltm.find(ScopeKind.SERVER, GUILD, bobs) is not None
    # When Alice clicks it, she is warned first: one click deletes nothing, Cancel neither
    asked = interact(click(command, forget_buttons[0]["custom_id"]))
    assert asked["type"] == 7 and "managers see only how many" in shown(asked)
    assert ltm.find(ScopeKind.SERVER, GUILD, bobs) is not None
    confirm, cancel = buttons(asked)
    assert interact(click(command, cancel["custom_id"]))["type"] == 7
    assert interact(click(command, confirm["custom_id"], user=BOB)) and ltm.find(
        ScopeKind.SERVER, GUILD, bobs
    )
    # and once she confirms, it is forgotten
    done = interact(click(command, confirm["custom_id"]))
    assert done["type"] == 7 and f"Forgotten: memory #{bobs}" in shown(done)
    assert ltm.find(ScopeKind.SERVER, GUILD, bobs) is None
    # and a manager's list counts that a subject removed one: never which, nor what it said
    managers = json.dumps(interact(server_run("list")))
    assert "1 memory was removed in the last 30 days by the person they were about" in managers
    assert bobs not in managers and "lunch" not in managers


def test_my_own_memory_has_a_forget_button_that_asks_first(interact, ltm):
    mine = save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    command = personal("memories", "list")
    (forget_button,) = [b for b in buttons(interact(command)) if b["label"] == f"Forget #{mine}"]
    asked = interact(click(command, forget_button["custom_id"]))
    assert asked["type"] == 7 and "cannot be undone" in shown(asked) and "Someone else" not in shown(asked)
    assert ltm.find(ScopeKind.PERSONAL, ALICE, mine) is not None
    confirm, _ = buttons(asked)
    done = interact(click(command, confirm["custom_id"]))
    assert f"Forgotten: memory #{mine}" in shown(done)
    assert ltm.find(ScopeKind.PERSONAL, ALICE, mine) is None


def test_a_memorys_use_counts_only_turns_in_places_i_may_be_told_of_now_and_keeps_no_channel_name(
    interact, ltm, stm, table
):
    from kioku.adapters.dynamodb.config_store import ConfigStore
    from kioku.adapters.dynamodb.keys import shown_note_range
    from kioku.adapters.dynamodb.turn_traces import commit_parts
    from kioku.domain.models import ServerConfig
    from kioku.domain.privacy import PrivacyMode
    from kioku.domain.why import MemoryUse, TurnTrace, UsedMemory

    # Given Alice's memory, shown to a turn in #general (public) and to three in #secret (private)
    mine = save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    used = (UsedMemory(ScopeKind.PERSONAL, ALICE, mine, MemoryUse.RECALLED, ALICE),)
    for n, channel in enumerate((GENERAL, SECRET, SECRET, SECRET)):
        at = NOW - timedelta(hours=4 - n)
        trace = TurnTrace(
            GUILD,
            channel,
            1,
            at,
            channel_name=f"name-{channel}",
            channel_private=channel == SECRET,
            memories=used,
        )
        key = TurnKey(TurnSource.MESSAGE.value, f"50000000000000000{n}", BOB, at)
        table.transact_write(commit_parts(table, key, trace, (f"60000000000000000{n}",), 2_000_000_000))

    def use_of_mine(channel: str) -> str:
        return fields_by_id(interact(personal("memories", "list", channel=channel)))[mine]

    # Then asked from #general, her list counts the one turn there, never #secret's activity or times
    assert "used in 1 turn of the last 16 days, last in <#300000000000000001>" in use_of_mine(GENERAL)
    # and asked from #secret, all four, the last there
    assert f"used in 4 turns of the last 16 days, last in <#{SECRET}>" in use_of_mine(SECRET)
    # When a manager makes #general private, its turn is not counted from elsewhere either
    config = ConfigStore(table)
    config.save_server_config(
        replace(ServerConfig(guild_id=GUILD), channel_privacy={GENERAL: PrivacyMode.PRIVATE})
    )
    assert "used in" not in use_of_mine("300000000000000077")
    # and her export holds the notes she may be told of, the others counted; no note keeps a channel's name
    exported = memory_control.export(
        ALICE,
        ltm,
        stm,
        NOW,
        place=Place(GUILD, SECRET),
        ledger=TurnLedger(table),
        policy_of=lambda guild: config.get_server_config(guild).privacy,
    )
    assert [(n["channel_id"], n["memories"]) for n in exported["turns_shown_your_memories"]] == [
        (SECRET, [f"p#{ALICE}#{mine}"])
    ] * 3
    assert exported["turns_shown_your_memories_elsewhere"] == 1
    notes = table.query_range_all(shown_note_range(ALICE))
    assert len(notes) == 4 and "name-" not in json.dumps(notes, default=str)


@pytest.mark.parametrize("captured", [False, True], ids=["no capture", "with its capture"])
def test_a_turn_committed_after_someone_it_names_forgot_everything_keeps_nothing_of_them(
    ltm, stm, table, captured
):
    from kioku.adapters.dynamodb.forgetting import mark_forgotten
    from kioku.adapters.dynamodb.keys import shown_note_range
    from kioku.domain.forgetting import Said
    from kioku.domain.turn import TurnOutcome
    from kioku.domain.why import MemoryUse, TurnTrace, UsedMemory

    # Given Alice's turn, shown a memory about her and one about Bob, whose commit is retried late
    sent = NOW - timedelta(days=2)
    used = tuple(
        UsedMemory(ScopeKind.PERSONAL, person, memory_id, MemoryUse.RECALLED, person)
        for person, memory_id in ((ALICE, "11111"), (BOB, "22222"))
    )
    trace = TurnTrace(GUILD, GENERAL, 1, sent, channel_private=False, memories=used)
    key = TurnKey(TurnSource.MESSAGE.value, "500000000000000009", ALICE, sent)
    capture = None
    if captured:
        line = CrudeMessage("Alice", ALICE, CrudeRole.USER, "hello", sent, "500000000000000009")
        capture = TurnCapture(
            identity(GENERAL, guild_id=GUILD), None, (line,), ALICE, NOW, LIMITS, Said(ALICE, sent)
        )
    # When Bob forgets everything after her message, before the commit
    mark_forgotten(table, BOB, sent + timedelta(hours=1))
    TurnRepository(table, stm, ltm).commit(
        key, TurnOutcome(("600000000000000009",), trace=trace), NOW, capture
    )

    # Then the turn is recorded, its trace keeps Alice's part and nothing of Bob's, and only she has a note
    kept = TurnLedger(table).traces.of_reply("600000000000000009")
    assert kept is not None and {m.about for m in kept.memories} == {ALICE}
    assert len(table.query_range_all(shown_note_range(ALICE))) == 1
    assert table.query_range_all(shown_note_range(BOB)) == []


def test_memory_id_autocompletes_with_the_memories_about_me_only(interact, ltm):
    from kioku.playground.events import autocomplete_typing

    mine = save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    bobs = save(ltm, BOB, "{user} likes coffee", by=BOB, where=IN_GENERAL)

    offered = interact(autocomplete_typing(personal("memories", "forget", memory_id=1), "memory_id", ""))
    choices = offered["data"]["choices"]
    assert offered["type"] == 8 and [c["value"] for c in choices] == [int(mine)]
    assert choices[0]["name"] == f"#{mine} · You like tea" and bobs not in str(choices)


def test_the_list_shows_until_when_a_memory_lasts_and_leaves_out_those_expired(interact, ltm, stm, table):
    def expiring(text: str, expires_at: datetime) -> str:
        draft = MemoryDraft(
            MemoryScope.personal(ALICE, 1),
            text,
            ALICE,
            NOW,
            origin=IN_GENERAL,
            subject_id=ALICE,
            expires_at=expires_at,
        )
        return ltm.create(draft, limit=100).memory_id

    lasting = save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    plan = expiring("{user} is moving house", datetime(2036, 5, 17, 9, 0, tzinfo=UTC))
    expired = expiring("{user} is in Tokyo this week", NOW - timedelta(days=1))

    listed = fields_by_id(interact(personal("memories", "list")))

    assert set(listed) == {lasting, plan} and expired not in listed
    assert "until 2036-05-17" in listed[plan] and "until" not in listed[lasting]
    exported = memory_control.export(
        ALICE, ltm, stm, NOW, place=Place(GUILD, GENERAL), ledger=TurnLedger(table)
    )
    records = {record["id"]: record for record in exported["long_term_memories"]}
    assert records[plan]["expires_at"] == "2036-05-17T09:00:00+00:00" and "expires_at" not in records[lasting]


def test_an_expired_memory_is_gone_for_every_command_until_forget_all_erases_it(interact, ltm, stm, table):
    # Given a memory about Alice that expired yesterday, not yet deleted by the janitor
    draft = MemoryDraft(
        MemoryScope.personal(ALICE, 1),
        "{user} is in Tokyo this week",
        ALICE,
        NOW - timedelta(days=8),
        origin=IN_GENERAL,
        subject_id=ALICE,
        expires_at=table.clock() - timedelta(days=1),
    )
    expired = ltm.create(draft, limit=100).memory_id
    lasting = save(ltm, ALICE, "{user} likes tea", by=ALICE, where=IN_GENERAL)
    answers = [
        interact(personal("memories", "list")),
        interact(personal("memories", "edit", memory_id=int(expired), content="{user} is in Kyoto")),
        interact(personal("memories", "history", memory_id=int(expired))),
        interact(personal("memories", "forget", memory_id=int(expired))),
    ]
    from kioku.playground.events import autocomplete_typing

    offered = interact(autocomplete_typing(personal("memories", "forget", memory_id=1), "memory_id", ""))
    exported = memory_control.export(
        ALICE, ltm, stm, NOW, place=Place(GUILD, GENERAL), ledger=TurnLedger(table)
    )

    # Then no list, edit, history, forget, autocomplete or export shows or changes it
    assert all("Tokyo" not in json.dumps(answer) and "Kyoto" not in json.dumps(answer) for answer in answers)
    assert set(fields_by_id(answers[0])) == {lasting}
    assert all(f"I keep no memory #{expired} about you" in shown(answer) for answer in answers[1:])
    assert [c["value"] for c in offered["data"]["choices"]] == [int(lasting)]
    assert [record["id"] for record in exported["long_term_memories"]] == [lasting]
    kept = ltm.find(ScopeKind.PERSONAL, ALICE, expired, expired_too=True)
    assert ltm.find(ScopeKind.PERSONAL, ALICE, expired) is None
    assert kept is not None and (kept.content, kept.changes) == ("{user} is in Tokyo this week", 0)
    # and forget-all, which erases what the janitor has not deleted yet, takes it too
    report = memory_control.forget_all(ALICE, ltm, stm, ledger=TurnLedger(table))
    assert report.memories == 2 and ltm.memories_of(ScopeKind.PERSONAL, ALICE, expired_too=True) == []


def test_the_models_update_of_an_expired_memory_is_not_found_and_changes_nothing(ltm, table):
    memory_id = save_server_memory(ltm, "a bake sale today")
    table.update(
        ItemKey(owner_pk(ScopeKind.SERVER, fakes.SERVER), f"M#{memory_id}"),
        "SET memory_expires_at = :past",
        values={":past": int((table.clock() - timedelta(days=1)).timestamp())},
    )
    result = ltm_tools.update_long_term_memory(
        {"memory_id": int(memory_id), "memory_content": "a bake sale tomorrow"},
        fakes.make_turn(),
        store=ltm,
        members=fakes.members(None, fakes.member_lookup),
        settings=fakes.settings(),
    )
    assert result.status == UpdateStatus.NOT_FOUND
    kept = ltm.find(ScopeKind.SERVER, fakes.SERVER, memory_id, expired_too=True)
    assert kept is not None and (kept.content, kept.changes) == ("a bake sale today", 0)


def test_my_list_least_used_first_counts_both_folded_times_and_the_notes_and_marks_the_long_unused(
    interact, ltm, table
):
    from kioku.adapters.dynamodb.turn_traces import commit_parts
    from kioku.domain.why import MemoryUse, TurnTrace, UsedMemory

    # Given three memories: one last shown 100 days ago (folded), one noted an hour ago, one never shown
    old, noted, never = (save(ltm, ALICE, f"{{user}} fact {n}", by=ALICE, where=IN_GENERAL) for n in range(3))
    table.update(
        ItemKey(owner_pk(ScopeKind.PERSONAL, ALICE), f"M#{old}"),
        "SET last_shown = :at",
        values={":at": (NOW - timedelta(days=100)).isoformat(timespec="seconds")},
    )
    at = NOW - timedelta(hours=1)
    used = (UsedMemory(ScopeKind.PERSONAL, ALICE, noted, MemoryUse.RECALLED, ALICE),)
    trace = TurnTrace(GUILD, GENERAL, 1, at, channel_private=False, memories=used)
    key = TurnKey(TurnSource.MESSAGE.value, "500000000000000009", ALICE, at)
    table.transact_write(commit_parts(table, key, trace, (), 2_000_000_000))

    # When Alice lists them least used first
    body = interact(personal("memories", "list", order="least_used"))

    # Then the never shown one comes first, then the one shown longest ago, marked; the noted one last
    names = [field["name"] for field in body["data"]["embeds"][0]["fields"]]
    assert [name.split(" ")[0][1:] for name in names] == [never, old, noted]
    assert ["unused 90+ days" in name for name in names] == [False, True, False]
    assert "least used first" in body["data"]["embeds"][0]["description"]
    newest = interact(personal("memories", "list", order="recent"))
    assert "unused" not in shown(newest)
