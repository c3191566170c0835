"""``make scaling``: what a turn costs and where the limits are, measured on the local stack.

Every AWS request the functions make is recorded while a few representative turns run (the real
handlers on moto, the relay's signed POST, a stand-in model), DynamoDB's read and write units are
worked out from the sizes of the items read and written (DynamoDB's own rounding rules), and the
figures are turned into requests, units and dollars per 1,000 turns at on-demand list prices.
``docs/scaling.md`` is rendered from those figures only: ``--write`` regenerates it, ``--check``
fails when it is out of date (the tests run the check).

``python -m scripts.scaling [--write | --check]``
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from botocore.client import BaseClient

DOC = Path(__file__).resolve().parents[1] / "docs" / "scaling.md"
FIGURES_MARK = "<!-- figures: "

# On-demand list prices, us-east-1, as published in 2025 (USD). Inputs, not measurements.
PRICE_DATE = "2025"
DYNAMODB_PER_MILLION_READ_UNITS = 0.125
DYNAMODB_PER_MILLION_WRITE_UNITS = 0.625
LAMBDA_PER_MILLION_REQUESTS = 0.20
LAMBDA_ARM64_PER_GB_SECOND = 0.0000133334
SQS_FIFO_PER_MILLION_REQUESTS = 0.50
LOGS_INGESTION_PER_GB = 0.50

# Durations: the model dominates a turn and differs per provider, so it is an assumption; kioku's
# own work is measured by `make bench` (turn.worker_ms_outside_dynamodb) and DynamoDB's latency is
# AWS's, not moto's.
ASSUMED_MODEL_SECONDS = 3.0
ASSUMED_TURN_OVERHEAD_SECONDS = 0.25  # Discord REST, DynamoDB and kioku's own work around the model
ASSUMED_RELAY_SECONDS = 0.05
MODEL_PROMPT_TOKENS, MODEL_ANSWER_TOKENS = 1500, 200
MODEL_PER_MILLION_PROMPT_TOKENS, MODEL_PER_MILLION_ANSWER_TOKENS = 0.15, 0.60  # gpt-4o-mini's list price
QUEUE_POLLERS, POLLS_PER_POLLER_MINUTE = 5, 3  # Lambda's SQS pollers, 20-second long polls
TURN_MEMORY_GB = 1.0  # template: TurnFunction MemorySize 1024
HTTP_MEMORY_GB = 0.5  # template: Globals MemorySize 512

EVENTS = {
    "plain_turn": "a turn (plain answer)",
    "memory_save": "a turn that saves a long-term memory",
    "summary_refresh": "a turn that refreshes the channel summary",
    "ignored_message": "a relayed message not for the bot",
    "turn_at_the_limits": "a turn with full memory (a full channel row, 100 memories of 1,000 characters)",
}
GUILD, CHANNEL, OTHER = "200000000000000001", "300000000000000001", "300000000000000002"
WARM_UP_TURNS = 6


@dataclass
class Cost:
    """What one event costs in requests and units."""

    dynamodb: dict[str, int] = field(default_factory=dict)
    read_units: float = 0.0
    write_units: float = 0.0
    sqs: dict[str, int] = field(default_factory=dict)
    invocations: dict[str, int] = field(default_factory=dict)
    log_bytes: int = 0


@dataclass
class Figures:
    plain_turn: Cost
    memory_save: Cost
    summary_refresh: Cost
    ignored_message: Cost
    turn_at_the_limits: Cost
    """A plain turn once the channel row is full and the server has its limit of the longest memories."""
    largest_items: dict[str, int]


# -- measuring ----------------------------------------------------------------------------------------


class Recorder:
    """Every AWS call made in this process while ``recording`` (the stand-ins share the process)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
        self._quiet = threading.local()
        self._original = BaseClient._make_api_call

    def install(self) -> None:
        recorder = self

        def recording(client, operation, params):
            result = recorder._original(client, operation, params)
            if not getattr(recorder._quiet, "on", False):
                recorder.calls.append(
                    (client.meta.service_model.service_name, operation, dict(params), result)
                )
            return result

        BaseClient._make_api_call = recording

    def uninstall(self) -> None:
        BaseClient._make_api_call = self._original

    @contextmanager
    def unrecorded(self) -> Iterator[None]:
        self._quiet.on = True
        try:
            yield
        finally:
            self._quiet.on = False


