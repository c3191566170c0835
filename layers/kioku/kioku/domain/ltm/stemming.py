"""Words as ranking compares them: folded (NFKC, case), cut into runs of letters, digits and inner
hyphens, stop words gone, dates spelled out (``2025-03-14`` is ``2025 march 14``, ``Mar`` is
``march``, ``3rd`` is ``3``), irregular forms and plurals stemmed, each word's term memoised per
worker (``ranking`` reads texts through these)."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

_APART: Final = "\x00"
"""Between the texts of a batch tokenised at once (``_learn``): a word of its own, its own term."""
_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*|\x00", re.UNICODE)
_ASCII_SEPARATORS: Final = str.maketrans(
    {chr(c): " " for c in range(128) if not chr(c).isalnum() and chr(c) not in ("-", _APART)}
)
"""An ASCII text's words are its runs of letters, digits and hyphens: everything else is a space."""
_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})", re.UNICODE)
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
_IRREGULAR_TEXT: Final = """go went gone going goes; buy bought; bring brought; think thought; teach taught;
    catch caught; mak made; tak took taken; see saw seen; get got gotten; giv gave given; find found;
    feel felt; keep kept; meet met; run ran; writ wrote written; begin began begun; com came;
    becom became; know knew known; grow grew grown; draw drew drawn; driv drove driven; eat ate eaten;
    fall fell fallen; fly flew flown; forget forgot forgotten; hold held; hear heard; los lost;
    pay paid; send sent; sell sold; spend spent; stand stood; swim swam swum; sing sang sung;
    win won; wear wore worn; build built; choos chose chosen; speak spoke spoken; sit sat;
    sleep slept; understand understood; throw threw thrown; wak woke woken; fight fought;
    seek sought; hang hung; ride rode ridden; break broke broken; mean meant; lead led; tell told;
    leav left; child children; person people; man men; woman women; mouse mice; tooth teeth"""
_IRREGULAR: Final = {
    form: forms.split()[0] for forms in _IRREGULAR_TEXT.split(";") for form in forms.split()[1:]
}
"""Irregular forms as the stem of the word's base form (``stem``: ``made`` as ``making`` reads)."""
_STOPWORD_TEXT: Final = """a an and are as at be been but by can could did do does doing for from had has have having he her
    here hers him his how i if in into is it its me my myself no nor not of off on once or our ours
    out over own she so some such than that the their theirs them then there these they this those to
    too up us very was we were what when where which while who whom why will with would you your yours
    yourself just also about again any all am s t d ll m re ve o y"""
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())
_MONTH_NUMBERS: Final = {
    **{str(number): name for number, name in enumerate(_MONTHS, 1)},
    **{f"{number:02d}": name for number, name in enumerate(_MONTHS, 1)},
}
_VOWELS: Final = frozenset("aeiouy")
_BRITISH_ROOTS: Final = [
    "armour",
    "behaviour",
    "candour",
    "clamour",
    "colour",
    "endeavour",
    "favour",
    "fervour",
    "flavour",
    "harbour",
    "honour",
    "humour",
    "labour",
    "neighbour",
    "odour",
    "parlour",
    "rigour",
    "rumour",
    "saviour",
    "savour",
    "splendour",
    "valour",
    "vapour",
    "vigour",
    "centre",
    "fibre",
    "litre",
    "lustre",
    "meagre",
    "metre",
    "sabre",
    "sombre",
    "spectre",
    "theatre",
]
_AMERICAN: Final = {
    british: british[:-2] + ("r" if british.endswith("our") else "er") for british in _BRITISH_ROOTS
}
"""British roots as American spelling writes them (``colourful`` is ``colorful``, ``centres``
``centers``), so a question and a memory spelled on either side of the Atlantic meet: a fixed list,
since ``our`` and ``re`` end many words that have no other spelling (``hour``, ``four``, ``acre``).
The endings that differ by rule (``travelled``, ``organise``) are ``stem``'s."""
_TERM_CACHE_LIMIT: Final = 50_000


