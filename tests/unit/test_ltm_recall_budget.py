"""Recall within a budget: everything while it fits, the memories that matter when not, the search
of the rest, and saves that would repeat a memory the turn can see (issue 20)."""

from __future__ import annotations

import json
from datetime import timedelta

from kioku.discord.models import parse_history
from kioku.domain.dialogue import read_dialogue
from kioku.domain.ltm.memory import GLOBAL_LINEAGE, Memory, MemoryScope
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.ltm.ranking import RecallQuery
from kioku.domain.ltm.recall import recall_query
from kioku.domain.ltm.statuses import SaveStatus, SearchStatus
from kioku.domain.ltm.stemming import stem, terms
from kioku.domain.ltm.tools import (
    CREATE_TOOL,
    SEARCH_TOOL,
    SEARCH_TOOL_NAME,
    UPDATE_TOOL,
    long_term_memory_tools,
)
from kioku.domain.privacy import Origin
from kioku.services.ltm import create_long_term_memory, recall_context
from kioku.services.ltm_search import SEARCH_BUDGET_CHARS, search_long_term_memory
from tests.unit.ltm_fakes import (
    ALICE,
    BOB,
    BOT,
    HERE,
    NOW,
    SERVER,
    FakeMemoryStore,
    make_turn,
    member_lookup,
    members,
    settings,
)

SERVER_SCOPE = MemoryScope.server(SERVER, 1)
ALICES = MemoryScope.personal(ALICE.user_id, 1)
BOBS = MemoryScope.personal(BOB.user_id, 1)
SECRET = Origin(SERVER, "701", private=True)
FILLER = (
    "went to the weekly board game evening and talked about the weather, the traffic and lunch",
    "watched the football match with friends and complained about the referee afterwards",
    "cooked a big pot of soup on Sunday and shared it with the neighbours downstairs",
    "has been reading a long fantasy novel on the train to work every morning this month",
)


def memory(scope: MemoryScope, memory_id: int, content: str, age_days: float = 0) -> Memory:
    when = NOW - timedelta(days=age_days)
    return Memory(scope, str(memory_id), content, ALICE.user_id, when, when, origin=HERE)


def chatter(scope: MemoryScope, count: int, first_id: int = 40000) -> list[Memory]:
    """``count`` memories of everyday chatter, the newest first, a day apart."""
    return [
        memory(scope, first_id + n, f"{{user}} {FILLER[n % len(FILLER)]} (day {n})", age_days=n)
        for n in range(count)
    ]


def recalled(server=(), personal=None, *, message="", budget=8000, turn=None):
    memories = RecallSet(server=tuple(server), personal=personal or {})
    return recall_context(turn or make_turn(), memories, query=RecallQuery(message), budget=budget)


def test_a_small_server_sees_every_memory_newest_first_and_is_offered_no_search():
    # Given a server with a few memories, well inside the budget
    server = chatter(SERVER_SCOPE, 12)
    personal = {ALICE.user_id: tuple(chatter(ALICES, 5, first_id=50000))}

    # When a turn asks about something none of them mention
    recall = recalled(server, personal, message="what is the capital of Peru?")

    # Then every memory is shown, in each section newest first, with no note and no search tool
    text = recall.item.content
    assert recall.left_out == 0 and "not shown" not in text
    assert all(f"[#{m.memory_id}]" in text for m in [*server, *personal[ALICE.user_id]])
    assert text.index("[#40000]") < text.index("[#40001]") < text.index("[#40011]")
    assert SEARCH_TOOL not in long_term_memory_tools(make_turn(), recall)


def test_a_big_server_keeps_to_the_budget_and_shows_the_old_memory_the_question_is_about():
    # Given three hundred memories of chatter and, a year old, the one fact asked about
    server = [*chatter(SERVER_SCOPE, 300), memory(SERVER_SCOPE, 12345, "Bob's cat is called Miso", 365)]

    # When Alice asks about it
    recall = recalled(server, message="kioku, what was the name of Bob's cat again?", budget=8000)

    # Then the recall keeps to its budget, shows that fact, and says how many memories it left out
    text = recall.item.content
    assert len(text) <= 8000
    assert "[#12345] 2024-05-01: Bob's cat is called Miso" in text
    shown = text.count("\n[#")
    assert f"({301 - shown} more memories are not shown; {SEARCH_TOOL_NAME} finds them.)" in text
    assert long_term_memory_tools(make_turn(), recall) == [CREATE_TOOL, UPDATE_TOOL, SEARCH_TOOL]


