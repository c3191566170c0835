"""``/personal memories add``, ``/server memories add`` and ``Remember this`` on a fake command
context: what each queues for the worker, and what each refuses without queueing anything."""

from __future__ import annotations

from kioku.discord.interaction import Interaction, parse_interaction
from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import MessageFlag
from kioku.domain.ltm.memory import GLOBAL_LINEAGE
from kioku.domain.models import Capabilities, ServerConfig
from kioku.domain.turn_jobs import MemoryRequest, TurnSource
from kioku.playground.events import message_command
from kioku.services.commands.error_replies import Refusal
from kioku.services.commands.memory_add import BAD_DAYS, PERSONAL_OFF
from kioku.services.commands.registry import REMEMBER_THIS
from tests.unit.command_fakes import (
    ALICE,
    APPLICATION_ID,
    CHANNEL,
    GUILD,
    MANAGE_GUILD,
    FakeCommandContext,
    FakeConfigurations,
    answer,
    command,
    embed,
)

THINKING = {
    "type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE,
    "data": {"flags": MessageFlag.EPHEMERAL},
}
VIEW_CHANNEL = "1024"
MAIN_LINEAGE = ServerConfig(GUILD).main_persona.lineage_id


def test_a_personal_memory_is_queued_for_the_worker_with_its_lineage_and_days():
    context = FakeCommandContext()
    reply = answer(
        command(
            "personal",
            "memories add",
            {"content": " I like tea ", "all_personas": True, "expires_in_days": 30},
        ),
        context,
    )
    assert reply == THINKING
    (job,) = context.turn_queue.jobs
    assert (job.source, job.content, job.author.id) == (TurnSource.MEMORY, "I like tea", ALICE)
    assert job.memory == MemoryRequest(True, GLOBAL_LINEAGE, 30)


def test_personal_memories_turned_off_or_days_out_of_range_queue_nothing():
    off = FakeConfigurations(ServerConfig(GUILD, capabilities=Capabilities(personal_memories_enabled=False)))
    context = FakeCommandContext(off)
    turned_off = answer(command("personal", "memories add", {"content": "tea"}), context)
    no_days = answer(command("personal", "memories add", {"content": "tea", "expires_in_days": 0}), context)
    assert (embed(turned_off)["description"], embed(no_days)["description"]) == (PERSONAL_OFF, BAD_DAYS)
    assert context.turn_queue.jobs == []


def test_a_server_memory_needs_manage_server():
    context = FakeCommandContext()
    refused = answer(command("server", "memories add", {"content": "Movie night is Friday"}), context)
    assert embed(refused)["title"] == Refusal.NOT_ALLOWED and context.turn_queue.jobs == []

    answer(
        command("server", "memories add", {"content": "Movie night is Friday"}, permissions=MANAGE_GUILD),
        context,
    )
    (job,) = context.turn_queue.jobs
    assert job.memory == MemoryRequest(False, MAIN_LINEAGE, None, manages_server=True)


def remember(author_id: str, text: str) -> Interaction:
    said = {
        "id": "600000000000000001",
        "channel_id": CHANNEL,
        "author": {"id": author_id, "username": "someone"},
        "content": text,
        "timestamp": "2026-12-06T11:00:00+00:00",
        "attachments": [],
    }
    payload = message_command(
        APPLICATION_ID,
        REMEMBER_THIS,
        said["id"],
        target=said,
        user_id=ALICE,
        username="alice",
        permissions=VIEW_CHANNEL,
    )
    return parse_interaction(payload)


def test_remember_this_on_ones_own_message_is_a_personal_memory_and_on_anothers_a_server_one():
    context = FakeCommandContext()
    assert answer(remember(ALICE, "I play the cello"), context) == THINKING
    answer(remember("400000000000000002", "The meetup moved to Sunday"), context)
    own, other = context.turn_queue.jobs
    assert (own.content, own.memory) == (
        "I play the cello",
        MemoryRequest(True, MAIN_LINEAGE, message_id="600000000000000001"),
    )
    assert (other.content, other.memory) == (
        "The meetup moved to Sunday",
        MemoryRequest(False, MAIN_LINEAGE, message_id="600000000000000001"),
    )


def test_remember_this_on_an_empty_message_queues_nothing():
    context = FakeCommandContext()
    reply = answer(remember(ALICE, "   "), context)
    assert embed(reply)["title"] == Refusal.NOTHING_SAVED
    assert context.turn_queue.jobs == []
