"""The recall stage replayed on a conversation's memories, without the stack: what ``make bench``
reports for the real conversations of ``../shared/memory-dev/`` (docs/memory.md).

Each utterance's memory is kept as the save keeps it (server-wide or the speaker's, dated when it
was said, numbered in order, refused when a memory of its scope already says the same by
``NEAR_DUPLICATE_SIMILARITY``), and each question's turn recall is built as the turn builds it
(``build_recall`` on the memories its speaker and participants may see, ranked for the question
and for what the people taking part said before it), at several budgets, before any search. The
full turns (``python -m bench.memory --conversation FILE``) read the same memories from moto and
give the same figure at 8,000 characters; this takes a second instead of minutes.

    python -m bench.memory_replay [FILE ...]     (default: the conversations of ../shared/memory-dev/)
    python -m bench.memory_replay --facts FILE... [--ranking words|embedded]     (bench/memory_facts.py)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from bench.memory_conversation import Conversation, Question, read_conversation
from kioku.domain.ltm.memory import Memory, MemoryScope
from kioku.domain.ltm.ranking import RecallQuery, similarity
from kioku.domain.ltm.recall import build_recall, fact_words, recall_subjects
from kioku.domain.ltm.vectors import embedded_text
from kioku.domain.models import Participant, ServerConfig, UserProfile
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.services.ltm_saving import NEAR_DUPLICATE_SIMILARITY

BUDGETS = (2_000, 4_000, 8_000)
DEV_DIRECTORY = Path(__file__).resolve().parents[1] / ".." / "shared" / "memory-dev"
"""Where the real conversations to develop on are, relative to the repository (never copied into it)."""
GUILD = "500000000000000001"
BOT = BotIdentity(user_id="900000000000000001", username="kioku")
LINEAGE = 1
GREETING = "hey, I'm here"
Embed = Callable[[Sequence[str]], list[bytes]]
"""Texts' quantised vectors (``bench.memory_facts.embedder``)."""
"""What a participant says before the question (as the full bench's turns have them say it)."""


@dataclass
class Replayed:
    """Per budget: questions with all their evidence shown, in all and by kind; characters shown."""

    asked: dict[str, int] = field(default_factory=dict)
    found: dict[int, dict[str, int]] = field(default_factory=dict)
    chars: dict[int, list[int]] = field(default_factory=dict)
    unsaved: int = 0
    seconds: float = 0.0

    def count(self, kind: str, budget: int, found: bool, chars: int) -> None:
        self.found.setdefault(budget, {}).setdefault(kind, 0)
        self.found[budget][kind] += found
        self.chars.setdefault(budget, []).append(chars)

    def share(self, budget: int, kind: str | None = None) -> float:
        asked = sum(self.asked.values()) if kind is None else self.asked.get(kind, 0)
        found = self.found.get(budget, {})
        hits = sum(found.values()) if kind is None else found.get(kind, 0)
        return hits / asked if asked else 0.0


def people(conversation: Conversation) -> dict[str, Participant]:
    names = dict.fromkeys(
        [u.speaker for u in conversation.utterances] + [q.speaker for q in conversation.questions]
    )
    return {name: Participant(str(401 + n), name.lower(), global_name=name) for n, name in enumerate(names)}


def saved_memories(
    conversation: Conversation, who: dict[str, Participant], embed: Embed | None = None
) -> tuple[dict[tuple[str, str], list[Memory]], dict[str, str]]:
    """Each scope's memories as the saves leave them (with their vectors when ``embed`` is given),
    and the memory id of each saved utterance."""
    kept = [u for u in conversation.utterances if u.memory is not None] if embed else []
    embedded = embed([embedded_text(u.memory or "") for u in kept]) if embed and kept else []
    vector_of = {u.id: vector for u, vector in zip(kept, embedded, strict=True)}
    scopes: dict[tuple[str, str], list[Memory]] = {}
    words: dict[tuple[str, str], list[frozenset[str]]] = {}
    ids: dict[str, str] = {}
    for n, utterance in enumerate(conversation.utterances):
        if utterance.memory is None:
            continue
        person = who[utterance.speaker]
        if utterance.scope == "server":
            key, scope = ("server", ""), MemoryScope.server(GUILD, LINEAGE)
        else:
            key, scope = ("personal", person.user_id), MemoryScope.personal(person.user_id, LINEAGE)
        mine = fact_words(utterance.memory)
        known = words.setdefault(key, [])
        if any(similarity(mine, other) >= NEAR_DUPLICATE_SIMILARITY for other in known):
            continue  # answered "already remembered": nothing saved
        memory = Memory(
            scope,
            str(10_000 + n),
            utterance.memory,
            person.user_id,
            utterance.date,
            utterance.date,
            embedding=vector_of.get(utterance.id),
        )
        scopes.setdefault(key, []).append(memory)
        known.append(mine)
        ids[utterance.id] = memory.memory_id
    return scopes, ids


def question_turn(question: Question, who: dict[str, Participant], asked_at: datetime) -> TurnContext:
    speaker = who[question.speaker]
    others = tuple(who[p] for p in question.participants if p in who and p != question.speaker)
    participants = (speaker, *others)
    return TurnContext(
        guild_id=GUILD,
        channel_id="300",
        user=speaker,
        bot=BOT,
        config=ServerConfig(guild_id=GUILD),
        profile=UserProfile(speaker.user_id),
        now=asked_at,
        participants=participants,
        channel_private=False,
        author_ids=frozenset(p.user_id for p in participants),
        sent_at=asked_at,
    )


