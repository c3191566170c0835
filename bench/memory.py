"""Memory bench: does a long-lived server's recall still carry what answers the question?

A months-long conversation between a few people in several channels (facts, later corrections,
everyday events that look alike, chatter) is saved as long-term memories in the real books on
in-process moto; then each question is asked as a turn would ask it: the real ``recall`` read of the
store (one BatchGetItem), the real ranking within ``LTM_RECALL_BUDGET_CHARS``, and, when memories
were left out, one ``search_long_term_memory`` call with the question. docs/memory.md explains the
format (``--conversation FILE`` measures any conversation) and the numbers.

Every size is measured twice: by words alone, and with embeddings (the deterministic stand-in
server on 127.0.0.1, or a real endpoint given ``--embeddings-model``).

    python -m bench.memory [--conversation FILE] [--write FILE --memories N]
                           [--embeddings-model NAME --embeddings-base-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from kioku.adapters.dynamodb.ltm_store import (
    BookLayout,
    DynamoMemoryStore,
    book_entry,
    book_key,
    entry_attribute,
    memory_to_item,
)
from kioku.adapters.dynamodb.table import KiokuTable, to_wire
from kioku.adapters.llm.embeddings import OpenAIEmbeddings
from kioku.domain.ltm.memory import MemoryDraft, MemoryScope
from kioku.domain.ltm.ports import Embedder
from kioku.domain.ltm.ranking import RecallQuery, similarity
from kioku.domain.ltm.recall import Recall, build_recall, fact_words, recall_subjects
from kioku.domain.ltm.vectors import cosine, embedded_text
from kioku.domain.models import Participant, ServerConfig, UserProfile
from kioku.domain.privacy import Origin
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.playground.aws import create_table, load_template
from kioku.playground.standins import EmbeddingsStandIn
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.ltm import NEAR_DUPLICATE_SIMILARITY, recall_context, search_long_term_memory

SIZES = (20, 200, 1000)
BUDGET = 8_000
SMALL_BUDGET = 1_000
"""A tight budget (about a dozen memories) to tell rankings apart where the default holds most."""
SEED_BUDGET = 24_000
"""The seed's recall: every memory, newest first, until 24,000 characters."""
SCOPE_LIMIT = 1_000
DIALOGUE_SHOWN = 6
SERVER_ID = "500000000000000001"
BOT = BotIdentity(user_id="900000000000000001", username="kioku")
LINEAGE = 1
BATCH_WRITE_LIMIT = 25
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SPAN_MINUTES = 180 * 24 * 60
PARAPHRASED_SHARE = 0.25

# -- the conversation format ----------------------------------------------------------------------


@dataclass(frozen=True)
class Utterance:
    """One message. ``memory``: what the bot saved from it (``{user}`` is the speaker); None: nothing;
    absent in the file: the text itself, as said by the speaker. ``scope``: ``personal`` (about the
    speaker) or ``server``."""

    id: str
    speaker: str
    date: datetime
    text: str
    channel: str = "general"
    memory: str | None = None
    scope: str = "personal"


@dataclass(frozen=True)
class Question:
    """Asked after the conversation; ``evidence``: the utterances whose memories answer it;
    ``superseded``: the ones saying what the evidence corrects."""

    id: str
    text: str
    evidence: tuple[str, ...]
    speaker: str
    channel: str = "general"
    date: datetime | None = None
    superseded: tuple[str, ...] = ()
    participants: tuple[str, ...] = ()


@dataclass(frozen=True)
class Conversation:
    utterances: tuple[Utterance, ...]
    questions: tuple[Question, ...]


def read_conversation(data: Mapping[str, Any]) -> Conversation:
    """A conversation from its JSON form (docs/memory.md); raises ``ValueError`` naming what is wrong."""
    utterances = []
    for n, raw in enumerate(data.get("utterances") or ()):
        missing = [key for key in ("id", "speaker", "date", "text") if not raw.get(key)]
        if missing:
            raise ValueError(f"utterance {n} has no {', '.join(missing)}")
        memory = raw["memory"] if "memory" in raw else "{user} said: " + str(raw["text"])
        utterances.append(
            Utterance(
                str(raw["id"]),
                str(raw["speaker"]),
                _date(raw["date"]),
                str(raw["text"]),
                str(raw.get("channel") or "general"),
                memory,
                str(raw.get("scope") or "personal"),
            )
        )
    known = {u.id: u for u in utterances}
    questions = []
    for n, raw in enumerate(data.get("questions") or ()):
        evidence = tuple(str(e) for e in raw.get("evidence") or ())
        if not raw.get("text") or not evidence or not set(evidence) <= set(known):
            raise ValueError(f"question {n} needs a text and evidence ids of utterances")
        questions.append(
            Question(
                str(raw.get("id") or f"q{n}"),
                str(raw["text"]),
                evidence,
                str(raw.get("speaker") or known[evidence[0]].speaker),
                str(raw.get("channel") or "general"),
                _date(raw["date"]) if raw.get("date") else None,
                tuple(str(s) for s in raw.get("superseded") or ()),
                tuple(str(p) for p in raw.get("participants") or ()),
            )
        )
    if not utterances or not questions:
        raise ValueError("a conversation needs utterances and questions")
    return Conversation(tuple(sorted(utterances, key=lambda u: u.date)), tuple(questions))


