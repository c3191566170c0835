"""Embeddings through the whole stack (relay's signed POST, the FIFO queue on moto, the turn worker):
a saved memory keeps its vector in its book, a turn makes the same DynamoDB requests with embeddings
as without, and an embeddings endpoint that fails costs neither the turn nor the save."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from scripts.scaling import Recorder

from kioku.adapters.dynamodb.keys import book_key
from kioku.adapters.dynamodb.ltm_store import entry_attribute
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import MemoryScope
from kioku.domain.ltm.vectors import DIMENSIONS, embedded_text, quantise
from kioku.playground.stack import LocalStack
from kioku.playground.standins import (
    CannedResponse,
    EmbeddingsStandIn,
    OpenAIStandIn,
    completion_body,
    standin_embedding,
)
from tests.e2e.conftest import relay_post, running_stack

pytestmark = pytest.mark.e2e

GUILD = "200000000000000021"
CHANNEL = "300000000000000021"
PICNIC = "The picnic is on Saturday"


@pytest.fixture
def embeddings() -> Iterator[EmbeddingsStandIn]:
    with EmbeddingsStandIn() as server:
        yield server


def stack_for(llm: OpenAIStandIn, embeddings: EmbeddingsStandIn | None) -> Any:
    """With ``embeddings``, the outside endpoint; without, ``EMBEDDINGS_MODEL=none`` (words alone)."""
    env = {"TURN_RATE_LIMIT_PER_MINUTE": "1000", "EMBEDDINGS_MODEL": "none"}
    if embeddings is not None:
        env |= {"EMBEDDINGS_MODEL": "stand-in-embedding", "EMBEDDINGS_BASE_URL": embeddings.base_url}
    return running_stack(llm, **env)


def turn(stack: LocalStack, author: dict[str, Any], text: str) -> None:
    message = stack.discord.seed_message(CHANNEL, author, f"<@{stack.application_id}> {text}")
    assert relay_post(stack, message, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]


def save_picnic(llm: OpenAIStandIn) -> None:
    llm.enqueue(
        completion_body(
            tool_calls=[
                ("create_long_term_memory", {"memory_content": PICNIC, "memory_scope": "server_wide"})
            ]
        ),
        completion_body("Noted!"),
    )


def book_entries(stack: LocalStack) -> list[dict[str, Any]]:
    table = KiokuTable(stack.resources.table_name)
    entries = []
    for shard in range(2):
        item = table.get(book_key(MemoryScope.server(GUILD, 1), shard)) or {}
        entries += [value for name, value in item.items() if name.startswith(entry_attribute(""))]
    return entries


def dynamodb_requests_of_two_turns(llm: OpenAIStandIn, embeddings: EmbeddingsStandIn | None) -> Counter:
    """A save, then a plain turn, on a fresh stack: the DynamoDB operations the turns made."""
    with stack_for(llm, embeddings) as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        alice = stack.discord.seed_user("alice", global_name="Alice")
        stack.discord.seed_member(GUILD, alice)
        turn(stack, alice, "warming up")
        recorder = Recorder()
        recorder.install()
        try:
            save_picnic(llm)
            turn(stack, alice, "remember: the picnic is on saturday")
            turn(stack, alice, "when is the picnic?")
        finally:
            recorder.uninstall()
        entries = book_entries(stack)
    assert [entry["c"] for entry in entries] == [PICNIC]
    return Counter(op for service, op, _, _ in recorder.calls if service == "dynamodb")


def test_a_saved_memory_keeps_its_vector_and_turns_make_no_more_dynamodb_requests(llm, embeddings):
    # Given the same two turns (a save, a question) played without and with embeddings
    without = dynamodb_requests_of_two_turns(llm, None)
    with_embeddings = dynamodb_requests_of_two_turns(llm, embeddings)

    # Then the DynamoDB requests are the same, and the save asked the embeddings once for its text
    assert with_embeddings == without
    assert [body["input"] for body in embeddings.bodies] == [[embedded_text(PICNIC)]]


def test_the_vector_is_in_the_book_and_a_failing_endpoint_costs_neither_turn_nor_save(llm, embeddings):
    with stack_for(llm, embeddings) as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        alice = stack.discord.seed_user("alice", global_name="Alice")
        stack.discord.seed_member(GUILD, alice)

        # When a memory is saved with embeddings on
        save_picnic(llm)
        turn(stack, alice, "remember: the picnic is on saturday")
        (entry,) = book_entries(stack)
        assert bytes(entry["v"]) == quantise(standin_embedding(embedded_text(PICNIC), DIMENSIONS))

        # And when the endpoint fails, another memory is still saved (without a vector), and answered
        embeddings.answer_with(CannedResponse(503, {"error": {"message": "overloaded"}}))
        llm.enqueue(
            completion_body(
                tool_calls=[
                    (
                        "create_long_term_memory",
                        {"memory_content": "Bring lemonade", "memory_scope": "server_wide"},
                    )
                ]
            ),
            completion_body("Noted too!"),
        )
        turn(stack, alice, "remember to bring lemonade")
        entries = {entry["c"]: entry for entry in book_entries(stack)}
        assert set(entries) == {PICNIC, "Bring lemonade"} and "v" not in entries["Bring lemonade"]
        assert any("Noted too!" in m["content"] for m in stack.discord.channel_messages(CHANNEL))
