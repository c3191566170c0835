"""Chat turns end to end over real HTTP.

A person's message goes through the relay's signed POST to the relay Function URL, the FIFO queue
on moto and the turn worker (fed like Lambda's SQS poller); the worker reads the channel from a
Discord REST stand-in and asks an OpenAI-compatible stand-in, both on 127.0.0.1. The tests read
what the model was sent and what Discord received.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.llm.openai import RetryPolicy
from kioku.config import get_settings
from kioku.domain.dialogue import DIALOGUE_CONVENTIONS
from kioku.domain.models import Persona
from kioku.domain.stm.capture import StmRowIdentity
from kioku.domain.stm.entries import StmAddress, StmEntry, StmLimits
from kioku.domain.stm.update_tool import StmUpdate
from kioku.playground.events import slash_command
from kioku.playground.functions import LambdaContext
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.playground.standins import CannedResponse, DiscordStandIn, OpenAIStandIn, completion_body
from kioku.services.turn import APOLOGY
from kioku.signatures import sign_request

pytestmark = pytest.mark.e2e

GUILD = "200000000000000001"
CHANNEL = "300000000000000001"
LLM_KEY = "stand-in-key"  # what LocalStack gives the worker as LLM_API_KEY
REPLY = "Happy to help."
DISCORD_LIMIT = 2000
REFRESH_CADENCE = 5  # the default StmConfig.refresh_cadence
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
HEADER = re.compile(r"^\[(?P<speaker>[^|\]]+) \| UserID:(?P<user>\d+) \| MessageID:(?P<message>\d+)\]$")
SENT = re.compile(r"^Sent: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(unix \d+\)$")
STM_BLOCK = "[Short-term memory of this channel]"
NUDGE = "[Short-term memory reminder]"
LTM_HEADER = "Long-term memories:"


# -- the stack -------------------------------------------------------------------------------------


@pytest.fixture
def llm() -> Iterator[OpenAIStandIn]:
    with OpenAIStandIn(api_key=LLM_KEY, responder=lambda body: completion_body(REPLY)) as server:
        yield server


@contextmanager
def local_stack(llm: OpenAIStandIn, **env: str) -> Iterator[LocalStack]:
    with LocalStack(llm_base_url=llm.base_url, extra_env=env) as stack:
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        yield stack


@pytest.fixture
def stack(llm: OpenAIStandIn) -> Iterator[LocalStack]:
    with local_stack(llm) as running:
        yield running


def seed_alice(discord: DiscordStandIn) -> dict[str, Any]:
    alice = discord.seed_user("alice", global_name="Alice")
    discord.seed_member(GUILD, alice)
    return alice


def relay(stack: LocalStack, message: dict[str, Any]) -> httpx.Response:
    """What the gateway relay does with a MESSAGE_CREATE: sign it and POST it to RelayFunction."""
    body = gateway_dispatch(message, GUILD, {"nick": None, "roles": []})
    headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
    return httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10)


def say_to_bot(stack: LocalStack, author: dict[str, Any], text: str) -> dict[str, Any]:
    """``author`` mentions the bot: the message lands in the channel and the relay forwards it."""
    message = stack.discord.seed_message(CHANNEL, author, f"<@{stack.application_id}> {text}")
    response = relay(stack, message)
    assert response.status_code == 202, response.text
    return message


def run_turn(stack: LocalStack, author: dict[str, Any], text: str) -> dict[str, Any]:
    message = say_to_bot(stack, author, text)
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    return message


# -- reading what was sent -------------------------------------------------------------------------


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def is_dialogue(message: dict[str, Any]) -> bool:
    first_line = text_of(message).split("\n", 1)[0]
    return message["role"] in {"user", "assistant"} and HEADER.match(first_line) is not None


def dialogue(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [message for message in messages if is_dialogue(message)]


def header(message: dict[str, Any]) -> dict[str, str]:
    match = HEADER.match(text_of(message).split("\n", 1)[0])
    assert match is not None, text_of(message)
    return match.groupdict()


def position(messages: list[dict[str, Any]], starts_with: str) -> int:
    found = [i for i, message in enumerate(messages) if text_of(message).startswith(starts_with)]
    assert len(found) == 1, f"expected one item starting {starts_with!r}, found {len(found)}"
    return found[0]


def bot_messages(stack: LocalStack) -> list[dict[str, Any]]:
    return [m for m in stack.discord.channel_messages(CHANNEL) if m["author"]["id"] == stack.application_id]


def replies_to(stack: LocalStack, message: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m
        for m in bot_messages(stack)
        if (m.get("message_reference") or {}).get("message_id") == message["id"]
    ]


def stm_store(stack: LocalStack) -> StmStore:
    return StmStore(KiokuTable(stack.resources.table_name))


def stm_row(stack: LocalStack) -> StmEntry | None:
    return stm_store(stack).get(StmAddress.of(GUILD, "", CHANNEL, Persona().persona_id))


def table_items(stack: LocalStack) -> list[dict[str, Any]]:
    client = KiokuTable(stack.resources.table_name).client
    return client.scan(TableName=stack.resources.table_name)["Items"]


def memory_items(stack: LocalStack) -> list[dict[str, Any]]:
    """Everything in the table except the worker's bookkeeping: turn completion records and the
    per-person turn rate counters."""
    return [
        item
        for item in table_items(stack)
        if not item["pk"]["S"].startswith("TURN#") and not item["sk"]["S"].startswith("RATE#")
    ]


def add_reaction(discord: DiscordStandIn, message_id: str, emoji: str, count: int) -> None:
    # The stand-in has no reaction endpoint; reactions only ever arrive on fetched messages.
    with discord._lock:
        stored = next(m for m in discord._channels[CHANNEL] if m["id"] == message_id)
        stored["reactions"] = [{"emoji": {"id": None, "name": emoji}, "count": count, "me": False}]


def attachment(filename: str, content_type: str) -> dict[str, Any]:
    return {
        "id": "700000000000000001",
        "filename": filename,
        "content_type": content_type,
        "size": 1024,
        "url": f"https://cdn.example.test/{filename}",
    }


def with_summary(stack: LocalStack, summary: str, *, written_at: datetime, turns_since: int) -> None:
    """The channel's STM row as earlier turns would have left it: a summary and a cadence counter."""
    store = stm_store(stack)
    identity = StmRowIdentity(
        address=StmAddress.of(GUILD, "", CHANNEL, Persona().persona_id),
        lineage_id=Persona().lineage_id,
        channel_name="general",
    )
    store.write_memory(identity, StmUpdate(summary=summary), (), written_at, timedelta(days=90))
    for _ in range(turns_since):
        store.count_turn(identity, written_at, StmLimits.from_settings(get_settings()))


