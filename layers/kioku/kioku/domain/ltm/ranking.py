"""Which memories matter to a turn: lexical relevance (BM25 over stemmed words), then whose, then how new.

Pure Python and cheap enough for every turn: a document is its memory's line as the model reads it
(names filled in), cut into words, each folded, stemmed and memoised. Dates are read as words too:
``2025-03-14`` is ``2025 march 14``, ``Mar`` is ``march``, ``3rd`` is ``3``, so a question and a
memory that write a date differently still meet. Documents are ranked in parts (``Part``), each an
``Index`` of its documents' terms that the caller can keep while they stay the same (a warm worker
then ranks a thousand memories without reading one of their words again); scoring walks only the
postings of the query's terms, and ordering sorts only the documents that match. Ranking only
orders what the turn may already see; privacy is decided before any memory gets here.
"""

from __future__ import annotations

import heapq
import math
import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import add, le, mul, sub
from typing import Final

from kioku.domain.ltm.stemming import _CALENDAR, _learn, _terms, _texts, terms

TRIGGER_WEIGHT: Final = 1.0
DIALOGUE_WEIGHT: Final = 0.3
"""The message being answered decides most; the dialogue shown before it adds a little."""
TIER_BOOST: Final = (0.15, 0.08, 0.0)
"""Relevance bonus of the speaker's own memories, the other participants', the server's."""
RECENCY_BOOST: Final = 0.1
"""The newest memory gets this much more relevance than the oldest, so a correction outranks the
fact it corrects when both match alike."""
FEEDBACK_DOCUMENTS: Final = 5
FEEDBACK_TERMS: Final = 10
FEEDBACK_WEIGHT: Final = 0.2
"""Pseudo-relevance feedback (``rank``): the rarest words of the best matches join the query at this
weight, below the dialogue's."""
NEIGHBOUR_LIFT: Final = 0.3
NEIGHBOUR_REACH: Final = 2
NEIGHBOUR_SECONDS: Final = 3600.0
"""A memory is lifted by ``NEIGHBOUR_LIFT`` of the best relevance of the ``NEIGHBOUR_REACH`` saved
before and after it, within this many seconds of it (``rank``)."""
CORRECTION_CHECKED: Final = 8
"""The best matches whose newer memories about the same thing are lifted above them (``rank``)."""
CORRECTION_RARE_SHARE: Final = 0.01
"""A word at most this share of a part's memories hold (and at least two may) names one thing."""
CORRECTION_MARGIN: Final = 0.01
SEMANTIC_WEIGHT: Final = 0.3
"""With embeddings, the share of a memory's relevance that is its meaning; the rest is its words
(both relative to the query's best, ``hybrid``). Measured with ``make bench`` and a real model: from
0.2 to 0.5 recall differs by a question or two; 0.3 recalled most at 1,000 memories."""
LEXICAL_SHORTLIST: Final = 16
"""With embeddings, the documents that match best by words whose cosine is always measured exactly."""
BM25_K1: Final = 1.2
BM25_B: Final = 0.75
SPEAKER, PARTICIPANT, SERVER = 0, 1, 2

_CAPITALISED: Final = re.compile(r"\b[^\W\d_][^\W_]*")
"""A word of a message (those whose first letter is a capital can be a name's short form)."""
_TEXT_CACHE_LIMIT: Final = 20_000
_COUNTED_TERMS_LIMIT: Final = 2_000


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """What a turn is answering: the triggering message, and the other messages of the dialogue shown.

    ``ignored`` are words never worth matching on (the bot's own names: every turn says them)."""

    message: str = ""
    dialogue: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    def weights(self) -> dict[str, float]:
        ignored = {term for name in self.ignored for term in terms(name)}
        weights: dict[str, float] = {}
        for text in self.dialogue:
            for term in terms(text):
                weights[term] = DIALOGUE_WEIGHT
        for term in terms(self.message):
            weights[term] = TRIGGER_WEIGHT
        return {term: weight for term, weight in weights.items() if term not in ignored}


@dataclass(frozen=True, slots=True)
class Ranked:
    """A document's place: its number among those ranked, and its relevance (0: nothing in common)."""

    index: int
    relevance: float