def item_size(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it: names plus values (wire format)."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, data), *_ = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "N":
        digits = data.lstrip("-").replace(".", "").strip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(v.encode()) for v in data)
    if kind == "NS":
        return sum(_value_size({"N": v}) for v in data)
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in data)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + _value_size(v) for k, v in data.items())
    raise ValueError(f"unknown DynamoDB type {kind}")


def _reads(units_of: int, consistent: bool) -> float:
    return units_of * (1.0 if consistent else 0.5)


def dynamodb_units(calls: list[tuple[str, str, dict, dict]], current_size) -> tuple[float, float]:
    """Read and write units of ``calls``; ``current_size(table, key)`` sizes an item as it is now."""
    reads = writes = 0.0
    for service, operation, params, result in calls:
        if service != "dynamodb":
            continue
        if operation == "GetItem":
            size = item_size(result.get("Item") or {})
            reads += _reads(max(1, math.ceil(size / 4096)), params.get("ConsistentRead", False))
        elif operation == "BatchGetItem":
            for table, request in params["RequestItems"].items():
                found = result.get("Responses", {}).get(table, [])
                consistent = request.get("ConsistentRead", False)
                reads += sum(_reads(max(1, math.ceil(item_size(i) / 4096)), consistent) for i in found)
                reads += _reads(len(request["Keys"]) - len(found), consistent)
        elif operation == "Query":
            size = sum(item_size(i) for i in result.get("Items", []))
            reads += _reads(max(1, math.ceil(size / 4096)), params.get("ConsistentRead", False))
        elif operation == "PutItem":
            writes += max(1, math.ceil(item_size(params["Item"]) / 1024))
        elif operation in ("UpdateItem", "DeleteItem"):
            writes += max(1, math.ceil(current_size(params["TableName"], params["Key"]) / 1024))
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                (kind, request), *_ = entry.items()
                if kind == "Put":
                    size = item_size(request["Item"])
                elif kind == "ConditionCheck":
                    reads += 2 * max(1, math.ceil(current_size(request["TableName"], request["Key"]) / 4096))
                    continue
                else:
                    size = current_size(request["TableName"], request["Key"])
                writes += 2 * max(1, math.ceil(size / 1024))
    return reads, writes