def replay(
    conversation: Conversation, budgets: Sequence[int] = BUDGETS, embed: Embed | None = None
) -> Replayed:
    """Each question's recall at each budget; ranked with meaning too when ``embed`` is given (the
    memories' and the questions' vectors computed once, before the questions are asked)."""
    who = people(conversation)
    scopes, ids = saved_memories(conversation, who, embed)
    texts = list(dict.fromkeys(q.text for q in conversation.questions))
    query_vectors = dict(zip(texts, embed(texts), strict=True)) if embed and texts else {}
    end = conversation.utterances[-1].date + timedelta(days=1)
    result = Replayed()
    started = time.perf_counter()
    for question in conversation.questions:
        evidence = {ids.get(e) for e in question.evidence}
        result.unsaved += None in evidence
        turn = question_turn(question, who, question.date or end)
        subjects = recall_subjects(turn)
        personal = {p.user_id: scopes.get(("personal", p.user_id), []) for p in subjects}
        greetings = tuple(GREETING for p in question.participants if p != question.speaker)
        query = RecallQuery(question.text, greetings, BOT.names(turn.bot_name))
        kind = question.kind or "-"
        result.asked[kind] = result.asked.get(kind, 0) + 1
        vector = query_vectors.get(question.text)
        ask = (lambda _, vector=vector: vector) if embed else None
        for budget in budgets:
            recall = build_recall(
                turn,
                scopes.get(("server", ""), []),
                personal,
                subjects,
                budget=budget,
                query=query,
                embed=ask,
            )
            shown = {recall.candidates[n].memory.memory_id for n in recall.shown}
            result.count(kind, budget, evidence <= shown, len(recall.item.content) if recall.item else 0)
    result.seconds = time.perf_counter() - started
    return result


def report(label: str, replayed: Replayed) -> Iterator[str]:
    kinds = sorted(replayed.asked)
    for budget in sorted(replayed.found):
        by_kind = " ".join(
            f"{kind}={replayed.share(budget, kind):.2f}/{replayed.asked[kind]}" for kind in kinds
        )
        yield (
            f"memory.dev_evidence_recall={replayed.share(budget):.2f} {label} budget={budget} "
            f"questions={sum(replayed.asked.values())} {by_kind} "
            f"chars_per_turn={statistics.mean(replayed.chars[budget]):.0f}"
            + (f" ({replayed.unsaved} whose evidence was not saved)" if replayed.unsaved else "")
        )


def dev_conversations() -> list[Path]:
    return sorted(DEV_DIRECTORY.glob("conversation-*.json")) if DEV_DIRECTORY.is_dir() else []


def recall_lines(files: Sequence[Path] = ()) -> list[str]:
    """The report of each conversation of ``files`` (default: the dev conversations), or the line
    saying they are not there."""
    files = list(files) or dev_conversations()
    if not files:
        return [f"memory.dev_evidence_recall skipped: no conversations in {DEV_DIRECTORY.resolve()}"]
    lines: list[str] = []
    for path in files:
        lines += report(f"file={path.name}", replay(read_conversation(json.loads(path.read_text()))))
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    arguments = list(argv or ())
    if "--facts" in arguments:
        from bench.memory_facts import facts_main

        facts_main(arguments)
        return
    files = [Path(a) for a in arguments]
    for line in recall_lines(files):
        print(line, flush=True)
    timed = ranking_of_real_lengths(files or dev_conversations())
    if timed:
        print(timed)


def ranking_of_real_lengths(files: Sequence[Path]) -> str | None:
    """The recall stage over 1,000 memories of the real conversations' lengths (server-wide, the first
    1,000 utterances of the files in turn), cold (a fresh worker) and warm: the fastest of 15 and
    the median."""
    from kioku.domain.ltm import recall as recall_module

    memories: list[Memory] = []
    questions: list[str] = []
    scope = MemoryScope.server(GUILD, LINEAGE)
    for path in files:
        conversation = read_conversation(json.loads(path.read_text()))
        questions += [q.text for q in conversation.questions]
        for u in conversation.utterances:
            if u.memory and len(memories) < 1000:
                memories.append(Memory(scope, str(10_000 + len(memories)), u.memory, "401", u.date, u.date))
    if len(memories) < 1000:
        return None
    asker = Participant("499", "asker", global_name="Asker")
    turn = TurnContext(
        guild_id=GUILD,
        channel_id="300",
        user=asker,
        bot=BOT,
        config=ServerConfig(guild_id=GUILD),
        profile=UserProfile(asker.user_id),
        now=memories[-1].updated_at + timedelta(days=1),
        participants=(asker,),
        author_ids=frozenset({asker.user_id}),
    )
    timings: dict[str, list[float]] = {"cold": [], "warm": []}
    for n, kind in enumerate(("cold", "warm") * 15):
        if kind == "cold":
            recall_module.clear_caches()
        query = RecallQuery(
            questions[n % len(questions)], ("hey all", "anyone around?"), BOT.names(turn.bot_name)
        )
        started = time.perf_counter()
        build_recall(turn, memories, {}, (), query=query)
        timings[kind].append((time.perf_counter() - started) * 1000)
    return (
        "memory.dev_ranking_ms_1000 "
        + " ".join(
            f"{kind}={statistics.median(t):.2f} fastest_{kind}={min(t):.2f}" for kind, t in timings.items()
        )
        + " (1,000 memories of the real conversations' lengths, medians and fastest of 15, a new question each)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
