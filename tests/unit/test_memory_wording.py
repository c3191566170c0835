"""A memory's text as people read it (kioku.domain.ltm.wording): {user} and {bot} with grammar,
counts with their plural. What the model reads is not rendered here."""

from __future__ import annotations

import pytest

from kioku.domain.ltm.wording import counted, for_people


@pytest.mark.parametrize(
    "stored, to_them, to_others",
    [
        (
            "{user}'s favourite colour is green",
            "Your favourite colour is green",
            "Alice's favourite colour is green",
        ),
        ("{user} is allergic to peanuts", "You are allergic to peanuts", "Alice is allergic to peanuts"),
        (
            "{user} likes tea and {user} always watches films",
            "You like tea and you always watch films",
            "Alice likes tea and Alice always watches films",
        ),
        ("Bob said {user} was late", "Bob said you were late", "Bob said Alice was late"),
        ("{user} doesn't eat meat", "You don't eat meat", "Alice doesn't eat meat"),
        (
            "{user} plays chess. {user} tries hard",
            "You play chess. You try hard",
            "Alice plays chess. Alice tries hard",
        ),
        ("met {user} in Rome", "met you in Rome", "met Alice in Rome"),
        (
            "Bob thinks {user} likes {bot}'s jokes",
            "Bob thinks you like my jokes",
            "Bob thinks Alice likes Kioku's jokes",
        ),
        ("Bob heard {user} plays drums", "Bob heard you play drums", "Bob heard Alice plays drums"),
        ("{user} has two cats", "You have two cats", "Alice has two cats"),
    ],
)
def test_user_reads_as_you_to_the_person_and_as_their_name_to_others(stored, to_them, to_others):
    assert for_people(stored, about_you=True, name="Alice") == to_them
    assert for_people(stored, about_you=False, name="Alice", bot="Kioku") == to_others


@pytest.mark.parametrize(
    "stored, said_by_the_bot, named",
    [
        (
            "{bot} promised {user} a haiku every Friday",
            "I promised you a haiku every Friday",
            "Kioku promised Alice a haiku every Friday",
        ),
        ("{bot} is fond of {user}", "I am fond of you", "Kioku is fond of Alice"),
        ("{user} told {bot} a secret", "You told me a secret", "Alice told Kioku a secret"),
    ],
)
def test_bot_reads_as_i_or_me_in_its_own_words_and_as_its_name_elsewhere(stored, said_by_the_bot, named):
    assert for_people(stored, about_you=True, name="Alice") == said_by_the_bot
    assert for_people(stored, about_you=False, name="Alice", bot="Kioku") == named


def test_text_without_placeholders_is_left_alone():
    assert for_people("the book club meets on Fridays {soon}", about_you=True, name="A") == (
        "the book club meets on Fridays {soon}"
    )


@pytest.mark.parametrize("count, shown", [(0, "0 memories"), (1, "1 memory"), (2, "2 memories")])
def test_counts_take_their_plural(count, shown):
    assert counted(count, "memory", "memories") == shown


def test_the_inspector_shows_a_personal_memory_with_its_owners_name_not_the_placeholder():
    from kioku.domain.ltm.memory import Memory, MemoryScope
    from kioku.playground.web.serialize import memory_json
    from tests.unit.ltm_fakes import ALICE, HERE, NOW

    stored = Memory(
        MemoryScope.personal(ALICE.user_id, 1),
        "20001",
        "{user}'s cat ignores {bot}",
        ALICE.user_id,
        NOW,
        NOW,
        origin=HERE,
    )

    shown = memory_json(stored, in_scope=True, names={ALICE.user_id: "Alice"}, bot="Kioku")

    assert shown["content"] == "Alice's cat ignores Kioku"
