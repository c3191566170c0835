"""``/help stm`` on a fake command context: the guide, the server's own settings in it, nothing written."""

from __future__ import annotations

from kioku.services.commands.error_replies import Refusal
from tests.unit.command_fakes import FakeCommandContext, answer, command, embed


def test_the_stm_guide_is_answered_and_nothing_is_written():
    context = FakeCommandContext()
    reply = answer(command("help", "stm"), context)
    assert embed(reply)["title"] == "Short-term memory: what you can customise"
    assert context.config_store.saves == 0 and context.turn_queue.jobs == []


def test_an_unknown_topic_is_not_understood():
    reply = answer(command("help", "everything"), FakeCommandContext())
    assert embed(reply)["title"] == Refusal.NOT_UNDERSTOOD