def measure() -> Figures:
    from kioku import clock
    from kioku.observability import logger
    from kioku.playground.stack import LocalStack, gateway_dispatch
    from kioku.playground.standins import OpenAIStandIn, completion_body
    from kioku.signatures import sign_request

    replies: list[dict[str, Any]] = []

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return replies.pop(0) if replies else completion_body("Sounds good.")

    recorder = Recorder()
    log_buffer = io.StringIO()
    with (
        OpenAIStandIn(responder=respond) as llm,
        LocalStack(
            llm_base_url=llm.base_url,
            extra_env={"TURN_RATE_LIMIT_PER_MINUTE": "1000", "LLM_API_KEY": "stand-in-key"},
        ) as stack,
    ):
        import boto3

        raw = boto3.client("dynamodb")
        stack.discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        stack.discord.seed_channel(OTHER, name="random", guild_id=GUILD)
        people = [stack.discord.seed_user(f"member{n}", global_name=f"Member {n}") for n in range(3)]
        for person in people:
            stack.discord.seed_member(GUILD, person)

        def current_size(table: str, key: dict[str, Any]) -> int:
            with recorder.unrecorded():
                return item_size(
                    raw.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item") or {}
                )

        def relay(text: str, author: dict[str, Any], channel: str = CHANNEL) -> None:
            message = stack.discord.seed_message(channel, author, text)
            body = gateway_dispatch(message, GUILD, {"nick": None, "roles": []})
            headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
            httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=30).raise_for_status()

        def turn(text: str, author: dict[str, Any], channel: str = CHANNEL) -> None:
            # a minute a message: each turn is counted in a rate minute of its own, however slowly
            # the machine runs (the rate item's size is measured at its limit, below)
            clock.advance(timedelta(minutes=1))
            relay(f"<@{stack.application_id}> {text}", author, channel)
            for batch in stack.deliver_turns():
                if batch.get("batchItemFailures"):
                    raise RuntimeError(f"a measured turn failed: {batch}")

        @contextmanager
        def costing(into: Cost, invocations: dict[str, int]) -> Iterator[None]:
            recorder.calls.clear()
            log_buffer.seek(0)
            log_buffer.truncate()
            with redirect_stdout(log_buffer):  # the EMF metric lines are log lines too
                yield
            calls = [c for c in recorder.calls if not _empty_receive(c)]
            into.dynamodb = dict(Counter(op for service, op, _, _ in calls if service == "dynamodb"))
            into.sqs = dict(Counter(op for service, op, _, _ in calls if service == "sqs"))
            into.read_units, into.write_units = dynamodb_units(calls, current_size)
            into.invocations = invocations
            into.log_bytes = len(log_buffer.getvalue().encode())

        with redirect_stdout(io.StringIO()):
            for n in range(WARM_UP_TURNS):  # a channel with history, the other channel remembered
                turn(f"warming up {n}", people[n % 3], OTHER if n % 2 else CHANNEL)

        previous = logger.registered_handler.setStream(log_buffer)
        recorder.install()
        try:
            figures = Figures(Cost(), Cost(), Cost(), Cost(), Cost(), {})
            with costing(figures.plain_turn, {"RelayFunction": 1, "TurnFunction": 1}):
                turn("what are we doing this weekend?", people[0])
            replies.append(
                completion_body(
                    tool_calls=[
                        (
                            "create_long_term_memory",
                            {"memory_content": "The picnic is on Saturday.", "memory_scope": "server_wide"},
                        )
                    ]
                )
            )
            with costing(figures.memory_save, {"RelayFunction": 1, "TurnFunction": 1}):
                turn("remember that the picnic is on saturday", people[1])
            replies.append(
                completion_body(
                    tool_calls=[
                        ("update_short_term_memory", {"summary": "Members plan a picnic on Saturday."})
                    ]
                )
            )
            with costing(figures.summary_refresh, {"RelayFunction": 1, "TurnFunction": 1}):
                turn("who brings drinks?", people[2])
            with costing(figures.ignored_message, {"RelayFunction": 1}):
                relay("just chatting among ourselves", people[0])
        finally:
            recorder.uninstall()
            logger.registered_handler.setStream(previous)
        with redirect_stdout(io.StringIO()):
            _fill_to_the_limits(stack, turn, people)
        recorder.install()
        try:
            with costing(figures.turn_at_the_limits, {"RelayFunction": 1, "TurnFunction": 1}):
                turn("what do you remember about this server?", people[0])
        finally:
            recorder.uninstall()
        figures.largest_items = _largest_items(raw, stack.resources.table_name)
    return figures


def _fill_to_the_limits(stack, turn, people: list[dict[str, Any]]) -> None:
    """The largest items kioku writes: a channel row full of the longest messages, a person's rate
    minute at the default limit, and a server's memory books with as many of the longest memories as
    the limit allows."""
    from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
    from kioku.adapters.dynamodb.table import KiokuTable
    from kioku.adapters.dynamodb.turn_ledger import RateLedger
    from kioku.config import Settings, get_settings
    from kioku.domain.ltm.memory import MemoryDraft, MemoryScope

    settings = get_settings()
    for n in range(settings.SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL):
        turn(f"{n} " + "long message " * 150, people[n % 3])
    table = KiokuTable(stack.resources.table_name)
    limit = Settings.model_fields["TURN_RATE_LIMIT_PER_MINUTE"].default
    sent_at = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(limit + 1):  # one person's minute at the default limit: the turns it counted
        RateLedger(table).take(people[0]["id"], str(1_460_000_000_000_000_000 + n), sent_at, limit)
    store = DynamoMemoryStore(table)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(settings.MAX_SERVER_MEMORIES - 1):  # one is saved by the measured turn
        content = f"{n} " + "x" * (settings.MAX_MEMORY_LENGTH - 6)
        draft = MemoryDraft(
            MemoryScope.server(GUILD, 1), content, people[0]["id"], start + timedelta(minutes=n)
        )
        store.create(draft, limit=settings.MAX_SERVER_MEMORIES)


