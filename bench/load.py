"""Load test of the local stack: many relayed messages, several TurnFunction workers at once.

1,000 messages from 200 people over 50 channels go through the real path: a signed POST to the
RelayFunction URL, the FIFO queue on one moto server, and TurnFunction handlers in separate worker
processes that each poll the queue as Lambda's SQS poller does (one message at a time). The offline
scripted model answers, so the cadence nudge and its summary writes happen as in real use.

Prints the throughput, whether every message got exactly one reply (``load.replies=R/M`` with
``load.doubled=0``), how many posts the relay had to retry (a 503: the queue not reached in time,
moto serving one request at a time; a retried post that was queued after all is deduplicated by
its turn id, which ``load.doubled`` checks) and the worker time per turn. Bounded: ``LOAD_MESSAGES`` (1000), ``LOAD_WORKERS``
(4), ``LOAD_DEADLINE_SECONDS`` (600); everything is on 127.0.0.1.

``LOAD_KILL_AT_REPLY=N`` SIGKILLs the worker that posts the N-th reply, once Discord took it (its
answer lost with it): the message comes back after the visibility timeout of a receive
(``LOAD_VISIBILITY_SECONDS``, 120) to another worker, which must not post it again. The workers
stop once the relay is done and the queue holds nothing, visible or in flight.
"""

from __future__ import annotations

import itertools
import json
import logging
import multiprocessing
import os
import queue
import select
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.dynamodb.turn_repository import TurnRepository
from kioku.domain.forgetting import snowflake_time
from kioku.domain.turn import TurnKey
from kioku.domain.turn_jobs import TurnSource
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.playground.standins import DropConnection, RecordedRequest
from kioku.relay.forwarder import (
    DEFAULT_BASE_DELAY_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_DELAY_SECONDS,
    RETRYABLE_CLIENT_STATUSES,
)
from kioku.signatures import sign_request

GUILD = "200000000000000001"
CHANNELS = 50
PEOPLE = 200
POSTERS = 8
IDLE_POLL_SECONDS = 0.05
MOTO_SERVER = """
import logging, threading
from bench.memory import faster_moto
from kioku.playground.aws import MotoServer
logging.disable(logging.CRITICAL)
with faster_moto(), MotoServer() as moto:
    print(moto.url, flush=True)
    threading.Event().wait()
"""
"""moto's server, with the memory bench's faster transactions, queries and answers (the same answers:
tests/unit/test_memory_bench.py): moto's own copies the whole table for every transaction, so turns
slowed as the table grew, to 1.5 s each by the thousandth message."""


def main() -> None:
    messages = int(os.environ.get("LOAD_MESSAGES", "1000"))
    workers = int(os.environ.get("LOAD_WORKERS", "4"))
    deadline = time.monotonic() + float(os.environ.get("LOAD_DEADLINE_SECONDS", "600"))
    visibility = int(os.environ.get("LOAD_VISIBILITY_SECONDS", "120"))
    kill_at_reply = int(os.environ.get("LOAD_KILL_AT_REPLY", "0"))
    # moto in a process of its own (one request at a time, as the playground runs it), and the
    # scripted model, so the parent's time goes to the relay and the Discord stand-in only.
    quiet = {"LLM_PROVIDER": "scripted", "POWERTOOLS_METRICS_DISABLED": "true"}
    with _moto_process() as moto_url, LocalStack(moto_url=moto_url, extra_env=quiet) as stack:
        channels = [str(300000000000001000 + n) for n in range(CHANNELS)]
        for n, channel in enumerate(channels):
            stack.discord.seed_channel(channel, name=f"channel-{n}", guild_id=GUILD)
        people = [stack.discord.seed_user(f"member{n}", global_name=f"Member {n}") for n in range(PEOPLE)]
        for person in people:
            stack.discord.seed_member(GUILD, person)

        spawn = multiprocessing.get_context("spawn")
        done = spawn.Event()
        timings, taking = spawn.Queue(), spawn.Queue() if kill_at_reply else None
        pool = [
            spawn.Process(
                target=_work,
                args=(stack.resources.turn_queue_url, deadline, visibility, done, timings, taking),
            )
            for _ in range(workers)
        ]
        killer = _Killer(kill_at_reply, taking)
        if kill_at_reply:
            stack.discord.interceptor = killer.intercept
        started = time.perf_counter()
        for process in pool:
            process.start()
        triggers, retried = _relay(stack, channels, people, messages)
        done.set()
        worker_ms: list[float] = []
        for reported in itertools.count():
            if reported == len(pool) - len(killer.killed):  # a killed worker never reports
                break
            while True:
                try:
                    worker_ms += timings.get(timeout=1)
                    break
                except queue.Empty:
                    if time.monotonic() > deadline + 60:
                        raise SystemExit("load: the workers did not stop by the deadline") from None
        for process in pool:
            process.join(timeout=30)
        elapsed = time.perf_counter() - started

        completed = _completed(stack, triggers) if kill_at_reply else len(triggers)
        replies = Counter(
            posted["message_reference"]["message_id"]
            for channel in channels
            for posted in stack.discord.channel_messages(channel)
            if posted["author"]["id"] == stack.application_id and posted.get("message_reference")
        )
    answered = sum(1 for trigger in triggers if replies[trigger])
    doubled = sum(1 for count in replies.values() if count > 1)
    worker_ms.sort()
    print(
        f"load.messages={messages} channels={CHANNELS} people={PEOPLE} workers={workers} "
        f"(one moto server, scripted model, loopback)"
    )
    print(f"load.turns_per_second={len(worker_ms) / elapsed:.1f} (wall {elapsed:.1f} s)")
    print(f"load.replies={answered}/{messages}")
    print(f"load.relay_retries={retried} (posts RelayFunction answered 503 first, retried as the relay does)")
    print(f"load.doubled={doubled}")
    if kill_at_reply:
        print(
            f"load.killed={len(killer.killed)} (the worker posting reply {kill_at_reply}, once Discord took it)"
        )
        print(f"load.completed={completed}/{messages} (turns recorded done)")
    if worker_ms:
        p95 = worker_ms[min(int(len(worker_ms) * 0.95), len(worker_ms) - 1)]
        print(f"load.worker_ms p50={statistics.median(worker_ms):.1f} p95={p95:.1f} (n={len(worker_ms)})")
    if answered != messages or doubled or completed != messages:
        # one reply per message is the point of the test, not a figure to read past
        raise SystemExit(f"load: {answered}/{messages} messages answered, {doubled} answered twice")


