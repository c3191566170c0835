"""Chat turn benchmark: DynamoDB requests per turn and the worker's own time per turn.

Runs on the playground's LocalStack: moto over HTTP on 127.0.0.1, the Discord REST stand-in and an
OpenAI-compatible stand-in answering at once with plain text (so no tool writes). Each turn is
queued through the relay's signed POST; only the TurnFunction handler is timed and counted, warm.
The times include the loopback HTTP round trips to both stand-ins and to moto; the second timing
line leaves out the time spent inside DynamoDB calls (moto is far slower than DynamoDB).
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx

from kioku.discord.protocol import Permission
from kioku.entrypoints.composition import container
from kioku.playground.events import slash_command
from kioku.playground.functions import LambdaContext
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.playground.standins import OpenAIStandIn, completion_body
from kioku.signatures import sign_request

GUILD = "200000000000000001"
CHANNEL = "300000000000000001"
WARM_UP_TURNS = 3
COUNTED_TURNS = 5
SECRET, THREAD = "300000000000000003", "300000000000000004"
PERSONA_CHANNEL = "300000000000000005"
ALWAYS_CHANNEL = "300000000000000006"
BURST_MESSAGES = 3
PRIVATE = [{"id": GUILD, "type": 0, "allow": "0", "deny": str(1 << 10)}]  # @everyone may not view
TIMED_TURNS = 40
PLAIN_TURN_REQUESTS = 5
"""A plain turn's DynamoDB requests (docs/scaling.md): recall and history add none."""
WHY_PLAIN_TURN_REQUESTS = (
    "UpdateItem: the author's rate; BatchGetItem: configuration, profile, short-term rows, memory books, "
    "the turn's record and outbox, the author's forget-all mark; Query: other channels' rows; "
    "TransactWriteItems 1: the outbox with the forget-all check, before the first post; "
    "TransactWriteItems 2: capture + record + outbox delete + the forget-all check"
)


def _answered(prompts: list[str], body: Any) -> Any:
    prompts.append(json.dumps(body))
    return completion_body("Sounds good.")


def main() -> None:
    prompts: list[str] = []
    with (
        OpenAIStandIn(responder=lambda body: _answered(prompts, body)) as llm,
        # the bench times whole turns: no turn may stop at the per-person rate
        LocalStack(llm_base_url=llm.base_url, extra_env={"TURN_RATE_LIMIT_PER_MINUTE": "1000"}) as stack,
    ):
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        stack.discord.seed_channel(SECRET, name="secret", guild_id=GUILD, permission_overwrites=PRIVATE)
        stack.discord.seed_channel(THREAD, name="plans", guild_id=GUILD, parent_id=SECRET)
        people = [stack.discord.seed_user(f"member{n}", global_name=f"Member {n}") for n in range(3)]
        turn = _Turns(stack)
        for channel in (CHANNEL, SECRET, THREAD):
            for _ in range(WARM_UP_TURNS):
                turn.take(people[0], channel)
        dynamodb = _DynamoDbCalls()

        scenarios = (
            ("", people[:1], CHANNEL),
            ("_3_participants", people, CHANNEL),
            ("_in_a_thread_of_a_private_channel", people[:1], THREAD),
        )
        plain = 0
        for label, speakers, channel in scenarios:
            _fill_channel(stack, speakers, channel)
            per_turn, discord_calls = [], []
            for n in range(COUNTED_TURNS):
                dynamodb.clear()
                before = len(stack.discord.requests)
                turn.take(speakers[n % len(speakers)], channel)
                per_turn.append(Counter(dynamodb.names))
                discord_calls.append(len(stack.discord.requests) - before)
            most = max(per_turn, key=lambda counted: sum(counted.values()))
            breakdown = ", ".join(f"{name} {count}" for name, count in sorted(most.items()))
            print(f"turn.dynamodb_requests_per_turn{label}={sum(most.values())} ({breakdown})")
            if not label:
                plain = sum(most.values())
                print(f"turn.dynamodb_requests_why ({WHY_PLAIN_TURN_REQUESTS})")
                print(
                    f"turn.plain_turn_stays_at_{PLAIN_TURN_REQUESTS}_requests={plain == PLAIN_TURN_REQUESTS} ({plain})"
                )
            print(
                f"turn.discord_requests_per_turn{label}={max(discord_calls)} (the relay's POST not counted)"
            )

        _recall_turns(stack, turn, dynamodb, people[0], plain, prompts)
        _alter_persona_turns(stack, turn, dynamodb, people[0])
        _always_channel_turns(stack, turn, dynamodb, people[1])

        timings, own = [], []
        for n in range(TIMED_TURNS):
            dynamodb.clear()
            elapsed = turn.take(people[n % len(people)])
            timings.append(elapsed)
            own.append(elapsed - dynamodb.seconds * 1000)
    _print_ms("turn.worker_ms", timings, "moto over HTTP, 1-3 participants")
    _print_ms("turn.worker_ms_outside_dynamodb", own, "the same turns, time inside DynamoDB calls left out")