# -- the model request: the dialogue of seed 004 ---------------------------------------------------


def test_the_model_sees_the_dialogue_oldest_first_with_speakers_markers_replies_reactions_and_files(
    stack, llm
):
    # Given a channel where people, another bot and kioku itself have talked
    discord = stack.discord
    alice = seed_alice(discord)
    bob = discord.seed_user("bob")
    music = discord.seed_user("MusicBot", bot=True)
    zoe = discord.seed_user("zoe.w", global_name="Zoë ✨")
    asked = discord.seed_message(CHANNEL, alice, "who is up for movie night?")
    files = [
        attachment("cat.png", "image/png"),
        attachment("clip.mp4", "video/mp4"),
        attachment("notes.pdf", "application/pdf"),
    ]
    photo = discord.seed_message(CHANNEL, alice, "look at this", attachments=files)
    answer = discord.seed_message(CHANNEL, bob, "count me in", reply_to=asked["id"])
    add_reaction(discord, answer["id"], "👍", 2)
    own = discord.seed_message(CHANNEL, discord.bot_user, "I can bring snacks.")
    other_bot = discord.seed_message(CHANNEL, music, "Now playing: lofi beats")

    # When Zoë addresses kioku through the relay and the worker takes the turn
    trigger = run_turn(stack, zoe, "what time works?")

    # Then the one model request opens with the system prompt explaining the conventions
    (request,) = llm.bodies
    assert llm.requests[0].headers["authorization"] == f"Bearer {LLM_KEY}"
    messages = request["messages"]
    assert messages[0]["role"] == "system"
    assert DIALOGUE_CONVENTIONS in messages[0]["content"]
    # ...with no memories yet, the dialogue follows directly, oldest to newest, nothing else
    turns = messages[1:]
    assert turns == dialogue(messages)
    expected = [asked, photo, answer, own, other_bot, trigger]
    assert [header(turn)["message"] for turn in turns] == [m["id"] for m in expected]
    assert [turn["role"] for turn in turns] == ["user", "user", "user", "assistant", "user", "user"]
    assert [header(turn)["speaker"] for turn in turns] == [
        "Alice (alice)",
        "Alice (alice)",
        "bob",
        "Kioku",  # issue 11.8: the persona name, as the system prompt calls it
        "BOT MusicBot",
        "Zoë ✨ (zoe.w)",
    ]
    assert [header(turn)["user"] for turn in turns] == [m["author"]["id"] for m in expected]
    assert "name" not in turns[3]
    names = [turn.get("name") for turn in turns]
    assert names == [
        f"Alice_{alice['id']}",
        f"Alice_{alice['id']}",
        f"bob_{bob['id']}",
        None,
        f"MusicBot_{music['id']}",
        f"Zoe_{zoe['id']}",
    ]
    assert all(OPENAI_NAME.match(name) for name in names if name is not None)
    # ...each with its send time, then the words between the markers
    for turn, message in zip(turns, expected, strict=True):
        lines = text_of(turn).split("\n")
        assert SENT.match(lines[1]), lines
        # (issue 11.7: a mention reads as the name, the bot's included)
        assert lines[-1] == f"<som>{message['content'].replace(f'<@{stack.application_id}>', '@Kioku')}<eom>"
        assert text_of(turn).count("<som>") == 1
    # ...the image as an image part, the video and the PDF as placeholders
    assert turns[1]["content"][1:] == [
        {"type": "image_url", "image_url": {"url": "https://cdn.example.test/cat.png"}}
    ]
    photo_text = text_of(turns[1])
    assert "[Video Attachment: clip.mp4]" in photo_text
    assert "[PDF Attachment: notes.pdf]" in photo_text
    assert "cat.png" not in photo_text
    # ...and the reply with a summary of what it answers and its reactions
    answer_lines = text_of(turns[2]).split("\n")
    assert "Replying to @Alice: 'who is up for movie night?'" in answer_lines
    assert "Reactions: 👍 2" in answer_lines


