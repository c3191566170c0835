"""The memory bench's conversations: the JSON format any conversation is measured in, and a generated
months-long one whose questions are as hard as real ones (see docs/memory.md).

The generated conversation is five people over six months in five channels. Each says lasting facts
about themselves (where they live, their dog, their job, …), and some correct them later in other
words ("we packed up and left Lisbon, we're in Porto now"), saved as a new memory beside the old one,
as a model does that saves instead of updating. Each also says near misses that share the words a
question about the fact would use (their sister's city, their neighbour's dog), facts about two
people (flatmates, a trip together), and goes places with friends on dates (events that look alike).
Questions are asked after it all, mostly in other words than the memory that answers them ("what
does Bob get around in?" for "Bob drives a Volvo", "where does Bob live now?" after a move), some
about two people at once ("do Alice and Bob live in the same city?").
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SPAN_MINUTES = 180 * 24 * 60
QUESTIONS = 60
"""At most this many questions (half as many as memories below it): each is two turns of the bench."""
SELF_ASKED_SHARE = 0.25
"""Questions a person asks about themselves ("where do I live again?")."""

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
    """Asked after the conversation; ``evidence``: the utterances whose memories answer it (all are
    needed); ``superseded``: the ones saying what the evidence corrects; ``participants``: people
    taking part in the conversation besides the speaker; ``kind``: how it is asked, for the report."""

    id: str
    text: str
    evidence: tuple[str, ...]
    speaker: str
    channel: str = "general"
    date: datetime | None = None
    superseded: tuple[str, ...] = ()
    participants: tuple[str, ...] = ()
    kind: str = ""


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
                str(raw.get("kind") or ""),
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
                **({"kind": q.kind} if q.kind else {}),
            }
            for q in conversation.questions
        ],
    }


def _date(value: Any) -> datetime:
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# -- what the generated people say ----------------------------------------------------------------------

PEOPLE = ("Alice", "Bob", "Carol", "Dave", "Erin")
CHANNELS = ("general", "random", "food", "games", "travel")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


CITIES = _words(
    "Lisbon Porto Berlin Munich Vienna Prague Krakow Oslo Bergen Lyon Nantes Seville Bilbao Turin"
)
NAMES = _words("Mia Noah Lena Omar Ines Yuki Tomas Rosa Ivan Nora Felix Hana Leo Zara Emil Sofia")
PETS = _words("Pixel Biscuit Mochi Pepper Nugget Olive Waffles Ziggy Juniper Tofu")
JOBS = _words("nurse architect baker pilot teacher electrician translator dentist chemist librarian")
FOODS = _words("ramen paella lasagne pho falafel pierogi tacos risotto curry dumplings")
HOBBIES = _words("pottery bouldering chess sailing birdwatching knitting fencing archery salsa beekeeping")
CARS = _words("Volvo Fiat Skoda Mazda Renault Toyota Kia Peugeot")
TEAMS = _words("Benfica Arsenal Ajax Celtic Napoli Sevilla Feyenoord Lazio")
ALLERGENS = _words("peanuts shellfish penicillin pollen cats kiwi sesame latex")
INSTRUMENTS = _words("cello violin banjo trumpet harp accordion drums flute")
LANGUAGES = _words("Japanese Polish Finnish Greek Korean Dutch Turkish Welsh")
BOOKS = _words("Dune Emma Ulysses Beloved Middlemarch Solaris Persuasion Rebecca")
BIRTHDAYS = tuple(
    f"{month} {day}" for month in ("March", "July", "October", "December") for day in (3, 17, 28)
)
PLACES = (
    *_words(
        "aquarium museum cinema zoo lake market stadium concert bakery library park beach castle gallery"
    ),
    *("theatre", "observatory", "vineyard", "climbing gym", "bowling alley", "karaoke bar", "ice rink"),
    *("botanical garden", "flea market"),
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


@dataclass(frozen=True)
class FactKind:
    """A lasting fact about a person: what they say and what is saved (``{v}`` its value), questions
    about it (by someone else, with ``{name}``; by the person) and, optionally, a correction said
    later in other words (``{old}`` the value it replaces) and a near miss that shares a question's
    words but answers something else (``{w}`` another value)."""

    said: str
    saved: str
    asked: tuple[str, ...]
    asked_by_self: tuple[str, ...]
    values: Sequence[str]
    correction: tuple[str, str] | None = None
    near_miss: tuple[str, str] | None = None
    lexical: int = 1
    """How many of ``asked`` (the first ones) share a telling word with the memory."""


FACTS: dict[str, FactKind] = {
    "home": FactKind(
        "I just moved to {v}!",
        "{user} lives in {v}",
        (
            "where does {name} live?",
            "which city is {name} based in these days?",
            "what's {name}'s hometown now?",
            "if I want to visit {name}, where do I fly to?",
        ),
        ("where do I live again?", "which city am I in these days?"),
        CITIES,
        ("Update: we packed up and left {old}, we're in {v} now.", "{user} left {old} and moved to {v}"),
        ("My sister just found a flat in {w}.", "{user}'s sister lives in {w}"),
    ),
    "pet": FactKind(
        "Our new puppy is called {v}.",
        "{user} has a dog called {v}",
        (
            "what is {name}'s dog called?",
            "what's the name of {name}'s pup?",
            "what did {name} name their puppy?",
            "which pet does {name} walk every morning?",
        ),
        ("what's my dog called?",),
        PETS,
        ("We renamed the puppy, {old} is {v} now.", "{user}'s dog {old} was renamed {v}"),
        ("The neighbour's dog {w} barked all night again.", "{user}'s neighbour has a dog called {w}"),
    ),
    "job": FactKind(
        "I started a new job as a {v} this week.",
        "{user} works as a {v}",
        (
            "what does {name} work as?",
            "what does {name} do for a living?",
            "what is {name}'s profession?",
            "what's {name}'s line of work?",
        ),
        ("what do I do for a living?",),
        JOBS,
        ("I quit being a {old}, retraining as a {v}.", "{user} quit being a {old} and is a {v} now"),
        ("My flatmate works as a {w}, night shifts.", "{user}'s flatmate works as a {w}"),
    ),
    "food": FactKind(
        "Honestly my favourite food is {v}.",
        "{user}'s favourite food is {v}",
        (
            "what's {name}'s favourite food?",
            "what should I cook when {name} comes over?",
            "which dish does {name} love most?",
        ),
        ("what's my favourite food?",),
        FOODS,
        None,
        ("Tried {w} once, never again.", "{user} tried {w} once and hated it"),
    ),
    "sister": FactKind(
        "My sister {v} is visiting next week.",
        "{user} has a sister called {v}",
        ("what is {name}'s sister called?", "who is {name}'s sibling?", "what's {name}'s sis's name?"),
        ("what's my sister's name?",),
        NAMES,
    ),
    "hobby": FactKind(
        "I've taken up {v} lately.",
        "{user} has taken up {v}",
        (
            "what has {name} taken up lately?",
            "what does {name} do on weekends?",
            "what's {name} into lately?",
        ),
        ("which hobby did I take up?",),
        HOBBIES,
        ("Gave up {old}, I'm into {v} now.", "{user} gave up {old} for {v}"),
    ),
    "car": FactKind(
        "I finally bought a {v}.",
        "{user} drives a {v}",
        ("what car does {name} drive?", "what does {name} get around in?", "which vehicle does {name} own?"),
        ("what car do I drive?",),
        CARS,
        ("Sold the {old}, got a {v} instead.", "{user} sold the {old} and bought a {v}"),
    ),
    "team": FactKind(
        "I've supported {v} since I was a kid.",
        "{user} supports {v}",
        ("which team does {name} support?", "who does {name} cheer for?", "which club is {name} a fan of?"),
        ("which team do I support?",),
        TEAMS,
    ),
    "allergy": FactKind(
        "Careful, I'm allergic to {v}.",
        "{user} is allergic to {v}",
        (
            "what is {name} allergic to?",
            "is there anything {name} must avoid eating?",
            "what gives {name} a reaction?",
        ),
        ("what am I allergic to?",),
        ALLERGENS,
    ),
    "instrument": FactKind(
        "I play the {v} in a small band.",
        "{user} plays the {v} in a band",
        (
            "which instrument does {name} play?",
            "what's {name}'s instrument?",
            "what does {name} bring to gigs?",
        ),
        ("which instrument do I play?",),
        INSTRUMENTS,
    ),
    "language": FactKind(
        "I'm learning {v} on my lunch breaks.",
        "{user} is learning {v}",
        (
            "which language is {name} learning?",
            "what is {name} practising on Duolingo?",
            "which tongue is {name} studying?",
        ),
        ("which language am I learning?",),
        LANGUAGES,
    ),
    "book": FactKind(
        "I'm halfway through {v}.",
        "{user} is reading {v}",
        (
            "what book is {name} reading?",
            "what novel has {name} got on the go?",
            "what's on {name}'s nightstand?",
        ),
        ("what book am I reading?",),
        BOOKS,
    ),
    "birthday": FactKind(
        "My birthday is on {v}, don't forget!",
        "{user}'s birthday is on {v}",
        ("when is {name}'s birthday?", "when should we get {name} a cake?", "what day was {name} born?"),
        ("when is my birthday again?",),
        BIRTHDAYS,
    ),
}
PAIR_FACTS = (
    (
        "{other} and I are flatmates now.",
        "{user} and {other} are flatmates",
        ("who does {other} share a flat with?", "who lives with {other}?"),
    ),
    (
        "{other} and I are going to {city} in {month}!",
        "{user} and {other} are planning a trip to {city} in {month}",
        ("where are {other} and {user} travelling to?", "which holiday are {user} and {other} planning?"),
    ),
    (
        "{other} and I run the board game night together.",
        "{user} and {other} organise the board game night",
        ("who organises board game night?", "who do I ask about board game night?"),
    ),
)
"""Facts about two people, saved as server memories naming both."""
SAME_VALUE_QUESTIONS = {
    "home": "do {a} and {b} live in the same city?",
    "language": "are {a} and {b} learning the same language?",
    "team": "do {a} and {b} support the same team?",
}
"""Questions answered by two people's memories at once."""
SERVER_FACTS = {
    "movie night": (
        "Movie night is on {v}s from now on.",
        "The server's movie night is on {v}s",
        "which day is movie night?",
        WEEKDAYS,
        ("Heads up: movie night switched from {old} to {v}.", "Movie night switched from {old} to {v}"),
    ),
    "book club": (
        "The book club picked {v} for this month.",
        "The server's book club is reading {v}",
        "what is the club's current novel?",
        BOOKS,
        ("Book club dropped {old}, we're on {v} instead.", "The book club dropped {old} for {v}"),
    ),
    "game server": (
        "The game server moved to {v}.",
        "The server's game server address is {v}",
        "how do I connect to our Minecraft world?",
        ("mc.kioku.fun", "play.okapi.gg", "craft.tea.house"),
        None,
    ),
    "meetup": (
        "The meetup will be at the {v} pub.",
        "The server's meetup is at the {v} pub",
        "where are we meeting up?",
        ("Red Lion", "Blue Boar", "Crown", "Fox and Hounds"),
        ("Meetup venue changed: not the {old}, it's the {v}.", "The meetup moved from the {old} to the {v}"),
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
    "anyone been to Porto? thinking of a trip",
    "my dog ate my headphones lol",
    "who's cooking tonight?",
    "new job hunting is exhausting",
)


# -- the generator --------------------------------------------------------------------------------------


@dataclass
class _Said:
    """A fact as it stands: every utterance that said it (the last one is the current one) and its value."""

    utterances: list[Utterance] = field(default_factory=list)
    value: str = ""


class _Conversation:
    def __init__(self, rng: random.Random, planned: int) -> None:
        self.rng = rng
        self.utterances: list[Utterance] = []
        self.clock = START
        self.gap = max(SPAN_MINUTES // max(planned, 1), 2)

    def say(self, speaker: str, text: str, memory: str | None, scope: str = "personal") -> Utterance:
        rng = self.rng
        self.clock += timedelta(minutes=rng.randint(self.gap // 3, self.gap * 5 // 3))
        for _ in range(rng.randint(0, 2)):
            chatter = Utterance(
                f"u{len(self.utterances)}",
                rng.choice(PEOPLE),
                self.clock,
                rng.choice(CHATTER),
                rng.choice(CHANNELS),
            )
            self.utterances.append(chatter)
            self.clock += timedelta(minutes=rng.randint(1, 30))
        said = Utterance(
            f"u{len(self.utterances)}", speaker, self.clock, text, rng.choice(CHANNELS), memory, scope
        )
        self.utterances.append(said)
        return said


def generate(memories: int, seed: int = 20) -> Conversation:
    """A conversation whose utterances save ``memories`` memories, with questions on them."""
    rng = random.Random(seed)
    slots = [(person, kind) for person in PEOPLE for kind in FACTS]
    rng.shuffle(slots)
    n_facts = min(len(slots), max(memories // 5, min(memories, 8)))
    facts = slots[:n_facts]
    correctable = [slot for slot in facts if FACTS[slot[1]].correction]
    n_corrections = min(len(correctable), max(n_facts // 3, 1 if memories >= 20 else 0))
    near = [slot for slot in facts if FACTS[slot[1]].near_miss]
    n_near = min(len(near), n_facts // 3)
    n_server = min(len(SERVER_FACTS), max(memories // 40, 1))
    n_server_corrections = min(
        sum(1 for kind in list(SERVER_FACTS)[:n_server] if SERVER_FACTS[kind][4]), n_server // 2
    )
    n_pairs = min(memories // 40, 6)
    n_events = max(memories - n_facts - n_corrections - n_near - n_server - n_server_corrections - n_pairs, 0)
    plan: list[tuple[str, Any]] = (
        [("fact", slot) for slot in facts]
        + [("near", slot) for slot in near[:n_near]]
        + [("server", kind) for kind in list(SERVER_FACTS)[:n_server]]
        + [("pair", n) for n in range(n_pairs)]
        + [("event", n) for n in range(n_events)]
    )
    rng.shuffle(plan)
    # every fact is said before it is corrected: corrections come after everything else
    talk = _Conversation(rng, len(plan) + n_corrections + n_server_corrections)
    first_values = {slot: rng.choice(FACTS[slot[1]].values) for slot in facts}
    taken = {slot: {value} for slot, value in first_values.items()}
    """The values a person's fact and its near miss use: a correction and a near miss take others."""
    said: dict[tuple[str, str], _Said] = {}
    server_said: dict[str, _Said] = {}
    events: list[tuple[Utterance, str, str, str]] = []
    pairs: list[tuple[Utterance, str, str, int]] = []
    seen_events: dict[tuple[str, ...], int] = {}
    for what, detail in plan:
        if what == "fact":
            person, kind = detail
            fact = FACTS[kind]
            value = first_values[detail]
            utterance = talk.say(person, fact.said.format(v=value), _fill(fact.saved, v=value))
            said[detail] = _Said([utterance], value)
        elif what == "near":
            person, kind = detail
            said_text, saved = FACTS[kind].near_miss or ("", "")
            value = rng.choice([v for v in FACTS[kind].values if v not in taken[detail]])
            taken[detail].add(value)
            talk.say(person, said_text.format(w=value), _fill(saved, w=value))
        elif what == "server":
            said_text, saved, _, values, _ = SERVER_FACTS[detail]
            value = rng.choice(values)
            utterance = talk.say(
                rng.choice(PEOPLE), said_text.format(v=value), _fill(saved, v=value), "server"
            )
            server_said[detail] = _Said([utterance], value)
        elif what == "pair":
            person, other = rng.sample(PEOPLE, 2)
            said_text, saved, _ = PAIR_FACTS[detail % len(PAIR_FACTS)]
            values = {
                "other": other,
                "city": rng.choice(CITIES),
                "month": rng.choice(("May", "August", "October")),
            }
            utterance = talk.say(person, said_text.format(**values), _fill(saved, **values), "server")
            pairs.append((utterance, person, other, detail % len(PAIR_FACTS)))
        else:
            person, place, friend = rng.choice(PEOPLE), rng.choice(PLACES), rng.choice(NAMES)
            when = talk.clock + timedelta(days=rng.randint(1, 20))
            for key in ((person, place), (person, place, f"{when:%B}")):
                seen_events[key] = seen_events.get(key, 0) + 1
            utterance = talk.say(
                person,
                f"Going to the {place} with {friend} on {when:%B} {when.day}!",
                f"{{user}} went to the {place} with {friend} on {when:%Y-%m-%d}",
            )
            events.append((utterance, person, place, f"{when:%B}"))
    corrected = rng.sample(correctable, n_corrections)
    for slot in corrected:
        fact, standing = FACTS[slot[1]], said[slot]
        assert fact.correction is not None
        value = rng.choice([v for v in fact.values if v not in taken[slot]])
        taken[slot].add(value)
        said_text, saved = fact.correction
        standing.utterances.append(
            talk.say(
                slot[0],
                said_text.format(old=standing.value, v=value),
                _fill(saved, old=standing.value, v=value),
            )
        )
        standing.value = value
    for kind in [k for k in server_said if SERVER_FACTS[k][4]][:n_server_corrections]:
        said_text, saved = SERVER_FACTS[kind][4] or ("", "")
        standing = server_said[kind]
        value = rng.choice([v for v in SERVER_FACTS[kind][3] if v != standing.value])
        standing.utterances.append(
            talk.say(
                rng.choice(PEOPLE),
                said_text.format(old=standing.value, v=value),
                _fill(saved, old=standing.value, v=value),
                "server",
            )
        )
        standing.value = value

    questions: list[Question] = []

    def ask(
        text: str,
        evidence: Sequence[Utterance],
        speaker: str,
        kind: str,
        about: Sequence[str] = (),
        superseded: Sequence[Utterance] = (),
    ) -> None:
        questions.append(
            Question(
                f"q{len(questions)}",
                text,
                tuple(u.id for u in evidence),
                speaker,
                rng.choice(CHANNELS),
                superseded=tuple(u.id for u in superseded),
                participants=tuple(p for p in dict.fromkeys(about) if p != speaker),
                kind=kind,
            )
        )

    for (person, kind), standing in rng.sample(sorted(said.items()), len(said)):
        fact = FACTS[kind]
        current, *_ = standing.utterances[::-1]
        old = standing.utterances[:-1]
        how = "corrected" if old else None
        if rng.random() < SELF_ASKED_SHARE:
            ask(rng.choice(fact.asked_by_self), [current], person, how or "by themselves", superseded=old)
            continue
        number = rng.randrange(len(fact.asked))
        text = fact.asked[number].format(name=person)
        asker = rng.choice([p for p in PEOPLE if p != person])
        ask(
            text,
            [current],
            asker,
            how or ("same words" if number < fact.lexical else "other words"),
            (person,),
            old,
        )
    for kind, template in SAME_VALUE_QUESTIONS.items():
        holders = [person for person in PEOPLE if (person, kind) in said]
        for a, b in zip(holders[::2], holders[1::2], strict=False):
            first, second = said[(a, kind)].utterances, said[(b, kind)].utterances
            asker = rng.choice([p for p in PEOPLE if p not in (a, b)])
            ask(
                template.format(a=a, b=b),
                [first[-1], second[-1]],
                asker,
                "two people",
                (a, b),
                first[:-1] + second[:-1],
            )
    for utterance, person, other, number in pairs:
        text = rng.choice(PAIR_FACTS[number][2]).format(user=person, other=other)
        ask(text, [utterance], rng.choice([p for p in PEOPLE if p not in (person, other)]), "two people")
    for kind, standing in server_said.items():
        old = standing.utterances[:-1]
        ask(
            SERVER_FACTS[kind][2],
            [standing.utterances[-1]],
            rng.choice(PEOPLE),
            "corrected" if old else "server",
            superseded=old,
        )
    asked_events = 0
    for utterance, person, place, month in events:  # "who with?" must have one answer: in a month, if not
        if asked_events >= max(len(said) // 2, 5) or seen_events[(person, place, month)] > 1:
            continue
        asked_events += 1
        asker = rng.choice(PEOPLE)
        subject = "I" if asker == person else person
        when = "" if seen_events[(person, place)] == 1 else f" in {month}"
        text = rng.choice(
            (
                f"who did {subject} go to the {place} with{when}?",
                f"who kept {subject} company at the {place}{when}?",
            )
        )
        ask(text, [utterance], asker, "event", (person,))
    rng.shuffle(questions)
    return Conversation(tuple(talk.utterances), tuple(questions[: max(min(memories // 2, QUESTIONS), 10)]))


def _fill(template: str, **values: str) -> str:
    """``template`` with its values filled in and ``{user}`` kept for the memory."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template
