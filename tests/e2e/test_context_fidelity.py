"""What the model sees, checked against the seeds (issue 11), through the relay's signed POST, the
FIFO queue on moto and the turn worker, reading the one request the stand-in model received."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kioku.adapters.dynamodb.stm_store import StmRowIdentity, StmStore, stm_row_key
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.domain.models import Persona
from kioku.domain.stm.entries import StmAddress
from kioku.domain.stm.update_tool import StmUpdate
from kioku.playground.stack import LocalStack
from kioku.playground.standins import OpenAIStandIn
from tests.e2e.conftest import relay_post, running_stack

pytestmark = pytest.mark.e2e

GUILD = "200000000000000011"
CHANNEL = "300000000000000011"
HEADER = re.compile(r"^\[(?P<speaker>[^|\]]+) \| UserID:(?P<user>\d+) \| MessageID:(?P<message>\d+)\]")


@pytest.fixture
def stack(llm: OpenAIStandIn) -> Iterator[LocalStack]:
    with running_stack(llm) as running:
        running.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        yield running


def turn(stack: LocalStack, author: dict[str, Any], text: str, **member: Any) -> dict[str, Any]:
    """``author`` addresses the bot; the relay forwards the message with the author's member object."""
    message = stack.discord.seed_message(CHANNEL, author, f"<@{stack.application_id}> {text}")
    response = relay_post(stack, message, GUILD, {"nick": None, "roles": [], **member})
    assert response.status_code == 202, response.text
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    return message


def table(stack: LocalStack) -> KiokuTable:
    return KiokuTable(stack.resources.table_name)


def row_identity() -> StmRowIdentity:
    address = StmAddress.of(GUILD, "", CHANNEL, Persona().persona_id)
    return StmRowIdentity(address=address, lineage_id=Persona().lineage_id, channel_name="general")


def write_summary(stack: LocalStack, summary: str, written_at: datetime) -> None:
    StmStore(table(stack)).write_memory(
        row_identity(), StmUpdate(summary=summary), (), written_at, timedelta(days=90)
    )


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def dialogue(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] != "system" and HEADER.match(text_of(m))]


def test_one_person_keeps_one_label_and_one_name_across_the_history_and_the_live_message(stack, llm):
    # Given Alice wrote earlier (REST history carries no member) and now writes with her nickname
    alice = stack.discord.seed_user("alice", global_name="Alice A")
    stack.discord.seed_member(GUILD, alice, nick="Ally")
    stack.discord.seed_message(CHANNEL, alice, "anyone up for chess?")

    # When her message comes through the relay with its member object
    turn(stack, alice, "I'll bring the board", nick="Ally")

    # Then both of her messages carry the same label and the same name
    turns = dialogue(llm.bodies[0])
    assert [HEADER.match(text_of(t))["speaker"] for t in turns] == ["Ally (alice)", "Ally (alice)"]
    assert {t["name"] for t in turns} == {f"Ally_{alice['id']}"}
    assert "The person who just addressed you is Ally." in llm.bodies[0]["messages"][0]["content"]


def test_a_summary_older_than_a_day_stays_in_an_active_channel(stack, llm):
    # Given a summary written three days ago, and a turn a minute ago that kept the channel active
    alice = stack.discord.seed_user("alice")
    write_summary(stack, "We are planning the chess club.", datetime.now(UTC) - timedelta(days=3))
    turn(stack, alice, "hi")

    # When the channel goes on talking
    turn(stack, alice, "what were we planning?")

    # Then the model still gets the summary, placed as fresh (in the dialogue, not anchored on top)
    messages = llm.bodies[-1]["messages"]
    block = next(i for i, m in enumerate(messages) if "We are planning the chess club." in text_of(m))
    assert messages[block - 1]["role"] != "system"


def test_the_retention_sets_the_ttl_of_the_rows_a_turn_writes(llm):
    # Given a retention longer than the old fixed 90 days
    with running_stack(llm, STM_JANITOR_RETENTION_DAYS="400") as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        alice = stack.discord.seed_user("alice")

        # When a turn is captured
        turn(stack, alice, "remember this channel")

        # Then the row expires 400 days on
        row = table(stack).get(stm_row_key(row_identity().address))
    expires = datetime.fromtimestamp(int(row["expires_at"]), UTC)
    assert abs(expires - (datetime.now(UTC) + timedelta(days=400))) < timedelta(minutes=5)