def test_without_vision_images_become_placeholders(llm):
    with local_stack(llm, LLM_SUPPORTS_VISION="false") as stack:
        alice = seed_alice(stack.discord)
        stack.discord.seed_message(CHANNEL, alice, "my cat", attachments=[attachment("cat.png", "image/png")])
        run_turn(stack, alice, "cute, right?")

    (request,) = llm.bodies
    photo = dialogue(request["messages"])[0]
    assert isinstance(photo["content"], str)
    assert "[Image Attachment: cat.png]" in photo["content"]
    assert "image_url" not in json.dumps(request)


def test_only_the_latest_dialogue_history_limit_messages_are_sent(llm):
    with local_stack(llm, DIALOGUE_HISTORY_LIMIT="3") as stack:
        alice = seed_alice(stack.discord)
        older = [stack.discord.seed_message(CHANNEL, alice, f"message {n}") for n in range(5)]
        trigger = run_turn(stack, alice, "and now?")

    limit_requests = stack.discord.requests_to("GET", rf"/api/v10/channels/{CHANNEL}/messages")
    # the turn's own message is in the job; Discord is asked for the ones before it
    assert limit_requests[0].query["limit"] == ["2"]
    assert limit_requests[0].query["before"] == [trigger["id"]]
    turns = dialogue(llm.bodies[0]["messages"])
    assert [header(turn)["message"] for turn in turns] == [older[3]["id"], older[4]["id"], trigger["id"]]


# -- what Discord receives -------------------------------------------------------------------------


def test_the_reply_answers_the_message_after_typing_and_mentions_nobody(stack, llm):
    alice = seed_alice(stack.discord)
    llm.enqueue(completion_body("@everyone the answer is 42"))

    trigger = run_turn(stack, alice, "what is the answer?")

    requests = stack.discord.requests
    typing = [i for i, r in enumerate(requests) if r.method == "POST" and r.path.endswith("/typing")]
    posts = [i for i, r in enumerate(requests) if r.method == "POST" and r.path.endswith("/messages")]
    assert len(typing) == 1 and len(posts) == 1
    assert typing[0] < posts[0]
    post = requests[posts[0]]
    assert post.path == f"/api/v10/channels/{CHANNEL}/messages"
    assert post.headers["authorization"] == f"Bot {stack.discord.token}"
    assert post.body["content"] == "@everyone the answer is 42"
    assert post.body["message_reference"]["message_id"] == trigger["id"]
    assert post.body["allowed_mentions"]["parse"] == []
    (reply,) = replies_to(stack, trigger)
    assert reply["referenced_message"]["id"] == trigger["id"]


def test_a_reply_over_2000_characters_is_split_into_several_messages(stack, llm):
    alice = seed_alice(stack.discord)
    paragraphs = [f"Paragraph {n}: " + "lorem ipsum dolor sit amet " * 30 for n in range(6)]
    long_reply = "\n\n".join(paragraphs)
    assert len(long_reply) > 2 * DISCORD_LIMIT
    llm.enqueue(completion_body(long_reply))

    trigger = run_turn(stack, alice, "tell me everything")

    posted = bot_messages(stack)
    assert len(posted) >= 3
    assert all(len(message["content"]) <= DISCORD_LIMIT for message in posted)
    assert " ".join(m["content"] for m in posted).split() == long_reply.split()
    assert replies_to(stack, trigger) == posted[:1]
    assert all("message_reference" not in message for message in posted[1:])


