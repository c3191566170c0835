"""Edits and history over the real path: memories saved by turns through the relay, the queue and
TurnFunction; ``/personal memories edit|history`` and ``/server memories edit|history`` through
the interactions endpoint, signed as Discord signs them; the model's ``update_long_term_memory``;
"Why this answer?" on a reply older than an edit."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import ScopeKind
from kioku.playground.events import slash_command
from kioku.playground.standins import completion_body
from tests.e2e.conftest import GENERAL, GUILD, signed_post
from tests.e2e.test_why_answer_e2e import person, save, turn, why

pytestmark = pytest.mark.e2e

MANAGE_GUILD: Final = str(1 << 5)
DAY: Final = timedelta(days=1)


def command(stack, asker: dict, group: str, subcommand: str, permissions: str = "0", **options: Any) -> dict:
    """``asker`` runs ``/<group> memories <subcommand>`` in #general: the answer (always ephemeral)."""
    payload = slash_command(
        stack.application_id,
        group,
        f"memories {subcommand}",
        options,
        guild_id=GUILD,
        channel_id=GENERAL,
        user_id=asker["id"],
        global_name=asker.get("global_name"),
        interaction_id=stack.discord.new_id(),
        permissions=permissions,
    )
    response = signed_post(stack, "interactions", json.dumps(payload).encode(), stack.signing_key)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["type"] == 4 and answer["data"]["flags"] == 64
    return answer["data"]


def text_of(answer: dict) -> str:
    return json.dumps(answer, ensure_ascii=False)


def store_of(stack) -> DynamoMemoryStore:
    return DynamoMemoryStore(KiokuTable(stack.resources.table_name))


def alices_memory(stack, llm, alice: dict) -> str:
    llm.enqueue(save("{user} lives in Porto", "target_user", target_user="Alice"), completion_body("Noted."))
    turn(stack, GENERAL, alice, "I live in Porto")
    (memory,) = store_of(stack).memories_of(ScopeKind.PERSONAL, alice["id"])
    return memory.memory_id


def test_a_person_edits_a_memory_about_them_and_reads_its_history_and_recall_shows_the_new_text(stack, llm):
    alice, bob = person(stack, "alice"), person(stack, "bob")
    memory_id = alices_memory(stack, llm, alice)

    # When Alice corrects it
    edited = command(
        stack, alice, "personal", "edit", memory_id=int(memory_id), content="{user} lives in Lisbon"
    )

    # Then she is told, the memory says the new text, and its history the old one, changed by her
    assert edited["embeds"][0]["title"] == f"Edited memory #{memory_id}"
    assert "You live in Lisbon" in text_of(edited)
    memory = store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id)
    assert memory.content == "{user} lives in Lisbon"
    assert [(v.content, v.changed_by) for v in memory.history] == [("{user} lives in Porto", alice["id"])]
    history = command(stack, alice, "personal", "history", memory_id=int(memory_id))
    assert history["embeds"][0]["title"] == f"History of memory #{memory_id}"
    assert "Changed 1 time." in text_of(history)
    assert "You live in Porto" in text_of(history) and "You live in Lisbon" in text_of(history)
    assert f"changed by <@{alice['id']}>" in text_of(history)

    # and her next turn's model is shown the new text only
    llm.enqueue(completion_body("Lisbon it is."))
    turn(stack, GENERAL, alice, "where do I live?")
    prompt = json.dumps(llm.bodies[-1]["messages"])
    assert "lives in Lisbon" in prompt and "lives in Porto" not in prompt

    # and Bob may neither edit it nor read its history: told there is no such memory, nothing changed
    refused = command(
        stack, bob, "personal", "edit", memory_id=int(memory_id), content="{user} lives in Oslo"
    )
    assert refused["embeds"][0]["title"] == "Nothing was changed" and "Lisbon" not in text_of(refused)
    assert "Porto" not in text_of(command(stack, bob, "personal", "history", memory_id=int(memory_id)))
    assert (
        store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id).content == "{user} lives in Lisbon"
    )


@pytest.mark.parametrize(
    ("content", "says"),
    [("   ", "empty"), ("x" * 1001, "1001 characters; the limit is 1000")],
)
def test_an_edit_with_an_empty_or_too_long_text_is_refused_and_changes_nothing(stack, llm, content, says):
    alice = person(stack, "alice")
    memory_id = alices_memory(stack, llm, alice)

    refused = command(stack, alice, "personal", "edit", memory_id=int(memory_id), content=content)

    assert refused["embeds"][0]["title"] == "Nothing was changed" and says in text_of(refused)
    memory = store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id)
    assert (memory.content, memory.history, memory.changes) == ("{user} lives in Porto", (), 0)