def conversation_json(conversation: Conversation) -> dict[str, Any]:
    return {
        "utterances": [
            {
                "id": u.id,
                "speaker": u.speaker,
                "date": u.date.isoformat(),
                "channel": u.channel,
                "text": u.text,
                "memory": u.memory,
                **({"scope": u.scope} if u.scope != "personal" else {}),
            }
            for u in conversation.utterances
        ],
        "questions": [
            {
                "id": q.id,
                "speaker": q.speaker,
                "channel": q.channel,
                "text": q.text,
                "evidence": list(q.evidence),
                **({"superseded": list(q.superseded)} if q.superseded else {}),
                **({"participants": list(q.participants)} if q.participants else {}),
            }
            for q in conversation.questions
        ],
    }


def _date(value: Any) -> datetime:
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# -- a generated conversation -----------------------------------------------------------------------

PEOPLE = ("Alice", "Bob", "Carol", "Dave", "Erin")
CHANNELS = ("general", "random", "food", "games", "travel")
CITIES = [
    "Lisbon",
    "Porto",
    "Berlin",
    "Munich",
    "Vienna",
    "Prague",
    "Krakow",
    "Oslo",
    "Bergen",
    "Lyon",
    "Nantes",
    "Seville",
    "Bilbao",
    "Turin",
    "Genoa",
    "Ghent",
]
NAMES = [
    "Mia",
    "Noah",
    "Lena",
    "Omar",
    "Ines",
    "Yuki",
    "Tomas",
    "Rosa",
    "Ivan",
    "Nora",
    "Felix",
    "Hana",
    "Leo",
    "Zara",
    "Emil",
    "Sofia",
]
PETS = ["Pixel", "Biscuit", "Mochi", "Pepper", "Nugget", "Olive", "Waffles", "Ziggy", "Juniper", "Tofu"]
JOBS = [
    "nurse",
    "architect",
    "baker",
    "pilot",
    "teacher",
    "electrician",
    "translator",
    "dentist",
    "chemist",
    "librarian",
]
FOODS = ["ramen", "paella", "lasagne", "pho", "falafel", "pierogi", "tacos", "risotto", "curry", "dumplings"]
HOBBIES = [
    "pottery",
    "bouldering",
    "chess",
    "sailing",
    "birdwatching",
    "knitting",
    "fencing",
    "archery",
    "salsa",
    "beekeeping",
]
CARS = ["Volvo", "Fiat", "Skoda", "Mazda", "Renault", "Toyota", "Kia", "Peugeot"]
TEAMS = ["Benfica", "Arsenal", "Ajax", "Celtic", "Napoli", "Sevilla", "Porto", "Lyon"]
ALLERGENS = ["peanuts", "shellfish", "penicillin", "pollen", "cats", "kiwi", "sesame", "latex"]
INSTRUMENTS = ["cello", "violin", "banjo", "trumpet", "harp", "accordion", "drums", "flute"]
LANGUAGES = ["Japanese", "Polish", "Finnish", "Greek", "Korean", "Dutch", "Turkish", "Welsh"]
BOOKS = ["Dune", "Emma", "Ulysses", "Beloved", "Middlemarch", "Solaris", "Persuasion", "Rebecca"]
PLACES = (
    "aquarium",
    "museum",
    "cinema",
    "zoo",
    "lake",
    "market",
    "stadium",
    "concert",
    "bakery",
    "library",
    "park",
    "beach",
    "castle",
    "gallery",
    "theatre",
    "climbing gym",
    "bowling alley",
    "karaoke bar",
    "botanical garden",
    "flea market",
    "observatory",
    "vineyard",
    "night market",
    "ice rink",
)

