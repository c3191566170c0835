"""Two workers on a turn whose tool deletes or rewrites a memory (issue 38, ``write_announced``).

The change and the notice it owes are kept in one transaction; that outbox is the attempt's claim
on the turn, as the answer's and a save's notices are: a twin whose keep finds another attempt's
claim makes no change and gives the turn back. The harness of ``test_turn_crash_points``:
TurnFunction in child processes, one killed at a chosen request, the redelivery to a fresh one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import ScopeKind
from kioku.playground.stack import LocalStack
from kioku.playground.standins import RecordedRequest, completion_body
from tests.e2e.crash_harness import Containers, CrashWorld, Fault, crash_world, twin_of
from tests.e2e.test_turn_crash_points import (
    ANSWER,
    PARAGRAPHS,
    SAVE,
    _is_commit,
    _table_items,
    memory_guards,
    new_channel_and_person,
    queue_message,
)
from tests.e2e.test_turn_crash_points import dead_letters as all_dead_letters

pytestmark = pytest.mark.e2e

FIRST_ROUND: list[dict[str, Any]] = [completion_body(tool_calls=[SAVE])]
"""What the model asks for before any tool answered: the test of the moment sets it."""


def script(body: dict[str, Any]) -> dict[str, Any]:
    """The first round runs ``FIRST_ROUND``'s tool; once a tool has answered, the model replies in
    three chunks."""
    if body["messages"][-1]["role"] == "tool":
        return completion_body(ANSWER)
    return FIRST_ROUND[0]


@pytest.fixture(scope="module")
def running() -> Iterator[CrashWorld]:
    with crash_world(script) as world:
        yield world


@pytest.fixture
def world(running: CrashWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[CrashWorld]:
    FIRST_ROUND[:] = [completion_body(tool_calls=[SAVE])]
    yield running.entered(monkeypatch)
    FIRST_ROUND[:] = [completion_body(tool_calls=[SAVE])]


@pytest.fixture
def twin(running: CrashWorld) -> Iterator[Containers]:
    with twin_of(running) as containers:
        yield containers


def bot_posts(stack: LocalStack, channel: str) -> list[dict[str, Any]]:
    return [m for m in stack.discord.channel_messages(channel) if m["author"]["id"] == stack.application_id]


def outboxes(stack: LocalStack, person: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        i
        for i in _table_items(stack)
        if i["sk"]["S"].startswith("OUTBOX#") and i["pk"]["S"] == f"USER#{person['id']}"
    ]


def dead_letters(stack: LocalStack, channel: str) -> list[dict[str, Any]]:
    return [m for m in all_dead_letters(stack) if m["Attributes"]["MessageGroupId"] == channel]


def change(memory_id: str, content: str) -> dict[str, Any]:
    """The model deleting (``content`` blank) or rewriting Alice's memory ``memory_id``."""
    arguments = {"memory_id": memory_id, "memory_content": content, "target_user": "Alice"}
    return completion_body(tool_calls=[("update_long_term_memory", arguments)])


def is_change(request: RecordedRequest) -> bool:
    """The tool's change to a memory, with the outbox keeping its notice (one transaction)."""
    body = request.raw_body
    return (
        request.path == "TransactWriteItems"
        and b"OUTBOX#" in body
        and b"LTM#" in body
        and not _is_commit(request)
    )


CHANGES = [("", "Memory forgotten", None), ("{user} loves matcha", "Memory updated", "{user} loves matcha")]


@pytest.mark.parametrize(("content", "title", "left"), CHANGES, ids=["delete", "rewrite"])
def test_a_twin_whose_change_is_announced_holds_the_turn_and_its_notice_is_posted_once(
    world, twin, content, title, left
):
    stack, harness = world.stack, world.harness
    channel, alice = new_channel_and_person(stack)
    store = DynamoMemoryStore(KiokuTable(stack.resources.table_name))

    # Given Alice's memory, saved by an earlier turn
    queue_message(stack, channel, alice)
    assert harness.deliver() == ["done"]
    (memory,) = store.memories_of(ScopeKind.PERSONAL, alice["id"])
    posted_before = len(bot_posts(stack, channel))
    FIRST_ROUND[:] = [change(memory.memory_id, content)]
    trigger = queue_message(stack, channel, alice)
    twin_outcomes: list[str] = []

    def twin_changes_then_dies() -> None:
        # a twin takes the same job, makes the change with its notice, and is killed right after
        harness.chaos.arm(Fault("the twin's change", "dynamodb", is_change, "kill", "after"))
        assert harness.last_event is not None
        twin_outcomes.append(harness._run_child(harness.last_event, containers=twin, chaos=harness.chaos)[0])

    # When the first worker is about to make the same change, the twin makes it first and dies
    outcomes = harness.deliver(
        Fault("the change", "dynamodb", is_change, "meanwhile", "before", meanwhile=twin_changes_then_dies)
    )

    # Then the twin's outbox held the turn: the first worker gave it back, and the redelivery took
    # the outbox over; the answer once, replying to Alice, then the notice once
    posted = bot_posts(stack, channel)[posted_before:]
    assert [embed["title"] for m in posted for embed in m["embeds"]] == [title]
    assert [m["content"] for m in posted] == [*PARAGRAPHS, ""]
    assert posted[0]["message_reference"]["message_id"] == trigger["id"]
    assert twin_outcomes == ["killed"] and outcomes == ["failed", "done"], (twin_outcomes, outcomes)
    # the change made once: the memory gone, or saying the new text with one version of history
    memories = store.memories_of(ScopeKind.PERSONAL, alice["id"])
    assert [m.content for m in memories] == ([left] if left else [])
    assert [len(m.history) for m in memories] == ([1] if left else [])
    assert len(memory_guards(stack, alice)) == (1 if left else 0)
    assert outboxes(stack, alice) == [] and dead_letters(stack, channel) == []