def test_a_manager_edits_a_server_memory_and_reads_its_history_and_a_member_may_not(stack, llm):
    alice, bob = person(stack, "alice"), person(stack, "bob")
    llm.enqueue(save("the book club meets on Fridays"), completion_body("Noted."))
    turn(stack, GENERAL, alice, "the book club meets on Fridays")
    (memory,) = store_of(stack).memories_of(ScopeKind.SERVER, GUILD)

    # When Bob, who does not manage the server, tries; then a manager edits it
    refused = command(stack, bob, "server", "edit", memory_id=int(memory.memory_id), content="no club")
    edited = command(
        stack,
        alice,
        "server",
        "edit",
        MANAGE_GUILD,
        memory_id=int(memory.memory_id),
        content="the book club meets on Mondays",
    )

    # Then Bob is refused and nothing changed by him; the manager's edit keeps the old text
    assert refused["embeds"][0]["title"] == "Not allowed"
    assert edited["embeds"][0]["title"] == f"Edited memory #{memory.memory_id}"
    history = command(stack, alice, "server", "history", MANAGE_GUILD, memory_id=int(memory.memory_id))
    assert "the book club meets on Fridays" in text_of(history) and "Mondays" in text_of(history)
    assert "Fridays" not in text_of(command(stack, bob, "server", "history", memory_id=int(memory.memory_id)))
    kept = store_of(stack).find(ScopeKind.SERVER, GUILD, memory.memory_id)
    assert kept.content == "the book club meets on Mondays"
    assert [v.content for v in kept.history] == ["the book club meets on Fridays"]


def test_the_models_update_keeps_history_and_why_this_answer_says_the_memory_changed_since(stack, llm):
    alice, bob = person(stack, "alice"), person(stack, "bob")
    memory_id = alices_memory(stack, llm, alice)
    llm.enqueue(completion_body("Porto, of course."))
    older = turn(stack, GENERAL, alice, "where do I live?")

    # When a turn's model rewrites the memory
    rewrite = {"memory_id": memory_id, "memory_content": "{user} lives in Braga", "target_user": "Alice"}
    llm.enqueue(
        completion_body(tool_calls=[("update_long_term_memory", rewrite)]), completion_body("Updated.")
    )
    turn(stack, GENERAL, alice, "I moved to Braga")

    # Then the text it replaced is its history, changed by Alice, whose turn it was
    memory = store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id)
    assert [(v.content, v.changed_by) for v in memory.history] == [("{user} lives in Porto", alice["id"])]

    # and "Why this answer?" on the older reply tells Alice the memory changed since, with its current
    # text only; Bob is told neither
    to_alice = text_of(why(stack, older, alice, GENERAL))
    assert "changed since, it now says: You live in Braga" in to_alice and "Porto" not in to_alice
    to_bob = text_of(why(stack, older, bob, GENERAL))
    assert "Braga" not in to_bob and "changed since" not in to_bob