def stem(word: str) -> str:
    """A light English stemmer (plurals, -ing, -ed, -ly, a final e): ``moved``, ``moves``, ``moving``
    and ``move`` are all ``mov``, ``studies`` and ``studied`` are ``study``, ``running`` is ``run``.
    Not Porter's, but it joins the forms a question and a memory usually differ by, and leaves
    names and numbers alone."""
    if len(word) <= 3 or not word.isalpha():
        return word
    last = word[-1]
    if last == "s":
        if word[-3:-1] == "ie" and len(word) > 4:
            return word[:-3] + "y"
        if word.endswith("sses"):
            word = word[:-2]
        elif word[-2] not in "sui":
            word = word[:-1]
    elif last == "d" and word[-3:-1] == "ie" and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ing"):
        root = word[:-3]
    elif word.endswith("ed"):
        root = word[:-2]
    else:
        root = ""
        if word.endswith("ly") and len(word) > 5:
            word = word[:-2]
    if len(root) >= 3 and not _VOWELS.isdisjoint(root):
        if len(root) > 3 and root[-1] == root[-2] and root[-1] not in "lsz":
            root = root[:-1]  # running → run
        word = root
    if word[-1] == "e" and len(word) > 3:
        word = word[:-1]
    if word.endswith("ll") and _syllables(word) > 1:
        return word[:-1]  # travelled, traveled → travel; install, installing → instal
    if word.endswith(("is", "ys")) and len(word) >= 6:
        return word[:-1] + "z"  # organise, organised, organising → organiz; analyse → analyz
    if word.endswith("isation"):
        return word[:-6] + "zation"
    return word


def _syllables(word: str) -> int:
    """How many runs of vowels ``word`` has: ``tell`` one, ``travell`` two."""
    runs, before = 0, False
    for letter in word:
        vowel = letter in _VOWELS
        runs += vowel and not before
        before = vowel
    return runs


def _american(word: str) -> str:
    """``word`` with a British root of ``_AMERICAN`` spelled the American way."""
    end = word.find("our", 2, 10) + 3  # where a root of the list would end (2: none)
    if end == 2:
        end = word.find("re", 3, 9) + 2
    american = _AMERICAN.get(word[:end]) if end > 1 else None
    return american + word[end:] if american else word


def _term(word: str) -> str:
    """A folded word as ranking compares it ("" for a stop word; a hyphenated one, its parts' terms
    with spaces between, an ISO date ``2025-03-14`` as ``2025 march 14``)."""
    if "-" in word:
        date = _ISO_DATE.fullmatch(word)
        if date:
            year, month, day = date.groups()
            return f"{year} {_MONTH_NUMBERS.get(month, month)} {int(day)}"
        return " ".join(filter(None, map(_terms.__getitem__, word.split("-"))))
    if word in _STOPWORDS:
        return ""
    if word.isdigit():
        return str(int(word)) if len(word) <= 2 else word
    ordinal = _ORDINAL.match(word) if word[:1].isdigit() else None
    if ordinal:
        return str(int(ordinal.group(1)))
    if word.endswith("ship") and len(word) >= 9:  # friendship → friend, mentorship → mentor
        word = word[:-4]
    return _CALENDAR.get(word) or _IRREGULAR.get(word) or stem(_american(word))


class _Terms(dict[str, str]):
    """Each word's term, worked out once per worker: a vocabulary is small, its texts many."""

    def __missing__(self, word: str) -> str:
        if len(self) >= _TERM_CACHE_LIMIT:
            self.clear()
        term = self[word] = _term(word)
        return term


_terms = _Terms()


def words(text: str) -> list[str]:
    """``text`` folded (NFKC, case) and cut into runs of letters, digits and inner hyphens."""
    if text.isascii():  # most memories: no normalisation to do, and a few C passes split them
        spaced = f" {text.lower().translate(_ASCII_SEPARATORS)} "
        if "-" in spaced:  # a hyphen is part of a word only between two of its letters or digits
            for apart in ("--", "- ", " -"):
                if apart in spaced:
                    spaced = spaced.replace(apart, " ")
        return spaced.split()
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def terms(text: str) -> list[str]:
    """The words of ``text`` as ranking compares them: folded, dates spelled out, stop words gone, stemmed."""
    return " ".join(map(_terms.__getitem__, words(text))).split()