@contextmanager
def _moto_process() -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-c", MOTO_SERVER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=10)


def _relay(stack: LocalStack, channels: list[str], people: list[dict], count: int) -> tuple[list[str], int]:
    """Post ``count`` messages as the gateway relay would, a few at a time, retrying what it retries
    (a 503 when the queue was not reached in time: moto serves one request at a time here) as often
    and as late as it does; their ids, and how many posts were retried."""
    url, key = stack.urls["relay"], stack.relay_signing_key
    retried = Counter[str]()

    def post(n: int) -> str:
        message = stack.discord.seed_message(
            channels[n % len(channels)], people[n % len(people)], f"<@{stack.application_id}> message {n}"
        )
        body = gateway_dispatch(message, GUILD, {"nick": None, "roles": []})
        for attempt in range(1, DEFAULT_MAX_ATTEMPTS + 1):
            headers = {"content-type": "application/json", **sign_request(key, body)}
            response = httpx.post(url, content=body, headers=headers, timeout=30)
            retryable = response.status_code in RETRYABLE_CLIENT_STATUSES or response.status_code >= 500
            if not retryable or attempt == DEFAULT_MAX_ATTEMPTS:
                break
            retried["posts"] += 1
            time.sleep(min(DEFAULT_MAX_DELAY_SECONDS, DEFAULT_BASE_DELAY_SECONDS * 2 ** (attempt - 1)))
        response.raise_for_status()
        return message["id"]

    with ThreadPoolExecutor(POSTERS) as posters:
        return list(posters.map(post, range(count))), retried["posts"]


class _Killer:
    """Kills the worker that posts the ``nth`` reply, right after Discord took it; the workers say
    (``taking``) which turn each is on."""

    def __init__(self, nth: int, taking: Any) -> None:
        self.nth, self.taking = nth, taking
        self.replies = 0
        self.working_on: dict[str, int] = {}
        self.killed: list[int] = []

    def intercept(self, when: str, request: RecordedRequest) -> None:
        reference = (request.body or {}).get("message_reference") if request.method == "POST" else None
        if when != "after" or not reference or self.killed:
            return
        self.replies += 1
        if self.replies != self.nth:
            return
        turn = str(reference["message_id"])
        while turn not in self.working_on:
            pid, taken = self.taking.get(timeout=30)
            self.working_on[taken] = pid
        self.killed.append(self.working_on[turn])
        handle = os.pidfd_open(self.working_on[turn])
        try:
            signal.pidfd_send_signal(handle, signal.SIGKILL)
            select.select([handle], [], [], 30)  # readable once the worker is dead
        finally:
            os.close(handle)
        raise DropConnection


def _work(queue_url: str, deadline: float, visibility: int, done: Any, timings: Any, taking: Any) -> None:
    """One TurnFunction container: take a message, run the handler, delete it or let it come back.
    It stops once ``done`` is set and the queue holds nothing, visible or in flight."""
    import boto3

    from kioku.playground.functions import LambdaContext, load_handler
    from kioku.playground.stack import LocalStack

    logging.disable(logging.CRITICAL)
    handler = load_handler("turn")
    sqs = boto3.client("sqs")
    spent: list[float] = []
    while time.monotonic() < deadline:
        # No long polling: the moto server answers one request at a time.
        received = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=1, AttributeNames=["All"], VisibilityTimeout=visibility
        ).get("Messages", [])
        if not received:
            if done.is_set() and _drained(sqs, queue_url):
                break
            time.sleep(IDLE_POLL_SECONDS)
            continue
        if taking is not None:
            taking.put((os.getpid(), json.loads(received[0]["Body"])["turn_id"]))
        started = time.perf_counter()
        response = handler(LocalStack.sqs_event(received), LambdaContext())
        spent.append((time.perf_counter() - started) * 1000)
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
        for message in received:
            if message["MessageId"] in failed:
                sqs.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    timings.put(spent)


def _completed(stack: LocalStack, triggers: list[str]) -> int:
    """How many of the turns of ``triggers`` are recorded done."""
    table = KiokuTable(stack.resources.table_name)
    turns = TurnRepository(table, StmStore(table), DynamoMemoryStore(table))
    keys = [TurnKey(TurnSource.MESSAGE.value, turn, "", snowflake_time(turn)) for turn in triggers]
    return sum(1 for key in keys if turns.done(key) is not None)


def _drained(sqs: Any, queue_url: str) -> bool:
    counts = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return not any(int(count) for count in counts.values())


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    main()