def test_every_budget_holds_whatever_the_memories():
    server = [memory(SERVER_SCOPE, 10000 + n, "x" * (50 + 37 * n % 950)) for n in range(100)]
    for budget in (500, 501, 777, 2000, 8000):
        assert len(recalled(server, message="x", budget=budget).item.content) <= budget


def test_the_message_decides_more_than_the_dialogue_before_it():
    # Given two memories, one about what is asked now, one about what was said a while ago
    server = [
        *chatter(SERVER_SCOPE, 200),
        memory(SERVER_SCOPE, 11111, "The server's book club is reading Dune", 100),
        memory(SERVER_SCOPE, 22222, "The server's film night shows Alien", 100),
    ]
    query = RecallQuery("which book is the club reading?", dialogue=("what film is on for film night?",))
    memories = RecallSet(server=tuple(server))

    # When the budget has room for the header and a couple of memories
    recall = recall_context(make_turn(), memories, query=query, budget=600)

    # Then the one the message asks about comes first, the one the dialogue asked about second
    best = [recall.candidates[index].memory.memory_id for index in recall.shown]
    assert best[:2] == ["11111", "22222"]


def test_between_equal_matches_the_speakers_own_memory_comes_first_then_the_newer():
    # Given the same fact about the speaker, another participant and the server
    personal = {
        ALICE.user_id: (memory(ALICES, 30001, "{user} plays the cello", 10),),
        BOB.user_id: (memory(BOBS, 30002, "{user} plays the cello", 1),),
    }
    server = [memory(SERVER_SCOPE, 30003, "Someone plays the cello", 0), *chatter(SERVER_SCOPE, 200)]
    recall = recalled(server, personal, message="who plays the cello?")
    ranked = [recall.candidates[index].memory.memory_id for index in recall.shown]

    # Then the speaker's comes first, then the participant's, then the server's
    assert ranked[:3] == ["30001", "30002", "30003"]
    # and a correction outranks the older fact it corrects when both match alike
    corrected = [
        memory(SERVER_SCOPE, 30010, "The meetup is at the Red Lion pub", 90),
        memory(SERVER_SCOPE, 30011, "The meetup is at the Blue Boar pub now", 2),
        *chatter(SERVER_SCOPE, 200),
    ]
    recall = recalled(corrected, message="which pub is the meetup at?")
    assert recall.candidates[recall.shown[0]].memory.memory_id == "30011"


def test_the_ranking_is_deterministic():
    server = chatter(SERVER_SCOPE, 300)
    first = recalled(server, message="soup with the neighbours").item.content
    assert all(
        recalled(list(reversed(server)), message="soup with the neighbours").item.content == first
        for _ in range(3)
    )


def test_dates_and_word_forms_meet():
    assert terms("on 2025-03-14") == ["2025", *terms("on March 14")]
    assert sorted(terms("on March 14")) == sorted(terms("on the 14th of Mar"))
    assert stem("moved") == stem("moving") == stem("moves") == stem("move")
    assert stem("studies") == stem("studied") == stem("study")
    # and a memory written with one form is found by a question using another
    server = [
        *chatter(SERVER_SCOPE, 300),
        memory(SERVER_SCOPE, 23456, "Carol moved to Lisbon on 2024-06-02", 200),
    ]
    assert "Lisbon" in recalled(server, message="when is Carol moving? June?").item.content


def test_the_search_answers_the_best_hidden_matches_with_ids_within_its_budget():
    # Given a recall that left most memories out, one of them about Bob's allergy
    personal = {BOB.user_id: (memory(BOBS, 31337, "{user} is allergic to hazelnuts", 300),)}
    recall = recalled(chatter(SERVER_SCOPE, 400), personal, message="what's for lunch?")
    assert "hazelnuts" not in recall.item.content

    # When the model searches for it
    result = search_long_term_memory({"query": "Bob allergy hazelnut"}, make_turn(), recall)

    # Then it gets that memory first, with its id and whom it is about, and no more than the budget
    assert result.status == SearchStatus.FOUND and result.ok
    found = json.loads(result.to_model_content())["memories"]
    assert found[0] == {"memory_id": "31337", "about": "Bob", "memory": "Bob is allergic to hazelnuts"}
    assert sum(len(entry["memory"]) for entry in found) <= SEARCH_BUDGET_CHARS
    shown = {recall.candidates[index].memory.memory_id for index in recall.shown}
    assert not shown & {entry["memory_id"] for entry in found}