def test_a_message_not_addressed_to_the_bot_starts_no_turn(stack, llm):
    alice = seed_alice(stack.discord)
    message = stack.discord.seed_message(CHANNEL, alice, "just chatting among ourselves")

    assert relay(stack, message).status_code == 204
    assert stack.deliver_turns() == []
    assert llm.bodies == []
    assert bot_messages(stack) == []


def test_chat_command_defers_and_the_worker_edits_the_original_response(stack, llm):
    alice = seed_alice(stack.discord)
    interaction = slash_command(
        stack.application_id,
        "chat",
        options={"message": "hello from a slash command"},
        guild_id=GUILD,
        channel_id=CHANNEL,
        user_id=alice["id"],
        username=alice["username"],
        global_name=alice["global_name"],
        token="chat-interaction-token",
    )
    body = json.dumps(interaction).encode()
    headers = {"content-type": "application/json", **sign_request(stack.signing_key, body)}

    answer = httpx.post(stack.urls["interactions"], content=body, headers=headers, timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"type": 5}
    assert stack.discord.interaction_response("chat-interaction-token") is None

    assert stack.deliver_turns() == [{"batchItemFailures": []}]

    assert stack.discord.interaction_response("chat-interaction-token")["content"] == REPLY
    (edit,) = stack.discord.requests_to("PATCH", r"/api/v10/webhooks/\d+/[^/]+/messages/@original")
    assert edit.path == f"/api/v10/webhooks/{stack.application_id}/chat-interaction-token/messages/@original"
    assert edit.body["allowed_mentions"] == {"parse": []}
    assert bot_messages(stack) == []
    last = dialogue(llm.bodies[0]["messages"])[-1]
    assert header(last)["user"] == alice["id"]
    assert text_of(last).endswith("<som>hello from a slash command<eom>")


# -- short-term memory: the nudge and the content block at their depths ----------------------------


def test_the_nudge_appears_after_five_turns_before_the_latest_pair_and_clears_once_memory_is_written(
    stack, llm
):
    alice = seed_alice(stack.discord)

    # Given five turns in which kioku took part
    for n in range(REFRESH_CADENCE):
        run_turn(stack, alice, f"message number {n}")
    assert all(NUDGE not in json.dumps(body) for body in llm.bodies)
    assert stm_row(stack).turns_since_refresh == REFRESH_CADENCE

    # When the sixth turn is asked, and the model writes its short-term memory as nudged
    llm.enqueue(
        completion_body(tool_calls=[("update_short_term_memory", {"summary": "Alice is counting to six."})]),
        completion_body("Six!"),
    )
    run_turn(stack, alice, "message number 5")

    # Then the nudge sat before the second dialogue turn from the bottom (the latest pair)
    nudged = llm.bodies[REFRESH_CADENCE]["messages"]
    turns = [i for i, message in enumerate(nudged) if is_dialogue(message)]
    nudge = position(nudged, NUDGE)
    assert nudged[nudge]["role"] == "user"
    assert nudge == turns[-2] - 1
    assert nudged[turns[-2]]["role"] == "assistant"
    assert all(STM_BLOCK not in text_of(message) for message in nudged)  # nothing written yet

    # ...the tool reset the counter and the capture counted this turn
    row = stm_row(stack)
    assert row.summary == "Alice is counting to six."
    assert row.turns_since_refresh == 1

    # ...and the next turn shows the fresh memory at depth 2 and no nudge
    run_turn(stack, alice, "message number 6")
    after = llm.bodies[-1]["messages"]
    turns = [i for i, message in enumerate(after) if is_dialogue(message)]
    block = position(after, STM_BLOCK)
    assert block == turns[-2] - 1
    assert "Alice is counting to six." in text_of(after[block])
    assert NUDGE not in json.dumps(after)


