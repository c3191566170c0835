"""Where a fresh worker's first ranking of 1,000 memories spends its time, stage by stage.

``python -m bench.ranking_cold`` starts ``RUNS`` fresh processes; each imports the recall stage, then
ranks 1,000 memories once (the real conversations' first 1,000 utterances when
``../shared/memory-dev/`` is there, else the generated conversation's 1,000) through the same steps
as ``recall.build_recall``, timing each in CPU time (the machine is shared: wall time there is other
sessions' work). The line printed is the fastest process's (by its total), and each stage's own
fastest. The look-alike table (``lookalikes``) is read by the first text that is not plain ASCII
that any neutraliser meets, once per container: its stage is what it costs when the first is a
memory's.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from itertools import repeat
from operator import sub

RUNS = 15
STAGES = (
    "import",
    "lookalike_table",
    "lines",
    "tokenise",
    "index",
    "rank",
    "fill",
    "total",
)
"""``import``: the recall stage's modules (not in ``total``: a container imports them at its start);
``lookalike_table``: reading the look-alike table, when the memories' first non-ASCII text needs
it; ``lines``: names filled in, neutralised, ``[#id] day: text``; ``tokenise``: every text and day
cut, folded and stemmed; ``index``: the postings and lengths besides; ``rank``: scores, feedback,
lifts and the heap; ``fill``: reading the ranking into the budget."""


def _once() -> dict[str, float]:
    clock = time.process_time
    started = clock()
    from kioku.domain import lookalikes
    from kioku.domain.ltm import ranking
    from kioku.domain.ltm import recall as recall_module

    imported = clock() - started
    memories, query, now = _memories()
    times = dict.fromkeys(STAGES, 0.0)
    times["import"] = imported
    learn, read_table = ranking._learn, lookalikes._readings
    depth = [0]

    def timed_learn(texts: list[str]) -> None:
        depth[0] += 1
        begun = clock()
        try:
            learn(texts)
        finally:
            depth[0] -= 1
            if not depth[0]:
                times["tokenise"] += clock() - begun

    def timed_table() -> dict[str, str]:
        begun = clock()
        try:
            return read_table()
        finally:
            times["lookalike_table"] += clock() - begun

    ranking._learn = timed_learn  # type: ignore[assignment]
    lookalikes._readings = timed_table  # type: ignore[assignment]
    gc.collect()
    begun = clock()
    ordered = sorted(memories, key=recall_module._NEWEST_FIRST, reverse=True)
    shelf = recall_module._shelf(ordered, "Asker", "kioku", "this server")
    candidates = list(
        map(recall_module.Recalled, ordered, shelf.lines, repeat(0), repeat(2), repeat(""), repeat(""))
    )
    times["lines"] = clock() - begun - times["lookalike_table"]
    step = clock()
    index = shelf.index()
    times["index"] = clock() - step - times["tokenise"]
    step = clock()
    ages = list(map(sub, repeat(now), (memory.updated_at.timestamp() for memory in ordered)))
    ranked = recall_module.rank_recall(candidates, [ranking.Part(index, 0, ranking.SERVER, ages)], query)
    times["rank"] = clock() - step
    step = clock()
    recall_module._fill(candidates, ["About this server:"], ranked, 7_800)
    times["fill"] = clock() - step
    times["total"] = clock() - begun
    return {stage: seconds * 1000 for stage, seconds in times.items()}


def _memories() -> tuple[list[object], object, float]:
    from bench.memory_conversation import generate, read_conversation
    from bench.memory_replay import dev_conversations
    from kioku.domain.ltm.memory import Memory, MemoryScope
    from kioku.domain.ltm.ranking import RecallQuery

    scope = MemoryScope.server("500000000000000001", 1)
    files = dev_conversations()
    conversations = [read_conversation(json.loads(path.read_text())) for path in files] or [
        generate(1000, seed=7)
    ]
    said = [u for conversation in conversations for u in conversation.utterances if u.memory][:1000]
    memories = [
        Memory(scope, str(10_000 + n), u.memory or "", "401", u.date, u.date) for n, u in enumerate(said)
    ]
    question = conversations[0].questions[0].text if conversations[0].questions else "who went where?"
    query = RecallQuery(question, ("hey all", "anyone around?"), ("kioku",))
    newest = max((memory.updated_at for memory in memories), default=datetime.now(UTC))
    return list(memories), query, (newest + timedelta(days=1)).timestamp()


def stage_lines(runs: int = RUNS) -> list[str]:
    """The fastest of ``runs`` fresh processes, stage by stage (CPU ms)."""
    measured = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-m", "bench.ranking_cold", "--once"], capture_output=True, text=True
        )
        if done.returncode:
            raise RuntimeError(f"the cold ranking bench failed:\n{done.stderr}")
        measured.append(json.loads(done.stdout))
    fastest = min(measured, key=lambda times: times["total"])
    return [
        "memory.ranking_cold_stages_ms "
        + " ".join(f"{stage}={fastest[stage]:.2f}" for stage in STAGES)
        + f" (CPU, the fastest of {runs} fresh processes by total; 1,000 memories, ranked once)",
        "memory.ranking_cold_stages_fastest_ms "
        + " ".join(f"{stage}={min(times[stage] for times in measured):.2f}" for stage in STAGES)
        + " (each stage's own fastest)",
    ]


def main(argv: list[str] | None = None) -> None:
    if (argv if argv is not None else sys.argv[1:]) == ["--once"]:
        print(json.dumps(_once()))
        return
    print("\n".join(stage_lines()))


if __name__ == "__main__":
    main()