def test_a_search_that_matches_nothing_or_is_malformed_says_so():
    recall = recalled(chatter(SERVER_SCOPE, 400), message="hello")
    assert (
        search_long_term_memory({"query": "zeppelin"}, make_turn(), recall).status
        == SearchStatus.NOTHING_FOUND
    )
    for arguments in ({}, {"query": ""}, {"query": 7}, {"query": "x" * 501}, "not json", None):
        result = search_long_term_memory(arguments, make_turn(), recall)
        assert result.status == SearchStatus.INVALID_ARGS


# -- near-duplicates ------------------------------------------------------------------------------


def save(content: str, store: FakeMemoryStore, *, scope: str = "target_user", turn=None, limit: int = 100):
    turn = turn or make_turn()
    shown = store.recall(
        SERVER, 1, [ALICE.user_id, BOB.user_id], place=turn.place, policy=turn.config.privacy
    )
    arguments = {"memory_content": content, "memory_scope": scope}
    if scope == "target_user":
        arguments["target_user"] = "Alice"
    return create_long_term_memory(
        arguments,
        turn,
        store=store,
        members=members(lambda guild, query: [], member_lookup),
        settings=settings(MAX_PERSONAL_MEMORIES=limit, MAX_SERVER_MEMORIES=limit),
        recalled=recall_context(turn, shown),
    )


def test_a_reworded_fact_is_answered_with_the_memory_that_already_says_it():
    # Given Alice's memory that she plays the cello in a band
    store = FakeMemoryStore()
    store.add(memory(ALICES, 30001, "{user} plays the cello in a band", 30))

    # When the model saves it again in other words
    result = save("{user} plays cello in a band", store)

    # Then it is told which memory says it, with its text, and nothing is saved
    assert result.status == SaveStatus.ALREADY_REMEMBERED and not result.ok
    assert result.data["memory_id"] == "30001"
    assert result.data["memory"] == "Alice plays the cello in a band"
    assert "update it instead" in result.data["message"]
    assert len(store.memories) == 1


def test_a_different_fact_in_the_same_words_is_saved():
    store = FakeMemoryStore()
    store.add(memory(ALICES, 30001, "{user} went to the zoo with Mia on 2025-03-01", 30))
    store.add(memory(ALICES, 30002, "{user} lives in Lisbon", 30))
    for content in ("{user} went to the zoo with Noah on 2025-03-01", "{user} lives in Porto"):
        assert save(content, store).status == SaveStatus.SAVED
    assert len(store.memories) == 4


def test_the_same_text_is_still_the_stores_to_answer():
    store = FakeMemoryStore()
    store.add(memory(ALICES, 30001, "{user} plays the cello in a band", 30))
    result = save("{user} plays the cello in a band", store)
    assert (
        result.status == SaveStatus.SAVED and "already remembered as memory #30001" in result.data["message"]
    )


def test_the_near_duplicate_answer_compares_within_the_lineage_as_the_exact_guard_does():
    # Given Alice's global memory (lineage 0, recalled by every persona) that she plays the cello
    def alices_book() -> FakeMemoryStore:
        store = FakeMemoryStore()
        global_scope = MemoryScope.personal(ALICE.user_id, GLOBAL_LINEAGE)
        store.add(memory(global_scope, 30001, "{user} plays the cello in a band", 30))
        return store

    # When the persona (lineage 1) saves the same text, or the same fact reworded
    same_book, reworded_book = alices_book(), alices_book()
    same = save("{user} plays the cello in a band", same_book)
    reworded = save("{user} plays cello in a band", reworded_book)

    # Then both guards answer alike: the store's exact guard, kept per lineage, saves the same text
    # in lineage 1, and so does the near-duplicate answer with the rewording
    assert same.status == SaveStatus.SAVED and same.data["memory_id"] != "30001"
    assert reworded.status == SaveStatus.SAVED and reworded.data["memory_id"] != "30001"
    assert len(same_book.memories) == len(reworded_book.memories) == 2


