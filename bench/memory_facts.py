"""The recall stage replayed on a facts file of ``../shared/memory-dev/`` (its README says the format
and the rules): what kioku keeps in use, facts a model wrote about people.

Each fact is saved as a personal memory of the person it is ``about`` (its text as written, dated
with its session, numbered in the file's order, refused when a memory of that person already says
the same as the save decides it: by the Jaccard similarity of their words, never their embeddings,
at ``NEAR_DUPLICATE_SIMILARITY``), with its embedding when ranking is by meaning. Each question is asked by a member outside the conversation, the day
after the last session, right after both people spoke in the channel (they are the turn's
participants), and counts at a budget when each of its evidence utterances is cited by a fact the
recall shows, before any search. Only questions whose evidence the facts cite are asked; the others
are reported as ``uncovered``.

    python -m bench.memory_replay --facts FILE... [--ranking words|embedded]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from bench.memory_conversation import Question
from bench.memory_replay import BOT, BUDGETS, DEV_DIRECTORY, LINEAGE, Replayed, question_turn
from kioku.domain.ltm import vectors
from kioku.domain.ltm.memory import Memory, MemoryScope
from kioku.domain.ltm.ranking import RecallQuery, similarity
from kioku.domain.ltm.recall import Recall, build_recall, fact_words, recall_subjects
from kioku.domain.models import Participant
from kioku.services.ltm_saving import NEAR_DUPLICATE_SIMILARITY

ASKER = "Asker"
GREETING = "hey, I'm here"
EMBEDDINGS_CACHE = Path(os.environ.get("KIOKU_BENCH_EMBEDDINGS_CACHE", "/tmp/kioku-bench-embeddings.json"))
"""The memory-dev texts' vectors (hex) by model and text, kept between runs (never in the repo)."""

Embed = Callable[[Sequence[str]], list[bytes]]


@dataclass(frozen=True)
class Fact:
    id: str
    about: str
    date: datetime
    text: str
    cites: tuple[str, ...]


@dataclass(frozen=True)
class FactQuestion:
    id: str
    text: str
    evidence: tuple[str, ...]
    kind: str


def read_facts(data: dict) -> tuple[list[str], list[Fact], list[FactQuestion]]:
    facts = [
        Fact(f["id"], f["about"], datetime.fromisoformat(f["date"]), f["text"], tuple(f["cites"]))
        for f in data["facts"]
    ]
    questions = [
        FactQuestion(q["id"], q["text"], tuple(q["evidence"]), q.get("kind") or "-")
        for q in data["questions"]
    ]
    return list(data["speakers"]), facts, questions


def saved_facts(
    facts: Sequence[Fact], who: dict[str, Participant], embed: Embed | None
) -> dict[str, list[Memory]]:
    """Each person's memories as the saves leave them."""
    books: dict[str, list[Memory]] = {}
    known: dict[str, list[frozenset[str]]] = {}
    embedded = embed([vectors.embedded_text(f.text) for f in facts]) if embed and facts else []
    for n, fact in enumerate(facts):
        person = who[fact.about]
        mine, vector = fact_words(fact.text), (embedded[n] if embedded else None)
        others = known.setdefault(person.user_id, [])
        if any(similarity(mine, other) >= NEAR_DUPLICATE_SIMILARITY for other in others):
            continue  # "already remembered": nothing saved
        scope = MemoryScope.personal(person.user_id, LINEAGE)
        memory = Memory(
            scope, str(10_000 + n), fact.text, person.user_id, fact.date, fact.date, embedding=vector
        )
        books.setdefault(person.user_id, []).append(memory)
        others.append(mine)
    return books


@dataclass(frozen=True)
class Asked:
    """One question's recall at one budget: what it showed, and which memories cite each evidence."""

    question: FactQuestion
    budget: int
    recall: Recall
    query: RecallQuery
    ask: Callable[[str], bytes | None] | None
    cited_by: dict[str, set[str]]

    @property
    def found(self) -> bool:
        shown = {self.recall.candidates[n].memory.memory_id for n in self.recall.shown}
        return all(self.cited_by.get(e, set()) & shown for e in self.question.evidence)