def _empty_receive(call: tuple[str, str, dict, dict]) -> bool:
    """The poller's receive that finds the queue empty: Lambda's long polling, a fixed cost."""
    service, operation, _, result = call
    return service == "sqs" and operation == "ReceiveMessage" and not result.get("Messages")


def _largest_items(client, table: str) -> dict[str, int]:
    """The biggest item of each kind in the table after the measured turns (by its key's prefix)."""
    largest: dict[str, int] = defaultdict(int)
    for page in client.get_paginator("scan").paginate(TableName=table):
        for item in page["Items"]:
            kind = item["pk"]["S"].split("#", 1)[0] + " / " + item["sk"]["S"].split("#", 1)[0]
            largest[kind] = max(largest[kind], item_size(item))
    return dict(sorted(largest.items()))


# -- rendering ----------------------------------------------------------------------------------------


def dollars_per_1000(cost: Cost, *, turn_seconds: float) -> dict[str, float]:
    lambda_requests = sum(cost.invocations.values())
    gb_seconds = (
        cost.invocations.get("TurnFunction", 0) * TURN_MEMORY_GB * turn_seconds
        + cost.invocations.get("RelayFunction", 0) * HTTP_MEMORY_GB * ASSUMED_RELAY_SECONDS
    )
    return {
        "DynamoDB": 1000
        * (
            cost.read_units * DYNAMODB_PER_MILLION_READ_UNITS
            + cost.write_units * DYNAMODB_PER_MILLION_WRITE_UNITS
        )
        / 1e6,
        "Lambda requests": 1000 * lambda_requests * LAMBDA_PER_MILLION_REQUESTS / 1e6,
        "Lambda compute": 1000 * gb_seconds * LAMBDA_ARM64_PER_GB_SECOND,
        "SQS": 1000 * sum(cost.sqs.values()) * SQS_FIFO_PER_MILLION_REQUESTS / 1e6,
        "Logs": 1000 * cost.log_bytes * LOGS_INGESTION_PER_GB / 1e9,
    }