@dataclass(frozen=True, slots=True)
class Index:
    """Documents as BM25 reads them. Each is a text, the ``shared`` text every one of them holds
    too (a section's label: whom its memories are about) and a key of its own (a memory's id, a
    term as ``terms`` reads it, so a question quoting it finds it).

    ``documents``: each text's terms; ``postings``: for each term, the documents holding it (their
    numbers, once for each time); ``lengths``: each document's terms, shared and key included."""

    documents: tuple[Sequence[str], ...]
    postings: Mapping[str, Sequence[int]]
    lengths: tuple[int, ...]
    shared: Mapping[str, int]
    keys: Mapping[str, int]
    total: int
    """The sum of ``lengths``."""
    days: tuple[Sequence[str], ...] = ()
    """Each document's day's terms, when it has one (``terms_of``), in ``postings`` too."""
    counted: dict[str, dict[int, int]] = field(default_factory=dict, compare=False, repr=False)
    """``counts`` of the terms asked for so far: a warm worker's turns ask the same words again."""

    def terms_of(self, number: int) -> Sequence[str]:
        """A document's terms: its text's, then its day's."""
        own = self.documents[number]
        return [*own, *self.days[number]] if self.days else own

    def counts(self, term: str) -> dict[int, int]:
        """How often ``term`` occurs in each document holding it (do not change what it answers)."""
        known = self.counted.get(term)
        if known is None:
            known = dict(Counter(self.postings.get(term, ())))
            shared = self.shared.get(term, 0)
            if shared:
                known = {number: known.get(number, 0) + shared for number in range(len(self.lengths))}
            keyed = self.keys.get(term)
            if keyed is not None:
                known[keyed] = known.get(keyed, 0) + 1
            if len(self.counted) >= _COUNTED_TERMS_LIMIT:
                self.counted.clear()
            self.counted[term] = known
        return known


def index(
    texts: Sequence[str], shared: str = "", keys: Sequence[str] = (), days: Sequence[str] = ()
) -> Index:
    """The ``Index`` of ``texts`` (in their order), each also holding ``shared``, its key and the
    words of its day (``days``, when given), which do not count in its length: every memory has a
    day, and a longer book of alike days must not move which texts are short."""
    wanted = [*texts, *days]
    unknown = [text for text in dict.fromkeys(wanted) if text not in _texts]
    if len(_texts) + len(unknown) > _TEXT_CACHE_LIMIT:  # start again, with this section's texts all
        _texts.clear()
        unknown = list(dict.fromkeys(wanted))
    if unknown:
        _learn(unknown)
    documents: tuple[Sequence[str], ...] = tuple(map(_texts.__getitem__, texts))
    sizes = list(map(len, documents))
    postings: defaultdict[str, list[int]] = defaultdict(list)
    for number, document in enumerate(documents):  # a plain loop: Python 3.11 runs it faster than map chains
        for term in document:
            postings[term].append(number)
    dated = tuple(map(_texts.__getitem__, days))
    if dated:
        _post_days(postings, dated)
    shared_terms = terms(shared)
    extra = len(shared_terms) + (1 if keys else 0)
    lengths = tuple(map(add, sizes, repeat(extra)))
    if all(map(str.isdigit, keys)) and min(map(len, keys), default=3) > 2 and all(map(str.isascii, keys)):
        named = dict(zip(keys, range(len(keys)), strict=True))  # memory ids: terms as they are
    else:
        named = {}
        for number, key in enumerate(keys):
            found = "".join(terms(key))
            if found:
                named[found] = number
    counts = {term: shared_terms.count(term) for term in shared_terms}
    return Index(documents, dict(postings), lengths, counts, named, sum(lengths), dated)


def _post_days(postings: defaultdict[str, list[int]], dated: Sequence[Sequence[str]]) -> None:
    """Each day's terms posted as if each document's text ended with them: a run of same-day documents
    at once (a section is newest first), merged in order where a text holds the term too."""
    added: defaultdict[str, list[int]] = defaultdict(list)
    start = 0
    for end in range(1, len(dated) + 1):
        if end == len(dated) or dated[end] is not dated[start]:  # one list per day text (``_texts``)
            for term in dated[start]:
                added[term] += range(start, end)
            start = end
    for term, numbers in added.items():
        postings[term] = sorted(postings[term] + numbers) if term in postings else sorted(numbers)


