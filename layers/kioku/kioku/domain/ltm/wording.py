"""How a memory's text reads to people (lists, the inspector): ``{user}`` and ``{bot}`` rendered with
grammar, counts with their plural. What the model reads is rendered elsewhere (recall, dialogue):
this is only for eyes.

For the person a memory is about, ``{user}`` is "you" and the verb after it agrees ("{user} is
allergic" → "you are allergic", "{user}'s" → "your"); for anyone else it is the person's name, which
every verb already agrees with. ``{bot}`` is "I"/"me"/"my" when the bot speaks, else its name.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

_BE_HAVE_DO: Final = {
    "you": {
        "is": "are",
        "was": "were",
        "has": "have",
        "does": "do",
        "isn't": "aren't",
        "wasn't": "weren't",
        "hasn't": "haven't",
        "doesn't": "don't",
        "'s": "'re",
    },
    "I": {
        "is": "am",
        "has": "have",
        "does": "do",
        "isn't": "am not",
        "hasn't": "haven't",
        "doesn't": "don't",
        "'s": "'m",
    },
}
_POSSESSIVE: Final = {"you": "your", "I": "my"}
_OBJECT: Final = {"you": "you", "I": "me"}
_ADVERBS: Final = frozenset(
    {"also", "always", "often", "never", "sometimes", "usually", "still", "really", "just", "only"}
)
_NOT_A_VERB: Final = frozenset(
    {"always", "sometimes", "perhaps", "thus", "unless", "as", "is", "was", "has", "does"}
)
_TOKEN: Final = re.compile(r"\{(user|bot)\}('s\b)?")
_NEXT_WORDS: Final = re.compile(
    r"((?:[ \t]+(?:" + "|".join(sorted(_ADVERBS)) + r"))*)[ \t]+([a-z]+n't|[a-z]+(?![a-z']))"
)
_SENTENCE_START: Final = re.compile(r"(?:^|[.!?]\s+|\n)$")
# a clause begins after these, and after a verb that reports one ("Bob thinks {user} likes tea")
_CLAUSE_START: Final = re.compile(
    r"\b(?:and|that|because|when|if|but|so|said|says|thinks|thought|knows|knew|believes|"
    r"mentioned|noticed|heard|hopes|feels|felt|claims|claimed|wrote|writes)[ \t]+$"
)


def for_people(text: str, *, about_you: bool, name: str, bot: str = "I") -> str:
    """``text`` as a person reads it: ``about_you`` for the person it is about (their own list),
    else ``{user}`` is ``name``. ``bot`` is the bot as it says itself: "I" (its own words to the
    reader), or a name."""
    out: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        out.append(text[position : match.start()])
        before = "".join(out)
        pronoun = (
            ("you" if about_you else None) if match.group(1) == "user" else ("I" if bot == "I" else None)
        )
        literal = name if match.group(1) == "user" else bot
        position = match.end()
        if pronoun is None:
            word = literal + (match.group(2) or "")
        elif match.group(2):
            word = _POSSESSIVE[pronoun]
        else:
            word, position = _as_subject_or_object(pronoun, before, text, position)
        if _SENTENCE_START.search(before):
            word = word[:1].upper() + word[1:]
        out.append(word)
    out.append(text[position:])
    return "".join(out)


def _as_subject_or_object(pronoun: str, before: str, text: str, position: int) -> tuple[str, int]:
    """The pronoun, and the verb after it made to agree when it is the subject (a verb follows)."""
    following = _NEXT_WORDS.match(text, position)
    verb = following.group(2) if following else ""
    # a be/have/do form after it makes it the subject anywhere ("Bob said {user} was late"); any
    # other verb only where a clause begins, so "met {user} yesterday" stays an object
    subject = (
        verb in _BE_HAVE_DO[pronoun]
        or verb == "was"
        or bool(_SENTENCE_START.search(before) or _CLAUSE_START.search(before))
    )
    if following is None or not subject:
        return (pronoun if subject else _OBJECT[pronoun]), position
    adverbs = following.group(1)
    agreed = _BE_HAVE_DO[pronoun].get(verb) or _base_form(verb)
    if pronoun == "I" and verb == "was":
        agreed = "was"
    return f"{pronoun}{adverbs} {agreed}", following.end()


def _base_form(verb: str) -> str:
    """``likes`` → ``like``, ``tries`` → ``try``, ``watches`` → ``watch``; a word that is no
    third-person verb stays."""
    if verb in _NOT_A_VERB or not verb.endswith("s") or verb.endswith("ss") or len(verb) < 3:
        return verb
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "xes", "zes", "sses", "oes")):
        return verb[:-2]
    return verb[:-1]


def counted(count: int, one: str, many: str) -> str:
    """``1 memory``, ``2 memories``, ``0 memories``."""
    return f"{count} {one if count == 1 else many}"


def until_text(expires_at: datetime | None) -> str:
    """`` · until 2026-12-13`` for a memory that expires (its last day, UTC); nothing otherwise."""
    return f" · until {expires_at.date().isoformat()}" if expires_at is not None else ""