def render(figures: Figures) -> str:
    turn_seconds = ASSUMED_MODEL_SECONDS + ASSUMED_TURN_OVERHEAD_SECONDS
    rows = [(label, getattr(figures, event)) for event, label in EVENTS.items()]
    plain = dollars_per_1000(figures.plain_turn, turn_seconds=turn_seconds)
    model_per_1000 = (
        1000
        * (
            MODEL_PROMPT_TOKENS * MODEL_PER_MILLION_PROMPT_TOKENS
            + MODEL_ANSWER_TOKENS * MODEL_PER_MILLION_ANSWER_TOKENS
        )
        / 1e6
    )
    idle_polls = QUEUE_POLLERS * POLLS_PER_POLLER_MINUTE * 60 * 24 * 30
    lines = [
        "# Capacity and cost",
        "",
        "Generated by `make scaling` (`scripts/scaling.py`) from requests measured on the local stack:",
        "every AWS request the real handlers make while representative turns run is recorded, and",
        "DynamoDB's units are worked out from the sizes of the items read and written. Do not edit by",
        "hand; the tests fail when this file and the measurement disagree.",
        "",
        "## Requests per event",
        "",
        "| event | DynamoDB requests | read units | write units | SQS requests | Lambda invocations | log bytes |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, cost in rows:
        lines.append(
            f"| {label} | {_ops(cost.dynamodb)} | {cost.read_units:g} | {cost.write_units:g} | "
            f"{_ops(cost.sqs)} | {_ops(cost.invocations)} | {cost.log_bytes:,} |"
        )
    lines += [
        "",
        "SQS counts the relay's `SendMessage` and the Lambda poller's `ReceiveMessage` and `DeleteMessage`.",
        f"The pollers' empty long polls are a fixed cost left out here: assuming {QUEUE_POLLERS} pollers × "
        f"{POLLS_PER_POLLER_MINUTE} a minute are {idle_polls:,} requests, ${idle_polls * SQS_FIFO_PER_MILLION_REQUESTS / 1e6:.2f},",
        "a month. A slash command costs one InteractionsFunction invocation; a PING touches nothing else.",
        "",
        f"## Dollars per 1,000 turns (on-demand list prices, us-east-1, {PRICE_DATE})",
        "",
        f"Assumed: {ASSUMED_MODEL_SECONDS:g} s in the model per turn and {ASSUMED_TURN_OVERHEAD_SECONDS:g} s of everything",
        f"else around it (TurnFunction at {TURN_MEMORY_GB:g} GB, arm64), {ASSUMED_RELAY_SECONDS:g} s per RelayFunction call.",
        "The model's own price is separate and usually the largest line: at",
        f"{MODEL_PROMPT_TOKENS:,} prompt and {MODEL_ANSWER_TOKENS:,} answer tokens a turn and "
        f"${MODEL_PER_MILLION_PROMPT_TOKENS:.2f}/${MODEL_PER_MILLION_ANSWER_TOKENS:.2f} per million tokens, "
        f"${model_per_1000:.2f} per 1,000 turns.",
        "",
        "| event | DynamoDB | Lambda requests | Lambda compute | SQS | Logs | total |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, cost in rows:
        dollars = dollars_per_1000(cost, turn_seconds=turn_seconds)
        cells = " | ".join(f"${value:.4f}" for value in dollars.values())
        lines.append(f"| {label} | {cells} | **${sum(dollars.values()):.4f}** |")
    turns_per_second = 1000 / 60
    concurrency = math.ceil(turns_per_second * turn_seconds)
    lines += [
        "",
        "## The largest items",
        "",
        "The biggest item of each kind after the measured turns and the fill to the limits, in bytes as",
        "DynamoDB counts them (the limit is 400 KB; reads cost a unit per 4 KB, writes a unit per 1 KB):",
        "",
        "| partition / sort key prefix | bytes |",
        "|---|---|",
        *[f"| `{kind}` | {size:,} |" for kind, size in figures.largest_items.items()],
        "",
        "A channel's short-term memory row grows with its raw lines (at most",
        "`SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL`, 10, each up to the message length kept) and its",
        "summary (`SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH`, 1,500 characters) or categories: a few KB at most,",
        "so one turn's capture stays a handful of write units. The long-term memory books grow with the",
        "number of memories of a scope (`MAX_SERVER_MEMORIES`, `MAX_PERSONAL_MEMORIES`, 100 each, up to",
        "`MAX_MEMORY_LENGTH` characters): 100 memories of 1,000 characters are about 100 KB of books, read",
        "at a unit per 4 KB on every turn that recalls them. That recall read is the item to watch.",
        "",
        "## Hot keys",
        "",
        "- **One busy channel** is one short-term memory row (one conditional write per turn) and one",
        "  FIFO message group: its turns run one after another, so a channel's ceiling is one turn per",
        f"  turn duration, about {60 / turn_seconds:.0f} turns a minute at {turn_seconds:g} s a turn. DynamoDB's",
        "  per-partition limit (1,000 write units a second) is far above that.",
        "- **One busy server** reads its configuration and server-wide memory books on every turn:",
        "  eventually consistent reads of the same items, which DynamoDB spreads (3,000 read units a",
        "  second per partition).",
        "- **One busy person** has their rate counter (`TURN_RATE_LIMIT_PER_MINUTE`) and their personal",
        "  memory books; both are bounded by the rate limit.",
        "",
        "## The plan",
        "",
        "**1,000 turns a minute** (about 17 a second):",
        f"- TurnFunction concurrency of about {concurrency} ({turns_per_second:.1f} turns a second × "
        f"{turn_seconds:g} s): raise `TurnMaximumConcurrency` from 5 and check the account's",
        "  concurrency quota; the FIFO queue (300 messages a second per action without batching) is not the",
        "  limit, and neither is on-demand DynamoDB.",
        f"- DynamoDB: about {figures.plain_turn.read_units * turns_per_second:.0f} read and"
        f" {figures.plain_turn.write_units * turns_per_second:.0f} write units a second for plain turns.",
        f"- Cost: ${sum(plain.values()) * 60 * 24 * 30:,.0f} a month of AWS for plain turns at this rate,"
        " before the model.",
        "- The model provider's rate limits (requests and tokens a minute) bind first: plan them.",
        "",
        "**10,000 guilds**: Discord requires sharding past 2,500 guilds per connection; run the relay",
        "sharded (at least 4 shards, or Discord's recommended count) as separate processes",
        "(`deploy/relay/`). Everything behind the relay is per channel and per server, so it scales with",
        "the traffic, not with the number of guilds; idle guilds cost only their stored rows (the",
        "janitor removes short-term memory idle past `STM_JANITOR_RETENTION_DAYS`).",
        "",
        f"{FIGURES_MARK}{json.dumps(asdict(figures), sort_keys=True)} -->",
        "",
    ]
    return "\n".join(lines)


def _ops(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "—"


def out_of_date(measured: Figures, text: str) -> list[str]:
    """Why ``text`` is not the document of ``measured``: the figures differ (log bytes, which vary
    with timings, within a fifth), or the text is not what its own figures render."""
    if FIGURES_MARK not in text:
        return ["it has no figures"]
    documented = documented_figures(text)
    problems = []
    if render(_figures(documented)) != text:
        problems.append("the text is not what its figures render")
    now = asdict(measured)
    for event in EVENTS:
        for name, value in now[event].items():
            was = documented[event][name]
            close = value == was if name in ("dynamodb", "sqs", "invocations") else _near(value, was)
            if not close:
                problems.append(f"{event}.{name}: documented {was}, measured {value}")
    sizes_now, sizes_then = now["largest_items"], documented["largest_items"]
    if sizes_now.keys() != sizes_then.keys() or not all(
        _near(sizes_now[k], sizes_then[k]) for k in sizes_now
    ):
        problems.append(
            f"largest items: documented {documented['largest_items']}, measured {now['largest_items']}"
        )
    return problems


def _near(value: float, documented: float) -> bool:
    """Sizes, units and log bytes move a little with timestamps and timings; a fifth is a change."""
    return abs(value - documented) <= 0.2 * max(documented, 1)


def _figures(data: dict[str, Any]) -> Figures:
    costs = {name: Cost(**value) for name, value in data.items() if name != "largest_items"}
    return Figures(**costs, largest_items=data["largest_items"])


def documented_figures(text: str) -> dict[str, Any]:
    start = text.index(FIGURES_MARK) + len(FIGURES_MARK)
    return json.loads(text[start : text.index(" -->", start)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.scaling", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="regenerate docs/scaling.md")
    mode.add_argument("--check", action="store_true", help="fail when docs/scaling.md is out of date")
    options = parser.parse_args(argv)
    figures = measure()
    text = render(figures)
    if options.write:
        DOC.write_text(text)
        print(f"wrote {DOC}")
    elif options.check:
        problems = out_of_date(figures, DOC.read_text() if DOC.exists() else "")
        if problems:
            print(
                "docs/scaling.md is out of date (run make scaling):", *problems, sep="\n  ", file=sys.stderr
            )
            return 1
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