def test_a_fresh_memory_block_sits_directly_above_the_nudge_at_depth_two(stack, llm):
    alice = seed_alice(stack.discord)
    for n in range(3):
        stack.discord.seed_message(CHANNEL, alice, f"earlier {n}")
    with_summary(
        stack,
        "Alice is planning a picnic.",
        written_at=datetime.now(UTC) - timedelta(minutes=5),
        turns_since=REFRESH_CADENCE,
    )

    run_turn(stack, alice, "any news?")

    messages = llm.bodies[0]["messages"]
    turns = [i for i, message in enumerate(messages) if is_dialogue(message)]
    block, nudge = position(messages, STM_BLOCK), position(messages, NUDGE)
    assert "Alice is planning a picnic." in text_of(messages[block])
    assert (block, nudge) == (turns[-2] - 2, turns[-2] - 1)
    assert messages[turns[-3] + 1 : turns[-2]] == [messages[block], messages[nudge]]


def test_an_aged_memory_block_is_anchored_at_the_top_of_the_context(stack, llm):
    alice = seed_alice(stack.discord)
    for n in range(3):
        stack.discord.seed_message(CHANNEL, alice, f"earlier {n}")
    with_summary(
        stack,
        "Alice was planning a picnic.",
        written_at=datetime.now(UTC) - timedelta(hours=2),
        turns_since=0,
    )

    run_turn(stack, alice, "any news?")

    messages = llm.bodies[0]["messages"]
    first_turn = next(i for i, message in enumerate(messages) if is_dialogue(message))
    assert position(messages, STM_BLOCK) == 1 == first_turn - 1
    assert NUDGE not in json.dumps(messages)


# -- long-term memory: created in one turn, recalled in the next -----------------------------------


def test_a_memory_saved_in_one_turn_is_announced_and_recalled_in_the_next(stack, llm):
    alice = seed_alice(stack.discord)
    llm.enqueue(
        completion_body(
            tool_calls=[
                (
                    "create_long_term_memory",
                    {
                        "memory_content": "{user} loves green tea",
                        "memory_scope": "target_user",
                        "target_user": "Alice",
                    },
                )
            ]
        ),
        completion_body("Noted, green tea it is."),
    )

    # Given a turn in which the model saves a memory, then answers
    trigger = run_turn(stack, alice, "please remember that I love green tea")

    assert len(llm.bodies) == 2
    answered = llm.bodies[1]
    tool_message = answered["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_0"
    memory_id = json.loads(tool_message["content"])["memory_id"]
    # ...the reply and the success embed reached the channel
    (reply,) = replies_to(stack, trigger)
    assert reply["content"] == "Noted, green tea it is."
    embeds = [embed for message in bot_messages(stack) for embed in message["embeds"]]
    assert len(embeds) == 1
    assert embeds[0]["title"] == "Memory saved"
    assert "Alice loves green tea" in embeds[0]["description"]
    assert f"#{memory_id}" in embeds[0]["footer"]["text"]

    # When Alice talks to kioku again
    run_turn(stack, alice, "what do I like to drink?")

    # Then the recall comes right after the system prompt, before the dialogue, with its id
    messages = llm.bodies[-1]["messages"]
    recall = position(messages, LTM_HEADER)
    assert recall == 1
    assert messages[recall]["role"] == "system"
    assert re.search(rf"\[#{memory_id}\] \d{{4}}-\d\d-\d\d: Alice loves green tea", text_of(messages[recall]))
    first_turn = next(i for i, message in enumerate(messages) if is_dialogue(message))
    assert first_turn > recall


# -- delivery: duplicates, a failing model, a failing Discord -------------------------------------


def test_a_message_relayed_three_times_and_delivered_twice_is_answered_and_counted_once(stack, llm):
    alice = seed_alice(stack.discord)
    run_turn(stack, alice, "hello")
    counted_before = stm_row(stack).turns_since_refresh

    # Given the relay forwarding the same message three times
    message = stack.discord.seed_message(CHANNEL, alice, f"<@{stack.application_id}> are you there?")
    assert [relay(stack, message).status_code for _ in range(3)] == [202, 202, 202]

    # When the queue hands it to the worker, the worker's delete is lost, and SQS delivers it again
    queue = stack.resources.turn_queue_url
    received = stack.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, AttributeNames=["All"])
    received = received.get("Messages", [])
    assert len(received) == 1  # SQS dropped the relay's copies by deduplication id
    first = stack.turn_handler(stack.sqs_event(received), LambdaContext())
    for copy in received:
        stack.sqs.change_message_visibility(
            QueueUrl=queue, ReceiptHandle=copy["ReceiptHandle"], VisibilityTimeout=0
        )
    again = stack.deliver_turns()

    # Then both deliveries succeeded, and there is one reply, one model call, one counted turn
    assert first == {"batchItemFailures": []}
    assert again and all(response == {"batchItemFailures": []} for response in again)
    assert len(replies_to(stack, message)) == 1
    assert sum(message["id"] in json.dumps(body["messages"][-1]) for body in llm.bodies) == 1
    assert stm_row(stack).turns_since_refresh == counted_before + 1