@dataclass(frozen=True, slots=True)
class Part:
    """Documents ranked together with other parts: an ``Index``, where its documents start among all
    those ranked, their tier (``SPEAKER`` …), and each one's age (seconds since it was written), in
    ascending order: a part is newest first."""

    index: Index
    start: int
    tier: int
    ages: Sequence[float]

    def __len__(self) -> int:
        return len(self.index.lengths)


def clear_caches() -> None:
    """Forget every memoised word and text, as a fresh worker starts (``make bench``'s cold runs)."""
    _terms.clear()
    _texts.clear()


Cosines = Callable[[Sequence[int]], Mapping[int, float]]
"""Given the documents that match best by words (their numbers), the cosine with the query of every
document with an embedding (exact for those and for the nearest by meaning, 0 for the rest); a
document left out has no embedding."""


def rank(
    parts: Sequence[Part],
    query: RecallQuery,
    *,
    semantic: Cosines | None = None,
    among: Collection[int] | None = None,
) -> Iterator[Ranked]:
    """Documents best first: by relevance (lifted a little for the speaker's own, then the other
    participants', and for newer ones), then by tier, then newest, then by their number (their
    place in the parts' order): the same input always ranks the same. ``parts`` follow one another
    from document 0. ``semantic`` makes the relevance ``hybrid``. ``among``: rank only these
    documents (their numbers), as if there were no others. Lazy: the documents that match come off
    a heap as they are read, then the rest in tier and age order."""
    chosen = None if among is None else frozenset(among)
    weights = _with_short_forms(parts, query, query.weights())
    lexical = _bm25(parts, weights, chosen)
    if FEEDBACK_TERMS and lexical:
        lexical = _bm25(parts, _with_feedback(parts, weights, lexical), chosen)
    relevance = lexical
    if semantic is not None:
        best = sorted(lexical, key=lexical.__getitem__, reverse=True)[:LEXICAL_SHORTLIST]
        cosines = semantic(best)
        if chosen is not None:  # only those ranked have a say in the median
            cosines = {number: cosine for number, cosine in cosines.items() if number in chosen}
        relevance = hybrid(lexical, cosines)
    relevance = _corrections_lifted(parts, _neighbours_lifted(parts, relevance, chosen), chosen)
    ages = list(chain.from_iterable(part.ages for part in parts))
    tiers = list(chain.from_iterable(repeat(part.tier, len(part)) for part in parts))
    oldest = max((part.ages[-1] for part in parts if len(part)), default=0.0) or 1.0
    lift, newest = [1 + boost + RECENCY_BOOST for boost in TIER_BOOST], RECENCY_BOOST / oldest
    keyed = [
        (-score * (lift[tiers[number]] - newest * ages[number]), tiers[number], ages[number], number)
        for number, score in relevance.items()
        if score > 0
    ]
    heapq.heapify(keyed)
    matched = {number for *_, number in keyed}
    rest = (
        Ranked(number, 0.0)
        for number in _by_tier_and_age(parts)
        if number not in matched and (chosen is None or number in chosen)
    )
    return chain(_popped(keyed), rest)


def _with_short_forms(
    parts: Sequence[Part], query: RecallQuery, weights: dict[str, float]
) -> dict[str, float]:
    """``weights`` and, at the weight of its short form, each name of a part's label that a
    capitalised word of the message begins and no document holds: "Mel" asks about Melanie, "Jo"
    about Joanna, and only the label tells whose memories are whose."""
    names = sorted({name for part in parts for name in part.index.shared if name.isalpha()})
    if not names:
        return weights
    added: dict[str, float] = {}
    for word in _CAPITALISED.findall(query.message):
        if not word[0].isupper():
            continue
        for short in terms(word):
            weight = weights.get(short)
            if weight is None or len(short) < 2 or short in names:
                continue
            if any(short in part.index.postings for part in parts):
                continue  # a word some memory says: not (only) a short form
            for name in names:
                if name.startswith(short) and name not in weights:
                    added[name] = max(added.get(name, 0.0), weight)
    return {**weights, **added} if added else weights