# kind: (what the person says, what is saved, asked by the subject, asked by another, values)
PERSONAL_FACTS: dict[str, tuple[str, str, str, str, Sequence[str]]] = {
    "home": (
        "I just moved to {v}!",
        "{user} lives in {v}",
        "where do I live these days?",
        "where does {name} live these days?",
        CITIES,
    ),
    "pet": (
        "Our new puppy is called {v}.",
        "{user} has a dog called {v}",
        "what is my dog called?",
        "what is {name}'s dog called?",
        PETS,
    ),
    "job": (
        "I started a new job as a {v} this week.",
        "{user} works as a {v}",
        "what do I do for a living?",
        "what does {name} do for a living?",
        JOBS,
    ),
    "food": (
        "Honestly my favourite food is {v}.",
        "{user}'s favourite food is {v}",
        "what's my favourite food?",
        "what's {name}'s favourite food?",
        FOODS,
    ),
    "sister": (
        "My sister {v} is visiting next week.",
        "{user} has a sister called {v}",
        "what's my sister's name?",
        "what is the name of {name}'s sister?",
        NAMES,
    ),
    "hobby": (
        "I've taken up {v} lately.",
        "{user} has taken up {v}",
        "which hobby did I take up?",
        "which hobby did {name} take up?",
        HOBBIES,
    ),
    "car": (
        "I finally bought a {v}.",
        "{user} drives a {v}",
        "what car do I drive?",
        "what car does {name} drive?",
        CARS,
    ),
    "team": (
        "I've supported {v} since I was a kid.",
        "{user} supports {v}",
        "which team do I support?",
        "which team does {name} support?",
        TEAMS,
    ),
    "allergy": (
        "Careful, I'm allergic to {v}.",
        "{user} is allergic to {v}",
        "what am I allergic to?",
        "what is {name} allergic to?",
        ALLERGENS,
    ),
    "instrument": (
        "I play the {v} in a small band.",
        "{user} plays the {v} in a band",
        "which instrument do I play?",
        "which instrument does {name} play?",
        INSTRUMENTS,
    ),
    "language": (
        "I'm learning {v} on my lunch breaks.",
        "{user} is learning {v}",
        "which language am I learning?",
        "which language is {name} learning?",
        LANGUAGES,
    ),
    "book": (
        "I'm halfway through {v}.",
        "{user} is reading {v}",
        "what book am I reading?",
        "what book is {name} reading?",
        BOOKS,
    ),
}
PARAPHRASES = {
    "home": "which city is {name} based in?",
    "pet": "what's the name of {name}'s pup?",
    "job": "what is {name}'s line of work?",
    "food": "what does {name} love to eat most?",
    "sister": "who is {name}'s sibling?",
    "hobby": "what does {name} do in their spare time?",
    "car": "what is {name}'s vehicle?",
    "team": "which club is {name} a fan of?",
    "allergy": "what should {name} never eat or touch?",
    "instrument": "what does {name} make music on?",
    "language": "what is {name} studying on lunch breaks?",
    "book": "which novel has {name} got on the go?",
}
"""Questions that share no word with the memory that answers them but the name: what lexical
ranking cannot see, and embeddings would."""
CORRECTIONS = {
    "home": "Update: we moved again, from {old} to {v}.",
    "pet": "We renamed the puppy, {old} is now {v}.",
    "job": "I quit being a {old}, I'm a {v} now.",
    "car": "Sold the {old}, I drive a {v} now.",
    "hobby": "Gave up {old}, I'm into {v} now.",
}
CORRECTION_MEMORY = {
    "home": "{user} moved from {old} to {v} and lives in {v} now",
    "pet": "{user}'s dog {old} was renamed {v}",
    "job": "{user} quit being a {old} and works as a {v} now",
    "car": "{user} sold the {old} and drives a {v} now",
    "hobby": "{user} gave up {old} and does {v} now",
}
SERVER_FACTS = {
    "movie night": (
        "Movie night is on {v}s from now on.",
        "The server's movie night is on {v}s",
        "which day is movie night?",
        ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    ),
    "book club": (
        "The book club picked {v} for this month.",
        "The server's book club is reading {v}",
        "what is the book club reading?",
        BOOKS,
    ),
    "game server": (
        "The game server moved to {v}.",
        "The server's game server address is {v}",
        "what's the game server address?",
        ("mc.kioku.fun", "play.okapi.gg", "craft.tea.house"),
    ),
    "meetup": (
        "The meetup will be at the {v} pub.",
        "The server's meetup is at the {v} pub",
        "where is the meetup?",
        ("Red Lion", "Blue Boar", "Crown", "Fox and Hounds"),
    ),
}
CHATTER = (
    "lol",
    "anyone up?",
    "that's wild",
    "brb, coffee",
    "same here honestly",
    "ugh, mondays",
    "did you see the match last night?",
    "good morning all",
    "haha fair",
    "what a week",
    "I need a holiday",
    "this weather though",
    "nice!",
    "gg everyone",
    "ok back to work",
)


