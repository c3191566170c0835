"""Corrections bench: does a corrected fact end as one current memory?

Over the generated conversation (``bench.memory_conversation``), every memory is saved in order,
scope by scope (a person's, the server's), and compared with the memories its scope holds as
``create_long_term_memory`` compares them (``most_similar``'s words in common, the best
``SIMILAR_ON_LIMIT``). A correction (the evidence of a question that has ``superseded`` utterances)
ends as one current memory when the save's answer names the memory it corrects, so the model can
move it there with ``update_long_term_memory``; before the answer named close memories, every
correction was saved beside the fact it corrects, both recalled. It also counts the saves of other
facts whose answer asks (the question's cost: the model reads it and keeps both).

    python -m bench.memory_corrections [--sizes 200,1000]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from bench.memory_conversation import Conversation, generate
from kioku.domain.ltm.ranking import similarity
from kioku.domain.ltm.recall import fact_words
from kioku.services.ltm_saving import CORRECTION_SIMILARITY, NEAR_DUPLICATE_SIMILARITY, SIMILAR_ON_LIMIT


def measure(conversation: Conversation, threshold: float = CORRECTION_SIMILARITY) -> dict[str, int]:
    corrects: dict[str, set[str]] = {}
    for question in conversation.questions:
        for evidence in question.evidence if question.superseded else ():
            corrects.setdefault(evidence, set()).update(question.superseded)
    held: dict[str, list[tuple[str, str]]] = {}
    counts = {"corrections": 0, "named": 0, "other_saves": 0, "asked_on_other_saves": 0}
    for utterance in conversation.utterances:
        if utterance.memory is None:
            continue
        scope = held.setdefault("server" if utterance.scope == "server" else utterance.speaker, [])
        words = fact_words(utterance.memory)
        scored = sorted(
            ((similarity(words, fact_words(text)), memory) for memory, text in scope), reverse=True
        )[:SIMILAR_ON_LIMIT]
        named = {memory for score, memory in scored if threshold <= score < NEAR_DUPLICATE_SIMILARITY}
        old = corrects.get(utterance.id, set()) & {memory for memory, _ in scope}
        if old:
            counts["corrections"] += 1
            counts["named"] += bool(named & old)
        else:
            counts["other_saves"] += 1
            counts["asked_on_other_saves"] += bool(named)
        scope.append((utterance.id, utterance.memory))
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="200,1000", help="sizes of the generated conversation")
    args = parser.parse_args(argv)
    for size in (int(each) for each in args.sizes.split(",") if each):
        conversation = generate(size)
        # before: the answer named only the near-duplicate's memory, never a close one
        before, c = measure(conversation, NEAR_DUPLICATE_SIMILARITY), measure(conversation)
        print(
            f"memory.corrections_one_memory={_share(c):.2f} before={_share(before):.2f} memories={size} "
            f"corrections={c['corrections']} asked_on_other_saves={c['asked_on_other_saves']}/"
            f"{c['other_saves']} threshold={CORRECTION_SIMILARITY}"
        )


def _share(counts: dict[str, int]) -> float:
    return counts["named"] / counts["corrections"] if counts["corrections"] else 0.0


if __name__ == "__main__":
    main()
