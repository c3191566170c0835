"""Which later messages a turn of an ``always`` channel answers too (``domain/bursts.py``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kioku.discord.models import Message, parse_message
from kioku.domain.bursts import MAX_COVERED, covered_run, later_messages, up_to
from kioku.domain.models import ServerConfig
from tests.unit.test_addressing import BOT_ID, CHANNEL_ID, GUILD_ID, USER_ID, bot_author, guild_message
from tests.unit.test_personas import LUNA_ID, server

TURN_ID = "600000000000000000"
BOB = {"id": "700000000000000007", "username": "bob"}


def history(*texts: str | tuple[str, dict[str, Any]]) -> list[Message]:
    """Messages after the turn's, oldest first, as the channel's history returns them (no guild)."""
    messages = []
    for n, text in enumerate(texts, start=1):
        content, overrides = text if isinstance(text, tuple) else (text, {})
        data = guild_message(content, id=str(int(TURN_ID) + n), **overrides)
        del data["guild_id"], data["member"]
        messages.append(parse_message(data))
    return messages


def run(later: list[Message], config: ServerConfig, persona_id: str | None = None, **kw: Any) -> list[str]:
    covered = covered_run(
        later,
        guild_id=GUILD_ID,
        channel_id=CHANNEL_ID,
        author_id=USER_ID,
        persona_id=persona_id,
        config=config,
        bot_user_id=BOT_ID,
        **kw,
    )
    return [message.content for message in covered]


def always(persona_id: str = "") -> ServerConfig:
    return server(always_channels={CHANNEL_ID: persona_id})


def test_the_same_person_s_later_turns_of_the_same_persona_join_until_someone_else_s_turn():
    later = history("so", "about Kyoto", ("me too", {"author": BOB}), "and then")
    assert run(later, always()) == ["so", "about Kyoto"]


def test_a_call_to_another_persona_ends_the_run_and_its_own_persona_s_channel_answers_as_it():
    later = history("so", "Sol, what do you think?", "and then")
    assert run(later, always()) == ["so"]
    assert run(later, always(LUNA_ID), LUNA_ID) == ["so"]
    assert run(later, always(LUNA_ID)) == []  # the main persona's turn is not the channel's


def test_another_bot_s_ignored_message_passes_as_context_and_an_answered_one_ends_the_run():
    later = history("so", ("beep", {"author": bot_author()}), "and then", "more")
    assert run(later, always()) == ["so", "and then", "more"]
    assert run(later, always(), answered={later[2].id}) == ["so"]


def test_nothing_is_covered_outside_an_always_channel():
    assert run(history("so", "and then"), server()) == []
    assert run(history("so"), replace(always(), always_channels={"1" * 18: ""})) == []


def test_later_messages_stop_at_the_bot_s_word_and_at_the_bound():
    spoken = history("so", ("an answer", {"author": {"id": BOT_ID, "username": "kioku"}}), "after")
    assert [m.content for m in later_messages(list(reversed(spoken)), TURN_ID, BOT_ID)] == ["so"]
    hooked = history("so", ("Luna says", {"webhook_id": "800000000000000008"}), "after")
    assert [m.content for m in later_messages(hooked, TURN_ID, BOT_ID)] == ["so"]
    many = history(*(f"m{n}" for n in range(MAX_COVERED + 3)))
    assert len(later_messages(many, TURN_ID, BOT_ID)) == MAX_COVERED


def test_up_to_cuts_what_was_said_after_the_newest_answered():
    messages = list(reversed(history("a", "b", "c")))
    assert [m.content for m in up_to(messages, messages[1].id)] == ["b", "a"]
