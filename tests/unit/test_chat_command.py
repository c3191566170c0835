"""``/chat`` on a fake command context: what it queues and what it answers, without moto."""

from __future__ import annotations

from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import InteractionContext
from kioku.domain.turn_jobs import TurnSource
from kioku.services.commands.chat import MAX_CHAT_MESSAGE_LENGTH
from kioku.services.commands.error_replies import FAILURE_TITLE, QUEUE_UNREACHABLE, Refusal
from tests.unit.command_fakes import ALICE, CHANNEL, GUILD, FakeCommandContext, answer, command, embed


def test_a_message_is_queued_as_a_turn_and_answered_later():
    # Given a fake context
    context = FakeCommandContext()
    # When Alice says hello through /chat
    reply = answer(command("chat", options={"message": "  hello  "}, token="tok"), context)
    # Then the turn is queued with her words, and Discord is told the answer comes later
    assert reply == {"type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE}
    (job,) = context.turn_queue.jobs
    assert (job.source, job.content, job.channel_id, job.guild_id) == (
        TurnSource.SLASH_COMMAND,
        "hello",
        CHANNEL,
        GUILD,
    )
    assert job.author.id == ALICE and job.interaction_token == "tok"


def test_an_empty_or_too_long_message_is_refused_and_nothing_is_queued():
    context = FakeCommandContext()
    empty = answer(command("chat", options={"message": "   "}), context)
    long = answer(command("chat", options={"message": "x" * (MAX_CHAT_MESSAGE_LENGTH + 1)}), context)
    assert embed(empty)["title"] == embed(long)["title"] == Refusal.NOT_UNDERSTOOD
    assert str(MAX_CHAT_MESSAGE_LENGTH) in embed(long)["description"]
    assert context.turn_queue.jobs == []


def test_a_group_dm_is_refused():
    context = FakeCommandContext()
    reply = answer(
        command("chat", options={"message": "hi"}, guild_id=None, context=InteractionContext.PRIVATE_CHANNEL),
        context,
    )
    assert embed(reply)["title"] == Refusal.NOT_ALLOWED
    assert context.turn_queue.jobs == []


def test_a_queue_out_of_reach_is_a_failure_on_our_side():
    context = FakeCommandContext()
    context.turn_queue.unavailable = True
    reply = answer(command("chat", options={"message": "hi"}), context)
    assert embed(reply)["title"] == FAILURE_TITLE
    assert embed(reply)["description"] == QUEUE_UNREACHABLE
