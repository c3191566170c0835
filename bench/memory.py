"""Memory bench: does a long-lived server's recall still carry what answers the question?

A months-long conversation between a few people in several channels (``bench.memory_conversation``:
facts, corrections said in other words, near misses, facts about two people, events that look
alike, chatter) is played through the real stack, on in-process moto with a Discord stand-in and a
model stand-in, both real HTTP servers on 127.0.0.1:

- every memory is saved as the model saves it when it is said: the ``create_long_term_memory``
  tool's executor, with the turn's recall read first (its near-duplicate check reads it), its
  limits and its book writes, and the embedding of its text when embeddings are on;
- every question is then a real turn (``TurnService``: the channel's history from Discord, the one
  BatchGetItem, recall within ``LTM_RECALL_BUDGET_CHARS``, the system prompt, the tools), answered
  by a stand-in model that calls ``search_long_term_memory`` with the question whenever it is
  offered, and records every request. Evidence recall is read off what the model was sent.

Every size is asked twice, by words alone and with embeddings (the stand-in server, or a real
endpoint given ``--embeddings-model``), on the same saved memories. docs/memory.md explains the
format (``--conversation FILE`` measures any conversation) and the numbers.

    python -m bench.memory [--conversation FILE] [--write FILE --memories N] [--sizes 20,200]
                           [--embeddings-model NAME --embeddings-base-url URL]
"""

from __future__ import annotations

import argparse
import base64
import copy
import gc
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
from moto import mock_aws
from moto.core.serialize import BaseJSONSerializer
from moto.dynamodb import models as moto_dynamodb
from moto.dynamodb.models.dynamo_type import Item as MotoItem
from moto.dynamodb.models.table import Table as MotoTable
from moto.dynamodb.responses import DynamoHandler

from bench import memory_facts, memory_replay, ranking_cold
from bench.memory_conversation import (
    Conversation,
    Question,
    conversation_json,
    generate,
    read_conversation,
)
from kioku.adapters.discord_rest import DiscordRest
from kioku.adapters.dynamodb.ltm_store import BookLayout, DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable
from kioku.adapters.dynamodb.turn_repository import TurnRepository
from kioku.adapters.guild_directory import GuildDirectory
from kioku.adapters.llm.embeddings import OpenAIEmbeddings
from kioku.adapters.llm.registry import make_chat_model
from kioku.config import Settings
from kioku.discord.models import parse_message
from kioku.domain.ltm import recall as recall_module
from kioku.domain.ltm.memory import Memory, MemoryScope
from kioku.domain.ltm.ports import Embedder
from kioku.domain.ltm.ranking import RecallQuery, similarity
from kioku.domain.ltm.recall import build_recall, fact_words, recall_subjects
from kioku.domain.ltm.tools import SEARCH_TOOL_NAME
from kioku.domain.ltm.vectors import DIMENSIONS, cosine, embedded_text, quantise
from kioku.domain.models import Participant, ServerConfig, UserProfile
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.domain.turn_jobs import TurnJob
from kioku.playground.aws import create_table, load_template
from kioku.playground.standins import (
    DiscordStandIn,
    EmbeddingsStandIn,
    OpenAIStandIn,
    completion_body,
    standin_embedding,
)
from kioku.services import ltm, ltm_saving
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.turn import TurnService
from kioku.services.turn_conversation import GuildMembers

SIZES = (20, 200, 1000)
BUDGET = 8_000
SMALL_BUDGET = 1_000
"""A tight budget (about a dozen memories) to tell rankings apart where the default holds most."""
SEED_BUDGET = 24_000
"""The seed's recall: every memory, newest first, until 24,000 characters."""
SCOPE_LIMIT = 1_000
GUILD = "500000000000000001"
BOT = BotIdentity(user_id="900000000000000001", username="kioku")
FIRST_MEMORY_ID = 10_000
"""Memory ids are numbered from here, unique across scopes, so an id the model was sent names one memory."""
MEMORY_LINE = re.compile(r"^\[#(\d+)\] ", re.MULTILINE)
RECALL_HEADER = "Long-term memories:"
ANSWER = "Noted."
TURN_SECONDS = 60.0
LINEAGE = 1
RANKING_TARGET_MS = 5.0
"""Issue 20: ranking 1,000 memories by words, pure Python in the worker, within this."""


