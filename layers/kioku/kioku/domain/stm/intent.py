"""Does the user explicitly ask for long-term memory? Then the STM nudge steps aside (the tool stays offered).

Matching is on NFKC-normalised, case-folded text. English phrases match on word boundaries (so
"notebook" and "remembered" do not count) and ``remember`` only as a request: at the start of a
clause ("Kioku, remember that …") or after a requesting phrase ("please remember", "make sure you
remember"), never "I remember", "do you remember" or "remember when …". Japanese has no word
boundaries, so its request forms (覚えておいて, 忘れないで, …) match as substrings.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

_CLAUSE_START = (
    r"(?:^|[.!?;:,>\n()\"'「」。、！？]|@\S+|<@!?\d+>|\bplease|\bpls|\bplz|\band|\bso|\bnow|\balso)\s*"
)
_REQUEST_LEAD = (
    r"\b(?:please|pls|plz|will you|would you|can you|could you|make sure (?:to|you)|be sure to|want you to|need you to|"
    r"you should|you must|you need to|always|i'd like you to|i would like you to)\s+"
)

ENGLISH_PATTERNS: Final = (
    rf"{_CLAUSE_START}remember\b(?!\s+when\b)(?!\s*\?)",
    rf"{_REQUEST_LEAD}(?:always\s+)?remember\b(?!\s+when\b)",
    r"\b(?:do not|don't|dont|never) forget\b",
    rf"{_CLAUSE_START}(?:note (?:that|this|down)|make a note|take note)\b",
    r"\bfor (?:all )?future (?:conversations?|chats?|reference)\b",
    r"\b(?:commit|save|store|add|put|write|keep)\b(?:\s+[\w'’-]+){0,4}?\s+(?:to|in|into)\s+"
    r"(?:your\s+)?(?:long[- ]term\s+)?memory\b",
)

JAPANESE_PHRASES: Final = (
    "覚えておいて",
    "覚えておいてください",
    "覚えといて",
    "覚えておけ",
    "覚えとけ",
    "覚えていて",
    "おぼえておいて",
    "おぼえといて",
    "忘れないで",
    "わすれないで",
    "忘れるな",
    "記憶して",
    "記憶しておいて",
    "メモしておいて",
    "メモしといて",
)

_ENGLISH = re.compile("|".join(f"(?:{pattern})" for pattern in ENGLISH_PATTERNS))
_JAPANESE = tuple(unicodedata.normalize("NFKC", phrase).casefold() for phrase in JAPANESE_PHRASES)


def has_explicit_long_term_intent(text: str) -> bool:
    """True when ``text`` asks the bot to keep something for the long term."""
    normalized = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return bool(_ENGLISH.search(normalized)) or any(phrase in normalized for phrase in _JAPANESE)
