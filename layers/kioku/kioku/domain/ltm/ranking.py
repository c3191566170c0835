"""Which memories matter to a turn: lexical relevance (BM25 over stemmed words), then whose, then how new.

Pure Python and cheap enough for every turn: a document is its memory's line as the model reads it
(names filled in), cut into words, each folded, stemmed and memoised. Dates are read as words too:
``2025-03-14`` is ``2025 march 14``, ``Mar`` is ``march``, ``3rd`` is ``3``, so a question and a
memory that write a date differently still meet. Ranking only orders what the turn may already see;
privacy is decided before any memory gets here.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

TRIGGER_WEIGHT: Final = 1.0
DIALOGUE_WEIGHT: Final = 0.3
"""The message being answered decides most; the dialogue shown before it adds a little."""
TIER_BOOST: Final = (0.15, 0.08, 0.0)
"""Relevance bonus of the speaker's own memories, the other participants', the server's."""
RECENCY_BOOST: Final = 0.1
"""The newest memory gets this much more relevance than the oldest, so a correction outranks the
fact it corrects when both match alike."""
SEMANTIC_WEIGHT: Final = 0.5
"""With embeddings, a memory's relevance is this share of its cosine with the query (from 0) and the
rest its BM25 as a share of a full match (``bm25_ceiling``): half what it means, half its words."""
BM25_K1: Final = 1.2
BM25_B: Final = 0.75
SPEAKER, PARTICIPANT, SERVER = 0, 1, 2

_WORD = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|[^\W_]+", re.UNICODE)
_ORDINAL = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)$")
_MONTHS: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CALENDAR: Final = {
    **{name[:3]: name for name in _MONTHS + _WEEKDAYS},
    **{name: name for name in _MONTHS + _WEEKDAYS},
    "sept": "september",
    "tues": "tuesday",
    "thur": "thursday",
    "thurs": "thursday",
}
_STOPWORD_TEXT: Final = """a an and are as at be been but by can could did do does doing for from had has have having he her
    here hers him his how i if in into is it its me my myself no nor not of off on once or our ours
    out over own she so some such than that the their theirs them then there these they this those to
    too up us very was we were what when where which while who whom why will with would you your yours
    yourself just also about again any all am s t d ll m re ve o y"""
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())
_VOWELS: Final = frozenset("aeiouy")
_STEM_CACHE_LIMIT: Final = 50_000
_stems: dict[str, str] = {}
_DOCUMENT_CACHE_LIMIT: Final = 20_000
_documents: dict[str, Document] = {}


def stem(word: str) -> str:
    """A light English stemmer (plurals, -ing, -ed, -ly, a final e): ``moved``, ``moves``, ``moving``
    and ``move`` are all ``mov``, ``studies`` and ``studied`` are ``study``, ``running`` is ``run``.
    Not Porter's, but it joins the forms a question and a memory usually differ by, and leaves
    names and numbers alone."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        root = word[: -len(suffix)]
        if word.endswith(suffix) and len(root) >= 3 and _VOWELS & set(root):
            if len(root) > 3 and root[-1] == root[-2] and root[-1] not in "lsz":
                root = root[:-1]  # running → run
            word = root
            break
    else:
        if word.endswith("ly") and len(word) > 5:
            word = word[:-2]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The words of ``text`` as ranking compares them: folded, dates spelled out, stop words gone, stemmed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    found: list[str] = []
    for word in _WORD.findall(folded):
        if "-" in word:  # an ISO date
            year, month, day = word.split("-")
            if 1 <= int(month) <= len(_MONTHS):
                found += [year, _MONTHS[int(month) - 1], str(int(day))]
            continue
        known = _stems.get(word)
        if known is None:
            known = _term(word)
            if len(_stems) >= _STEM_CACHE_LIMIT:
                _stems.clear()
            _stems[word] = known
        if known:
            found.append(known)
    return found


def _term(word: str) -> str:
    if word in _STOPWORDS:
        return ""
    if word.isdigit():
        return str(int(word)) if len(word) <= 2 else word
    ordinal = _ORDINAL.match(word)
    if ordinal:
        return str(int(ordinal.group(1)))
    return _CALENDAR.get(word) or stem(word)


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
    """A document's place: its index among those ranked, and its relevance (0: no word in common)."""

    index: int
    relevance: float


