"""Why recall over facts misses (issue 40 item 3): for each facts file of ``../shared/memory-dev/``
and each budget, the ceiling of any ranking given what the facts say, and each missed question by
why it was missed. ``--guards`` also replays the three utterance files and the generated
conversation with the same model, the figures no ranking change may lower (docs/memory.md).

    python -m bench.memory_misses [--guards] [--list] [FILE ...]

A fact **says** something of a question when its line as the model reads it (its day too) shares a
word with it besides the names of the people and the words a quarter of the lines hold (a year)
(stemmed, stop words out: what BM25 reads), or is among the ``NEAREST_SHARE`` of all the
facts nearest the question by meaning. A question is **said** when each of its evidence utterances
is cited by a fact that says something of it; otherwise no ranking of the facts' texts finds it but
by chance ("What novel is Evan reading?" cited only by a fact about snacks). The **ceiling** at a
budget: the share of questions said, and whose citing facts (the shortest that say something, one
per evidence) fit the budget together; ``found_unsaid`` counts the questions found beyond it, by the
chance that a budget shows a third of a person's facts. A missed question is then ``unsaid``, ``spread`` (two or more
evidence, some shown: the budget went elsewhere) or ``ranked-low`` (none of it shown).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.memory_conversation import generate, read_conversation
from bench.memory_facts import Asked, Embed, asked_facts, dev_facts, embedder
from bench.memory_replay import BUDGETS, dev_conversations, replay, report
from kioku.domain.ltm.ranking import terms
from kioku.domain.ltm.recall import rank_recall
from kioku.domain.ltm.vectors import cosine

NEAREST_SHARE = 0.1
"""A fact among this share of all the facts nearest the question by meaning says something of it."""
COMMON_SHARE = 0.25
"""A word more than this share of the lines hold (a year, "enjoys") says nothing of a question."""
GENERATED_BUDGETS = (1_000, 2_000, 4_000, 8_000)


def says(asked: Asked, names: set[str], nearest: set[str]) -> dict[str, set[str]]:
    """For each evidence of the question, its citing facts that say something of the question."""
    lines = {c.memory.memory_id: set(terms(c.line)) for c in asked.recall.candidates}
    held = Counter(term for words in lines.values() for term in words)
    common = {term for term, count in held.items() if count > len(lines) * COMMON_SHARE}
    wanted = set(terms(asked.question.text)) - names - common
    return {
        evidence: {
            memory_id
            for memory_id in asked.cited_by.get(evidence, set())
            if memory_id in lines and (wanted & lines[memory_id] or memory_id in nearest)
        }
        for evidence in asked.question.evidence
    }


def nearest_by_meaning(asked: Asked) -> set[str]:
    query = asked.ask(asked.question.text) if asked.ask else None
    if query is None:
        return set()
    measured = sorted(
        (
            (cosine(query, c.memory.embedding), c.memory.memory_id)
            for c in asked.recall.candidates
            if c.memory.embedding
        ),
        reverse=True,
    )
    return {memory_id for _, memory_id in measured[: max(1, int(len(measured) * NEAREST_SHARE))]}


def fits(asked: Asked, saying: dict[str, set[str]]) -> bool:
    """Whether the shortest saying fact of each evidence fit the budget together (with a heading per
    person, the header and the note: about 400 characters)."""
    length = {c.memory.memory_id: len(c.line) + 1 for c in asked.recall.candidates}
    chosen = {min(ids, key=lambda i: (length[i], i)) for ids in saying.values()}
    return sum(length[i] for i in chosen) + 400 <= asked.budget


def why(asked: Asked, saying: dict[str, set[str]]) -> str:
    if not all(saying.values()):
        return "unsaid"
    shown = {asked.recall.candidates[n].memory.memory_id for n in asked.recall.shown}
    some = any(asked.cited_by.get(e, set()) & shown for e in asked.question.evidence)
    return "spread" if some and len(asked.question.evidence) > 1 else "ranked-low"


def needed_rank(asked: Asked) -> int:
    """How many memories the ranking must show for the question to count (its full order)."""
    recall = asked.recall
    if not recall.parts:
        return len(recall.shown)
    order = [r.index for r in rank_recall(recall.candidates, recall.parts, asked.query, asked.ask)]
    place = {recall.candidates[n].memory.memory_id: p for p, n in enumerate(order, 1)}
    return max(
        min((place[i] for i in asked.cited_by.get(e, set()) if i in place), default=len(order))
        for e in asked.question.evidence
    )


def analyse(
    path: Path, embed: Embed | None, listing: bool = False, budgets: Sequence[int] = BUDGETS
) -> list[str]:
    data = json.loads(path.read_text())
    names = {term for name in data["speakers"] for term in terms(name)}
    asked_by_budget: dict[int, list[Asked]] = {}
    for asked in asked_facts(data, embed, budgets):
        asked_by_budget.setdefault(asked.budget, []).append(asked)
    lines = []
    for budget, all_asked in sorted(asked_by_budget.items()):
        found = ceiling = lucky = 0
        misses: Counter[str] = Counter()
        by_kind: Counter[str] = Counter()
        for asked in all_asked:
            saying = says(asked, names, nearest_by_meaning(asked))
            said = all(saying.values())
            ceiling += said and fits(asked, saying)
            if asked.found:
                found += 1
                lucky += not said
                continue
            reason = why(asked, saying)
            misses[reason] += 1
            by_kind[f"{asked.question.kind}:{reason}"] += 1
            if listing:
                lines.append(
                    f"  miss {path.name} {budget} {asked.question.id} {asked.question.kind} {reason} "
                    f"needs={needed_rank(asked)} shown={len(asked.recall.shown)}: {asked.question.text}"
                )
        n = len(all_asked)
        lines.append(
            f"memory.facts_misses file={path.name} budget={budget} recall={found / n:.2f} "
            f"ceiling={ceiling / n:.2f} found_unsaid={lucky} "
            + " ".join(f"{reason}={count}" for reason, count in sorted(misses.items()))
            + " | "
            + " ".join(f"{kind}={count}" for kind, count in sorted(by_kind.items()))
        )
    return lines


def guards(embed: Embed | None) -> list[str]:
    lines: list[str] = []
    for path in dev_conversations():
        replayed = replay(read_conversation(json.loads(path.read_text())), BUDGETS, embed)
        lines += report(f"file={path.name}", replayed)
    lines += report("file=generated-1000", replay(generate(1000), GENERATED_BUDGETS, embed))
    return lines


def main(argv: Sequence[str]) -> None:
    files = [Path(a) for a in argv if not a.startswith("--")] or dev_facts()
    embed = embedder("embedded")
    for path in files:
        for line in analyse(path, embed, "--list" in argv):
            print(line, flush=True)
    if "--guards" in argv:
        for line in guards(embed):
            print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