# -- the stack -----------------------------------------------------------------------------------------


@contextmanager
def faster_moto() -> Iterator[None]:
    """In-process moto as the bench needs it, the same answers in a fraction of the time:

    - moto keeps a deep copy of every table a transaction writes to, for each of its parts, to roll
      it back: a save into a table of a thousand memories costs seconds. Here a transaction keeps
      copies of the items it names (all it can change) and puts them back when it is refused: as
      atomic as before.
    - moto writes each attribute value of a response through its generic, shape-driven serializer,
      most of a turn's time on a big book. Here an attribute value is written as DynamoDB's JSON
      directly (binaries in base64, as moto's own serializer writes them; tests/unit/test_memory_bench.py
      checks both write the same).
    - moto sorts every item of the table before a Query picks the few of one key (and sorts those
      again). Here a Query takes them unsorted; the order it answers in is its own sort's, as before.
    - moto sizes every item a BatchGetItem answers, for its 16 MB cap on an answer: the bench's
      answers are far below it, and are not sized."""
    original_transact = moto_dynamodb.DynamoDBBackend.transact_write_items
    original_structure = BaseJSONSerializer._serialize_type_structure
    original_query = MotoTable.query
    original_batch_get = DynamoHandler.batch_get_item

    class _TablesKept:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, MotoTable) else copy.deepcopy(value, memo)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        kept = []
        for part in transact_items:
            kind, operation = next(iter(part.items()))
            table = self.get_table(operation["TableName"])
            keys = operation["Item"] if kind == "Put" else operation["Key"]
            hash_key, range_key = self.get_keys_value(table, keys)
            kept.append((table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key))))
        try:
            with mock.patch.object(moto_dynamodb, "copy", _TablesKept):
                original_transact(self, transact_items)
        except BaseException:
            for table, hash_key, range_key, item in reversed(kept):
                table.delete_item(hash_key, range_key)
                if item is not None:
                    table.items[hash_key][range_key] = item
            raise

    def serialize_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if shape.name == "AttributeValue" and key and isinstance(value, dict):
            serialized[key] = attribute_json(value)
            return
        original_structure(self, serialized, value, shape, key)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        items = [item for hashed in self.items.values() for item in hashed.values()]
        with mock.patch.object(self, "all_items", lambda: items):
            return original_query(self, *args, **kwargs)

    def batch_get_item(self: Any) -> Any:
        with mock.patch.object(MotoItem, "size", lambda item: 0):
            return original_batch_get(self)

    with (
        mock.patch.object(moto_dynamodb.DynamoDBBackend, "transact_write_items", transact_write_items),
        mock.patch.object(BaseJSONSerializer, "_serialize_type_structure", serialize_structure),
        mock.patch.object(MotoTable, "query", query),
        mock.patch.object(DynamoHandler, "batch_get_item", batch_get_item),
    ):
        yield