def test_the_same_sqs_event_handled_twice_replies_once(stack, llm):
    alice = seed_alice(stack.discord)
    message = say_to_bot(stack, alice, "hi")
    received = stack.sqs.receive_message(
        QueueUrl=stack.resources.turn_queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
    )["Messages"]
    event = stack.sqs_event(received)

    responses = [stack.turn_handler(event, LambdaContext()) for _ in range(2)]

    assert responses == [{"batchItemFailures": []}] * 2
    assert len(replies_to(stack, message)) == 1
    assert len(llm.bodies) == 1
    assert stm_row(stack).turns_since_refresh == 1


def test_a_model_failing_every_call_gets_one_apology_still_captured_and_counted():
    # Retry-After: 0 keeps the client's retries instant; they still all happen.
    failure = CannedResponse(500, {"error": {"message": "upstream exploded"}}, {"Retry-After": "0"})
    with (
        OpenAIStandIn(api_key=LLM_KEY, responder=lambda body: failure) as broken,
        local_stack(broken) as stack,
    ):
        alice = seed_alice(stack.discord)
        trigger = say_to_bot(stack, alice, "please remember that I love green tea")

        responses = stack.deliver_turns()

        assert responses == [{"batchItemFailures": []}]
        assert len(broken.bodies) == RetryPolicy().max_attempts
        assert [m["content"] for m in bot_messages(stack)] == [APOLOGY]
        assert len(replies_to(stack, trigger)) == 1
        # the channel saw the question and the apology: short-term memory keeps both and counts the turn
        row = stm_row(stack)
        assert [line.text for line in row.crude] == ["@Kioku please remember that I love green tea", APOLOGY]
        assert row.turns_since_refresh == 1
        # and no long-term memory came of it
        assert [item for item in memory_items(stack) if item["pk"]["S"].startswith("LTM#")] == []


def test_the_turns_after_an_apology_count_towards_the_refresh_cadence(llm):
    failure = CannedResponse(500, {"error": {"message": "upstream exploded"}}, {"Retry-After": "0"})
    answers = iter([failure] * RetryPolicy().max_attempts)
    with (
        OpenAIStandIn(api_key=LLM_KEY, responder=lambda body: next(answers, completion_body(REPLY))) as flaky,
        local_stack(flaky) as stack,
    ):
        alice = seed_alice(stack.discord)
        run_turn(stack, alice, "first, while the model is down")
        run_turn(stack, alice, "second, once it is back")

        assert stm_row(stack).turns_since_refresh == 2


def test_a_reply_discord_refuses_is_reported_as_a_batch_failure_and_posted_once_on_redelivery():
    refusals: list[DiscordStandIn] = []

    def answer_then_break_discord(body: dict[str, Any]) -> dict[str, Any]:
        if refusals:  # the first turn's next Discord request is its reply: refuse it, once
            refusals.pop().fail_next(500, {"message": "500: Internal Server Error", "code": 0})
        return completion_body(REPLY)

    with (
        OpenAIStandIn(api_key=LLM_KEY, responder=answer_then_break_discord) as llm,
        local_stack(llm) as stack,
    ):
        refusals.append(stack.discord)
        alice = seed_alice(stack.discord)
        trigger = say_to_bot(stack, alice, "hello?")

        first, *redelivered = stack.deliver_turns()

        (failure,) = first["batchItemFailures"]
        assert failure["itemIdentifier"]
        assert redelivered == [{"batchItemFailures": []}]
        assert len(llm.bodies) == 1  # the redelivery posts the answer it kept, not a new one
        assert [m["content"] for m in replies_to(stack, trigger)] == [REPLY]
        assert len(bot_messages(stack)) == 1
        assert stm_row(stack).turns_since_refresh == 1


def test_a_reply_posted_only_in_part_is_completed_on_redelivery():
    # Given a reply of three chunks, the second of which Discord refuses
    paragraphs = [f"Part {n}: " + " ".join(["lorem"] * 250) for n in (1, 2, 3)]
    with (
        OpenAIStandIn(
            api_key=LLM_KEY, responder=lambda body: completion_body("\n\n".join(paragraphs))
        ) as llm,
        local_stack(llm) as stack,
    ):
        alice = seed_alice(stack.discord)
        trigger = say_to_bot(stack, alice, "tell me a long story")
        stack.discord.fail_post(2, 500, {"message": "500: Internal Server Error", "code": 0})

        # When the first attempt fails on chunk 2 and SQS hands the turn out again
        first, *redelivered = stack.deliver_turns()

        # Then the redelivery posts chunks 2 and 3 of the same reply, once, and captures the turn
        assert len(first["batchItemFailures"]) == 1
        assert redelivered == [{"batchItemFailures": []}]
        assert len(llm.bodies) == 1
        assert [m["content"] for m in bot_messages(stack)] == paragraphs
        assert [m["id"] for m in replies_to(stack, trigger)] == [bot_messages(stack)[0]["id"]]
        row = stm_row(stack)
        assert row.turns_since_refresh == 1
        assert row.crude[0].text == "@Kioku tell me a long story"
        # and the outbox kept for the redelivery is gone with the turn's capture
        assert [item for item in table_items(stack) if item["sk"]["S"].startswith("OUTBOX#")] == []