def _with_feedback(
    parts: Sequence[Part], weights: Mapping[str, float], scores: Mapping[int, float]
) -> dict[str, float]:
    """``weights`` and, at ``FEEDBACK_WEIGHT``, the ``FEEDBACK_TERMS`` words that the
    ``FEEDBACK_DOCUMENTS`` best matches hold and that are rarest in all (each word's
    ``log(1 + n / df)`` summed over the matches holding it; a word only one memory holds finds
    nothing more): what a question is about is said in words it does not use
    ("activities" → "pottery", "camping"), and the best matches say them."""
    starts, total = [part.start for part in parts], sum(map(len, parts))
    rarity: defaultdict[str, float] = defaultdict(float)
    used = 0
    for number in heapq.nlargest(4 * FEEDBACK_DOCUMENTS, scores, key=scores.__getitem__):
        part = parts[bisect_right(starts, number) - 1]
        own = dict.fromkeys(part.index.terms_of(number - part.start))  # in order: ties rank alike everywhere
        if used == FEEDBACK_DOCUMENTS or not any(t in own and t not in part.index.shared for t in weights):
            continue  # matched by whom it is about alone (its label, a name): nothing of the topic
        used += 1
        for term in own:
            if term in weights or not term.isalpha() or term in _CALENDAR:
                continue  # a date is shared by unrelated memories
            df = sum(len(other.index.postings.get(term, ())) for other in parts)
            if df >= 2:
                rarity[term] += math.log(1 + total / df)
    expanded = dict(weights)
    # as Counter.most_common orders them (a Counter types its counts as int)
    for term, _ in heapq.nlargest(FEEDBACK_TERMS, rarity.items(), key=lambda item: item[1]):
        expanded[term] = FEEDBACK_WEIGHT
    return expanded


def _neighbours_lifted(
    parts: Sequence[Part], relevance: dict[int, float], among: frozenset[int] | None
) -> dict[int, float]:
    """``relevance`` with each memory lifted by ``NEIGHBOUR_LIFT`` of the best relevance among the
    ``NEIGHBOUR_REACH`` memories saved just before and after it in its part (within
    ``NEIGHBOUR_SECONDS``): what people say a line after naming a topic rarely names it again
    ("what career path?" ... "I'm keen on counseling"), and a question needing two of them gets both."""
    if not relevance or not NEIGHBOUR_LIFT:
        return relevance
    lifted = dict(relevance)
    known = relevance.get
    for part in parts:
        n, start, ages = len(part), part.start, part.ages
        if n < 2:
            continue
        # a section at a time, shifted lists compared in C: a thousand memories cost no loop of their own
        scores = list(map(known, range(start, start + n), repeat(0.0)))
        shifted = []
        for apart in range(1, min(NEIGHBOUR_REACH, n - 1) + 1):
            close = list(map(le, map(sub, ages[apart:], ages[:-apart]), repeat(NEIGHBOUR_SECONDS)))
            padding = [0.0] * apart
            shifted.append(list(map(mul, scores[apart:], close)) + padding)  # the one ``apart`` later
            shifted.append(padding + list(map(mul, scores[:-apart], close)))
        best = list(map(max, *shifted))
        for number in compress(range(start, start + n), best):
            if among is None or number in among:
                lifted[number] = lifted.get(number, 0.0) + NEIGHBOUR_LIFT * best[number - start]
    return lifted


def _corrections_lifted(
    parts: Sequence[Part], relevance: dict[int, float], among: frozenset[int] | None
) -> dict[int, float]:
    """``relevance`` with each newer memory about the same thing as one of the best matches lifted
    to just above it: a correction ("left Lisbon and moved to Porto") rarely shares the question's
    words as the fact it corrects does ("lives in Lisbon"), but it shares a rare word with that fact.
    The same thing: the same part (whom the memories are about) and a word of the fact (not a
    number, a date or the part's label) that at most ``CORRECTION_RARE_SHARE`` of the part's
    memories hold."""
    if not relevance:
        return relevance
    starts = [part.start for part in parts]
    lifted = dict(relevance)
    for number in heapq.nlargest(CORRECTION_CHECKED, relevance, key=relevance.__getitem__):
        part = parts[bisect_right(starts, number) - 1]
        own, postings, ages = number - part.start, part.index.postings, part.ages
        rare = max(2, int(len(part) * CORRECTION_RARE_SHARE))
        newest = None
        for term in dict.fromkeys(part.index.terms_of(own)):
            holders = postings.get(term, ())
            if len(holders) > rare or term in part.index.shared or not term.isalpha() or term in _CALENDAR:
                continue  # a number or a date is shared by unrelated memories
            for other in holders:
                if ages[other] >= ages[own] or (among is not None and part.start + other not in among):
                    continue
                if newest is None or (ages[other], other) < (ages[newest], newest):
                    newest = other
        if newest is not None:
            floor = relevance[number] * (1 + CORRECTION_MARGIN)
            lifted[part.start + newest] = max(lifted.get(part.start + newest, 0.0), floor)
    return lifted


