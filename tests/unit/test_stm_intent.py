"""Explicit long-term intent: the phrases that make the STM tool and nudge step aside."""

from __future__ import annotations

import pytest

from kioku.domain.stm.intent import has_explicit_long_term_intent

ASKS_FOR_LONG_TERM = [
    "Can you remember that I like tea?",
    "could you remember my birthday is in May",
    "hey @kioku remember I like tea",
    "Remember that my birthday is May 3rd",
    "<@1> remember I take my tea without sugar",
    "Kioku, remember this: I moved to Osaka",
    "please remember my cat's name is Mochi",
    "make sure you remember I'm vegan",
    "I want you to remember that I hate spoilers",
    "Don't forget my sister is visiting",
    "don’t forget, I'm allergic to nuts",
    "do not forget the password hint",
    "Note that I prefer metric units",
    "for future conversations, call me Sam",
    "For future reference: I work nights",
    "commit this to memory",
    "save that to your long-term memory",
    "ＲＥＭＥＭＢＥＲ THAT I LIKE JAZZ",  # full-width: NFKC folds it
    "これを覚えておいて",
    "私の名前を覚えといてね",
    "忘れないでね",
    "このことを記憶して",
    "ｵﾎﾞｴﾃｵｲﾃ is katakana, but 覚えておいてください is the request",
]

DOES_NOT = [
    "my notebook is on the desk",
    "I remembered it was raining",
    "I remember when we met",
    "do you remember me?",
    "Remember when we went to the beach?",
    "you remember that?",
    "I would note that the build failed",
    "keynote that sounds fun",
    "覚えてる？",
    "I forgot my umbrella",
    "the future is bright",
    "memory leak in the parser",
]


@pytest.mark.parametrize("text", ASKS_FOR_LONG_TERM)
def test_explicit_requests_are_detected(text):
    assert has_explicit_long_term_intent(text)


@pytest.mark.parametrize("text", DOES_NOT)
def test_ordinary_talk_is_not(text):
    assert not has_explicit_long_term_intent(text)