def generate(memories: int, seed: int = 20) -> Conversation:
    """A conversation whose utterances save ``memories`` memories, with questions on them."""
    rng = random.Random(seed)
    clock = [START]
    utterances: list[Utterance] = []

    def say(speaker: str, text: str, memory: str | None, scope: str = "personal") -> Utterance:
        clock[0] += timedelta(minutes=rng.randint(gap // 3, gap * 5 // 3))
        for _ in range(rng.randint(0, 2)):
            chatter = Utterance(
                f"u{len(utterances)}", rng.choice(PEOPLE), clock[0], rng.choice(CHATTER), rng.choice(CHANNELS)
            )
            utterances.append(chatter)
            clock[0] += timedelta(minutes=rng.randint(1, 30))
        said = Utterance(f"u{len(utterances)}", speaker, clock[0], text, rng.choice(CHANNELS), memory, scope)
        utterances.append(said)
        return said

    slots = [(p, kind) for p in PEOPLE for kind in PERSONAL_FACTS]
    rng.shuffle(slots)
    n_facts = min(len(slots), max(memories // 4, min(memories, 8)))
    n_server = min(len(SERVER_FACTS), max(memories // 40, 1))
    n_corrections = min(n_facts // 4, sum(1 for _, kind in slots[:n_facts] if kind in CORRECTIONS))
    n_events = max(memories - n_facts - n_server - n_corrections, 0)
    plan: list[tuple[str, Any]] = (
        [("fact", slot) for slot in slots[:n_facts]]
        + [("server", kind) for kind in list(SERVER_FACTS)[:n_server]]
        + [("event", n) for n in range(n_events)]
    )
    rng.shuffle(plan)
    gap = SPAN_MINUTES // (len(plan) + n_corrections)  # the conversation lasts about six months
    facts: dict[tuple[str, str], tuple[Utterance, str]] = {}
    events: list[tuple[Utterance, str, str, str]] = []
    seen_events: dict[tuple[str, str], int] = {}
    questions: list[Question] = []
    for what, detail in plan:
        if what == "fact":
            person, kind = detail
            said_text, saved, *_, values = PERSONAL_FACTS[kind]
            value = rng.choice(values)
            facts[detail] = (say(person, said_text.format(v=value), _fill_in(saved, v=value)), value)
        elif what == "server":
            said_text, saved, asked, values = SERVER_FACTS[detail]
            value = rng.choice(values)
            said = say(rng.choice(PEOPLE), said_text.format(v=value), _fill_in(saved, v=value), "server")
            questions.append(Question(f"q{len(questions)}", asked, (said.id,), rng.choice(PEOPLE)))
        else:
            person, place = rng.choice(PEOPLE), rng.choice(PLACES)
            seen_events[(person, place)] = seen_events.get((person, place), 0) + 1
            friend = rng.choice(NAMES)
            when = clock[0] + timedelta(days=rng.randint(1, 20))
            day = f"{when:%B} {when.day}"
            said = say(
                person,
                f"Going to the {place} with {friend} on {day}!",
                f"{{user}} went to the {place} with {friend} on {when:%Y-%m-%d}",
            )
            events.append((said, person, place, friend))
    corrected = [slot for slot in facts if slot[1] in CORRECTIONS][:n_corrections]
    for person, kind in corrected:
        old_said, old = facts[(person, kind)]
        value = rng.choice([v for v in PERSONAL_FACTS[kind][4] if v != old])
        said = say(
            person,
            CORRECTIONS[kind].format(old=old, v=value),
            _fill_in(CORRECTION_MEMORY[kind], old=old, v=value),
        )
        facts[(person, kind)] = (said, value)
        questions.append(
            _personal_question(rng, person, kind, said, len(questions), superseded=(old_said.id,))
        )
    for (person, kind), (said, _) in rng.sample(sorted(facts.items()), len(facts)):
        if (person, kind) not in corrected:
            questions.append(_personal_question(rng, person, kind, said, len(questions)))
    once = [event for event in events if seen_events[event[1], event[2]] == 1]  # "who with?" has one answer
    for said, person, place, _friend in once[: max(len(facts), 10)]:
        asker = rng.choice(PEOPLE)
        text = f"who did {'I' if asker == person else person} go to the {place} with?"
        others = () if asker == person else (person,)
        questions.append(
            Question(f"q{len(questions)}", text, (said.id,), asker, rng.choice(CHANNELS), participants=others)
        )
    rng.shuffle(questions)
    return Conversation(tuple(utterances), tuple(questions[: max(min(memories // 2, 120), 10)]))


def _fill_in(template: str, **values: str) -> str:
    """``template`` with ``{v}`` and ``{old}`` filled in and ``{user}`` kept for the memory."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def _personal_question(
    rng: random.Random, person: str, kind: str, said: Utterance, number: int, superseded: tuple[str, ...] = ()
) -> Question:
    _, _, by_self, by_other, _ = PERSONAL_FACTS[kind]
    if rng.random() < PARAPHRASED_SHARE:
        by_other = PARAPHRASES[kind]
    elif rng.random() < 0.5:
        return Question(
            f"q{number}", by_self, (said.id,), person, rng.choice(CHANNELS), superseded=superseded
        )
    asker = rng.choice([p for p in PEOPLE if p != person])
    text = by_other.format(name=person)
    return Question(
        f"q{number}",
        text,
        (said.id,),
        asker,
        rng.choice(CHANNELS),
        superseded=superseded,
        participants=(person,),
    )


# -- playing it ---------------------------------------------------------------------------------------


@dataclass
class Measured:
    memories: int
    questions: int = 0
    found: int = 0
    found_with_search: int = 0
    found_by_seed: int = 0
    found_small: int = 0
    corrected: int = 0
    superseded_answers: int = 0
    superseded_answers_by_seed: int = 0
    chars: list[int] = field(default_factory=list)
    seed_chars: list[int] = field(default_factory=list)
    ranking_ms: list[float] = field(default_factory=list)
    in_scope: list[int] = field(default_factory=list)


def measure(
    conversation: Conversation, dynamodb: Any, table_name: str, embedder: Embedder | None = None
) -> Measured:
    """Save every memory of ``conversation`` into a fresh server's books (with its embedding, given
    ``embedder``), then ask every question (its message embedded once, as a turn does)."""
    people = _participants(conversation)
    memory_ids = _fill(dynamodb, table_name, conversation, people, embedder)
    layout = BookLayout(SCOPE_LIMIT, SCOPE_LIMIT, 1000)
    store = DynamoMemoryStore(KiokuTable(table_name, client=dynamodb), layout=layout)
    end = conversation.utterances[-1].date + timedelta(days=1)
    result = Measured(memories=len(memory_ids))
    by_channel: dict[str, list[Utterance]] = {}
    for utterance in conversation.utterances:
        by_channel.setdefault(utterance.channel, []).append(utterance)
    for question in conversation.questions:
        asked_at = question.date or end
        earlier = [u for u in by_channel.get(question.channel, []) if u.date < asked_at][-DIALOGUE_SHOWN:]
        taking_part = [question.speaker, *question.participants, *(u.speaker for u in earlier)]
        speakers = [people[name] for name in dict.fromkeys(taking_part) if name in people]
        turn = _turn(people[question.speaker], speakers, question.channel, asked_at)
        subjects = recall_subjects(turn)
        loaded = store.recall(
            SERVER_ID, LINEAGE, [s.user_id for s in subjects], place=turn.place, policy=turn.config.privacy
        )
        query = RecallQuery(
            f"kioku, {question.text}", tuple(u.text for u in earlier), BOT.names(turn.bot_name)
        )
        embeddings = TurnEmbeddings(embedder) if embedder else None
        started = time.perf_counter()
        recall = recall_context(turn, loaded, query=query, budget=BUDGET, embeddings=embeddings)
        result.ranking_ms.append((time.perf_counter() - started) * 1000)
        small = recall_context(turn, loaded, query=query, budget=SMALL_BUDGET, embeddings=embeddings)
        seed = build_recall(turn, loaded.server, loaded.personal, subjects, budget=SEED_BUDGET)
        shown = _shown(recall)
        searched = shown | _searched(recall, question, turn, embeddings)
        seed_shown = _shown(seed)
        evidence = {memory_ids[e] for e in question.evidence if e in memory_ids}
        superseded = {memory_ids[s] for s in question.superseded if s in memory_ids}
        result.questions += 1
        result.found += evidence <= shown
        result.found_with_search += evidence <= searched
        result.found_by_seed += evidence <= seed_shown
        result.found_small += evidence <= _shown(small)
        if superseded:
            result.corrected += 1
            result.superseded_answers += bool(superseded & searched) and not evidence <= searched
            result.superseded_answers_by_seed += bool(superseded & seed_shown) and not evidence <= seed_shown
        result.chars.append(len(recall.item.content) if recall.item else 0)
        result.seed_chars.append(len(seed.item.content) if seed.item else 0)
        result.in_scope.append(len(recall.candidates))
    return result


def _shown(recall: Recall) -> set[tuple[str, str, str]]:
    return {_identity(recall.candidates[index]) for index in recall.shown}


def _searched(
    recall: Recall, question: Question, turn: TurnContext, embeddings: TurnEmbeddings | None
) -> set[tuple[str, str, str]]:
    """What one search with the question's words finds (a model offered the search would make it)."""
    if not recall.left_out:
        return set()
    result = search_long_term_memory({"query": question.text}, turn, recall, embeddings)
    found = {entry["memory_id"] for entry in result.data.get("memories", ())}
    return {_identity(c) for c in recall.not_shown() if c.memory.memory_id in found}


def _identity(candidate: Any) -> tuple[str, str, str]:
    scope = candidate.memory.scope
    return (scope.kind.value, scope.owner_id, candidate.memory.memory_id)


def _participants(conversation: Conversation) -> dict[str, Participant]:
    names = dict.fromkeys(u.speaker for u in conversation.utterances)
    names.update(dict.fromkeys(q.speaker for q in conversation.questions))
    return {
        name: Participant(str(400000000000000000 + n), name.lower().replace(" ", "_"), global_name=name)
        for n, name in enumerate(names)
    }


def _fill(
    dynamodb: Any,
    table_name: str,
    conversation: Conversation,
    people: Mapping[str, Participant],
    embedder: Embedder | None = None,
) -> dict[str, tuple[str, str, str]]:
    """Write each utterance's memory and its book entry as a save would, in batches (moto copies the
    whole table for every transaction: saving a thousand memories one by one would take minutes);
    given ``embedder``, each with the embedding a save computes."""
    layout = BookLayout(SCOPE_LIMIT, SCOPE_LIMIT, 1000)
    items, books, ids = [], {}, {}
    saved = [(n, u) for n, u in enumerate(conversation.utterances) if u.memory is not None]
    contents = [_content(u, people[u.speaker]) for _, u in saved]
    vectors = embedder.embed([embedded_text(c) for c in contents]) if embedder else [None] * len(saved)
    for (n, utterance), content, vector in zip(saved, contents, vectors, strict=True):
        speaker = people[utterance.speaker]
        if utterance.scope == "server":
            scope = MemoryScope.server(SERVER_ID, LINEAGE)
        else:
            scope = MemoryScope.personal(speaker.user_id, LINEAGE)
        origin = Origin(SERVER_ID, _channel_id(utterance.channel), private=False)
        draft = MemoryDraft(
            scope,
            content,
            speaker.user_id,
            utterance.date,
            origin=origin,
            subject_id=speaker.user_id,
            embedding=vector,
        )
        memory_id = str(10000 + n)
        shard = int(memory_id) % layout.shards(scope.kind)
        items.append(memory_to_item(draft, memory_id, "", shard))
        book = books.setdefault((scope, shard), {**book_key(scope, shard), "k": 0})
        book[entry_attribute(memory_id)] = book_entry(draft.saved_as(memory_id))
        book["k"] += 1
        ids[utterance.id] = (scope.kind.value, scope.owner_id, memory_id)
    items += list(books.values())
    for start in range(0, len(items), BATCH_WRITE_LIMIT):
        chunk = items[start : start + BATCH_WRITE_LIMIT]
        dynamodb.batch_write_item(
            RequestItems={table_name: [{"PutRequest": {"Item": to_wire(i)}} for i in chunk]}
        )
    return ids


def _content(utterance: Utterance, speaker: Participant) -> str:
    """What a save keeps: a server memory names its person (``pin_user_token``)."""
    assert utterance.memory is not None
    if utterance.scope == "server":
        return utterance.memory.replace("{user}", speaker.display_name)
    return utterance.memory


def _channel_id(name: str) -> str:
    return str(300000000000000000 + sum(ord(c) for c in name))


def _turn(user: Participant, participants: Sequence[Participant], channel: str, now: datetime) -> TurnContext:
    return TurnContext(
        server_id=SERVER_ID,
        channel_id=_channel_id(channel),
        user=user,
        bot=BOT,
        config=ServerConfig(server_id=SERVER_ID),
        profile=UserProfile(user.user_id),
        now=now,
        participants=tuple(participants),
        channel_private=False,
        author_ids=frozenset(p.user_id for p in participants),
    )


# -- reporting ------------------------------------------------------------------------------------------


def report(measured: Measured, label: str) -> list[str]:
    q = measured.questions or 1
    chars = sorted(measured.chars)
    timings = sorted(measured.ranking_ms)
    p95 = timings[max(int(len(timings) * 0.95) - 1, 0)]
    corrected = measured.corrected
    return [
        f"memory.evidence_recall={measured.found / q:.2f} {label} questions={measured.questions} "
        f"(after one search {measured.found_with_search / q:.2f}; the seed's newest-first 24,000 characters "
        f"{measured.found_by_seed / q:.2f})",
        f"memory.evidence_recall_small_budget={measured.found_small / q:.2f} {label} "
        f"(the same within {SMALL_BUDGET:,} characters, about a dozen memories, no search)",
        f"memory.ltm_chars_per_turn={statistics.mean(chars):.0f} {label} (max {chars[-1]}, budget {BUDGET}; "
        f"the seed's {statistics.mean(measured.seed_chars):.0f})",
        f"memory.superseded_answer_share={measured.superseded_answers / q:.2f} {label} "
        f"({measured.superseded_answers} of {measured.questions} questions see only the corrected-away fact; "
        f"{corrected} ask about a corrected fact; the seed's {measured.superseded_answers_by_seed / q:.2f})",
        f"memory.ranking_ms median={statistics.median(timings):.2f} p95={p95:.2f} {label} "
        f"in_scope_max={max(measured.in_scope)} (recall after the read: rank, fill the budget, render)",
    ]


def ranking_of_a_thousand() -> str:
    """The ranking alone over exactly 1,000 memories in scope, cold (nothing memoised) and warm."""
    from kioku.domain.ltm import recall as recall_module
    from kioku.domain.ltm.memory import Memory

    conversation = generate(1000, seed=7)
    speaker = Participant("401", "alice", global_name="Alice")
    turn = _turn(speaker, [speaker], "general", conversation.utterances[-1].date)
    scope = MemoryScope.server(SERVER_ID, LINEAGE)
    memories = [
        Memory(scope, str(10000 + n), u.memory or u.text, speaker.user_id, u.date, u.date)
        for n, u in enumerate(u for u in conversation.utterances if u.memory)
    ][:1000]
    query = RecallQuery("kioku, who did Dave go to the aquarium with?", ("lol", "anyone up?"))
    timings: dict[str, list[float]] = {"cold": [], "warm": []}
    for kind in ("cold",) * 10 + ("warm",) * 30:
        if kind == "cold":
            recall_module.clear_caches()
        started = time.perf_counter()
        recall = build_recall(turn, memories, {}, (), query=query)
        timings[kind].append((time.perf_counter() - started) * 1000)
    assert recall.left_out
    cold, warm = (statistics.median(timings[k]) for k in ("cold", "warm"))
    return (
        f"memory.ranking_ms_1000 warm={warm:.2f} cold={cold:.2f} fastest={min(timings['warm']):.2f} "
        f"(1,000 memories in scope, median of 30 warm and 10 cold runs; cold: nothing memoised yet)"
    )


REWORDINGS = (
    ("{user} lives in Lisbon", "{user} lives in Lisbon now"),
    ("{user} has a dog called Pixel", "{user}'s dog is called Pixel"),
    ("{user} is allergic to peanuts", "{user} is allergic to peanuts!"),
    ("{user} works as a nurse", "{user} works as a Nurse at the moment"),
    ("{user} plays the cello in a band", "{user} plays cello in a band"),
    ("{user} is learning Japanese", "{user} has been learning Japanese"),
    ("{user}'s favourite food is ramen", "{user}'s favorite food is ramen"),
    ("{user} supports Benfica", "{user} is a Benfica supporter"),
    ("The server's movie night is on Fridays", "Movie night on this server is on Fridays"),
    ("{user} went to the zoo with Mia on 2025-03-01", "{user} went to the zoo with Mia on March 1st 2025"),
)
"""The same fact written twice, as a model rewords it."""


def near_duplicates_by_meaning(embedder: Embedder, label: str) -> str:
    """Why saving is refused by words, not by meaning: the cosine of one scope's distinct facts at
    1,000 memories against that of rewordings of one fact."""
    memories: dict[tuple[str, str], list[str]] = {}
    for u in generate(1000).utterances:
        if u.memory:
            memories.setdefault((u.scope, u.speaker if u.scope == "personal" else ""), []).append(u.memory)
    distinct, cosines = 0, []
    for texts in memories.values():
        vectors = embedder.embed([embedded_text(text) for text in dict.fromkeys(texts)])
        for i, first in enumerate(vectors):
            for second in vectors[i + 1 :]:
                distinct += 1
                cosines.append(cosine(first, second))
    reworded = [cosine(*embedder.embed([embedded_text(a), embedded_text(b)])) for a, b in REWORDINGS]
    threshold = min(reworded)
    over = sum(c >= threshold for c in cosines)
    return (
        f"memory.near_duplicate_by_meaning {label} rewordings_min_cosine={threshold:.2f} "
        f"distinct_facts_at_or_over_it={over}/{distinct} (why a save is refused by its words: a cosine "
        f"that catches every rewording also catches distinct facts)"
    )


def near_duplicates() -> str:
    """How ``NEAR_DUPLICATE_SIMILARITY`` splits the generated 1,000 memories' distinct facts of one
    scope (none may reach it) from rewordings of one fact (most should)."""
    memories: dict[tuple[str, str], list[str]] = {}
    for u in generate(1000).utterances:
        if u.memory:
            memories.setdefault((u.scope, u.speaker if u.scope == "personal" else ""), []).append(u.memory)
    distinct = over = 0
    for texts in memories.values():
        words = [fact_words(text) for text in dict.fromkeys(texts)]
        for i, first in enumerate(words):
            for second in words[i + 1 :]:
                distinct += 1
                over += similarity(first, second) >= NEAR_DUPLICATE_SIMILARITY
    caught = sum(similarity(fact_words(a), fact_words(b)) >= NEAR_DUPLICATE_SIMILARITY for a, b in REWORDINGS)
    return (
        f"memory.near_duplicate threshold={NEAR_DUPLICATE_SIMILARITY} distinct_facts_over={over}/{distinct} "
        f"rewordings_caught={caught}/{len(REWORDINGS)} (pairs of one scope's memories at 1,000 memories)"
    )


def run(conversations: Iterable[tuple[str, Conversation]], embedder: Embedder, embeddings_label: str) -> None:
    """Each conversation measured by words alone, then with ``embedder``."""
    template = load_template()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        for number, (label, conversation) in enumerate(conversations):
            for suffix, used in (("", None), (f" embeddings={embeddings_label}", embedder)):
                table_name = f"kioku-memory-bench-{number}{'-e' if used else ''}"
                create_table(dynamodb, template, table_name)
                try:
                    for line in report(measure(conversation, dynamodb, table_name, used), label + suffix):
                        print(line, flush=True)
                finally:
                    dynamodb.delete_table(TableName=table_name)


@contextmanager
def embeddings_for(model: str | None, base_url: str | None) -> Iterator[tuple[Embedder, str]]:
    """A real endpoint when ``model`` is given (its key from ``LLM_API_KEY``), else the stand-in."""
    if model:
        api_key = os.environ.get("LLM_API_KEY") or None
        url = base_url or "https://api.openai.com/v1"
        yield OpenAIEmbeddings(base_url=url, model=model, api_key=api_key, timeout_seconds=30), model
        return
    with EmbeddingsStandIn() as server:
        yield OpenAIEmbeddings(base_url=server.base_url, model="stand-in", api_key=None), "stand-in"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--conversation", type=Path, help="measure this conversation (docs/memory.md)")
    parser.add_argument("--write", type=Path, help="write the generated conversation here and stop")
    parser.add_argument(
        "--memories", type=int, default=200, help="memories of the conversation --write writes"
    )
    parser.add_argument("--embeddings-model", help="a real embeddings model instead of the stand-in")
    parser.add_argument("--embeddings-base-url", help="its OpenAI-compatible endpoint (key: LLM_API_KEY)")
    args = parser.parse_args(argv if argv is not None else [])
    if args.write:
        args.write.write_text(json.dumps(conversation_json(generate(args.memories)), indent=1))
        return
    with embeddings_for(args.embeddings_model, args.embeddings_base_url) as (embedder, label):
        if args.conversation:
            conversation = read_conversation(json.loads(args.conversation.read_text()))
            run([(f"file={args.conversation.name}", conversation)], embedder, label)
            return
        run(((f"memories={size}", generate(size)) for size in SIZES), embedder, label)
        print(ranking_of_a_thousand())
        print(near_duplicates())
        print(near_duplicates_by_meaning(embedder, label))


if __name__ == "__main__":
    main(sys.argv[1:])
