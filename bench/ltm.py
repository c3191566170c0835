"""Long-term memory bench: DynamoDB requests per memory save, and the recall stage's time.

Runs on in-process moto, so the times measure kioku plus moto's Python emulation, not DynamoDB.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from datetime import UTC, datetime

import boto3
from moto import mock_aws

from kioku.adapters.dynamodb.keys import book_key
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore, book_entry, entry_attribute, memory_to_item
from kioku.adapters.dynamodb.table import KiokuTable, to_wire
from kioku.config import Settings
from kioku.discord.models import Member, User
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.ltm.recall import build_recall, recall_subjects
from kioku.domain.models import Participant, ServerConfig, UserProfile
from kioku.domain.privacy import Origin
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.playground.aws import create_local_resources
from kioku.services.ltm import create_long_term_memory, recall_context

SERVER = "500"
HERE = Origin(SERVER, "700", private=False)
MEMORIES_PER_SCOPE = 100
RECALL_RUNS = 20
RENDER_RUNS = 200
BATCH_WRITE_LIMIT = 25
PEOPLE = (
    Participant("101", "alice", global_name="Alice"),
    Participant("102", "bob", global_name="Bob"),
    Participant("103", "carol", global_name="Carol"),
)


def main() -> None:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        resources = create_local_resources(dynamodb, boto3.client("sqs", region_name="us-east-1"))
        calls: Counter[str] = Counter()
        dynamodb.meta.events.register("before-call.dynamodb", lambda model, **_: calls.update([model.name]))
        store = DynamoMemoryStore(KiokuTable(resources.table_name, client=dynamodb))
        settings = _settings(resources.table_name)
        turn = _turn()

        server_calls = _requests_for(
            calls, lambda: _save(turn, store, settings, {"memory_scope": "server_wide"})
        )
        personal_calls = _requests_for(
            calls, lambda: _save(turn, store, settings, {"memory_scope": "target_user", "target_user": "Bob"})
        )
        print(
            f"ltm.create_requests server={sum(server_calls.values())} personal={sum(personal_calls.values())}"
        )
        print(f"ltm.create_operations server={_describe(server_calls)} personal={_describe(personal_calls)}")

        _fill(dynamodb, resources.table_name)
        subjects = recall_subjects(turn)

        def read() -> RecallSet:
            return store.recall(
                SERVER, 1, [s.user_id for s in subjects], place=turn.place, policy=turn.config.privacy
            )

        recall_calls = _requests_for(calls, lambda: recall_context(turn, read()))
        median, p95 = _time(lambda: recall_context(turn, read()), RECALL_RUNS)
        print(
            f"ltm.recall_us median={median:.0f} p95={p95:.0f} requests={sum(recall_calls.values())} "
            "memories=100+3x100 (store on in-process moto + render)"
        )
        loaded = read()
        item = build_recall(turn, loaded.server, loaded.personal, subjects).item
        median, p95 = _time(lambda: build_recall(turn, loaded.server, loaded.personal, subjects), RENDER_RUNS)
        print(
            f"ltm.recall_render_us median={median:.0f} p95={p95:.0f} chars={len(item.content) if item else 0}"
        )


def _time(action, runs: int) -> tuple[float, float]:
    """Median and 95th percentile of ``action`` in microseconds."""
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        timings.append((time.perf_counter() - started) * 1e6)
    timings.sort()
    return statistics.median(timings), timings[max(int(len(timings) * 0.95) - 1, 0)]


def _save(turn: TurnContext, store: DynamoMemoryStore, settings: Settings, scope: dict[str, str]) -> None:
    arguments = {"memory_content": f"{{user}} benchmarked at {time.perf_counter_ns()}", **scope}
    result = create_long_term_memory(
        arguments,
        turn,
        store=store,
        members=_EveryoneAMember(),
        settings=settings,
    )
    if not result.ok:
        raise SystemExit(f"bench save failed: {result.status}")


class _EveryoneAMember:
    """The bench's member directory: no search, and everyone asked about is a member."""

    def search(self, guild_id: str, query: str) -> list[Member]:
        return []

    def member(self, guild_id: str, user_id: str) -> Member:
        return Member(user=User(id=user_id, username=user_id))


def _fill(dynamodb, table_name: str) -> None:
    """Write the memories and their books directly in batches: only recall is timed, and moto copies
    the whole table for every transaction, so saving them one by one would take half a minute."""
    now = datetime.now(UTC)
    scopes = [MemoryScope.server(SERVER, 1)] + [MemoryScope.personal(p.user_id, 1) for p in PEOPLE]
    items = []
    for scope in scopes:
        book = book_key(scope).as_item()
        for i in range(MEMORIES_PER_SCOPE):
            draft = MemoryDraft(
                scope, f"{{user}} fact number {i}: " + "detail " * 12, "101", now, origin=HERE
            )
            memory_id = str(10000 + i)
            items.append(memory_to_item(draft, memory_id, ""))
            book[entry_attribute(memory_id)] = book_entry(draft.saved_as(memory_id))
        items.append(book)
    for start in range(0, len(items), BATCH_WRITE_LIMIT):
        chunk = items[start : start + BATCH_WRITE_LIMIT]
        dynamodb.batch_write_item(
            RequestItems={table_name: [{"PutRequest": {"Item": to_wire(i)}} for i in chunk]}
        )


def _requests_for(calls: Counter[str], action) -> Counter[str]:
    before = Counter(calls)
    action()
    return calls - before


def _describe(calls: Counter[str]) -> str:
    return "+".join(f"{name}x{count}" if count > 1 else name for name, count in sorted(calls.items()))


def _settings(table_name: str) -> Settings:
    return Settings.model_validate(
        {
            "TABLE_NAME": table_name,
            "TURN_QUEUE_URL": "https://sqs.local/queue.fifo",
            "DISCORD_APPLICATION_ID": "900",
            "DISCORD_PUBLIC_KEY": "0" * 64,
            "RELAY_PUBLIC_KEY": "1" * 64,
        }
    )


def _turn() -> TurnContext:
    return TurnContext(
        guild_id=SERVER,
        channel_id="700",
        user=PEOPLE[0],
        bot=BotIdentity(user_id="900", username="kioku"),
        config=ServerConfig(guild_id=SERVER),
        profile=UserProfile(PEOPLE[0].user_id),
        now=datetime.now(UTC),
        participants=PEOPLE,
        channel_private=False,
        author_ids=frozenset(person.user_id for person in PEOPLE),
    )


if __name__ == "__main__":
    main()