def test_a_memory_the_turn_may_not_see_is_never_named_as_a_near_duplicate():
    # Given a server memory said in a private channel
    store = FakeMemoryStore()
    secret = Memory(
        SERVER_SCOPE, "30001", "The vault code is okapi seven", BOB.user_id, NOW, NOW, origin=SECRET
    )
    store.add(secret)

    # When the same fact is saved, reworded, in a public channel
    result = save("The vault code is okapi seven!", store, scope="server_wide")

    # Then it is saved as a new memory: nothing tells the public channel the private one exists
    assert result.status == SaveStatus.SAVED and "30001" not in json.dumps(result.data)


def test_a_full_scope_names_its_most_similar_memories_to_update_instead():
    store = FakeMemoryStore()
    store.add(memory(ALICES, 30001, "{user} lives in Lisbon", 30))
    store.add(memory(ALICES, 30002, "{user} has a dog called Pixel", 20))
    result = save("{user} lives in Porto now", store, limit=2)
    assert result.status == SaveStatus.LIMIT_EXCEEDED
    assert result.data["similar"] == [{"memory_id": "30001", "memory": "Alice lives in Lisbon"}]
    assert len(store.memories) == 2


def test_the_query_is_what_people_wrote_never_the_dialogues_headers():
    # Given a channel where Bob says hello, then Alice asks about her dog
    turn = make_turn(participants=(ALICE, BOB))
    history = parse_history(
        [
            {
                "id": str(800 + n),
                "author": {
                    "id": person.user_id,
                    "username": person.username,
                    "global_name": person.global_name,
                },
                "content": text,
                "timestamp": f"2025-05-01T{hour}:44:00.000000+00:00",
                "reactions": [{"emoji": {"name": "👍"}, "count": 2}],
            }
            for n, (person, text, hour) in enumerate(
                [(ALICE, "kioku, what's my dog called?", "19"), (BOB, "hey all", "18")]
            )
        ]
    )
    items = read_dialogue(history, bot_user_id=BOT.user_id, supports_vision=False, limit=10).items
    assert "UserID:" in items[0].content and "Sent:" in items[0].content

    # When the turn's recall query is made from that dialogue
    query = recall_query(turn, "kioku, what's my dog called?", items)

    # Then it holds what Bob wrote and nothing of the header (his names, ids, the time, reactions)
    assert query.dialogue == ("hey all",)
    # and so Bob's memories are not lifted over Alice's dog by his name in the header
    personal = {
        ALICE.user_id: (memory(ALICES, 30001, "{user}'s dog is called Rex", 30),),
        BOB.user_id: (memory(BOBS, 31000, "{user}'s dog is called Biscuit", 1),),
    }
    memories = RecallSet(server=tuple(chatter(SERVER_SCOPE, 200)), personal=personal)
    recall = recall_context(turn, memories, query=query, budget=500)
    assert recall.candidates[recall.shown[0]].memory.memory_id == "30001"


def test_a_correction_in_other_words_outranks_the_fact_it_corrects():
    # Given Bob's old fact, his correction in other words a week later, and plenty else about him
    personal = {
        BOB.user_id: (
            memory(BOBS, 30020, "{user} lives in Lisbon", 60),
            memory(BOBS, 30021, "{user} packed up, left Lisbon and moved to Porto with the whole family", 53),
            *chatter(BOBS, 200),
        )
    }
    turn = make_turn(participants=(ALICE, BOB))

    # When someone asks where he lives now (the old fact shares the question's words, the correction does not)
    recall = recall_context(
        turn, RecallSet(personal=personal), query=RecallQuery("where does Bob live now?"), budget=8000
    )

    # Then the correction comes first, above the fact it corrects
    ranked = [recall.candidates[index].memory.memory_id for index in recall.shown]
    assert ranked.index("30021") < ranked.index("30020")


def test_what_is_said_right_after_a_topic_is_named_comes_with_it():
    # Given a stretch of conversation where the topic is named a line before the answer to it,
    # among months of chatter (a memory an hour) and older memories that share one of its words
    said = NOW - timedelta(days=200)
    stretch = [
        Memory(SERVER_SCOPE, str(30030 + n), text, ALICE.user_id, when, when)
        for n, text in enumerate(["Caroline wondered what career path suits her", "I'm keen on counseling"])
        if (when := said + timedelta(minutes=n))
    ]
    server = [
        *stretch,
        *(
            memory(SERVER_SCOPE, 40000 + n, f"Someone {FILLER[n % len(FILLER)]} ({n})", n / 24)
            for n in range(300)
        ),
        *(
            memory(SERVER_SCOPE, 45000 + n, f"A friend went to a career fair ({n})", 300 + n)
            for n in range(6)
        ),
    ]

    # When someone asks about it in the words of the first line only
    recall = recalled(server, message="What career path has Caroline decided to pursue?", budget=1000)

    # Then the line after it, which shares none of the question's words, is shown too
    shown = {recall.candidates[index].memory.memory_id for index in recall.shown}
    assert {"30030", "30031"} <= shown


