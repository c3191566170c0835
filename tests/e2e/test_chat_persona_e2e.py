"""``/chat persona:<name>`` end to end (issue 43 item 2): the interactions endpoint queues the named
persona's turn, the worker on moto answers it through the channel's webhook under the persona's name
and says so in the deferred response; a persona the server does not have is refused ephemerally and
nothing is queued; the option autocompletes like every ``persona:``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import MessageFlag
from kioku.playground.events import autocomplete_typing, component_click, slash_command
from kioku.playground.stack import LocalStack
from kioku.playground.standins import DropConnection, completion_body
from kioku.services.persona_voice import CHAT_ANSWERED_BY, CHAT_PERSONA_REMOVED
from tests.discord_contract import checked_posts
from tests.e2e.conftest import GENERAL, GUILD
from tests.e2e.test_personas_e2e import MANAGE_GUILD, interact, manage, persona_posts, system_prompt

pytestmark = pytest.mark.e2e

LUNA_ID = "600000000000000001"
CHAT_ID, LATER_CHAT_ID = "700000000000000001", "700000000000000002"


def chat(stack: LocalStack, options: dict[str, Any], interaction_id: str = CHAT_ID) -> dict[str, Any]:
    return slash_command(
        stack.application_id,
        "chat",
        options=options,
        guild_id=GUILD,
        channel_id=GENERAL,
        user_id="400000000000000007",
        username="alice",
        interaction_id=interaction_id,
        token=f"token-{interaction_id}",
    )


def queued(stack: LocalStack) -> int:
    attributes = stack.sqs.get_queue_attributes(
        QueueUrl=stack.resources.turn_queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def test_chat_with_a_persona_is_that_personas_turn_through_the_channel_webhook(stack, llm):
    # Given Luna, an alter persona of the server
    manage(stack, "add", {"name": "Luna", "prompt": "You are {bot}, calm and nocturnal."}, LUNA_ID)
    llm.enqueue(completion_body("The moon is up."))

    # When Alice asks her through /chat persona:Luna
    deferred = interact(stack, chat(stack, {"message": "what is up tonight?", "persona": "Luna"}))
    assert deferred == {"type": ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE}
    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    # Then Luna's personality answered, through the channel's webhook under her name
    assert system_prompt(llm.bodies[0]).startswith("You are Luna, calm and nocturnal.")
    assert persona_posts(stack) == [("Luna", "The moon is up.")]
    # ...and the "thinking…" says who answers, instead of staying unanswered
    edited = stack.discord.interaction_response(f"token-{CHAT_ID}")
    assert edited["content"] == CHAT_ANSWERED_BY.format(name="Luna")
    checked_posts(stack.discord.requests)

    # When she asks the main persona by name, the answer is the plain /chat one
    llm.enqueue(completion_body("Hello from kioku."))
    interact(stack, chat(stack, {"message": "and you?", "persona": "kioku"}, LATER_CHAT_ID))
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    assert stack.discord.interaction_response(f"token-{LATER_CHAT_ID}")["content"] == "Hello from kioku."
    assert len(persona_posts(stack)) == 1


def test_chat_with_an_unknown_or_removed_persona_is_refused_and_nothing_is_queued(stack, llm):
    manage(stack, "add", {"name": "Luna", "prompt": "x"}, LUNA_ID)
    asked = manage(stack, "remove", {"persona": "Luna"})
    confirm = asked["data"]["components"][0]["components"][0]["custom_id"]
    remover = slash_command(
        stack.application_id, "persona", "remove", guild_id=GUILD, permissions=MANAGE_GUILD
    )
    interact(stack, component_click(remover, confirm))

    for name in ("Luna", "Nobody"):
        refused = interact(stack, chat(stack, {"message": "hi", "persona": name}))
        assert refused["type"] == ResponseType.CHANNEL_MESSAGE_WITH_SOURCE
        assert refused["data"]["flags"] & MessageFlag.EPHEMERAL
        assert f"There is no persona called **{name}** here" in json.dumps(refused)
    assert queued(stack) == 0
    assert llm.bodies == []


def test_chat_persona_autocompletes_the_servers_personas(stack, llm):
    manage(stack, "add", {"name": "Luna", "prompt": "x"}, LUNA_ID)
    typing = autocomplete_typing(chat(stack, {"message": "hi"}), "persona", "lu")
    answer = interact(stack, typing)
    assert answer["type"] == ResponseType.APPLICATION_COMMAND_AUTOCOMPLETE_RESULT
    assert answer["data"]["choices"] == [{"name": "Luna", "value": "Luna"}]


def test_a_chat_persona_answer_whose_post_response_was_lost_is_posted_once_on_redelivery(stack, llm):
    # Given Luna, and a Discord that applies her first webhook post but loses its response
    manage(stack, "add", {"name": "Luna", "prompt": "x"}, LUNA_ID)
    llm.enqueue(completion_body("Once."), completion_body("Twice?"))
    lost: list[str] = []

    def lose_first_webhook_answer(when: str, request: Any) -> None:
        if (
            when == "after"
            and request.method == "POST"
            and request.path.startswith("/api/v10/webhooks/")
            and not lost
        ):
            lost.append(request.path)
            raise DropConnection

    stack.discord.interceptor = lose_first_webhook_answer

    # When she is asked through /chat and the turn is redelivered after the failure
    interact(stack, chat(stack, {"message": "once?", "persona": "Luna"}))
    batches = stack.deliver_turns()

    # Then the first attempt failed, the redelivery adopted the post: one answer, the original edited
    assert lost and batches[0]["batchItemFailures"] and batches[-1] == {"batchItemFailures": []}
    assert persona_posts(stack) == [("Luna", "Once.")]
    assert stack.discord.interaction_response(f"token-{CHAT_ID}")["content"] == CHAT_ANSWERED_BY.format(
        name="Luna"
    )


def test_a_chat_whose_persona_is_removed_while_it_waits_says_so_instead_of_thinking_forever(stack, llm):
    # Given a /chat of Luna queued, then Luna removed before the worker takes it
    manage(stack, "add", {"name": "Luna", "prompt": "x"}, LUNA_ID)
    interact(stack, chat(stack, {"message": "still there?", "persona": "Luna"}))
    asked = manage(stack, "remove", {"persona": "Luna"})
    confirm = asked["data"]["components"][0]["components"][0]["custom_id"]
    remover = slash_command(
        stack.application_id, "persona", "remove", guild_id=GUILD, permissions=MANAGE_GUILD
    )
    interact(stack, component_click(remover, confirm))

    # When the worker takes the turn
    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    # Then nobody answered, and the "thinking…" says why
    assert llm.bodies == [] and persona_posts(stack) == []
    edited = stack.discord.interaction_response(f"token-{CHAT_ID}")
    assert edited["content"] == CHAT_PERSONA_REMOVED.format(name="Luna")