def test_a_memory_notice_discord_fails_to_take_is_posted_on_redelivery_once(stack, llm):
    # Given a turn that saves a memory, and Discord failing the post of its notice (the reply's the
    # first post, the notice the second)
    alice = seed_alice(stack.discord)
    save = {"memory_content": "{user} loves green tea", "memory_scope": "target_user", "target_user": "Alice"}
    llm.enqueue(completion_body(tool_calls=[("create_long_term_memory", save)]), completion_body(REPLY))
    trigger = say_to_bot(stack, alice, "please remember that I love green tea")
    stack.discord.fail_post(2, 500, {"message": "500: Internal Server Error", "code": 0})

    # When the attempt fails on the notice and SQS hands the turn out again
    first, *redelivered = stack.deliver_turns()

    # Then the redelivery posts the notice, once, without a second reply or model call
    assert len(first["batchItemFailures"]) == 1
    assert redelivered == [{"batchItemFailures": []}]
    assert len(llm.bodies) == 2
    assert [m["content"] for m in replies_to(stack, trigger)] == [REPLY]
    embeds = [embed["title"] for message in bot_messages(stack) for embed in message["embeds"]]
    assert embeds == ["Memory saved"]
    assert stm_row(stack).turns_since_refresh == 1


def hand_out_without_answering(stack: LocalStack) -> None:
    """An attempt that took the turn from the queue and died: SQS will hand it out again."""
    received = stack.sqs.receive_message(QueueUrl=stack.resources.turn_queue_url, AttributeNames=["All"])
    for message in received["Messages"]:
        stack.sqs.change_message_visibility(
            QueueUrl=stack.resources.turn_queue_url,
            ReceiptHandle=message["ReceiptHandle"],
            VisibilityTimeout=0,
        )


def test_a_redelivered_turn_that_never_answered_is_answered(stack, llm):
    alice = seed_alice(stack.discord)
    message = say_to_bot(stack, alice, "hello?")
    hand_out_without_answering(stack)
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    assert [m["content"] for m in replies_to(stack, message)] == [REPLY]


def test_a_guild_turn_whose_channel_cannot_be_looked_up_is_retried_not_guessed(stack, llm):
    # Given Discord failing the worker's first two calls: the typing indicator (which a turn
    # shrugs off) and the channel lookup (without which a private thread's parent is unknown)
    alice = seed_alice(stack.discord)
    message = say_to_bot(stack, alice, "hi")
    stack.discord.fail_next(500, {"message": "500: Internal Server Error", "code": 0})
    stack.discord.fail_next(500, {"message": "500: Internal Server Error", "code": 0})
    # When the worker takes the turn
    response = stack.deliver_turns(max_batches=1)[0]
    # Then it fails, to be retried, having asked no model and stored no memory
    assert len(response["batchItemFailures"]) == 1
    assert llm.bodies == []
    assert stm_row(stack) is None
    assert replies_to(stack, message) == []


def test_a_turn_out_of_time_apologises_instead_of_timing_out(stack, llm):
    # Given a turn with less time left than the reserve kept for posting
    alice = seed_alice(stack.discord)
    message = say_to_bot(stack, alice, "take your time")
    received = stack.sqs.receive_message(QueueUrl=stack.resources.turn_queue_url, AttributeNames=["All"])
    context = LambdaContext()
    context.get_remaining_time_in_millis = lambda: 5_000
    # When the worker takes it
    assert stack.turn_handler(stack.sqs_event(received["Messages"]), context) == {"batchItemFailures": []}
    # Then the user gets the apology, and the model was never asked
    assert llm.bodies == []
    assert [m["content"] for m in replies_to(stack, message)] == [APOLOGY]