@dataclass(frozen=True, slots=True)
class Document:
    """A text as BM25 reads it: how many terms it has, and how often each occurs."""

    length: int
    counts: dict[str, int]


def document(text: str) -> Document:
    """``text``'s ``Document``, memoised: a warm worker ranks the same memories turn after turn."""
    known = _documents.get(text)
    if known is None:
        found = terms(text)
        counts: dict[str, int] = {}
        for term in found:
            counts[term] = counts.get(term, 0) + 1
        known = Document(len(found), counts)
        if len(_documents) >= _DOCUMENT_CACHE_LIMIT:
            _documents.clear()
        _documents[text] = known
    return known


def bm25(documents: Sequence[Document], weights: dict[str, float]) -> list[float]:
    """Okapi BM25 of each document for a weighted bag of query terms."""
    if not weights or not documents:
        return [0.0] * len(documents)
    n = len(documents)
    average = (sum(d.length for d in documents) / n) or 1.0
    frequency = {term: sum(1 for d in documents if term in d.counts) for term in weights}
    idf = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in frequency.items() if df}
    query = [(term, weights[term] * idf[term]) for term in idf]
    scores = []
    for d in documents:
        score = 0.0
        norm = BM25_K1 * (1 - BM25_B + BM25_B * d.length / average)
        for term, weight in query:
            tf = d.counts.get(term)
            if tf:
                score += weight * tf * (BM25_K1 + 1) / (tf + norm)
        scores.append(score)
    return scores


def rank(
    documents: Sequence[Document],
    query: RecallQuery,
    *,
    tiers: Sequence[int],
    ages: Sequence[float],
    ids: Sequence[str],
    semantic: Sequence[float | None] | None = None,
) -> list[Ranked]:
    """Documents best first: by relevance (lifted a little for the speaker's own, then the other
    participants', and for newer ones), then by tier, then newest, then id: the same input always
    ranks the same. ``ages`` are seconds since each was written; ``tiers`` use ``SPEAKER`` …;
    ``semantic``, each document's cosine with the query's embedding (None: it has none), makes the
    relevance ``hybrid``."""
    weights = query.weights()
    relevance = bm25(documents, weights)
    if semantic is not None:
        relevance = hybrid(relevance, semantic, bm25_ceiling(documents, weights))
    oldest = max(ages, default=0.0) or 1.0
    boosted = [
        score * (1 + TIER_BOOST[tier] + RECENCY_BOOST * (1 - age / oldest))
        for score, tier, age in zip(relevance, tiers, ages, strict=True)
    ]
    keys = [(-score, *rest) for score, *rest in zip(boosted, tiers, ages, ids, strict=True)]
    order = sorted(range(len(documents)), key=keys.__getitem__)
    return [Ranked(i, boosted[i]) for i in order]


def bm25_ceiling(documents: Sequence[Document], weights: dict[str, float]) -> float:
    """The BM25 of a document of average length holding every query term once: what a full match
    scores. A term no document has counts too (as rare as can be), so a question whose telling
    words match nothing is a poor lexical match, however common the one word it shares."""
    n = len(documents)
    frequency = {term: sum(1 for d in documents if term in d.counts) for term in weights}
    return sum(weights[term] * math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in frequency.items())


def hybrid(lexical: Sequence[float], semantic: Sequence[float | None], ceiling: float) -> list[float]:
    """BM25 as a share of ``ceiling`` (at most 1), blended with the cosine (below 0: 0) by
    ``SEMANTIC_WEIGHT``; a document without an embedding keeps its share alone."""
    ceiling = ceiling or 1.0
    blended = []
    for score, cosine in zip(lexical, semantic, strict=True):
        share = min(score / ceiling, 1.0)
        if cosine is not None:
            share = (1 - SEMANTIC_WEIGHT) * share + SEMANTIC_WEIGHT * max(cosine, 0.0)
        blended.append(share)
    return blended


def token_set(text: str) -> frozenset[str]:
    """The distinct terms of ``text``: what near-duplicate detection compares."""
    return frozenset(terms(text))


def similarity(first: Iterable[str], second: Iterable[str]) -> float:
    """Jaccard similarity of two term sets (1.0: the same words)."""
    a, b = set(first), set(second)
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