def test_an_edit_changes_or_clears_the_expiry_alone_and_its_history_notes_the_old_one(stack, llm):
    alice = person(stack, "alice")
    memory_id = alices_memory(stack, llm, alice)

    # When Alice gives it 7 days without a new text, then clears it again
    before = datetime.now(UTC)
    given = command(stack, alice, "personal", "edit", memory_id=int(memory_id), expires_in_days=7)
    after = datetime.now(UTC)
    memory = store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id)
    listed = text_of(command(stack, alice, "personal", "list"))
    cleared = command(stack, alice, "personal", "edit", memory_id=int(memory_id), clear_expiry=True)

    # Then the first edit set it 7 days from then, the list said so, the text stayed
    assert (
        before + 7 * DAY <= memory.expires_at + timedelta(seconds=1) and memory.expires_at <= after + 7 * DAY
    )
    assert memory.content == "{user} lives in Porto"
    until = memory.expires_at.date().isoformat()
    assert f"Until {until}." in text_of(given) and f"until {until}" in listed
    # and the second cleared it; the history keeps both texts' expiries
    assert "It does not expire." in text_of(cleared)
    kept = store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id)
    assert kept.expires_at is None and kept.changes == 2
    assert [v.expires_at for v in kept.history] == [None, memory.expires_at]
    assert f"until {until}" in text_of(command(stack, alice, "personal", "history", memory_id=int(memory_id)))
    assert "until" not in text_of(command(stack, alice, "personal", "list"))


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({}, "Give the memory's new `content`"),
        ({"clear_expiry": False}, "Give the memory's new `content`"),
        ({"expires_in_days": 3, "clear_expiry": True}, "not both"),
        ({"expires_in_days": 0}, "expires_in_days must be from 1 to 3650"),
        ({"content": "{user} lives in Faro", "expires_in_days": 4000}, "expires_in_days must be from 1"),
    ],
)
def test_an_edit_with_nothing_to_change_or_a_bad_expiry_is_refused_and_changes_nothing(
    stack, llm, options, says
):
    alice = person(stack, "alice")
    memory_id = alices_memory(stack, llm, alice)

    refused = command(stack, alice, "personal", "edit", memory_id=int(memory_id), **options)
    server = command(stack, alice, "server", "edit", MANAGE_GUILD, memory_id=int(memory_id), **options)

    assert refused["embeds"][0]["title"] in ("Not understood", "Nothing was changed")
    assert says in text_of(refused) and says in text_of(server)
    memory = store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id)
    assert (memory.content, memory.expires_at, memory.changes) == ("{user} lives in Porto", None, 0)


def test_a_manager_gives_a_server_memory_a_new_text_and_expiry_then_clears_it(stack, llm):
    alice = person(stack, "alice")
    llm.enqueue(save("the bake sale is this weekend"), completion_body("Noted."))
    turn(stack, GENERAL, alice, "the bake sale is this weekend")
    (memory,) = store_of(stack).memories_of(ScopeKind.SERVER, GUILD)

    command(
        stack,
        alice,
        "server",
        "edit",
        MANAGE_GUILD,
        memory_id=int(memory.memory_id),
        content="the bake sale moved to next weekend",
        expires_in_days=9,
    )
    moved = store_of(stack).find(ScopeKind.SERVER, GUILD, memory.memory_id)
    listed = text_of(command(stack, alice, "server", "list", MANAGE_GUILD))
    command(stack, alice, "server", "edit", MANAGE_GUILD, memory_id=int(memory.memory_id), clear_expiry=True)

    assert moved.content == "the bake sale moved to next weekend"
    assert moved.expires_at is not None and f"until {moved.expires_at.date().isoformat()}" in listed
    kept = store_of(stack).find(ScopeKind.SERVER, GUILD, memory.memory_id)
    assert (kept.content, kept.expires_at) == ("the bake sale moved to next weekend", None)
    assert [(v.content, v.expires_at) for v in kept.history] == [
        ("the bake sale is this weekend", None),
        ("the bake sale moved to next weekend", moved.expires_at),
    ]


def test_the_models_update_sets_an_expiry_and_a_bad_one_is_a_status_that_writes_nothing(stack, llm):
    alice = person(stack, "alice")
    memory_id = alices_memory(stack, llm, alice)

    # When one turn's model sends an expiry out of range, and the next one a good one
    bad = {"memory_id": memory_id, "memory_content": "{user} lives in Porto until May", "expires_in_days": -2}
    good = {**bad, "expires_in_days": 30}
    llm.enqueue(completion_body(tool_calls=[("update_long_term_memory", bad)]), completion_body("Hm."))
    turn(stack, GENERAL, alice, "I leave Porto in May")
    refused = next(m for m in reversed(llm.bodies[-1]["messages"]) if m["role"] == "tool")
    unchanged = store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id)
    before = datetime.now(UTC)
    llm.enqueue(completion_body(tool_calls=[("update_long_term_memory", good)]), completion_body("Noted."))
    turn(stack, GENERAL, alice, "I leave Porto in May, really")

    # Then the first was told what to fix and nothing changed; the second set the expiry with the text
    assert "memory_update_failed" in refused["content"] and "expires_in_days" in refused["content"]
    assert (unchanged.content, unchanged.expires_at, unchanged.changes) == ("{user} lives in Porto", None, 0)
    memory = store_of(stack).find(ScopeKind.PERSONAL, alice["id"], memory_id)
    assert memory.content == "{user} lives in Porto until May"
    assert before + 30 * DAY - timedelta(seconds=5) <= memory.expires_at <= datetime.now(UTC) + 30 * DAY