def _print_ms(name: str, timings: list[float], note: str) -> None:
    timings = sorted(timings)
    median = statistics.median(timings)
    p95 = timings[int(len(timings) * 0.95)]
    print(f"{name} median={median:.1f} p95={p95:.1f} (n={len(timings)}, {note})")


class _Turns:
    def __init__(self, stack: LocalStack) -> None:
        self._stack = stack

    def take(
        self,
        author: dict[str, Any],
        channel: str = CHANNEL,
        text: str | None = None,
        queued: Callable[[], None] | None = None,
    ) -> float:
        """One turn for a message by ``author`` (by default mentioning the bot); returns the
        handler's milliseconds. ``queued`` is called once the relay queued it."""
        stack = self._stack
        text = text or f"<@{stack.application_id}> what now?"
        message = stack.discord.seed_message(channel, author, text)
        body = gateway_dispatch(message, GUILD, {"nick": None, "roles": []})
        headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
        httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10).raise_for_status()
        if queued is not None:
            queued()
        queue = stack.resources.turn_queue_url
        received = stack.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, AttributeNames=["All"])
        event = stack.sqs_event(received["Messages"])
        started = time.perf_counter()
        response = stack.turn_handler(event, LambdaContext())
        elapsed_ms = (time.perf_counter() - started) * 1000
        if response.get("batchItemFailures"):
            raise RuntimeError(f"a bench turn failed: {response}")
        for sent in received["Messages"]:
            stack.sqs.delete_message(QueueUrl=queue, ReceiptHandle=sent["ReceiptHandle"])
        return elapsed_ms


class _DynamoDbCalls:
    """Every DynamoDB call the warm worker makes, by operation name, and the time spent in them.

    The hooks go on the worker's table client (every store shares it).
    """

    def __init__(self) -> None:
        self.names: list[str] = []
        self.seconds = 0.0
        self._started = 0.0
        client = container().table.client
        client.meta.events.register("before-call.dynamodb", self._before)
        client.meta.events.register("after-call.dynamodb", self._after)

    def clear(self) -> None:
        self.names.clear()
        self.seconds = 0.0

    def _before(self, model: Any, **_: Any) -> None:
        self.names.append(model.name)
        self._started = time.perf_counter()

    def _after(self, **_: Any) -> None:
        self.seconds += time.perf_counter() - self._started


def _alter_persona_turns(
    stack: LocalStack, turn: _Turns, dynamodb: _DynamoDbCalls, author: dict[str, Any]
) -> None:
    """Luna, an alter persona, called by name in a channel of her own: her first turn there creates
    the channel's webhook (one Discord request, one DynamoDB put, once); the next ones make the main
    persona's requests, posting through the webhook."""
    _manage(stack, "persona", "add", {"name": "Luna", "prompt": "You are {bot}."})
    stack.discord.seed_channel(PERSONA_CHANNEL, name="luna", guild_id=GUILD)
    per_turn, discord_calls = [], []
    for _ in range(COUNTED_TURNS + 1):
        dynamodb.clear()
        before = len(stack.discord.requests)
        turn.take(author, PERSONA_CHANNEL, "Luna, what now?", queued=dynamodb.clear)
        per_turn.append(Counter(dynamodb.names))
        discord_calls.append(len(stack.discord.requests) - before)
    first, later = per_turn[0], per_turn[1:]
    most = max(later, key=lambda counted: sum(counted.values()))
    breakdown = ", ".join(f"{name} {count}" for name, count in sorted(most.items()))
    print(
        f"turn.dynamodb_requests_per_turn_alter_persona={sum(most.values())} ({breakdown}; the relay's "
        "GetItem of the configuration, to know who is called, is the relay's, not counted)"
    )
    print(
        f"turn.discord_requests_per_turn_alter_persona={max(discord_calls[1:])} "
        f"(first turn in a channel: {discord_calls[0]}, creating its webhook; "
        f"DynamoDB {sum(first.values())}, the webhook kept once)"
    )


