"""The embedded model, switched on by default, through the whole stack on moto (relay's signed POST,
the FIFO queue, the turn worker, the janitor): with nothing set, memories saved before embeddings
were on get their vectors from the janitor, and a turn that cannot show every memory ranks them by
meaning too, with the same DynamoDB requests; ``EMBEDDINGS_MODEL=none`` ranks by words."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from scripts.scaling import Recorder

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope
from kioku.domain.privacy import Origin
from kioku.playground.stack import LocalStack
from kioku.playground.standins import OpenAIStandIn, completion_body
from tests.e2e.conftest import relay_post, running_stack

pytestmark = pytest.mark.e2e

GUILD = "200000000000000031"
CHANNEL = "300000000000000031"
HIKING = "Every Saturday {user} hikes up into the mountains with a tent"
"""Shares no word with the question, only its meaning; saved first, so by words (no word matches,
newest first) it is the last the budget would reach."""
UNRELATED = [
    "{user}'s car is a red Honda from 2009",
    "The wifi password changed in May",
    "{user} is allergic to peanuts",
    "The server's birthday party was moved to June",
    "{user} works as a tax accountant",
    "The quiz bot answers in French on Mondays",
    "{user} owns three cats named after planets",
    "Movie night uses the voice channel called Lounge",
    "{user} prefers tea without sugar",
    "The moderators meet on the first Sunday",
    "{user} learned to knit last winter",
    "The emoji vote ended in a tie",
    "{user} is saving for a new laptop",
    "The rules channel was rewritten in April",
    "{user} lives near the central station",
    "The book club is reading a long novel",
    "{user} broke a phone screen twice",
    "The announcements are posted at noon",
]
QUESTION = "any outdoor hobbies at the weekend?"


def seed_memories(stack: LocalStack, alice_id: str) -> None:
    """The memories of a server saved before embeddings were on: no vectors."""
    store = DynamoMemoryStore(KiokuTable(stack.resources.table_name))
    scope = MemoryScope.server(GUILD, 1)
    start = datetime.now(UTC) - timedelta(days=30)
    for age, content in enumerate([HIKING, *UNRELATED]):
        draft = MemoryDraft(
            scope=scope,
            content=content,
            author_id=alice_id,
            created_at=start + timedelta(hours=age),
            origin=Origin(GUILD, CHANNEL, private=False),
            subject_id=alice_id,
        )
        store.create(draft, limit=100)


def ask(llm: OpenAIStandIn, **env: str) -> tuple[str, Counter, dict[str, int]]:
    """The system prompt of a turn asking ``QUESTION`` over the seeded memories after a janitor run,
    the turn's DynamoDB requests, and the janitor's report."""
    from kioku.entrypoints.janitor import handle as janitor

    with running_stack(llm, TURN_RATE_LIMIT_PER_MINUTE="1000", LTM_RECALL_BUDGET_CHARS="500", **env) as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        alice = stack.discord.seed_user("alice", global_name="Alice")
        stack.discord.seed_member(GUILD, alice)
        seed_memories(stack, alice["id"])
        report = janitor({})
        turn(stack, llm, alice, "warming up")
        recorder = Recorder()
        recorder.install()
        try:
            prompt = turn(stack, llm, alice, QUESTION)
        finally:
            recorder.uninstall()
    return prompt, Counter(op for service, op, _, _ in recorder.calls if service == "dynamodb"), report


def turn(stack: LocalStack, llm: OpenAIStandIn, author: dict[str, Any], text: str) -> str:
    llm.enqueue(completion_body("Sure."))
    asked = len(llm.bodies)
    message = stack.discord.seed_message(CHANNEL, author, f"<@{stack.application_id}> {text}")
    assert relay_post(stack, message, GUILD).status_code == 202
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    (body,) = llm.bodies[asked:]
    return "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "system")


def test_with_nothing_set_the_janitor_embeds_old_memories_and_a_turn_ranks_them_by_meaning(llm, monkeypatch):
    from kioku.adapters.embedded_model import EmbeddedModel

    asked: list[str] = []
    embed = EmbeddedModel.embed
    monkeypatch.setattr(
        EmbeddedModel, "embed", lambda model, texts: asked.extend(texts) or embed(model, texts)
    )

    # Given memories saved before embeddings were on, more than a turn's 500 characters can show
    # When the janitor has run and a question shares its meaning, not its words, with one of them
    by_words, words_requests, words_report = ask(llm, EMBEDDINGS_MODEL="none")
    by_meaning, meaning_requests, meaning_report = ask(llm)

    # Then with EMBEDDINGS_MODEL=none nothing was embedded and words never reach the hiking memory
    assert words_report["vectors_written"] == 0
    assert "hikes up into the mountains" not in by_words
    # and with nothing set the janitor gave every memory its vector, and the turn recalled it
    assert meaning_report["vectors_written"] == len(UNRELATED) + 1
    assert "hikes up into the mountains" in by_meaning
    # with the same DynamoDB requests as by words, the message embedded once
    assert meaning_requests == words_requests
    assert sum(QUESTION in text for text in asked) == 1