def test_a_newer_memory_sharing_only_a_number_or_a_date_with_the_best_match_is_not_lifted():
    # Given the fact asked about and, newer, unrelated memories that share only its number and month
    server = [
        memory(SERVER_SCOPE, 30040, "The book club meets at 7 in March", 90),
        memory(SERVER_SCOPE, 30041, "Dave bought 7 plants in March", 10),
        *chatter(SERVER_SCOPE, 200),
    ]

    # When someone asks about the book club
    recall = recalled(server, message="when does the book club meet?", budget=8000)

    # Then the unrelated newer memory is not lifted: it comes where its age puts it among those
    # that match nothing asked (after the newer chatter)
    ranked = [recall.candidates[index].memory.memory_id for index in recall.shown]
    assert ranked[0] == "30040"
    assert ranked.index("30041") > ranked.index("40009")


def test_irregular_forms_and_ship_nouns_meet_their_base_words():
    assert terms("went") == terms("going") == terms("goes")
    assert terms("bought") == terms("buying") and terms("made") == terms("making")
    assert terms("children") == terms("child") and terms("took") == terms("taking")
    assert terms("friendship") == terms("friends") and terms("mentorship") == terms("mentor")
    # and a question in one form finds a memory in another, among memories sharing its other words
    server = [
        *chatter(SERVER_SCOPE, 300),
        *(
            memory(SERVER_SCOPE, 24000 + n, f"Nate talked about a pottery show ({n})", 30 + n)
            for n in range(40)
        ),
        memory(SERVER_SCOPE, 23457, "Nate bought a pottery wheel", 200),
    ]
    assert "[#23457]" in recalled(server, message="what pottery is Nate buying?", budget=600).item.content


def test_british_and_american_spellings_meet():
    assert terms("travelling") == terms("traveling") == terms("travelled") == terms("travel")
    assert terms("cancelled") == terms("canceled") and terms("modelling") == terms("model")
    assert terms("controlling") == terms("control") and terms("installing") == terms("install")
    assert terms("organised") == terms("organized") == terms("organising") == terms("organize")
    assert terms("organisation") == terms("organization") and terms("analyse") == terms("analyze")
    assert terms("my favourite colours") == terms("my favorite colors")
    assert terms("neighbourhood") == terms("neighborhood") and terms("theatres") == terms("theater")
    # and neither rule joins a short word to another, nor touches a word with one spelling
    assert terms("telling") == terms("tell") != terms("tel")
    assert terms("hour four tour acre") == ["hour", "four", "tour", "acr"]
    # and a question in one spelling finds a memory in the other, among memories sharing its name
    server = [
        *chatter(SERVER_SCOPE, 300),
        *(memory(SERVER_SCOPE, 24100 + n, f"Dana liked a film ({n})", 30 + n) for n in range(40)),
        memory(SERVER_SCOPE, 23458, "Dana's favourite theatre is the Globe", 200),
    ]
    content = recalled(server, message="Which theater is Dana's favorite?", budget=600).item.content
    assert "[#23458]" in content


def test_the_best_matches_words_find_a_memory_in_none_of_the_questions_words():
    # Given the memory that names the topic, one on it that shares only the name with the
    # question, and many others about the same person, days apart
    server = [
        memory(SERVER_SCOPE, 30050, "Melanie's favourite activities are pottery and camping", 100),
        memory(SERVER_SCOPE, 30051, "Melanie went camping by the lake with her kids", 150),
        *(
            memory(
                SERVER_SCOPE,
                46000 + n,
                f"Melanie is here ({n})",
                2 * n + 1,
            )
            for n in range(30)
        ),
        *chatter(SERVER_SCOPE, 200),
    ]

    # When someone asks about the topic in its own words
    recall = recalled(server, message="what activities does Melanie enjoy?", budget=700)

    # Then the one sharing only the name comes with the one naming the topic, above the rest
    ranked = [recall.candidates[index].memory.memory_id for index in recall.shown]
    assert ranked[:2] == ["30050", "30051"]