def asked_facts(
    data: dict,
    embed: Embed | None = None,
    budgets: Sequence[int] = BUDGETS,
    uncovered: list[str] | None = None,
) -> Iterator[Asked]:
    """Each covered question's recall at each budget (the ids of the uncovered ones into ``uncovered``)."""
    speakers, facts, questions = read_facts(data)
    who = {name: Participant(str(401 + n), name.lower(), global_name=name) for n, name in enumerate(speakers)}
    asker = Participant("499", ASKER.lower(), global_name=ASKER)
    who[ASKER] = asker
    books = saved_facts(facts, who, embed)
    cited_by: dict[str, set[str]] = {}
    for book in books.values():
        for memory in book:
            for cite in facts[int(memory.memory_id) - 10_000].cites:
                cited_by.setdefault(cite, set()).add(memory.memory_id)
    every_cite = {cite for fact in facts for cite in fact.cites}
    asked_at = max(fact.date for fact in facts) + timedelta(days=1)
    query_vectors = dict(zip(*_query_vectors(questions, embed), strict=True))
    for question in questions:
        if not set(question.evidence) <= every_cite:
            if uncovered is not None:
                uncovered.append(question.id)
            continue
        asking = Question(question.id, question.text, question.evidence, ASKER, participants=tuple(speakers))
        turn = question_turn(asking, who, asked_at)
        subjects = recall_subjects(turn)
        personal = {p.user_id: books.get(p.user_id, []) for p in subjects}
        query = RecallQuery(question.text, (GREETING,) * len(speakers), BOT.names(turn.bot_name))
        vector = query_vectors.get(question.text)
        ask = (lambda _, vector=vector: vector) if embed else None
        for budget in budgets:
            recall = build_recall(turn, [], personal, subjects, budget=budget, query=query, embed=ask)
            yield Asked(question, budget, recall, query, ask, cited_by)


def replay_facts(data: dict, embed: Embed | None = None, budgets: Sequence[int] = BUDGETS) -> Replayed:
    result = Replayed()
    uncovered: list[str] = []
    for asked in asked_facts(data, embed, budgets, uncovered):
        if asked.budget == budgets[0]:
            result.asked[asked.question.kind] = result.asked.get(asked.question.kind, 0) + 1
        item = asked.recall.item
        result.count(asked.question.kind, asked.budget, asked.found, len(item.content) if item else 0)
    result.unsaved = len(uncovered)
    return result


def _query_vectors(questions: Sequence[FactQuestion], embed: Embed | None) -> tuple[list[str], list[bytes]]:
    texts = list(dict.fromkeys(q.text for q in questions))
    return (texts, embed(texts)) if embed and texts else ([], [])


def facts_report(name: str, replayed: Replayed) -> Iterator[str]:
    kinds = sorted(replayed.asked)
    for budget in sorted(replayed.found):
        by_kind = " ".join(
            f"{kind}={replayed.share(budget, kind):.2f}/{replayed.asked[kind]}" for kind in kinds
        )
        yield (
            f"memory.facts_recall={replayed.share(budget):.2f} file={name} budget={budget} "
            f"questions={sum(replayed.asked.values())} uncovered={replayed.unsaved} {by_kind} "
            f"chars_per_turn={max(replayed.chars[budget])}"
        )


def dev_facts() -> list[Path]:
    return sorted(DEV_DIRECTORY.glob("facts-*.json")) if DEV_DIRECTORY.is_dir() else []


def facts_lines(files: Sequence[Path] = (), ranking: str | None = None) -> list[str]:
    """The report of each facts file of ``files`` (default: those of ../shared/memory-dev/), ranked by
    ``ranking`` (``words``, or ``embedded``: the embedded model; default: it when installed), or the
    line saying there are none."""
    files = list(files) or dev_facts()
    if not files:
        return [f"memory.facts_recall skipped: no facts files in {DEV_DIRECTORY.resolve()}"]
    embed = embedder(ranking)
    lines: list[str] = []
    for path in files:
        lines += facts_report(path.name, replay_facts(json.loads(path.read_text()), embed))
    return lines


def embedder(ranking: str | None) -> Embed | None:
    """The embedded model's ``embed`` behind a cache of the texts it embedded before, or None to rank
    by words (asked for, or the model not installed when nothing was asked)."""
    if ranking == "words":
        return None
    from kioku.adapters.embedded_model import EmbeddedModel, EmbeddedModelUnavailable

    try:
        model = EmbeddedModel.load()
    except EmbeddedModelUnavailable:
        if ranking == "embedded":
            raise
        return None
    try:
        cache: dict[str, str] = json.loads(EMBEDDINGS_CACHE.read_text())
    except (OSError, ValueError):
        cache = {}

    def embed(texts: Sequence[str]) -> list[bytes]:
        keys = [f"{model.model_name}\n{text}" for text in texts]
        new = [text for key, text in dict(zip(keys, texts, strict=True)).items() if key not in cache]
        if new:
            for text, vector in zip(new, model.embed(new), strict=True):
                cache[f"{model.model_name}\n{text}"] = vector.hex()
            EMBEDDINGS_CACHE.write_text(json.dumps(cache))
        return [bytes.fromhex(cache[key]) for key in keys]

    return embed


def facts_main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.memory_replay")
    parser.add_argument(
        "--facts", nargs="*", type=Path, default=[], help="facts files (default: memory-dev's)"
    )
    parser.add_argument(
        "--ranking",
        choices=("words", "embedded"),
        default=os.environ.get("KIOKU_BENCH_RANKING") or None,
        help="rank by words, or with the embedded model (default: it when installed, as the turn)",
    )
    arguments = parser.parse_args(argv)
    for line in facts_lines(arguments.facts, arguments.ranking):
        print(line, flush=True)