def _always_channel_turns(
    stack: LocalStack, turn: _Turns, dynamodb: _DynamoDbCalls, author: dict[str, Any]
) -> None:
    """A channel where kioku answers every message: a message alone costs a plain turn's requests;
    a burst queued together is one turn (its covered messages each counted against the rate) and
    the covered messages' jobs end at their gate."""
    _manage(stack, "server", "addressing", {"channel": ALWAYS_CHANNEL, "mode": "always"})
    stack.discord.seed_channel(ALWAYS_CHANNEL, name="chat", guild_id=GUILD)
    per_turn = []
    for _ in range(COUNTED_TURNS):
        dynamodb.clear()
        turn.take(author, ALWAYS_CHANNEL, "what now?", queued=dynamodb.clear)
        per_turn.append(len(dynamodb.names))
    print(f"turn.dynamodb_requests_per_turn_always_channel={max(per_turn)} (a message alone: {per_turn})")
    for n in range(BURST_MESSAGES):
        message = stack.discord.seed_message(ALWAYS_CHANNEL, author, f"burst message {n}")
        body = gateway_dispatch(message, GUILD, {"nick": None, "roles": []})
        headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
        httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10).raise_for_status()
    jobs, discord_before, posts_before = [], len(stack.discord.requests), _bot_posts(stack)
    queue = stack.resources.turn_queue_url
    while received := stack.sqs.receive_message(
        QueueUrl=queue, MaxNumberOfMessages=1, AttributeNames=["All"]
    ).get("Messages"):
        dynamodb.clear()
        if stack.turn_handler(stack.sqs_event(received), LambdaContext()).get("batchItemFailures"):
            raise RuntimeError("a bench burst turn failed")
        stack.sqs.delete_message(QueueUrl=queue, ReceiptHandle=received[0]["ReceiptHandle"])
        jobs.append(sum(Counter(dynamodb.names).values()))
    print(
        f"turn.burst_of_{BURST_MESSAGES}_dynamodb_requests={sum(jobs)} (per job: {jobs}; one turn a "
        f"message would make {BURST_MESSAGES} x {max(per_turn)}), "
        f"replies={_bot_posts(stack) - posts_before}, "
        f"discord_requests={len(stack.discord.requests) - discord_before}"
    )


def _bot_posts(stack: LocalStack) -> int:
    return sum(
        m["author"]["id"] == stack.application_id for m in stack.discord.channel_messages(ALWAYS_CHANNEL)
    )


def _manage(stack: LocalStack, *path_and_options: Any) -> None:
    """A manager's slash command (its path, then its options), answered."""
    *path, options = path_and_options
    command = slash_command(
        stack.application_id,
        *path,
        options,
        guild_id=GUILD,
        permissions=str(int(Permission.MANAGE_GUILD)),
        interaction_id=stack.discord.new_id(),
    )
    body = json.dumps(command).encode()
    headers = {"content-type": "application/json", **sign_request(stack.signing_key, body)}
    httpx.post(stack.urls["interactions"], content=body, headers=headers, timeout=10).raise_for_status()


def _recall_turns(
    stack: LocalStack,
    turn: _Turns,
    dynamodb: _DynamoDbCalls,
    author: dict[str, Any],
    plain: int,
    prompts: list[str],
) -> None:
    """The plain turn's requests again once the author has memories to recall (two added by
    ``/personal memories add``): recall reads the books the turn's BatchGetItem reads already."""
    for subcommand, options in (
        ("memories add", {"content": "{user} plays the cello in a band"}),
        ("memories add", {"content": "{user} has a dog called Pixel"}),
    ):
        command = slash_command(
            stack.application_id,
            "personal",
            subcommand,
            options,
            guild_id=GUILD,
            user_id=author["id"],
            username=author["username"],
            interaction_id=stack.discord.new_id(),
        )
        body = json.dumps(command).encode()
        headers = {"content-type": "application/json", **sign_request(stack.signing_key, body)}
        httpx.post(stack.urls["interactions"], content=body, headers=headers, timeout=10).raise_for_status()
    # the first turn's batch from the queue also carries the adds' own jobs: not counted
    question = f"<@{stack.application_id}> how is my cello going?"
    turn.take(author, CHANNEL, question)
    per_turn, recalled = [], 0
    for _ in range(COUNTED_TURNS):
        dynamodb.clear()
        turn.take(author, CHANNEL, question)
        recalled += "plays the cello in a band" in prompts[-1]
        per_turn.append(Counter(dynamodb.names))
    most = max(per_turn, key=lambda counted: sum(counted.values()))
    with_recall = sum(most.values())
    breakdown = ", ".join(f"{name} {count}" for name, count in sorted(most.items()))
    print(
        f"turn.recall_adds_no_read={with_recall == plain} (a turn with the author's memories to "
        f"recall: {with_recall} DynamoDB requests, {breakdown}; each: "
        f"{[sum(counted.values()) for counted in per_turn]}; a plain turn: {plain}; the memory in "
        f"the model's prompt: {recalled}/{COUNTED_TURNS} turns)"
    )


def _fill_channel(stack: LocalStack, speakers: list[dict[str, Any]], channel: str) -> None:
    """Recent messages from each speaker, so each is a participant of the next turns' dialogue."""
    for speaker in speakers:
        stack.discord.seed_message(channel, speaker, "just catching up")


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    main()