def test_a_turn_that_keeps_failing_lands_in_the_dead_letter_queue_not_in_a_loop(stack, llm):
    # Given a queued body that can never become a turn
    stack.sqs.send_message(
        QueueUrl=stack.resources.turn_queue_url,
        MessageBody='{"not": "a turn"}',
        MessageGroupId=CHANNEL,
        MessageDeduplicationId="poison-1",
    )
    # When the worker is given it
    responses = stack.deliver_turns(max_batches=6)
    # Then the worker moves it to the DLQ on its first attempt (tests/e2e/test_poison_turns.py)
    assert responses == [{"batchItemFailures": []}]
    dead = stack.sqs.receive_message(QueueUrl=stack.resources.dead_letter_queue_url)["Messages"]
    assert [m["Body"] for m in dead] == ['{"not": "a turn"}']
    assert llm.bodies == []


def test_a_turn_that_waited_in_the_queue_does_not_see_what_was_said_after_it(stack, llm):
    alice = seed_alice(stack.discord)
    bob = stack.discord.seed_user("bob", global_name="Bob")
    message = say_to_bot(stack, alice, "what's the plan?")
    stack.discord.seed_message(CHANNEL, bob, "a later message, sent while the turn was queued")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    sent = json.dumps(llm.bodies[0]["messages"])
    assert "what's the plan?" in sent
    assert "a later message" not in sent
    assert [m["message_reference"]["message_id"] for m in replies_to(stack, message)] == [message["id"]]


def test_a_queued_turn_keeps_its_earlier_context_however_busy_the_channel_became(stack, llm):
    alice = seed_alice(stack.discord)
    bob = stack.discord.seed_user("bob", global_name="Bob")
    stack.discord.seed_message(CHANNEL, alice, "my dog is called Rex")
    say_to_bot(stack, alice, "what's my dog called?")
    for n in range(12):
        stack.discord.seed_message(CHANNEL, bob, f"later chatter {n}")
    assert stack.deliver_turns() == [{"batchItemFailures": []}]
    sent = json.dumps(llm.bodies[0]["messages"])
    assert "my dog is called Rex" in sent and "later chatter" not in sent


@pytest.mark.parametrize("status", [403, 404])
def test_a_channel_discord_refuses_for_good_ends_the_turn_without_retries(stack, llm, status):
    # Given Discord refusing the channel lookup for good (the bot lost access, or the channel is gone)
    alice = seed_alice(stack.discord)
    message = say_to_bot(stack, alice, "hi")
    stack.discord.fail_next(204)  # the typing indicator
    stack.discord.fail_next(status, {"message": "Missing Access", "code": 50001})
    # When the worker takes the turn
    response = stack.deliver_turns(max_batches=1)[0]
    # Then the turn ends, recorded as done, without a retry, a model call or a reply
    assert response == {"batchItemFailures": []}
    assert llm.bodies == [] and replies_to(stack, message) == []
    assert stack.deliver_turns() == []  # nothing comes back to the queue


def test_a_memory_that_expired_is_never_shown_to_a_later_turn(stack, llm, monkeypatch):
    alice = seed_alice(stack.discord)
    saves = [
        {
            "memory_content": "{user} is in Tokyo this week",
            "memory_scope": "target_user",
            "target_user": "Alice",
            "expires_in_days": 7,
        },
        {"memory_content": "{user} loves green tea", "memory_scope": "target_user", "target_user": "Alice"},
    ]
    llm.enqueue(
        completion_body(tool_calls=[("create_long_term_memory", save) for save in saves]),
        completion_body("Noted both."),
    )
    # Given a turn that saves a plan for a week and a lasting fact
    run_turn(stack, alice, "I'm in Tokyo this week, and I love green tea")
    saved = [json.loads(m["content"]) for m in llm.bodies[1]["messages"] if m["role"] == "tool"]
    assert [s["status"] for s in saved] == ["memory_saved_successfully"] * 2
    plan_id = saved[0]["memory_id"]

    # When she talks six days later, both are recalled
    monkeypatch.setattr("kioku.clock._offset", timedelta(days=6))
    run_turn(stack, alice, "what do you know about me?")
    recall = text_of(llm.bodies[-1]["messages"][position(llm.bodies[-1]["messages"], LTM_HEADER)])
    assert "Alice is in Tokyo this week" in recall and "Alice loves green tea" in recall

    # Then eight days on the plan has expired: no part of the model's request carries it (her own
    # words of that day are still in the channel's history, as she said them)
    monkeypatch.setattr("kioku.clock._offset", timedelta(days=8))
    run_turn(stack, alice, "what do you know about me now?")
    sent = json.dumps(llm.bodies[-1])
    assert "Alice is in Tokyo this week" not in sent and f"#{plan_id}" not in sent
    assert "Alice loves green tea" in sent