def _popped(keyed: list[tuple[float, int, float, int]]) -> Iterator[Ranked]:
    while keyed:
        negative, _, _, number = heapq.heappop(keyed)
        yield Ranked(number, -negative)


def _bm25(
    parts: Sequence[Part], weights: Mapping[str, float], among: frozenset[int] | None
) -> dict[int, float]:
    """Okapi BM25 of each document holding a query term (by its number)."""
    if among is None:
        n = sum(len(part) for part in parts)
        total = sum(part.index.total for part in parts)
    else:
        n = len(among)
        starts = [part.start for part in parts]
        total = 0
        for number in among:
            part = parts[bisect_right(starts, number) - 1]
            total += part.index.lengths[number - part.start]
    if not n or not weights:
        return {}
    average = (total / n) or 1.0
    flat, per_length = BM25_K1 * (1 - BM25_B), BM25_K1 * BM25_B / average
    scores: dict[int, float] = {}
    for term, weight in weights.items():
        found = [(part, part.index.counts(term)) for part in parts]
        if among is not None:
            found = [
                (part, {n: count for n, count in counts.items() if part.start + n in among})
                for part, counts in found
            ]
        df = sum(len(counts) for _, counts in found)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        lift = weight * idf * (BM25_K1 + 1)
        for part, counts in found:
            start, lengths = part.start, part.index.lengths
            for number, count in counts.items():
                scores[start + number] = scores.get(start + number, 0.0) + lift * count / (
                    count + flat + per_length * lengths[number]
                )
    return scores


def hybrid(lexical: Mapping[int, float], semantic: Mapping[int, float]) -> dict[int, float]:
    """Words and meaning blended by ``SEMANTIC_WEIGHT``, each relative to this query: a document's
    BM25 over the best of any document, and its cosine's place between the median of the measured
    cosines (at or below it: 0) and the best. A model's cosines crowd into a band of its own
    (all-MiniLM-L6-v2 gives unrelated memories 0.2–0.4), so cosines blended as they are let the
    many unrelated memories outweigh the words that tell related ones apart (``make bench``,
    docs/memory.md). A document without an embedding, or whose cosine was not measured, adds no
    meaning: it never outranks one with the same words that has (saved before embeddings were on,
    it would otherwise outrank every correction saved since)."""
    best_words = max(lexical.values(), default=0.0) or 1.0
    blended = {number: (1 - SEMANTIC_WEIGHT) * score / best_words for number, score in lexical.items()}
    measured = sorted(cosine for cosine in semantic.values() if cosine > 0)
    if not measured:
        meaning: dict[int, float] = {}
    elif measured[-1] > (median := measured[(len(measured) - 1) // 2]):
        span = measured[-1] - median
        meaning = {number: (cosine - median) / span for number, cosine in semantic.items() if cosine > median}
    else:  # one cosine, or all alike: the best are as near as can be
        meaning = {number: 1.0 for number, cosine in semantic.items() if cosine == measured[-1]}
    for number, near in meaning.items():
        blended[number] = blended.get(number, 0.0) + SEMANTIC_WEIGHT * near
    return blended


def _by_tier_and_age(parts: Sequence[Part]) -> Iterator[int]:
    """Every document's number by tier, then newest first, then by number: each part is in that
    order already, so the parts of one tier are merged as they are read."""
    for tier in sorted({part.tier for part in parts}):
        same = [part for part in parts if part.tier == tier and len(part)]
        if len(same) == 1:
            yield from range(same[0].start, same[0].start + len(same[0]))
            continue
        runs = [zip(part.ages, range(part.start, part.start + len(part)), strict=True) for part in same]
        for _, number in heapq.merge(*runs):
            yield number


def token_set(text: str) -> frozenset[str]:
    """The distinct terms of ``text``: what near-duplicate detection compares."""
    return frozenset(terms(text))


def similarity(first: Iterable[str], second: Iterable[str]) -> float:
    """Jaccard similarity of two term sets (1.0: the same words)."""
    a, b = set(first), set(second)
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