def attribute_json(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute value as moto holds it in a response (binaries as bytes), as DynamoDB's JSON."""
    ((kind, inner),) = value.items()
    if kind == "M":
        return {"M": {name: attribute_json(member) for name, member in inner.items()}}
    if kind == "L":
        return {"L": [attribute_json(member) for member in inner]}
    if kind == "B":
        return {"B": base64.b64encode(inner).decode()}
    if kind == "BS":
        return {"BS": [base64.b64encode(member).decode() for member in inner]}
    return {kind: inner}


@dataclass
class Stack:
    """One size's stack: a fresh table on in-process moto, the Discord and model stand-ins on
    127.0.0.1, the people of the conversation as Discord users, members of the bench's guild."""

    dynamodb: Any
    table: KiokuTable
    discord: DiscordStandIn
    rest: DiscordRest
    llm: OpenAIStandIn
    people: dict[str, Participant]
    authors: dict[str, dict[str, Any]]
    channels: dict[str, str]
    sent: list[dict[str, Any]] = field(default_factory=list)
    """Every request the model stand-in received, in order."""
    asked: str = ""
    """The question being asked: what the stand-in model searches for when it is offered the search."""

    def settings(self, budget: int) -> Settings:
        return Settings.model_validate(
            {
                "TABLE_NAME": self.table.name,
                "TURN_QUEUE_URL": "https://sqs.local/queue.fifo",
                "DISCORD_APPLICATION_ID": BOT.user_id,
                "DISCORD_PUBLIC_KEY": "0" * 64,
                "RELAY_PUBLIC_KEY": "1" * 64,
                "LLM_BASE_URL": self.llm.base_url,
                "LLM_MODEL": "stand-in",
                "MAX_SERVER_MEMORIES": SCOPE_LIMIT,
                "MAX_PERSONAL_MEMORIES": SCOPE_LIMIT,
                "LTM_RECALL_BUDGET_CHARS": budget,
            }
        )

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The stand-in model: search once when offered the search, then answer."""
        self.sent.append(body)
        offered = {tool["function"]["name"] for tool in body.get("tools") or ()}
        searched = any(message.get("role") == "tool" for message in body["messages"])
        if SEARCH_TOOL_NAME in offered and not searched:
            return completion_body(tool_calls=[(SEARCH_TOOL_NAME, {"query": self.asked})])
        return completion_body(ANSWER)


@contextmanager
def local_stack(conversation: Conversation, name: str) -> Iterator[Stack]:
    template = load_template()
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_table(dynamodb, template, name)
    discord = DiscordStandIn(bot_user_id=BOT.user_id, bot_username=BOT.username)
    holder: list[Stack] = []
    llm = OpenAIStandIn(responder=lambda body: holder[0].answer(body))
    with discord, llm:
        names = dict.fromkeys(
            [u.speaker for u in conversation.utterances] + [q.speaker for q in conversation.questions]
        )
        authors, people = {}, {}
        for n, person in enumerate(names):
            username = re.sub(r"\W+", "_", person.lower()).strip("_") or f"user{n}"
            author = discord.seed_user(username, user_id=str(400000000000000000 + n), global_name=person)
            discord.seed_member(GUILD, author)
            authors[person] = author
            people[person] = Participant(author["id"], username, global_name=person)
        channels = {}
        used = [u.channel for u in conversation.utterances] + [q.channel for q in conversation.questions]
        for n, channel in enumerate(dict.fromkeys(used)):
            channels[channel] = str(300000000000000000 + n)
            discord.seed_channel(channels[channel], name=channel, guild_id=GUILD)
        stack = Stack(
            dynamodb,
            KiokuTable(name, client=dynamodb),
            discord,
            DiscordRest(discord.base_url, discord.token),
            llm,
            people,
            authors,
            channels,
        )
        holder.append(stack)
        try:
            yield stack
        finally:
            dynamodb.delete_table(TableName=name)


# -- saving: the tool's executor, as each memory was said ------------------------------------------------


@dataclass
class Saved:
    ids: dict[str, str]
    """The memory id each utterance's memory has (the one it was saved as, or already remembered as)."""
    statuses: Counter[str]
    seconds: float
    cpu_seconds: float


def save_conversation(stack: Stack, conversation: Conversation, embedder: Embedder | None) -> Saved:
    """Seed each utterance into its Discord channel and save its memory through
    ``create_long_term_memory``, as the model calls it in the turn that answers it."""
    settings = stack.settings(BUDGET)
    numbers = itertools.count(FIRST_MEMORY_ID)
    store = DynamoMemoryStore(
        stack.table, new_id=lambda: str(next(numbers)), layout=BookLayout.from_settings(settings)
    )
    directory = GuildDirectory(stack.rest)
    ids: dict[str, str] = {}
    statuses: Counter[str] = Counter()
    started, cpu = time.perf_counter(), time.process_time()
    for utterance in conversation.utterances:
        stack.discord.seed_message(
            stack.channels[utterance.channel],
            stack.authors[utterance.speaker],
            utterance.text,
            timestamp=utterance.date.isoformat(),
        )
        if utterance.memory is None:
            continue
        turn = _turn(stack, stack.people[utterance.speaker], [], utterance.channel, utterance.date)
        subjects = recall_subjects(turn)
        seen = store.recall(
            GUILD, LINEAGE, [s.user_id for s in subjects], place=turn.place, policy=turn.config.privacy
        )
        arguments: dict[str, Any] = {"memory_content": utterance.memory}
        if utterance.scope == "server":
            arguments["memory_scope"] = "server_wide"
        else:
            arguments.update(memory_scope="target_user", target_user=utterance.speaker)
        result = ltm.create_long_term_memory(
            arguments,
            turn,
            store=store,
            members=GuildMembers(stack.rest, directory),
            settings=settings,
            speaker_manages_server=lambda: False,
            recalled=ltm.recall_context(turn, seen, budget=settings.LTM_RECALL_BUDGET_CHARS),
            embeddings=TurnEmbeddings(embedder) if embedder else None,
        )
        statuses[result.status] += 1
        if "memory_id" in result.data:
            ids[utterance.id] = str(result.data["memory_id"])
    return Saved(ids, statuses, time.perf_counter() - started, time.process_time() - cpu)


def _turn(
    stack: Stack, user: Participant, others: Sequence[Participant], channel: str, now: datetime
) -> TurnContext:
    participants = (user, *(p for p in others if p.user_id != user.user_id))
    return TurnContext(
        guild_id=GUILD,
        channel_id=stack.channels[channel],
        user=user,
        bot=BOT,
        config=ServerConfig(guild_id=GUILD),
        profile=UserProfile(user.user_id),
        now=now,
        participants=participants,
        channel_private=False,
        author_ids=frozenset(p.user_id for p in participants),
        sent_at=now,
    )


# -- asking: each question a real turn ---------------------------------------------------------------------


@dataclass
class Measured:
    """One way of answering, over all the questions: what the model saw (``shown``), after its
    search (``searched``), and what a smaller budget and the seed's rule would have shown."""

    questions: int = 0
    found: int = 0
    found_with_search: int = 0
    found_small: int = 0
    found_by_seed: int = 0
    corrected: int = 0
    superseded_answers: int = 0
    superseded_answers_small: int = 0
    superseded_answers_by_seed: int = 0
    unsaved: int = 0
    searched: int = 0
    chars: list[int] = field(default_factory=list)
    seed_chars: list[int] = field(default_factory=list)
    recall_ms: list[float] = field(default_factory=list)
    by_kind: dict[str, list[int]] = field(default_factory=dict)
    """Per kind of question: [asked, found after the search]."""

    def count(self, evidence: set[str | None], superseded: set[str], seen: Seen, kind: str) -> None:
        after_search = seen.shown | seen.searched
        self.questions += 1
        self.unsaved += None in evidence
        self.found += evidence <= seen.shown
        self.found_with_search += evidence <= after_search
        self.found_small += evidence <= seen.small
        self.found_by_seed += evidence <= seen.seed
        self.searched += seen.search_made
        self.chars.append(seen.chars)
        self.seed_chars.append(seen.seed_chars)
        self.recall_ms.append(seen.recall_ms)
        asked = self.by_kind.setdefault(kind or "-", [0, 0])
        asked[0] += 1
        asked[1] += evidence <= after_search
        if superseded:
            self.corrected += 1
            self.superseded_answers += _only_superseded(evidence, superseded, after_search)
            self.superseded_answers_small += _only_superseded(evidence, superseded, seen.small)
            self.superseded_answers_by_seed += _only_superseded(evidence, superseded, seen.seed)


def _only_superseded(evidence: set[str | None], superseded: set[str], seen: set[str]) -> bool:
    return bool(superseded & seen) and not evidence <= seen


@dataclass
class Seen:
    """What one turn's model was sent (memory ids), and what its recall stage would have shown
    within the small budget and by the seed's rule, on the same read."""

    shown: set[str] = field(default_factory=set)
    searched: set[str] = field(default_factory=set)
    search_made: bool = False
    chars: int = 0
    small: set[str] = field(default_factory=set)
    seed: set[str] = field(default_factory=set)
    seed_chars: int = 0
    recall_ms: float = 0.0


@dataclass(frozen=True)
class Mode:
    label: str
    embedder: Embedder | None


def ask_all(
    stack: Stack, conversation: Conversation, saved: Saved, modes: Sequence[Mode]
) -> dict[str, Measured]:
    """Every question, in each mode, as a real turn after the conversation."""
    services = {mode.label: _service(stack, mode) for mode in modes}
    results = {mode.label: Measured() for mode in modes}
    end = conversation.utterances[-1].date + timedelta(days=1)
    for question in conversation.questions:
        evidence = {saved.ids.get(e) for e in question.evidence}
        superseded = {saved.ids[s] for s in question.superseded if s in saved.ids}
        for mode in modes:
            seen = _ask(stack, services[mode.label], question, question.date or end)
            results[mode.label].count(evidence, superseded, seen, question.kind)
    return results


def _service(stack: Stack, mode: Mode) -> TurnService:
    settings = stack.settings(BUDGET)
    return TurnService(
        settings=settings,
        discord=stack.rest,
        model=make_chat_model(settings),
        stm_store=(stm := StmStore(stack.table)),
        ltm_store=(ltm := DynamoMemoryStore(stack.table, layout=BookLayout.from_settings(settings))),
        turns=TurnRepository(stack.table, stm, ltm),
        directory=GuildDirectory(stack.rest),
        embedder=mode.embedder,
    )


def _ask(stack: Stack, service: TurnService, question: Question, asked_at: datetime) -> Seen:
    """``question`` as a turn: those it is about say hello in its channel first (they take part in
    the conversation, as a person whose memories are recalled must), then the asker asks the bot.
    The turn's messages and the bot's answer are taken out of the channel afterwards: every
    question is asked of the conversation as it stood."""
    channel = stack.channels[question.channel]
    lines = [
        stack.discord.seed_message(
            channel, stack.authors[person], "hey, I'm here", timestamp=asked_at.isoformat()
        )
        for person in question.participants
        if person in stack.authors and person != question.speaker
    ]
    asked = stack.discord.seed_message(
        channel,
        stack.authors[question.speaker],
        f"<@{BOT.user_id}> {question.text}",
        timestamp=asked_at.isoformat(),
    )
    stack.asked = question.text
    before = len(stack.sent)
    service.clock = lambda: asked_at
    seen = Seen()
    with _recall_watched(seen):
        record = service.run(
            TurnJob.from_message(
                parse_message({**asked, "guild_id": GUILD, "member": {"nick": None, "roles": []}})
            ),
            time_left=lambda: TURN_SECONDS,
        )
    if record.apologised or not record.requests:
        raise RuntimeError(f"a bench turn failed: {question.text!r}")
    for message_id in [*(line["id"] for line in lines), asked["id"], *record.reply_ids]:
        stack.discord.delete_message(channel, message_id)
    _read_requests(stack.sent[before:], seen)
    return seen


@contextmanager
def _recall_watched(seen: Seen) -> Iterator[None]:
    """Watch the turn's recall stage (``TurnService`` calls ``ltm.recall_context``): time it (rank,
    fill the budget, render; with embeddings, the query's embedding on the loopback too), and give
    the same turn, memories and query the small budget and the seed's rule (newest first, 24,000
    characters, no ranking)."""
    real = ltm.recall_context

    def watched(turn: TurnContext, memories: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        recall = real(turn, memories, **kwargs)
        seen.recall_ms = (time.perf_counter() - started) * 1000
        small = real(turn, memories, **{**kwargs, "budget": SMALL_BUDGET})
        seen.small = _ids_shown(small)
        seed = build_recall(
            turn, memories.server, memories.personal, recall_subjects(turn), budget=SEED_BUDGET
        )
        seen.seed, seen.seed_chars = _ids_shown(seed), len(seed.item.content) if seed.item else 0
        return recall

    with mock.patch.object(ltm, "recall_context", watched):
        yield


def _ids_shown(recall: Any) -> set[str]:
    return {recall.candidates[number].memory.memory_id for number in recall.shown}


def _read_requests(sent: Sequence[dict[str, Any]], seen: Seen) -> None:
    """The memory ids the model's first request showed, those its search answered, and the length of
    the long-term memory message."""
    for message in sent[0]["messages"]:
        content = message.get("content")
        if isinstance(content, str) and content.startswith(RECALL_HEADER):
            seen.shown = set(MEMORY_LINE.findall(content))
            seen.chars = len(content)
    for body in sent[1:]:
        for message in body["messages"]:
            if message.get("role") == "tool":
                seen.search_made = True
                answered = json.loads(message["content"])
                seen.searched |= {str(m["memory_id"]) for m in answered.get("memories", ())}


# -- reporting ------------------------------------------------------------------------------------------


def report(measured: Measured, label: str) -> list[str]:
    q = measured.questions or 1
    chars = sorted(measured.chars)
    timings = sorted(measured.recall_ms)
    p95 = timings[max(int(len(timings) * 0.95) - 1, 0)]
    unsaved = f"; {measured.unsaved} whose evidence was not saved" if measured.unsaved else ""
    return [
        f"memory.evidence_recall={measured.found / q:.2f} {label} questions={measured.questions} "
        f"(after the search {measured.found_with_search / q:.2f}, searched in {measured.searched} turns; "
        f"the seed's newest-first 24,000 characters {measured.found_by_seed / q:.2f}{unsaved})",
        f"memory.evidence_recall_small_budget={measured.found_small / q:.2f} {label} "
        f"(within {SMALL_BUDGET:,} characters, about a dozen memories, no search)",
        f"memory.evidence_recall_by_kind {label} "
        + " ".join(
            f"{kind}={found / asked:.2f}/{asked}" for kind, (asked, found) in sorted(measured.by_kind.items())
        )
        + " (after the search)",
        f"memory.ltm_chars_per_turn={statistics.mean(chars):.0f} {label} (max {chars[-1]}, budget {BUDGET:,}; "
        f"the seed's {statistics.mean(measured.seed_chars):.0f})",
        f"memory.superseded_answer_share={measured.superseded_answers / q:.2f} {label} "
        f"({measured.superseded_answers} of {measured.questions} questions see only the corrected-away fact, "
        f"after the search; {measured.corrected} ask about a corrected fact; within {SMALL_BUDGET:,} characters "
        f"{measured.superseded_answers_small / q:.2f}; the seed's {measured.superseded_answers_by_seed / q:.2f})",
        f"memory.ranking_ms median={statistics.median(timings):.2f} p95={p95:.2f} {label} "
        "(the turn's recall stage after its read: rank, fill the budget, render)",
    ]


def ranking_in_a_fresh_process() -> list[str]:
    """``ranking_of_a_thousand`` in a process of its own, as in a worker: the turns before leave
    this one a heap of moto's tables that slows any timing taken in it, twice over or more."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.memory", "--ranking-alone"], capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"the ranking bench failed:\n{done.stderr}")
    return done.stdout.splitlines()


def ranking_of_a_thousand() -> list[str]:
    """The recall stage alone over exactly 1,000 memories in scope, cold (a fresh worker: nothing
    memoised) and warm, by words and with embeddings (the stand-in's vectors, the query's given).
    Each timing is the fastest of 15 and their median: as ``timeit`` says, the fastest is what the
    code costs, the slower ones are the machine's other work."""
    conversation = generate(1000, seed=7)
    speaker = Participant("401", "alice", global_name="Alice")
    turn = TurnContext(
        guild_id=GUILD,
        channel_id="300",
        user=speaker,
        bot=BOT,
        config=ServerConfig(guild_id=GUILD),
        profile=UserProfile(speaker.user_id),
        now=conversation.utterances[-1].date,
        participants=(speaker,),
        author_ids=frozenset({speaker.user_id}),
    )
    scope = MemoryScope.server(GUILD, LINEAGE)
    saved = [u for u in conversation.utterances if u.memory][:1000]
    vectors = [quantise(standin_embedding(embedded_text(u.memory or ""), DIMENSIONS)) for u in saved]
    text = "kioku, who did Dave go to the aquarium with?"
    query = RecallQuery(
        text, ("lol", "anyone up?", "did you see the match last night?", "Dave went out again")
    )
    query_vector = quantise(standin_embedding(text, DIMENSIONS))
    lines = []
    for label, embed in (("words", None), ("embeddings", lambda _: query_vector)):
        memories = [
            Memory(
                scope,
                str(10000 + n),
                u.memory or "",
                speaker.user_id,
                u.date,
                u.date,
                embedding=vector if embed else None,
            )
            for n, (u, vector) in enumerate(zip(saved, vectors, strict=True))
        ]
        timings: dict[str, list[float]] = {"cold": [], "warm": []}
        gc.collect()  # what the turns before left behind is not this ranking's to collect
        for kind in ("cold", "warm") * 15:
            if kind == "cold":
                recall_module.clear_caches()
            started = time.perf_counter()
            recall = build_recall(turn, memories, {}, (), query=query, embed=embed)
            timings[kind].append((time.perf_counter() - started) * 1000)
        assert recall.left_out
        cold, warm = (statistics.median(timings[k]) for k in ("cold", "warm"))
        lines.append(
            f"memory.ranking_ms_1000 {label} warm={warm:.2f} cold={cold:.2f} fastest_warm={min(timings['warm']):.2f} "
            f"fastest_cold={min(timings['cold']):.2f} (1,000 memories in scope, medians and fastest of 15 runs in "
            "a fresh process; cold: a fresh worker, nothing memoised)"
        )
        if label == "words":
            within = {kind: round(min(timings[kind]), 2) <= RANKING_TARGET_MS for kind in ("warm", "cold")}
            lines.append(
                f"memory.ranking_within_target words target_ms={RANKING_TARGET_MS} warm={within['warm']} "
                f"cold={within['cold']} (the fastest of 15: what the ranking costs when the machine is not busy)"
            )
    real = memory_replay.ranking_of_real_lengths(memory_replay.dev_conversations())
    return [*lines, *([real] if real else [])]


REWORDINGS = (
    ("{user} lives in Lisbon", "{user} lives in Lisbon now"),
    ("{user} has a dog called Pixel", "{user}'s dog is called Pixel"),
    ("{user} is allergic to peanuts", "{user} is allergic to peanuts!"),
    ("{user} works as a nurse", "{user} works as a Nurse at the moment"),
    ("{user} plays the cello in a band", "{user} plays cello in a band"),
    ("{user} is learning Japanese", "{user} has been learning Japanese"),
    ("{user}'s favourite food is ramen", "{user}'s favorite food is ramen"),
    ("{user} supports Benfica", "{user} is a Benfica supporter"),
    ("The server's movie night is on Fridays", "Movie night on this server is on Fridays"),
    ("{user} went to the zoo with Mia on 2025-03-01", "{user} went to the zoo with Mia on March 1st 2025"),
)
"""The same fact written twice, as a model rewords it."""


def _scopes_of(conversation: Conversation) -> list[list[str]]:
    memories: dict[tuple[str, str], list[str]] = {}
    for u in conversation.utterances:
        if u.memory:
            memories.setdefault((u.scope, u.speaker if u.scope == "personal" else ""), []).append(u.memory)
    return [list(dict.fromkeys(texts)) for texts in memories.values()]


def near_duplicates_by_meaning(embedder: Embedder, label: str) -> str:
    """Why saving is refused by words, not by meaning: the cosine of one scope's distinct facts at
    1,000 memories against that of rewordings of one fact."""
    distinct, cosines = 0, []
    for texts in _scopes_of(generate(1000)):
        vectors = embedder.embed([embedded_text(text) for text in texts])
        for i, first in enumerate(vectors):
            for second in vectors[i + 1 :]:
                distinct += 1
                cosines.append(cosine(first, second))
    reworded = [cosine(*embedder.embed([embedded_text(a), embedded_text(b)])) for a, b in REWORDINGS]
    threshold = min(reworded)
    over = sum(c >= threshold for c in cosines)
    return (
        f"memory.near_duplicate_by_meaning {label} rewordings_min_cosine={threshold:.2f} "
        f"distinct_facts_at_or_over_it={over}/{distinct} (why a save is refused by its words: a cosine "
        f"that catches every rewording also catches distinct facts)"
    )


def near_duplicates() -> str:
    """How ``NEAR_DUPLICATE_SIMILARITY`` splits the generated 1,000 memories' distinct facts of one
    scope (none may reach it) from rewordings of one fact (most should)."""
    distinct = over = 0
    for texts in _scopes_of(generate(1000)):
        words = [fact_words(text) for text in texts]
        for i, first in enumerate(words):
            for second in words[i + 1 :]:
                distinct += 1
                over += similarity(first, second) >= ltm_saving.NEAR_DUPLICATE_SIMILARITY
    caught = sum(
        similarity(fact_words(a), fact_words(b)) >= ltm_saving.NEAR_DUPLICATE_SIMILARITY
        for a, b in REWORDINGS
    )
    return (
        f"memory.near_duplicate threshold={ltm_saving.NEAR_DUPLICATE_SIMILARITY} distinct_facts_over={over}/{distinct} "
        f"rewordings_caught={caught}/{len(REWORDINGS)} (pairs of one scope's memories at 1,000 memories)"
    )


def run(conversations: Sequence[tuple[str, Conversation]], embedder: Embedder, embeddings_label: str) -> None:
    """Each conversation saved once (with embeddings), then asked by words alone and with embeddings."""
    with mock_aws(), faster_moto():
        for number, (label, conversation) in enumerate(conversations):
            with local_stack(conversation, f"kioku-memory-bench-{number}") as stack:
                saved = save_conversation(stack, conversation, embedder)
                statuses = " ".join(f"{status}={count}" for status, count in sorted(saved.statuses.items()))
                saves = max(sum(saved.statuses.values()), 1)
                print(
                    f"memory.saves {label} {statuses} ({saved.seconds * 1000 / saves:.0f} ms a save through "
                    f"create_long_term_memory, {saved.cpu_seconds * 1000 / saves:.0f} ms of it on this process's "
                    "CPU: the turn's recall read, the near-duplicate check, the transaction, the embedding)",
                    flush=True,
                )
                modes = (Mode(label, None), Mode(f"{label} embeddings={embeddings_label}", embedder))
                started, cpu = time.perf_counter(), time.process_time()
                results = ask_all(stack, conversation, saved, modes)
                turns = len(conversation.questions) * len(modes)
                print(
                    f"memory.turns {label} {turns} ({(time.perf_counter() - started) * 1000 / turns:.0f} ms a turn, "
                    f"{(time.process_time() - cpu) * 1000 / turns:.0f} ms of it on this process's CPU: "
                    "moto in-process, the stand-ins on the loopback)",
                    flush=True,
                )
                for mode in modes:
                    for line in report(results[mode.label], mode.label):
                        print(line, flush=True)


@contextmanager
def embeddings_for(model: str | None, base_url: str | None) -> Iterator[tuple[Embedder, str]]:
    """A real endpoint when ``model`` is given (its key from ``LLM_API_KEY``), else the stand-in."""
    if model:
        api_key = os.environ.get("LLM_API_KEY") or None
        url = base_url or "https://api.openai.com/v1"
        yield OpenAIEmbeddings(base_url=url, model=model, api_key=api_key, timeout_seconds=30), model
        return
    with EmbeddingsStandIn() as server:
        yield OpenAIEmbeddings(base_url=server.base_url, model="stand-in", api_key=None), "stand-in"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--conversation", type=Path, help="measure this conversation (docs/memory.md)")
    parser.add_argument("--write", type=Path, help="write the generated conversation here and stop")
    parser.add_argument(
        "--ranking-alone", action="store_true", help="time the ranking of 1,000 memories only"
    )
    parser.add_argument(
        "--memories", type=int, default=200, help="memories of the conversation --write writes"
    )
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="sizes of the generated conversation"
    )
    parser.add_argument("--embeddings-model", help="a real embeddings model instead of the stand-in")
    parser.add_argument("--embeddings-base-url", help="its OpenAI-compatible endpoint (key: LLM_API_KEY)")
    args = parser.parse_args(argv if argv is not None else [])
    if args.ranking_alone:
        print("\n".join(ranking_of_a_thousand()))
        return
    if args.write:
        args.write.write_text(json.dumps(conversation_json(generate(args.memories)), indent=1))
        return
    started = time.perf_counter()
    with embeddings_for(args.embeddings_model, args.embeddings_base_url) as (embedder, label):
        if args.conversation:
            conversation = read_conversation(json.loads(args.conversation.read_text()))
            run([(f"file={args.conversation.name}", conversation)], embedder, label)
        else:
            for line in memory_facts.facts_lines():
                print(line, flush=True)
            sizes = [int(size) for size in args.sizes.split(",") if size]
            run([(f"memories={size}", generate(size)) for size in sizes], embedder, label)
            for line in ranking_in_a_fresh_process():
                print(line)
            for line in ranking_cold.stage_lines():
                print(line, flush=True)
            print(near_duplicates())
            print(near_duplicates_by_meaning(embedder, label))
            for line in memory_replay.recall_lines():
                print(line, flush=True)
    print(f"memory.wall_seconds={time.perf_counter() - started:.0f} (this whole section)")


if __name__ == "__main__":
    main(sys.argv[1:])
