"""Property tests of the privacy model: random Discord worlds, real turns, an independent oracle.

Each example builds a world (guilds, channels with @everyone overwrites, threads, members, DMs), then
plays a random sequence of messages to the bot through the real ``TurnService``, ``StmStore``,
``DynamoMemoryStore`` and ``TurnRepository`` on in-process moto, with a fresh table. Every message holds
a secret token (and mentions channels of the world), and the model writes more tokens into
short-term summaries and long-term memories, and rewrites or forgets memories saved earlier. After
each turn, every token in the model's requests must be one the rules let this turn see, or one of
this channel's own dialogue (else: LEAK); every token the rules say it must see must be there
(MISSING); nothing forgotten or rewritten may still be shown (STALE); only a memory's author or
subject may change it, where it could be shown (TAMPERED); and no channel's name may reach the
requests where that channel's memory could not be shown (NAMED), while a mention of one whose name
the turn may read reads as that name (UNNAMED). A few DM turns are said in a group DM instead: the
relay's decision must leave them unanswered (GROUP_DM), never answered as the speaker's DM.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, Final
from unittest import mock

import pytest
from bench.memory import faster_moto
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings

from kioku import clock as kioku_clock
from kioku.adapters.discord_rest import DiscordError
from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.keys import (
    SHOWN_NOTE_PREFIX,
    book_key,
    memory_key,
    reply_key,
    shown_note_key,
    turn_record_key,
    user_pk,
)
from kioku.adapters.dynamodb.ltm_store import BookLayout, DynamoMemoryStore, entry_attribute, memory_from_item
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable, from_wire, make_client
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.adapters.dynamodb.turn_repository import TurnRepository
from kioku.adapters.dynamodb.webhook_store import WebhookStore
from kioku.adapters.embedded_model import EmbeddedModel
from kioku.adapters.guild_directory import GuildDirectory
from kioku.adapters.llm.base import ChatRequest
from kioku.adapters.llm.embeddings import OpenAIEmbeddings
from kioku.config import Settings
from kioku.discord.interaction import parse_interaction
from kioku.discord.models import parse_message, parse_user
from kioku.domain.addressing import decide_turn, parse_message_object
from kioku.domain.ltm.curation import text_shown_to_manager
from kioku.domain.ltm.memory import Memory, MemoryNotFound, ScopeKind
from kioku.domain.ltm.ports import Embedder
from kioku.domain.ltm.statuses import SaveStatus, UpdateStatus
from kioku.domain.ltm.tools import CREATE_TOOL_NAME, SEARCH_TOOL_NAME, UPDATE_TOOL_NAME
from kioku.domain.models import MemoryModeration, Persona, ServerConfig, UserProfile
from kioku.domain.personas import MAX_NICKNAME_CHARS
from kioku.domain.privacy import Place, PrivacyMode, PrivacyPolicy
from kioku.domain.stm.entries import StmAddress
from kioku.domain.stm.update_tool import SUMMARY_FIELD
from kioku.domain.stm.update_tool import TOOL_NAME as STM_TOOL
from kioku.domain.turn_jobs import MemoryRequest, PersonaCue, TurnJob, TurnSource
from kioku.domain.why import Visibility
from kioku.playground.aws import create_table, load_template
from kioku.playground.events import autocomplete_typing, slash_command
from kioku.playground.standins import EmbeddingsStandIn
from kioku.services import memory_control, memory_edits
from kioku.services.commands import personal_memories
from kioku.services.hand_memories import HandWriting, save_by_hand
from kioku.services.memory_control import forget_all
from kioku.services.persona_voice import PersonaWebhooks
from kioku.services.turn import TurnService
from kioku.services.why import why_this_answer
from tests.integration import privacy_bursts as bursts
from tests.integration import stm_rows
from tests.integration.privacy_world import (
    BOT_ID,
    GLOBAL_LINEAGE,
    MAIN_LINEAGE,
    PRIVATE_THREAD,
    PUBLIC_THREAD,
    VIEW_CHANNEL_BIT,
    Alter,
    Channel,
    FakeDiscord,
    ForgetRace,
    Guild,
    Hand,
    HostileModel,
    HostileScenario,
    HostileUser,
    Kind,
    LostEvents,
    Oracle,
    Overwrite,
    Probe,
    Race,
    Scenario,
    TokenWritingModel,
    TurnPlan,
    User,
    Where,
    World,
    Written,
    channels_named_in,
    forgeries,
    forget_races,
    hostile_scenarios,
    lost_channel_events,
    repeating_scenarios,
    scenarios,
    tokens_in,
)
from tests.integration.test_personal_memories import buttons, click, personal
from tests.unit.stm_builders import USER

TABLE_NAME: Final = "kioku-privacy-properties"
TEMPLATE: Final = load_template()
START: Final = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
HISTORY_LIMIT: Final = 4
"""Short, so that some people who wrote in a channel are no longer taking part in it."""
SETTINGS: Final = Settings.model_validate(
    {
        "TABLE_NAME": TABLE_NAME,
        "TURN_QUEUE_URL": "https://sqs.local/queue.fifo",
        "DISCORD_APPLICATION_ID": BOT_ID,
        "DISCORD_PUBLIC_KEY": "0" * 64,
        "RELAY_PUBLIC_KEY": "1" * 64,
        "LLM_PROVIDER": "scripted",
        "DIALOGUE_HISTORY_LIMIT": HISTORY_LIMIT,
        # Room for everything the rules allow, so that whatever is missing was held back by privacy.
        "SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS": 20,
        "SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT": 50,
        "SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL": 50,
    }
)
RECALL_BUDGET: Final = 500
"""The smallest recall budget there is: a few memories a turn, so ranking chooses on most turns."""
BUDGETED: Final = SETTINGS.model_copy(update={"LTM_RECALL_BUDGET_CHARS": RECALL_BUDGET})
SEARCH_EVERYTHING: Final = (SEARCH_TOOL_NAME, {"query": "Fact"})
"""Every memory the test writes reads "Fact TOK…": this search matches all of them."""
LONG_FACTS: Final = (
    ", noted down with enough words around it that only two or three fit the budget",
    ", said over coffee one rainy morning while everybody else was busy elsewhere",
    ", mentioned twice in passing during the weekly planning call about the garden",
    ", written on a sticky note that later fell behind the old piano in the hall",
)
"""Long enough that a small budget holds a few; a memory whose filler another one of its scope
shares is a near-duplicate of it, so both outcomes of a save are played."""
MEMORY_KINDS: Final = (Kind.SERVER_MEMORY, Kind.PERSONAL_MEMORY)
LEFT_OUT: Final = re.compile(r"\((\d+) more memories are not shown")
BYPASS_EXAMPLES: Final = 25
WHY_REPLIES_ASKED: Final = 4
"""After each turn, "Why this answer?" is asked of this many replies: the turn's and those before it."""
REPEAT_EXAMPLES: Final = 30
HISTORY_EXAMPLES: Final = 3
"""Everyone asks everywhere about every memory: each example makes a few thousand requests."""
PROPERTY_SETTINGS: Final = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI cannot flake
    database=None,
    # The moto mock and its client (function-scoped fixtures) serve every example; each example
    # makes its own table.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def relayed(message: dict[str, Any], persona: Alter | None = None) -> TurnJob:
    """The turn of a message as RelayFunction queues it (``persona``: the alter persona it calls)."""
    return TurnJob.from_message(parse_message(message), _cue(persona))


def _cue(persona: Alter | None) -> PersonaCue | None:
    return PersonaCue(persona.persona_id, persona.lineage, persona.name) if persona else None


@PROPERTY_SETTINGS
@given(scenario=scenarios())
def test_every_turn_sees_exactly_the_memory_discords_privacy_allows(dynamodb, scenario: Scenario):
    # Given a random world with Discord's privacy only (no admin overrides, no bypass)
    # When its people talk to the bot, saving, rewriting and forgetting memories on the way
    problems = play(scenario, dynamodb, Oracle(scenario.world))

    # Then no turn was shown anything the rules keep from it, nor denied anything they allow
    assert not problems, "\n".join([*problems, "", story(scenario)])


@settings(PROPERTY_SETTINGS, max_examples=15)
@given(scenario=scenarios(admin_settings=True))
def test_admin_overrides_and_the_bypass_decide_privacy_within_their_guild(dynamodb, scenario: Scenario):
    # Given a random world whose admins override channels' privacy and may turn the bypass on
    # When its people talk to the bot
    oracle = Oracle(scenario.world)
    problems = play(scenario, dynamodb, oracle)

    # Then every turn sees what the overrides and the bypass allow, and nothing more
    assert not problems, "\n".join([*problems, "", story(scenario)])


@settings(PROPERTY_SETTINGS, max_examples=20)
@given(race=forget_races())
def test_forget_all_reaches_the_turns_still_queued_or_left_unfinished(dynamodb, race: ForgetRace):
    # Given a turn still on its way (queued, or its reply refused by Discord after its tools ran)
    # When the speaker, the person it saves a memory about, or someone else forgets everything, and
    # only then the worker takes the turn (again)
    problems = play_race(race, dynamodb)

    # Then nothing the forget-all covers is kept, posted or claimed as saved, and the turn is done
    assert not problems, "\n".join(
        [*problems, "", story(Scenario(race.world, (*race.before, race.turn))), str(race)]
    )


def test_a_retried_turn_does_not_post_its_notice_about_someone_who_forgot_everything(dynamodb):
    # Given ann's turn in a public channel, which saved a memory about bo, and whose reply Discord refused
    guild, channel = "200000000000000000", "300000000000000000"
    ann, bo = (
        User(f"40000000000000000{n}", name, f"50000000000000000{n}", frozenset({guild}))
        for n, name in enumerate(("ann", "bo"))
    )
    world = World(
        guilds=(Guild(guild, VIEW_CHANNEL_BIT),), channels=(Channel(channel, guild),), users=(ann, bo)
    )
    turn = TurnPlan(ann.user_id, Where(guild, channel), personal_about=bo.user_id)

    # When bo forgets everything before the turn is retried
    problems = play_race(ForgetRace(world, (), turn, Race.UNFINISHED, forgetter=bo.user_id), dynamodb)

    # Then the retry posts no "Memory saved" notice quoting what was said about bo
    assert problems == []


@settings(PROPERTY_SETTINGS, max_examples=REPEAT_EXAMPLES)
@given(scenario=repeating_scenarios())
def test_a_fact_said_again_is_refused_only_by_a_memory_recalled_wherever_it_would_be(
    dynamodb, scenario: Scenario
):
    """Saves and rewrites that repeat what earlier memories say, after their channel turned private,
    while they await review, by others and elsewhere: "already remembered" only for a memory shown
    wherever the new one would be (else CONFIRMED), and every kept memory shown where it may be."""
    problems = play(scenario, dynamodb)
    assert not problems, story(scenario) + "\n" + "\n".join(problems)


@settings(PROPERTY_SETTINGS, max_examples=15)
@given(scenario=scenarios(turns=(10, 18)))
def test_a_small_recall_budget_only_chooses_among_what_may_be_seen(dynamodb, scenario: Scenario):
    # Given a random world whose turns may carry only a few memories, and a model that searches the
    # rest whenever it is offered the search
    # When its people talk to the bot
    problems = play(scenario, dynamodb, settings=BUDGETED)

    # Then neither recall nor search showed anything the rules keep from a turn, and each memory the
    # turn may see was either shown or counted as left out
    assert not problems, "\n".join([*problems, "", story(scenario)])


@settings(PROPERTY_SETTINGS, max_examples=BYPASS_EXAMPLES)
@given(scenario=scenarios(admin_settings=True, bypass_switches=True))
def test_the_bypass_widens_reading_while_it_is_on_and_never_moves_a_memory(dynamodb, scenario: Scenario):
    # Given a random world with overrides, whose managers switch the bypass on and off between turns
    # When its people talk to the bot, rewriting and forgetting memories in most turns
    problems = play(scenario, dynamodb)

    # Then every turn sees what the bypass allows while it is on, and a memory rewritten through it
    # is recalled afterwards only where it was said: never in a DM or another guild
    assert not problems, "\n".join([*problems, "", story(scenario)])


@settings(PROPERTY_SETTINGS, max_examples=8)
@given(scenario=scenarios(turns=(10, 18)))
def test_with_embeddings_the_hybrid_ranking_only_chooses_among_what_may_be_seen(
    dynamodb, embeddings_server, scenario: Scenario
):
    # Given the same small budget, and every memory saved with its embedding (a real HTTP stand-in)
    embedder = OpenAIEmbeddings(base_url=embeddings_server.base_url, model="stand-in", api_key=None)
    # When its people talk to the bot
    problems = play(scenario, dynamodb, settings=BUDGETED, embedder=embedder)

    # Then ranking by meaning too changes what is chosen, never what may be chosen from
    assert not problems, "\n".join([*problems, "", story(scenario)])


@settings(PROPERTY_SETTINGS, max_examples=15)
@given(scenario=scenarios(admin_settings=True, bypass_switches=True))
def test_why_this_answer_shows_a_viewer_only_what_a_turn_of_theirs_there_could_be_shown(
    dynamodb, scenario: Scenario
):
    # Given a random world with overrides and the bypass switched between turns
    # When its people talk to the bot, and after each turn everyone who could asks "Why this answer?"
    problems = play(scenario, dynamodb, why_viewers=True)

    # Then each was shown only memories a turn of theirs at that place could be shown now: never
    # another person's personal memory, a private channel's elsewhere, or one forgotten since
    assert not problems, "\n".join([*problems, "", story(scenario)])


@settings(PROPERTY_SETTINGS, max_examples=6)
@given(scenario=scenarios(turns=(10, 18)))
def test_with_the_embedded_model_the_hybrid_ranking_only_chooses_among_what_may_be_seen(
    dynamodb, embedded_model, scenario: Scenario
):
    # Given the same small budget, and every memory saved with the embedded model's vector (the
    # turn worker's default: real meaning, so the hybrid really reorders)
    # When its people talk to the bot
    problems = play(scenario, dynamodb, settings=BUDGETED, embedder=embedded_model)

    # Then meaning changes what is chosen, never what may be chosen from
    assert not problems, "\n".join([*problems, "", story(scenario)])


@pytest.fixture(scope="module")
def embedded_model() -> EmbeddedModel:
    return EmbeddedModel.load()


@settings(PROPERTY_SETTINGS, max_examples=HISTORY_EXAMPLES)
@given(scenario=scenarios(admin_settings=True, turns=(6, 10)))
def test_a_memorys_history_and_edit_reach_only_who_may_read_its_text_there(dynamodb, scenario: Scenario):
    # Given a random world with overrides, whose turns save, rewrite and forget memories
    # When, after them, everyone asks everywhere for the history of every memory, and to edit it
    problems = play(scenario, dynamodb, history_viewers=True)

    # Then an earlier text is shown only to whom, and where, its memory's text may be; an edit is
    # allowed only to its subject (or, for a memory about nobody, its author) where they may read it
    assert not problems, "\n".join([*problems, "", story(scenario)])


@pytest.fixture(scope="module")
def embeddings_server():
    with EmbeddingsStandIn() as server:
        yield server


# -- gaps the properties found, kept closed ---------------------------------------------------------
# 1. A guild's overrides travel with what is said: a memory someone saves about themself is stamped
#    with the privacy its channel had after the guild's overrides, so it follows them (or not) elsewhere.
# 2. A rewritten memory belongs where (and to whom) its new text was written.
# 3. A mention of another channel reads as its name only where that channel's memory could be shown,
#    after the guild's overrides (the bypass aside: the name stays in the turn's kept line).


def test_what_is_written_over_a_public_memory_in_a_private_thread_stays_in_the_thread(dynamodb):
    # Given a public channel with a private thread, and a server memory ann saved in the channel
    guild, channel, thread = "200000000000000000", "300000000000000000", "300000000000000005"
    ann, bo = (
        User(f"40000000000000000{n}", name, f"50000000000000000{n}", frozenset({guild}))
        for n, name in enumerate(("ann", "bo"))
    )
    world = World(
        guilds=(Guild(guild, VIEW_CHANNEL_BIT),),
        channels=(Channel(channel, guild), Channel(thread, guild, PRIVATE_THREAD, parent_id=channel)),
        users=(ann, bo),
    )
    saved = TurnPlan(ann.user_id, Where(guild, channel), server_memory=True)

    # When ann rewrites it in the private thread, and bo then talks in the channel
    rewritten = TurnPlan(ann.user_id, Where(guild, thread, channel), revise=0)
    problems = play(
        Scenario(world, (saved, rewritten, TurnPlan(bo.user_id, Where(guild, channel)))), dynamodb
    )

    # Then bo is not shown what ann wrote in the thread
    assert problems == []


def _open_and_random(*, reviews: bool = False) -> tuple[World, User, User, str, str, str]:
    """One guild (owned by bo) with two public channels, #open and #random; bo and mallory."""
    guild, opened, randomly = "200000000000000000", "300000000000000000", "300000000000000001"
    bo, mallory = (
        User(f"40000000000000000{n}", name, f"50000000000000000{n}", frozenset({guild}))
        for n, name in enumerate(("bo", "mallory"))
    )
    world = World(
        guilds=(Guild(guild, VIEW_CHANNEL_BIT, owner_id=bo.user_id, reviews=reviews),),
        channels=(Channel(opened, guild), Channel(randomly, guild)),
        users=(bo, mallory),
    )
    return world, bo, mallory, guild, opened, randomly


def test_a_memory_of_a_channel_made_private_since_is_not_confirmed_by_saying_it_again(dynamodb):
    # Given bo's server memory saved in public #open, which a manager then makes private
    world, bo, mallory, guild, opened, randomly = _open_and_random()
    saved = TurnPlan(bo.user_id, Where(guild, opened), server_memory=True)
    # a memory of mallory's own, to rewrite
    hers = TurnPlan(mallory.user_id, Where(guild, randomly), server_memory=True)

    # When mallory, in #random, saves the same words, and rewrites her memory into them
    again = TurnPlan(mallory.user_id, Where(guild, randomly), server_memory=True, repeat=0, make_private=True)
    rewrites = TurnPlan(mallory.user_id, Where(guild, randomly), revise=1, repeat=0)
    problems = play(Scenario(world, (saved, hers, again, rewrites)), dynamodb)

    # Then neither is answered "already remembered" by bo's (CONFIRMED), and hers is shown in #random
    assert problems == []


def test_a_managers_save_of_a_fact_awaiting_review_is_remembered(dynamodb):
    # Given a guild that reviews members' memories, and mallory's memory waiting for review
    world, bo, mallory, guild, opened, randomly = _open_and_random(reviews=True)
    waiting = TurnPlan(mallory.user_id, Where(guild, randomly), server_memory=True)

    # When bo, its owner, saves the same words, then talks in #open
    saved = TurnPlan(bo.user_id, Where(guild, randomly), server_memory=True, repeat=0)
    later = TurnPlan(bo.user_id, Where(guild, opened))
    problems = play(Scenario(world, (waiting, saved, later)), dynamodb)

    # Then bo's save is not swallowed by the pending one (CONFIRMED), and it is recalled (MISSING)
    assert problems == []


def test_what_someone_said_about_themself_in_a_channel_made_private_by_its_admin_stays_there(dynamodb):
    # Given a channel everyone may view, made private by its guild's admin
    scenario = _said_about_herself_then_elsewhere(PrivacyMode.PRIVATE)

    # When ann saves a memory about herself in it, then talks in another guild and in her DM
    problems = play(scenario, dynamodb)

    # Then neither of those turns is shown it
    assert problems == []


def test_what_someone_said_about_themself_in_a_channel_made_public_by_its_admin_follows_them(dynamodb):
    # Given a channel @everyone may not view, made public by its guild's admin
    scenario = _said_about_herself_then_elsewhere(PrivacyMode.PUBLIC)

    # When ann saves a memory about herself in it, then talks in another guild and in her DM
    problems = play(scenario, dynamodb)

    # Then both of those turns are shown it
    assert problems == []


def _said_about_herself_then_elsewhere(mode: PrivacyMode) -> Scenario:
    home, away = "200000000000000000", "200000000000000001"
    channel, elsewhere = "300000000000000000", "300000000000000010"
    discord_view = VIEW_CHANNEL_BIT if mode is PrivacyMode.PRIVATE else 0
    ann = User("400000000000000000", "ann", "500000000000000000", frozenset({home, away}))
    world = World(
        guilds=(Guild(home, discord_view, {channel: mode}), Guild(away, VIEW_CHANNEL_BIT)),
        channels=(Channel(channel, home), Channel(elsewhere, away)),
        users=(ann,),
    )
    return Scenario(
        world,
        (
            TurnPlan(ann.user_id, Where(home, channel), personal_about=ann.user_id),
            TurnPlan(ann.user_id, Where(away, elsewhere)),
            TurnPlan(ann.user_id, Where(None, ann.dm_channel_id)),
        ),
    )


def test_a_memory_rewritten_through_the_bypass_stays_where_it_was_said(dynamodb):
    # Given ann's memories said in a private channel: one about herself, one for the server
    home, away = "200000000000000000", "200000000000000001"
    general, secret, elsewhere = "300000000000000000", "300000000000000001", "300000000000000010"
    ann, bo = (
        User(f"40000000000000000{n}", name, f"50000000000000000{n}", frozenset({home, away}))
        for n, name in enumerate(("ann", "bo"))
    )
    world = World(
        guilds=(Guild(home, VIEW_CHANNEL_BIT), Guild(away, VIEW_CHANNEL_BIT)),
        channels=(
            Channel(general, home),
            Channel(secret, home, overwrite=Overwrite.DENY_VIEW),
            Channel(elsewhere, away),
        ),
        users=(ann, bo),
    )
    in_general, in_secret = Where(home, general), Where(home, secret)
    turns = (
        TurnPlan(ann.user_id, in_secret, personal_about=ann.user_id, server_memory=True),
        # When, with the bypass on, she rewrites both in the public channel
        TurnPlan(ann.user_id, in_general, bypass=True, revise=0),
        TurnPlan(ann.user_id, in_general, revise=2),
        # and the bypass is switched off again
        TurnPlan(bo.user_id, in_general, bypass=False),
        TurnPlan(ann.user_id, in_general),
        TurnPlan(ann.user_id, Where(None, ann.dm_channel_id)),
        TurnPlan(ann.user_id, Where(away, elsewhere)),
    )
    problems = play(Scenario(world, turns), dynamodb)

    # Then neither is recalled outside the private channel: not in the public one, nor in her DM,
    # nor in the other guild
    assert not problems, "\n".join(problems)


def test_a_mentioned_channel_is_named_as_its_overrides_say_not_as_discord_alone_does(dynamodb):
    # Given a channel everyone may view that its manager made private, with a thread, and one
    # nobody may view that the manager made public
    guild = "200000000000000000"
    general, secret, opened, thread = (f"30000000000000000{n}" for n in (0, 1, 2, 5))
    ann = User("400000000000000000", "ann", "500000000000000000", frozenset({guild}))
    overrides = {secret: PrivacyMode.PRIVATE, opened: PrivacyMode.PUBLIC}
    world = World(
        guilds=(Guild(guild, VIEW_CHANNEL_BIT, overrides),),
        channels=(
            Channel(general, guild),
            Channel(secret, guild),
            Channel(opened, guild, overwrite=Overwrite.DENY_VIEW),
            Channel(thread, guild, PUBLIC_THREAD, parent_id=secret),
        ),
        users=(ann,),
    )

    # When ann mentions each of them in the public channel, and the private one in its thread
    turns = (
        TurnPlan(ann.user_id, Where(guild, general), channel_mentions=(secret,)),
        TurnPlan(ann.user_id, Where(guild, general), channel_mentions=(opened,)),
        TurnPlan(ann.user_id, Where(guild, thread, secret), channel_mentions=(secret,)),
    )
    problems = play(Scenario(world, turns), dynamodb)

    # Then the private one reads as #unknown-channel in the public channel and as its name in its
    # thread, and the one made public reads as its name
    assert problems == []


def test_a_channel_named_while_the_bypass_was_on_is_not_named_by_what_was_kept_after_it(dynamodb):
    # Given a private channel, and the bypass on
    guild = "200000000000000000"
    general, other, hidden = (f"30000000000000000{n}" for n in (0, 1, 2))
    ann, bo = (
        User(f"40000000000000000{n}", name, f"50000000000000000{n}", frozenset({guild}))
        for n, name in enumerate(("ann", "bo"))
    )
    world = World(
        guilds=(Guild(guild, VIEW_CHANNEL_BIT, bypass=True),),
        channels=(
            Channel(general, guild),
            Channel(other, guild),
            Channel(hidden, guild, overwrite=Overwrite.DENY_VIEW),
        ),
        users=(ann, bo),
    )

    # When ann mentions it in a public channel, and once the bypass is off bo talks in another one,
    # shown the lines kept of the first
    turns = (
        TurnPlan(ann.user_id, Where(guild, general), channel_mentions=(hidden,)),
        TurnPlan(bo.user_id, Where(guild, other), bypass=False),
    )
    problems = play(Scenario(world, turns), dynamodb)

    # Then bo does not read the private channel's name in them
    assert problems == []


def test_forget_all_erases_the_server_memories_about_someone_and_unlinks_those_they_only_saved(dynamodb):
    # Given two server memories ann saved: one that writes {user} for her, one that does not
    guild, general = "200000000000000000", "300000000000000000"
    ann, bo = (
        User(f"40000000000000000{n}", name, f"50000000000000000{n}", frozenset({guild}))
        for n, name in enumerate(("ann", "bo"))
    )
    world = World(
        guilds=(Guild(guild, VIEW_CHANNEL_BIT),), channels=(Channel(general, guild),), users=(ann, bo)
    )
    here = Where(guild, general)
    turns = (
        TurnPlan(ann.user_id, here, server_memory=True, names_speaker=True),
        TurnPlan(ann.user_id, here, server_memory=True),
        # When she forgets everything, then tries to rewrite the one she saved
        TurnPlan(ann.user_id, here, forget_all=True, revise=0),
        TurnPlan(bo.user_id, here),
    )
    problems = play(Scenario(world, turns), dynamodb)

    # Then the one about her is recalled no more, the other still is, and she can no longer change it
    assert not problems, "\n".join(problems)


# -- playing a scenario ------------------------------------------------------------------------------


@pytest.fixture
def dynamodb(aws):
    """One client for every example of a test: a client per example would load botocore's models again.
    moto runs as the memory bench runs it (``faster_moto``: the same answers, checked in
    tests/unit/test_memory_bench.py), without a deep copy of the table per transaction, a third of
    these tests' time."""
    with faster_moto():
        yield make_client()


def play(
    scenario: Scenario,
    client,
    oracle: Oracle | None = None,
    settings: Settings = SETTINGS,
    embedder: Embedder | None = None,
    why_viewers: bool = False,
    history_viewers: bool = False,
) -> list[str]:
    """Run every turn of ``scenario`` on a fresh table (moto already running); the problems found, one
    line each (see the module's docstring). With a recall budget too small for every memory, a memory
    the turn may see must be shown or counted in the recall's "left out" note (LOST), the recall must
    stay in its budget (OVER), and the model searches the rest whenever it is offered the search."""
    budgeted = settings.LTM_RECALL_BUDGET_CHARS < SETTINGS.LTM_RECALL_BUDGET_CHARS
    world = scenario.world
    oracle = oracle or Oracle(world)
    problems: list[str] = []
    written: list[Written] = []
    with fresh_table(client) as table:
        _configure(ConfigStore(table), world)
        discord, model = FakeDiscord(world), TokenWritingModel()
        clock = _Clock()
        service = replace(_service(table, discord, model, clock, settings), embedder=embedder)
        new_token = _tokens()
        replies: list[tuple[int, TurnPlan, str]] = []
        aged: set[str] = set()
        for number, plan in enumerate(scenario.turns):
            now = clock.tick()
            if plan.day_passes:  # for the memories only: the short-term rows' freshness stays
                written = [_after_expiry(table, world, w, now) for w in written]
                if why_viewers:
                    aged |= _records_pass(table, world, replies, now)
            speaker = world.user(plan.speaker)
            if plan.bypass is not None and plan.where.guild_id:
                _switch_bypass(ConfigStore(table), plan.where.guild_id, plan.bypass)
                oracle.bypass[plan.where.guild_id] = plan.bypass
            if plan.forget_all:
                forget_all(
                    speaker.user_id,
                    service.ltm_store,
                    service.stm_store,
                    ledger=TurnLedger(table),
                    now=now - timedelta(seconds=30),  # just before the message
                )
                written = [_after_forget_all(w, speaker.user_id) for w in written]
            if plan.by_hand is not None and (plan.where.guild_id or plan.by_hand is not Hand.SERVER):
                kind = Kind.SERVER_MEMORY if plan.by_hand is Hand.SERVER else Kind.PERSONAL_MEMORY
                by_hand, problem = _add_by_hand(plan, number, service, table, oracle, new_token(kind), now)
                written += by_hand
                problems += problem
            said = new_token(Kind.MESSAGE)
            mention = world.user(plan.mention) if plan.mention else None
            content = f"news {said}" + (f" for <@{mention.user_id}>" if mention else "")
            content += "".join(f" in <#{channel_id}>" for channel_id in plan.channel_mentions)
            message = discord.user_says(
                speaker, plan.where, content, now, mention=mention, group_dm=plan.group_dm
            )
            if plan.group_dm:
                _count("a turn in a group DM")
                problems += _check_group_dm(service, model, message, number, speaker.name, said)
                continue
            revised = _memory_to_revise(plan, written)
            repeated = _memories_to_repeat(plan, written)
            if plan.make_private and plan.where.guild_id:
                _count("a channel made private after a save")
                _make_private(ConfigStore(table), oracle, plan.where.guild_id, repeated)
            planned = _tool_calls(
                plan,
                new_token,
                revised,
                LONG_FACTS[number % len(LONG_FACTS)] if budgeted else "",
                repeated,
                speaker_name=speaker.name,
            )
            model.plan(
                [(call.name, call.arguments) for call in planned] + ([SEARCH_EVERYTHING] if budgeted else [])
            )
            queued = bursts.queue_later(discord, table, world, plan, speaker, now, new_token)
            covered = bursts.expected_covered(world, plan, queued, room=HISTORY_LIMIT - 1)
            discord.fetched.clear()
            first_request = len(model.requests)

            job = bursts.relayed(message, _cue(plan.persona), world)
            record = service.run(job)
            if plan.persona:
                _count("a turn of an alter persona")
            if covered:
                _count("a turn covering later messages")

            assert not record.apologised and not record.duplicate, f"turn {number} did not complete"
            shown = bursts.shown_dialogue(message, discord.fetched, covered, HISTORY_LIMIT)
            probe = Probe(
                plan.where, speaker.user_id, _taking_part(plan, shown), plan.persona_id, plan.lineage
            )
            # What the model itself wrote in its tool calls is not what it was shown.
            seen = tokens_in(
                [[m for m in r.messages if "tool_calls" not in m] for r in model.requests[first_request:]]
            )
            problems += _check(oracle, probe, number, seen, tokens_in(shown), written, world, budgeted)
            problems += _check_names(oracle, plan, number, model.requests[first_request:])
            if queued:
                problems += bursts.check(
                    service, table, world, job, queued, covered, seen, lambda: len(model.requests), number
                )
            if budgeted:
                recalled = _recall_message(model.requests[first_request].messages)
                problems += _check_budget(oracle, probe, number, recalled, written, settings)

            results = {
                id(arguments): result
                for (_, arguments), (_, result) in zip(model.made, record.tool_results, strict=True)
            }
            voice = {"persona": plan.persona_id, "lineage": plan.lineage}
            written.append(Written(said, Kind.MESSAGE, plan.where, speaker.user_id, **voice))
            written += bursts.written_of(plan, queued, covered)
            private_now = oracle.private(plan.where) if plan.where.guild_id else None
            for call in planned:
                result = results.get(id(call.arguments))
                done = result is not None and result.ok
                text = call.arguments.get("memory_content") if call.kind in MEMORY_KINDS else None
                if call.revises is None:
                    if call.token:
                        pending = result is not None and result.status == SaveStatus.PENDING_REVIEW
                        done = done or pending  # kept, but recalled nowhere until approved
                        if pending:
                            _count("a memory awaiting review")
                        memory_id = result.data.get("memory_id") if done and result else None
                        new = Written(
                            call.token,
                            call.kind,
                            plan.where,
                            speaker.user_id,
                            call.subject,
                            stored=done,
                            memory_id=memory_id,
                            pending=pending,
                            text=text,
                            private_then=private_now,
                            expires_at=now + timedelta(days=1)
                            if plan.expiring and call.kind in MEMORY_KINDS
                            else None,
                            **voice,
                        )
                        if done and new.pending != oracle.waits_for_review(
                            call.kind, plan.where, speaker.user_id
                        ):
                            problems.append(
                                f"REVIEWED at turn {number}: {_origin(oracle, new)} pending={new.pending}"
                            )
                        if done and "already remembered as memory" in str(result.data.get("message")):
                            problems += _check_refusal(oracle, number, new, written)
                            continue
                        written.append(new)
                    continue
                target = call.revises
                if result is not None and result.status == UpdateStatus.DUPLICATE:
                    would_be = replace(
                        target,
                        token=call.token or "",
                        where=plan.where,
                        author_id=speaker.user_id,
                        subject_id=call.subject,
                        memory_id=None,
                        private_then=private_now,
                    )
                    where = oracle.rewritten_at(target, would_be)
                    if where == target.where:
                        would_be = replace(would_be, where=where, private_then=target.private_then)
                    problems += _check_refusal(
                        oracle, number, replace(would_be, memory_id=result.data.get("memory_id")), written
                    )
                if done and not oracle.may_change(target, probe):
                    problems.append(
                        f"TAMPERED at turn {number}: {speaker.name} in {_place(oracle, plan.where)} "
                        f"changed {_origin(oracle, target)}"
                    )
                if done:
                    written[written.index(target)] = replace(target, stored=False, gone=True)
                if call.token:
                    rewritten = replace(
                        target,
                        token=call.token,
                        where=plan.where,
                        author_id=speaker.user_id,
                        subject_id=call.subject,
                        stored=done,
                        text=text,
                        private_then=private_now,
                    )
                    where = oracle.rewritten_at(target, rewritten)
                    if where == target.where and where != plan.where:
                        rewritten = replace(rewritten, private_then=target.private_then)
                    written.append(replace(rewritten, where=where))
            if why_viewers:
                # this reply and the last few before it: their memories forgotten, rewritten or
                # made private since, the bypass switched since, must not show
                replies.append((number, plan, record.reply_ids[0]))
                for asked in replies[-WHY_REPLIES_ASKED:]:
                    problems += _check_why(table, service, oracle, world, asked, written, aged)
                if plan.day_passes or number == len(scenario.turns) - 1:
                    problems += _check_lists(table, service, world, number, written)
        if history_viewers:
            problems += _check_history(ConfigStore(table), service.ltm_store, oracle, world, written)
    return problems


def _check_history(
    configs: ConfigStore, store: DynamoMemoryStore, oracle: Oracle, world: World, written: list[Written]
) -> list[str]:
    """Everyone, from everywhere they can talk to the bot, asks for the history of every memory,
    and to edit it (``/personal memories history|edit``; a manager's ``/server memories history``):
    every earlier text shown must be one they may read there: their own memory's (as their list
    shows them), or a server memory's that a turn of theirs there could be shown, the bypass aside
    (HISTORY_LEAK); an edit only of a memory about them, or about nobody that they wrote, that they
    may read there (EDIT_ALLOWED)."""
    problems: list[str] = []
    memories = {
        w.memory_id: w
        for w in written
        if w.kind in (Kind.SERVER_MEMORY, Kind.PERSONAL_MEMORY) and w.memory_id
    }
    earlier = {w.token: w for w in written if w.kind in (Kind.SERVER_MEMORY, Kind.PERSONAL_MEMORY) and w.gone}
    for user, where in ((u, w) for u in world.users for w in world.places_of(u)):
        place = Place(where.guild_id, where.channel_id, where.parent_id)
        policy = configs.get_server_config(where.guild_id).privacy if where.guild_id else PrivacyPolicy(None)
        for memory_id in memories:
            shown: list[Memory] = []
            with suppress(MemoryNotFound):
                shown.append(memory_edits.history_for_person(user.user_id, memory_id, place, policy, store))
            managed = store.find(ScopeKind.SERVER, where.guild_id, memory_id) if where.guild_id else None
            if managed and text_shown_to_manager(managed, place, policy, sees_every_channel=False):
                shown.append(managed)
            for memory in shown:
                _count("a history shown" if memory.history else "a history asked for")
                for token in tokens_in([version.content for version in memory.history]):
                    old = earlier.get(token)
                    probe = Probe(
                        where, user.user_id, frozenset({user.user_id}), lineage=memory.scope.lineage
                    )
                    own = memory.scope.kind is ScopeKind.PERSONAL and memory.scope.owner_id == user.user_id
                    readable = old is not None and oracle.may_show(
                        replace(old, pending=False), probe, bypass=False
                    )
                    if not (own or readable):
                        problems.append(
                            f"HISTORY_LEAK: {user.name} in {_place(oracle, where)} was shown {token} "
                            f"in the history of #{memory_id}"
                        )
            try:
                editable = memory_edits.editable_by_person(user.user_id, memory_id, place, policy, store)
            except MemoryNotFound:
                continue
            about = editable.about
            may = about == user.user_id or (about is None and editable.author_id == user.user_id)
            if editable.scope.kind is ScopeKind.SERVER:
                current = next(
                    w
                    for w in reversed(written)
                    if w.kind is Kind.SERVER_MEMORY
                    and w.memory_id == memory_id
                    and w.where.guild_id == editable.scope.owner_id
                )
                probe = Probe(where, user.user_id, frozenset({user.user_id}), lineage=current.lineage)
                # one awaiting review too: their list shows it to them, as a manager's review does
                may = may and oracle.may_show(replace(current, pending=False), probe, bypass=False)
            if not may:
                problems.append(
                    f"EDIT_ALLOWED: {user.name} in {_place(oracle, where)} may edit #{memory_id} "
                    f"({editable.scope.kind} about {editable.about} by {editable.author_id}, from "
                    f"{editable.origin})"
                )
    return problems


def _check_why(
    table: KiokuTable,
    service: TurnService,
    oracle: Oracle,
    world: World,
    asked: tuple[int, TurnPlan, str],
    written: list[Written],
    aged: set[str],
) -> list[str]:
    """ "Why this answer?" on the turn's reply, asked by everyone who could ask where it was posted
    (the speaker alone in a DM): every token it shows one a turn of theirs there could be shown
    (WHY_LEAK), never one forgotten or rewritten since (WHY_STALE), and no memory of the turn that
    a turn of theirs there, of the persona that answered, could be shown called unseen
    (WHY_HIDDEN: an alter persona's reply read with the main persona's lineage)."""
    number, plan, reply_id = asked
    where = plan.where
    viewers = (
        [world.user(plan.speaker)]
        if where.guild_id is None
        else [user for user in world.users if where.guild_id in user.guild_ids]
    )
    place = Place(where.guild_id, where.channel_id, where.parent_id)
    problems = []
    for viewer in viewers:
        # asked at the world's time: a memory that expires is judged by it, as a deployed asker's
        # clock judges it
        with mock.patch("kioku.clock.now", table.clock):
            answered = why_this_answer(
                reply_id,
                viewer.user_id,
                place,
                traces=TurnLedger(table).traces,
                config_store=ConfigStore(table),
                ltm_store=service.ltm_store,
                stm_store=service.stm_store,
            )
        if reply_id in aged:
            _count("Why this answer? on a reply whose record is past its time")
            if answered is not None:
                problems.append(f"WHY_EXPIRED on the reply of turn {number}: its record is past its time")
            continue
        if answered is None:
            problems.append(f"WHY_MISSING at turn {number}: no trace of its reply")
            continue
        _count("Why this answer? shows a memory" if answered.explanation.memories else "Why this answer?")
        # a turn of theirs there, with the persona that answered (an alter persona's reply reads its lineage)
        probe = Probe(where, viewer.user_id, frozenset({viewer.user_id}), plan.persona_id, plan.lineage)
        shown = tokens_in([line.memory.content for line in answered.explanation.memories if line.memory])
        live = {w.token for w in written if w.stored and not w.gone and oracle.may_show(w, probe)}
        told = [
            used
            for used in answered.trace.memories
            if used.kind is ScopeKind.SERVER or used.owner_id == viewer.user_id
        ]
        for used, line in zip(told, answered.explanation.memories, strict=True):
            kind = Kind.SERVER_MEMORY if used.kind is ScopeKind.SERVER else Kind.PERSONAL_MEMORY
            now_kept = [
                w
                for w in written
                if w.kind is kind
                and w.memory_id == used.memory_id
                and w.stored
                and not w.gone
                and (kind is Kind.SERVER_MEMORY or used.owner_id in (w.subject_id or w.author_id,))
            ]
            if line.visibility is Visibility.UNSEEN and any(oracle.may_show(w, probe) for w in now_kept):
                problems.append(
                    f"WHY_HIDDEN on the reply of turn {number} ({plan.persona_id}): {viewer.name} in "
                    f"{_place(oracle, where)} was told #{used.memory_id} is from a channel they can't see"
                )
        for token in shown - live:
            gone = any(w.token == token and w.gone for w in written)
            problems.append(
                f"{'WHY_STALE' if gone else 'WHY_LEAK'} on the reply of turn {number}: {viewer.name} "
                f"in {_place(oracle, where)} was shown {token}"
            )
    return problems


def _records_pass(
    table: KiokuTable, world: World, replies: list[tuple[int, TurnPlan, str]], now: datetime
) -> set[str]:
    """A day passes, and with it the 16 days of some turns' records (issue 37.2): of each reply not
    yet aged, by its turn's number, the pointer from the reply to its turn passes, or the turn's
    record and its shown notes do, or nothing does (a record still in its time). DynamoDB keeps them
    until its TTL deletes them: still in the table, past their ``expires_at``. The replies whose
    "Why this answer?" must now say it keeps no record."""
    passed = int((now - timedelta(seconds=1)).timestamp())
    aged = set()
    for number, _, reply_id in replies:
        pointer = table.get(reply_key(reply_id))
        if pointer is None or number % 3 == 2:
            continue
        source, turn_id = str(pointer["source"]), str(pointer["turn_id"])
        keys = [reply_key(reply_id)] if number % 3 == 0 else [turn_record_key(source, turn_id)]
        if number % 3 == 1:
            keys += [shown_note_key(user.user_id, source, turn_id) for user in world.users]
        for key in keys:
            if table.get(key) is not None:
                table.update(key, "SET expires_at = :passed", values={":passed": passed})
        _count("a turn's record past its time")
        aged.add(reply_id)
    return aged


def _check_lists(
    table: KiokuTable, service: TurnService, world: World, number: int, written: list[Written]
) -> list[str]:
    """Each person's ``memory_id`` autocomplete choices and export, read at the world's time: the
    choices offer exactly the memories kept about them, none expired (CHOICE_LEAK, CHOICE_MISSING);
    the export holds no memory but those (EXPORT_LEAK), and counts exactly the notes of turns shown
    their memories still in their time (EXPORT_NOTES)."""
    problems = []
    now = table.clock()
    context = SimpleNamespace(ltm_store=service.ltm_store, clock=table.clock)
    for user in world.users:
        theirs = [
            w
            for w in written
            if w.stored
            and not w.gone
            and w.memory_id
            and (
                (w.kind is Kind.PERSONAL_MEMORY and (w.subject_id or w.author_id) == user.user_id)
                or (w.kind is Kind.SERVER_MEMORY and w.subject_id == user.user_id)  # names them
            )
        ]
        typing = slash_command(BOT_ID, "personal", "memories forget", {"memory_id": 1}, user_id=user.user_id)
        interaction = parse_interaction(autocomplete_typing(typing, "memory_id", ""))
        offered = personal_memories.memory_choices(interaction, context)  # type: ignore[arg-type]
        _count("memory_id choices offered" if offered else "memory_id choices asked for")
        kept = {w.memory_id for w in theirs}
        for choice in offered:
            if str(choice["value"]) not in kept or tokens_in([choice["name"]]) - {w.token for w in theirs}:
                problems.append(f"CHOICE_LEAK after turn {number}: {user.name} was offered {choice}")
        if len(kept) <= len(offered) or not offered:
            missing = kept - {str(choice["value"]) for choice in offered}
            problems += [f"CHOICE_MISSING after turn {number}: {user.name} not offered #{m}" for m in missing]
        exported = memory_control.export(
            user.user_id,
            service.ltm_store,
            service.stm_store,
            now,
            place=Place(None, user.dm_channel_id),
            ledger=TurnLedger(table),
        )
        personal_tokens = {w.token for w in written if w.kind is Kind.PERSONAL_MEMORY}
        # each memory's text now (its earlier texts, in its history, are the person's own to export)
        listed = tokens_in([m["text"] for m in exported["long_term_memories"]]) & personal_tokens
        for token in listed - {w.token for w in theirs}:
            origin = [w for w in written if w.token == token]
            problems.append(f"EXPORT_LEAK after turn {number}: {user.name}'s export holds {token}: {origin}")
        counted = len(exported["turns_shown_your_memories"]) + exported["turns_shown_your_memories_elsewhere"]
        if counted != _notes_in_their_time(table, user.user_id, now):
            problems.append(f"EXPORT_NOTES after turn {number}: {user.name}'s export counts {counted} turns")
    return problems


def _notes_in_their_time(table: KiokuTable, user_id: str, now: datetime) -> int:
    """The notes of turns shown ``user_id``'s memories, read past the adapter: those in their time."""
    response = table.client.query(
        TableName=table.name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :shown)",
        ExpressionAttributeValues={":pk": {"S": user_pk(user_id)}, ":shown": {"S": SHOWN_NOTE_PREFIX}},
        ConsistentRead=True,
    )
    items = [from_wire(item) or {} for item in response["Items"]]
    return sum(int(item["expires_at"]) > now.timestamp() for item in items)


def _count(label: str) -> None:
    """Count ``label`` in a property's statistics (a plain test playing a scenario keeps none)."""
    if currently_in_test_context():
        event(label)


def _add_by_hand(
    plan: TurnPlan,
    number: int,
    service: TurnService,
    table: KiokuTable,
    oracle: Oracle,
    token: str,
    now: datetime,
) -> tuple[list[Written], list[str]]:
    """The speaker writes a memory by hand where they are, through the worker's path (the endpoint's
    checks are the e2e tests'): what it wrote, and a problem if its review status is wrong."""
    speaker = oracle.world.user(plan.speaker)
    personal = plan.by_hand is not Hand.SERVER
    lineage = GLOBAL_LINEAGE if plan.by_hand is Hand.EVERY_PERSONA else MAIN_LINEAGE
    manages = plan.where.guild_id is not None and oracle.manages(speaker.user_id, plan.where.guild_id)
    text = f"Fact {token} written by hand"
    discord = service.discord
    job = TurnJob(
        source=TurnSource.MEMORY,
        turn_id=discord._new_id(now),
        channel_id=plan.where.channel_id,
        guild_id=plan.where.guild_id,
        author=parse_user(speaker.as_discord()),
        content=text,
        interaction_token="hand-token",
        application_id=BOT_ID,
        memory=MemoryRequest(personal, lineage, manages_server=manages),
    )
    config_of = ConfigStore(table).get_server_config
    writing = HandWriting(service.settings, discord, GuildDirectory(discord), service.ltm_store, config_of)
    result = save_by_hand(job, writing, now)
    _count(f"a memory written by hand ({plan.by_hand})")
    pending = result.status == SaveStatus.PENDING_REVIEW
    done = result.ok or pending
    kind = Kind.PERSONAL_MEMORY if personal else Kind.SERVER_MEMORY
    new = Written(
        token,
        kind,
        plan.where,
        speaker.user_id,
        speaker.user_id if personal else None,
        stored=done,
        memory_id=result.data.get("memory_id") if done else None,
        pending=pending,
        text=text,
        private_then=oracle.private(plan.where) if plan.where.guild_id else None,
        lineage=lineage,
    )
    problems = []
    if done and pending != oracle.waits_for_review(kind, plan.where, speaker.user_id):
        problems.append(f"REVIEWED at turn {number}: by hand {_origin(oracle, new)} pending={pending}")
    return [new], problems


def _service(
    table: KiokuTable,
    discord: FakeDiscord,
    model: TokenWritingModel,
    clock: _Clock,
    settings: Settings = SETTINGS,
) -> TurnService:
    table.clock = clock  # what the table keeps for a while expires by the world's time
    stm_store = StmStore(table)
    ltm_store = DynamoMemoryStore(table, layout=TinyBooks(server_limit=6, personal_limit=6))
    return TurnService(
        settings=settings,
        discord=discord,
        model=model,
        stm_store=stm_store,
        ltm_store=ltm_store,
        turns=TurnRepository(table, stm_store, ltm_store),
        directory=GuildDirectory(discord),
        clock=clock,
        webhooks=PersonaWebhooks(discord, WebhookStore(table)),
    )


@dataclass(frozen=True, slots=True)
class TinyBooks(BookLayout):
    """Two memories a book shard, three shards a scope: every world spreads its memories over
    several shards, so recall must read, and filter, each of them."""

    @property
    def capacity(self) -> int:
        return 2


@contextmanager
def fresh_table(client) -> Iterator[KiokuTable]:
    """An empty table for one example, dropped after it (moto copies every table in each transaction)."""
    create_table(client, TEMPLATE, TABLE_NAME)
    try:
        yield KiokuTable(TABLE_NAME, client=client)
    finally:
        client.delete_table(TableName=TABLE_NAME)


def _check(
    oracle: Oracle,
    probe: Probe,
    number: int,
    seen: set[str],
    dialogue: set[str],
    written: list[Written],
    world: World,
    budgeted: bool = False,
) -> list[str]:
    problems = []
    newest_summaries = {w.row: w.token for w in written if w.kind is Kind.SUMMARY and w.stored}
    where = f"turn {number}: {_person(world, probe.speaker)} in {_place(oracle, probe.where)}"
    # A memory saved again word for word, as a memory of its own, holds the same token as the first.
    shown_elsewhere = {w.token for w in written if w.stored and not w.gone and oracle.may_show(w, probe)}
    for w in written:
        if w.token in shown_elsewhere:
            pass
        elif w.token in seen and w.token not in dialogue and w.gone:
            problems.append(f"STALE at {where} saw {_origin(oracle, w)}, forgotten or rewritten since")
        elif w.token in seen and w.token not in dialogue and not oracle.may_show(w, probe):
            problems.append(f"LEAK at {where} saw {_origin(oracle, w)}")
        newest = newest_summaries.get(w.row) == w.token
        if budgeted and w.kind in MEMORY_KINDS:
            continue  # a memory may be left out by the budget: _check_budget counts those
        if w.token not in seen and oracle.must_show(w, probe, newest_summary=newest):
            problems.append(f"MISSING at {where} did not see {_origin(oracle, w)}")
    return problems


def _check_group_dm(
    service: TurnService, model: TokenWritingModel, message: dict[str, Any], number: int, name: str, said: str
) -> list[str]:
    """A message in a group DM is not answered (GROUP_DM): were it queued as the relay would, it
    would be answered as its speaker's DM, their DM memory read out to the group."""
    if not decide_turn(
        parse_message_object(message), bot_user_id=BOT_ID, config=ServerConfig(guild_id=None)
    ).answer:
        return []
    model.plan([])
    first_request = len(model.requests)
    service.run(relayed(message))
    shown = sorted(tokens_in([r.messages for r in model.requests[first_request:]]) - {said})
    return [f"GROUP_DM at turn {number}: {name}'s message in a group DM was answered, showing {shown}"]


def _check_names(oracle: Oracle, plan: TurnPlan, number: int, requests: list[ChatRequest]) -> list[str]:
    """No channel's name reaches a turn where its memory could not be shown (NAMED); a mention of a
    channel whose name the turn may read is read as that name (UNNAMED)."""
    world = oracle.world
    named = channels_named_in([request.messages for request in requests], world)
    where = f"turn {number}: {_person(world, plan.speaker)} in {_place(oracle, plan.where)}"
    problems = [
        f"NAMED at {where} read the name of {_place(oracle, oracle.where_is(channel_id))}"
        for channel_id in sorted(named)
        if not oracle.may_name(channel_id, plan.where)
    ]
    problems += [
        f"UNNAMED at {where}: its mention of {_place(oracle, oracle.where_is(mentioned))}"
        for mentioned in plan.channel_mentions
        if mentioned not in named and oracle.must_name(mentioned, plan.where)
    ]
    return problems


def play_race(race: ForgetRace, client) -> list[str]:
    """Play ``race`` on a fresh table; what the forget-all should have reached and did not."""
    world, plan, forgetter = race.world, race.turn, race.forgetter
    problems: list[str] = []
    with fresh_table(client) as table:
        _configure(ConfigStore(table), world)
        discord, model = FakeDiscord(world), TokenWritingModel()
        clock = _Clock()
        service = _service(table, discord, model, clock)
        new_token = _tokens()
        for earlier in race.before:
            now = clock.tick()
            message = discord.user_says(
                world.user(earlier.speaker), earlier.where, f"news {new_token(Kind.MESSAGE)}", now
            )
            model.plan([(call.name, call.arguments) for call in _tool_calls(earlier, new_token, None)])
            service.run(relayed(message))

        now = clock.tick()
        message = discord.user_says(
            world.user(plan.speaker), plan.where, f"news {new_token(Kind.MESSAGE)}", now
        )
        planned = _tool_calls(plan, new_token, None)
        model.plan([(call.name, call.arguments) for call in planned])
        job = relayed(message)
        if race.race is Race.UNFINISHED:
            discord.refusing_posts = True
            with pytest.raises(DiscordError):
                service.run(job)
            discord.refusing_posts = False
        forget_all(
            forgetter, service.ltm_store, service.stm_store, ledger=TurnLedger(table), now=clock.tick()
        )
        posted_before = {m["id"] for messages in discord.messages.values() for m in messages}
        record = service.run(job, redelivered=race.race is Race.UNFINISHED)

        covered = {
            call.token
            for call in planned
            if call.token
            and call.kind in (Kind.SERVER_MEMORY, Kind.PERSONAL_MEMORY)
            and (
                (call.subject == forgetter and call.kind is Kind.PERSONAL_MEMORY) or plan.speaker == forgetter
            )
        }
        if record.apologised or service.run(job, redelivered=True).duplicate is not True:
            problems.append("UNDONE: the raced turn did not end recorded as done")
        if race.race is Race.QUEUED:
            results = {
                id(arguments): result
                for (_, arguments), (_, result) in zip(model.made, record.tool_results, strict=True)
            }
            for call in planned:
                result = results.get(id(call.arguments))
                if call.token in covered and result is not None and result.ok:
                    problems.append(f"CLAIMED: {call.name} answered {result.status} for {call.token}")
        about = service.ltm_store.memories_of(ScopeKind.PERSONAL, forgetter)
        if about:
            problems.append(f"KEPT: memories about the forgetter: {[m.content for m in about]}")
        items, _ = table.query(
            "#pk = :pk", names={"#pk": "pk"}, values={":pk": f"USER#{forgetter}"}, consistent=True
        )
        for item in items:
            if item["sk"].startswith(("OUTBOX#", "STMLINES#")):
                problems.append(f"KEPT: {item['sk']} in the forgetter's partition")
        if service.stm_store.dm_rows_of(forgetter):
            problems.append("KEPT: the forgetter's DM short-term memory")
        for row in bursts.stm_rows(table):
            lines = [line.text for line in row.crude if line.user_id == forgetter]
            if lines:
                problems.append(f"KEPT: the forgetter's lines {lines} in row of {row.channel_id}")
        for messages in discord.messages.values():
            for posted in messages:
                if posted["id"] not in posted_before and tokens_in(posted) & covered:
                    problems.append(f"POSTED after the forget-all: {sorted(tokens_in(posted) & covered)}")
    return problems


def _recall_message(messages: list[dict[str, Any]]) -> str:
    return next(
        (m["content"] for m in messages if str(m.get("content", "")).startswith("Long-term memories:")), ""
    )


def _check_budget(
    oracle: Oracle, probe: Probe, number: int, recalled: str, written: list[Written], settings: Settings
) -> list[str]:
    may_see = {
        w.token
        for w in written
        if w.kind in MEMORY_KINDS and oracle.must_show(w, probe, newest_summary=False)
    }
    left_out = LEFT_OUT.search(recalled)
    counted = len(may_see & tokens_in(recalled)) + (int(left_out.group(1)) if left_out else 0)
    problems = []
    if counted != len(may_see):
        problems.append(f"LOST at turn {number}: {counted} memories shown or left out of {len(may_see)}")
    if len(recalled) > settings.LTM_RECALL_BUDGET_CHARS:
        problems.append(f"OVER at turn {number}: {len(recalled)} characters of recall")
    return problems


def _after_forget_all(written: Written, user_id: str) -> Written:
    """What forget-all leaves of ``written``: it erases memories about the person (server memories that
    name them too), the lines they wrote anywhere, and everything of their DM's short-term memory; a
    server memory they only saved, or a personal memory they saved about someone else, stays, linked
    to nobody (so they can no longer change it: TAMPERED). The summaries of servers' rows stay
    (docs/privacy.md)."""
    if written.kind in (Kind.PERSONAL_MEMORY, Kind.SERVER_MEMORY) and written.subject_id == user_id:
        return replace(written, stored=False, gone=True)
    if written.kind in (Kind.PERSONAL_MEMORY, Kind.SERVER_MEMORY) and written.author_id == user_id:
        return replace(written, author_id="")
    if written.kind is Kind.MESSAGE and written.author_id == user_id:
        return replace(written, stored=False, gone=True)
    if written.kind is Kind.SUMMARY and written.where.guild_id is None and written.author_id == user_id:
        return replace(written, stored=False, gone=True)
    return written


def _check_refusal(oracle: Oracle, number: int, new: Written, written: list[Written]) -> list[str]:
    """A save or rewrite answered "already remembered as #id" (or "#id already says this") must
    have been refused by a memory kept, not awaiting review, shown wherever the new one would be."""
    existing = next(
        (
            w
            for w in written
            if w.memory_id == new.memory_id
            and w.kind is new.kind
            and w.stored
            and not w.gone
            and (new.kind is Kind.SERVER_MEMORY or w.subject_id == new.subject_id)
        ),
        None,
    )
    if existing is not None and oracle.may_refuse(existing, new):
        return []
    seen_as = (
        _origin(oracle, existing) + (" (awaiting review)" if existing.pending else "") if existing else "?"
    )
    return [f"CONFIRMED at turn {number}: {_origin(oracle, new)} refused as a duplicate of {seen_as}"]


def _memories_to_repeat(plan: TurnPlan, written: list[Written]) -> dict[Kind, Written]:
    """The earlier memory of each kind whose words ``plan``'s saves repeat (a personal one about
    anyone: the save is then about that person)."""
    if plan.repeat is None:
        return {}
    repeated = {}
    for kind in MEMORY_KINDS:
        pool = [w for w in written if w.kind is kind and w.text and w.memory_id]
        if pool:
            repeated[kind] = pool[plan.repeat % len(pool)]
    return repeated


def _make_private(store: ConfigStore, oracle: Oracle, guild_id: str, repeated: dict[Kind, Written]) -> None:
    """What ``/server privacy channel channel:<#…> mode:private`` stores, for the channel a repeated
    memory of this guild was said in (a thread's channel)."""
    for w in repeated.values():
        if w.where.guild_id == guild_id:
            channel_id = w.where.parent_id or w.where.channel_id
            config = store.get_server_config(guild_id)
            overrides = {**config.channel_privacy, channel_id: PrivacyMode.PRIVATE}
            store.save_server_config(replace(config, channel_privacy=overrides))
            oracle.overrides[guild_id][channel_id] = PrivacyMode.PRIVATE
            return


def _memory_to_revise(plan: TurnPlan, written: list[Written]) -> Written | None:
    """The memory ``plan`` rewrites or forgets: for an even ``revise``, one the speaker wrote or is
    the subject of, if any (most attempts should be allowed somewhere); else any memory kept."""
    if plan.revise is None:
        return None
    kept = [w for w in written if w.memory_id and w.stored and not w.gone]
    own = [w for w in kept if plan.speaker in (w.author_id, w.subject_id)]
    pool = own if plan.revise % 2 == 0 and own else kept
    return pool[plan.revise % len(pool)] if pool else None


@dataclass(frozen=True)
class _Call:
    """A tool call the model makes, with the token it writes (None: it forgets), its kind, its
    subject, and the memory it rewrites or forgets."""

    name: str
    arguments: dict[str, Any]
    token: str | None
    kind: Kind
    subject: str | None = None
    revises: Written | None = None


def _tool_calls(
    plan: TurnPlan,
    new_token: Callable[[Kind], str],
    revised: Written | None,
    filler: str = "",
    repeated: dict[Kind, Written] | None = None,
    speaker_name: str | None = None,
) -> list[_Call]:
    calls = []
    repeated = repeated or {}
    if plan.summary:
        token = new_token(Kind.SUMMARY)
        calls.append(_Call(STM_TOOL, {SUMMARY_FIELD: f"Notes {token}"}, token, Kind.SUMMARY))
    if plan.server_memory:
        again = repeated.get(Kind.SERVER_MEMORY)
        token = again.token if again else new_token(Kind.SERVER_MEMORY)
        content = again.text if again and again.text else _server_fact(plan, token, filler)
        arguments = {"memory_content": content, "memory_scope": "server_wide", **_expiry(plan)}
        subject = plan.speaker if "{user}" in content else None
        calls.append(_Call(CREATE_TOOL_NAME, arguments, token, Kind.SERVER_MEMORY, subject))
    if plan.personal_about:
        again = repeated.get(Kind.PERSONAL_MEMORY)
        about = again.subject_id if again and again.subject_id else plan.personal_about
        token = again.token if again else new_token(Kind.PERSONAL_MEMORY)
        arguments = {
            "memory_content": again.text if again and again.text else f"Fact {token}{filler}",
            "memory_scope": "target_user",
            "target_user": f"<@{about}>",
            **_expiry(plan),
        }
        if plan.persona is not None and about == plan.speaker and speaker_name:
            # to an alter persona, the speaker is named by their username, which the persona's
            # nickname for someone else collides with (``_configure``): their own name must win
            arguments["target_user"] = speaker_name
        calls.append(_Call(CREATE_TOOL_NAME, arguments, token, Kind.PERSONAL_MEMORY, about))
    if revised is not None and revised.memory_id:
        again = repeated.get(revised.kind)
        token = None if plan.forget else (again.token if again else new_token(revised.kind))
        content, subject = f"Fact {token}{filler}", revised.subject_id
        if (
            again
            and again.text
            and token
            and (revised.kind is Kind.SERVER_MEMORY or again.subject_id == subject)
        ):
            content = again.text
        if revised.kind is Kind.PERSONAL_MEMORY:
            arguments = {"target_user": f"<@{revised.subject_id}>"}
        else:
            arguments = {}
            content = content if again and content == again.text else _server_fact(plan, token, filler)
            subject = plan.speaker if "{user}" in content else subject
        arguments |= {"memory_id": int(revised.memory_id), "memory_content": content if token else ""}
        calls.append(_Call(UPDATE_TOOL_NAME, arguments, token, revised.kind, subject, revised))
    return calls


def _expiry(plan: TurnPlan) -> dict[str, int]:
    """The model saves a memory of a plan expiring the next day: a day passing takes it away."""
    if plan.expiring:
        _count("a memory saved with an expiry")
        return {"expires_in_days": 1}
    return {}


def _after_expiry(table: KiokuTable, world: World, written: Written, now: datetime) -> Written:
    """A day passes for a memory saved expiring: its expiry is moved to just before ``now`` (as
    if the day had passed, leaving the rest of the world's clock alone), and it is gone: a turn
    shown it after that sees a forgotten memory (STALE)."""
    if written.expires_at is None or not written.stored or written.gone or not written.memory_id:
        return written
    kind = ScopeKind.SERVER if written.kind is Kind.SERVER_MEMORY else ScopeKind.PERSONAL
    owner = written.where.guild_id if kind is ScopeKind.SERVER else written.subject_id
    key = memory_key(kind, owner or "", written.memory_id)
    item = table.get(key)
    if item is None:
        return written
    passed = int((now - timedelta(seconds=1)).timestamp())
    table.update(key, "SET memory_expires_at = :passed", values={":passed": passed})
    memory = memory_from_item(item)
    table.update(
        book_key(memory.scope, memory.book_shard),
        "SET #entry.x = :passed",
        names={"#entry": entry_attribute(memory.memory_id)},
        values={":passed": passed},
    )
    _count("a memory expired")
    return replace(written, gone=True)


def _server_fact(plan: TurnPlan, token: str | None, filler: str = "") -> str:
    """A server memory's text: about the speaker when it writes ``{user}`` (pinned to their name)."""
    return f"Fact {{user}} {token}{filler}" if plan.names_speaker else f"Fact {token}{filler}"


def _taking_part(plan: TurnPlan, shown: list[dict]) -> frozenset[str]:
    if plan.where.guild_id is None:
        return frozenset({plan.speaker})
    authors = {str(message["author"]["id"]) for message in shown} - {BOT_ID}
    return frozenset({plan.speaker, *authors})


def _configure(store: ConfigStore, world: World) -> None:
    for guild in world.guilds:
        always = {
            c.channel_id: ""
            for c in world.channels
            if c.guild_id == guild.guild_id and c.channel_id in world.always
        }
        if guild.overrides or guild.bypass or guild.reviews or guild.alters or always:
            config = ServerConfig(
                always_channels=always,
                guild_id=guild.guild_id,
                channel_privacy=guild.overrides,
                stm_privacy_bypass=guild.bypass,
                memory_moderation=MemoryModeration.APPROVAL if guild.reviews else MemoryModeration.OPEN,
                alters=tuple(
                    Persona(
                        persona_id=a.persona_id,
                        lineage_id=a.lineage,
                        name=a.name,
                        alter=True,
                        nicknames=_colliding_nicknames(world, guild.guild_id),
                    )
                    for a in guild.alters
                ),
            )
            store.save_server_config(config)
    for user in world.users:
        if user.cross_server:
            store.save_user_profile(UserProfile(user_id=user.user_id, cross_server_opt_in=True))


def _colliding_nicknames(world: World, guild_id: str) -> tuple[tuple[str, str], ...]:
    """Each member of the guild called by the next one's username (issue 37.1): a nickname that
    collides with a member's own name, as one set before that member joined or renamed."""
    members = [user for user in world.users if guild_id in user.guild_ids]
    if len(members) < 2:
        return ()
    called = ((m.user_id, members[(i + 1) % len(members)].name) for i, m in enumerate(members))
    return tuple(sorted((user_id, name) for user_id, name in called if 0 < len(name) <= MAX_NICKNAME_CHARS))


def _switch_bypass(store: ConfigStore, guild_id: str, enabled: bool) -> None:
    """What ``/server privacy bypass enabled:…`` stores."""
    store.save_server_config(replace(store.get_server_config(guild_id), stm_privacy_bypass=enabled))


class _Clock:
    """A minute between turns, from ``START``."""

    def __init__(self) -> None:
        self.now = START - timedelta(minutes=1)

    def tick(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now

    def __call__(self) -> datetime:
        return self.now


def _tokens() -> Callable[[Kind], str]:
    numbers = itertools.count(1)
    return lambda kind: f"TOK{kind.value}{next(numbers):04d}"


# -- telling what happened ----------------------------------------------------------------------------


def _person(world: World, user_id: str | None) -> str:
    return world.user(user_id).name if user_id else "nobody"


def _place(oracle: Oracle, where: Where) -> str:
    world = oracle.world
    if where.guild_id is None:
        owner = next(user for user in world.users if user.dm_channel_id == where.channel_id)
        return f"{owner.name}'s DM"
    channel = world.channel(where.channel_id)
    assert channel is not None
    guild = f"guild{where.guild_id[-1]}"
    privacy = "private" if oracle.private(where) else "public"
    if channel.is_thread:
        return f"{guild} thread {channel.channel_id[-2:]} ({privacy}, type {channel.kind}, of #{channel.parent_id[-2:]})"  # type: ignore[index]
    return f"{guild} #{channel.channel_id[-2:]} ({privacy})"


def _origin(oracle: Oracle, written: Written) -> str:
    world = oracle.world
    about = f" about {_person(world, written.subject_id)}" if written.kind is Kind.PERSONAL_MEMORY else ""
    return (
        f"{written.token} ({written.kind.name.lower()} by {_person(world, written.author_id)}{about}, "
        f"written in {_place(oracle, written.where)})"
    )


def story(scenario: Scenario) -> str:
    """The world and the turns in a few lines, for a failing example."""
    world = scenario.world
    oracle = Oracle(world)
    lines = ["World:"]
    for guild in world.guilds:
        settings_text = (
            f" overrides={dict(guild.overrides)} bypass={guild.bypass}"
            if guild.overrides or guild.bypass
            else ""
        )
        if guild.reviews:
            settings_text += f" reviews memories, owner={_person(world, guild.owner_id)}"
        lines.append(f"  guild{guild.guild_id[-1]} @everyone={guild.everyone_permissions}{settings_text}")
    for channel in world.channels:
        where = Where(channel.guild_id, channel.channel_id, channel.parent_id if channel.is_thread else None)
        always = " (always)" if channel.channel_id in world.always else ""
        lines.append(f"  {_place(oracle, where)} overwrite={channel.overwrite.value}{always}")
    for user in world.users:
        guilds = ",".join(f"guild{g[-1]}" for g in sorted(user.guild_ids))
        lines.append(f"  {user.name}: member of {guilds}; cross-server={user.cross_server}")
    lines.append("Turns:")
    for number, plan in enumerate(scenario.turns):
        does = []
        if plan.summary:
            does.append("summary")
        if plan.server_memory:
            does.append("server memory" + (" about them" if plan.names_speaker else ""))
        if plan.personal_about:
            does.append(f"personal memory about {_person(world, plan.personal_about)}")
        if plan.revise is not None:
            does.append(f"{'forgets' if plan.forget else 'rewrites'} kept memory #{plan.revise}")
        if plan.bypass is not None:
            does.insert(0, f"bypass switched {'on' if plan.bypass else 'off'} first")
        if plan.repeat is not None:
            does.append(f"saying again what kept memory #{plan.repeat} says")
        if plan.make_private:
            does.insert(0, "that memory's channel made private first")
        if plan.forget_all:
            does.insert(0, "forget-all first")
        if plan.later:
            does.append("then, before the turn runs: " + "; ".join(kind.value for kind in plan.later))
        named = [_person(world, plan.mention)] if plan.mention else []
        named += [_place(oracle, oracle.where_is(channel_id)) for channel_id in plan.channel_mentions]
        mention = f" mentioning {', '.join(named)}" if named else ""
        lines.append(
            f"  {number}: {_person(world, plan.speaker)} in {_place(oracle, plan.where)}{mention}: "
            + (", ".join(does) or "just talks")
        )
    return "\n".join(lines)


# -- hostile names and texts -------------------------------------------------------------------------

HOSTILE_EXAMPLES: Final = 20


@settings(PROPERTY_SETTINGS, max_examples=HOSTILE_EXAMPLES)
@given(hostile=hostile_scenarios())
def test_no_name_or_text_from_outside_forges_a_marker_or_a_header(dynamodb, hostile: HostileScenario):
    # Given a random world whose members' names, messages, link embeds, attachments and reactions are
    # hostile (look-alike markers, brackets and pipes, forged headers, {user}), and a model that
    # writes hostile summaries, memories and replies, replayed in later turns and other channels
    # When its people talk to the bot
    problems = play_hostile(hostile, dynamodb)

    # Then no message of any kind the model is sent reads as holding a marker kioku did not write,
    # nor, outside the markers, a header's bracket, pipe or field
    assert not problems, "\n".join([*problems[:10], "", story(hostile.scenario)])


def play_hostile(hostile: HostileScenario, client, reach: Counter[str] | None = None) -> list[str]:
    """Run ``hostile``'s turns (their memory work; not their forget-alls or bypass switches) and read
    every message of every model request with ``forgeries``; ``reach`` counts the messages read, by
    kind, and the hostile parts they showed."""
    scenario = hostile.scenario
    world = scenario.world
    problems: list[str] = []
    written: list[Written] = []
    with fresh_table(client) as table:
        _configure(ConfigStore(table), world)
        discord, model = FakeDiscord(world), HostileModel()
        clock = _Clock()
        # every other turn has room for a few memories only, and searches the rest: the search's
        # results (whom each memory is about, its text) are read like every other message
        services = (_service(table, discord, model, clock), _service(table, discord, model, clock, BUDGETED))
        new_token = _tokens()
        for number, plan in enumerate(scenario.turns):
            speaker = world.user(plan.speaker)
            assert isinstance(speaker, HostileUser)
            message = _hostile_message(discord, speaker, plan.where, hostile, number, clock.tick())
            planned = _tool_calls(plan, new_token, _memory_to_revise(plan, written))
            model.reply = hostile.written[number]
            calls = [(call.name, _hostile_arguments(call, hostile.written[number])) for call in planned]
            model.plan(calls + ([SEARCH_EVERYTHING] if number % 2 else []))
            service = services[number % 2]
            first = len(model.requests)

            record = service.run(relayed(message))

            for request in model.requests[first:]:
                kinds = record.context_kinds + ["tool round"] * len(request.messages)
                for kind, sent in zip(kinds, request.messages, strict=False):
                    if sent.get("role") == "tool" and '"memories":' in str(sent.get("content")):
                        _count("a search's results read")
                    for text in _texts_of(sent):
                        problems += [f"FORGED at turn {number} in the {kind}: {f}" for f in forgeries(text)]
                        if reach is not None:
                            reach[kind] += 1
                            reach.update(_hostile_parts(text))
            results = [result for _, result in record.tool_results]
            for call, result in zip(planned, results, strict=False):
                if call.revises is None and call.token and result.ok and result.data.get("memory_id"):
                    written.append(
                        Written(
                            call.token,
                            call.kind,
                            plan.where,
                            speaker.user_id,
                            call.subject,
                            memory_id=result.data["memory_id"],
                        )
                    )
    return problems


def _hostile_message(
    discord: FakeDiscord, speaker: HostileUser, where: Where, hostile: HostileScenario, number: int, at
) -> dict[str, Any]:
    """What ``speaker`` sends in turn ``number``: hostile text, a link embed, an attachment and a
    reaction; a nickname on every other turn; a reply to the message two above, when there is one."""
    discord.user_says(speaker, where, f"news {hostile.said[number]}", at)
    history = discord.messages[where.channel_id]
    message = history[-1]
    field = hostile.embeds[number]
    message["embeds"] = [{"title": field, "description": f"{field} more"}]
    message["attachments"] = [
        {"filename": f"{field}.zip", "content_type": "application/zip", "url": "https://cdn.example/a"}
    ]
    message["reactions"] = [{"emoji": {"name": field, "id": "700000000000000001"}, "count": 2}]
    if where.guild_id and number % 2:
        message["member"]["nick"] = f"{speaker.display} nick"
    if len(history) >= 3:
        quoted = history[-3]
        message |= {
            "type": 19,
            "message_reference": {"message_id": quoted["id"]},
            "referenced_message": copy.deepcopy(quoted),
        }
    return copy.deepcopy(message)


def _hostile_arguments(call: _Call, text: str) -> dict[str, Any]:
    if SUMMARY_FIELD in call.arguments:
        return {**call.arguments, SUMMARY_FIELD: f"{call.arguments[SUMMARY_FIELD]} {text}"}
    if call.arguments.get("memory_content"):
        return {**call.arguments, "memory_content": f"{call.arguments['memory_content']} {text}"}
    return call.arguments


def _texts_of(message: dict[str, Any]) -> list[str]:
    """The text the model reads in one message of a request: a tool's result, every string of its
    JSON (a search's names and memories); not a tool call, the model's own."""
    if message.get("role") == "tool":
        return list(_strings_in(json.loads(message.get("content") or "null")))
    content = message.get("content")
    if isinstance(content, str):
        return [content, message.get("name") or ""]
    return [part["text"] for part in content or () if part.get("type") == "text"]


_HOSTILE_PARTS: Final = {
    "summary": "Summary:\n",
    "recalled lines": "Recent messages there",
    "memory": "Long-term memories:",
    "embed": "[Embed: ",
    "attachment": "[File Attachment: ",
    "reply": "Replying to @",
    "reaction": "Reactions: ",
}


def _strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings_in(item)


def _hostile_parts(text: str) -> list[str]:
    return [part for part, opening in _HOSTILE_PARTS.items() if opening in text]


# -- lost channel events -------------------------------------------------------------------------------


@settings(PROPERTY_SETTINGS, max_examples=40)
@given(lost=lost_channel_events())
def test_after_lost_channel_events_a_guild_create_leaves_nothing_of_a_now_private_channel_elsewhere(
    relay_event, table, lost: LostEvents
):
    # Given memory in every channel and thread, stamped with the privacy each had then
    _empty(table)
    store = StmStore(table)
    now = datetime.now(UTC)
    before = Oracle(lost.before)
    token = {channel.channel_id: f"TOKM{n:04d}" for n, channel in enumerate(lost.before.channels)}
    for channel in lost.before.channels:
        stm_rows.remember(
            store,
            channel.guild_id,
            channel.channel_id,
            f"said {token[channel.channel_id]}",
            now,
            private=before.discord_private(channel),
            private_thread=channel.kind == PRIVATE_THREAD,
            parent=channel.parent_id if channel.is_thread else None,
            described_at=now - timedelta(minutes=1),
        )
    # When the world changes while only some of its channel events arrive, then each guild's list does
    for name, data, delivered in lost.events:
        if delivered:
            assert relay_event(name, data) == 204
    for guild in lost.after.guilds:
        assert relay_event("GUILD_CREATE", lost.guild_create(guild)) == 204

    # Then from every channel and thread that remains, what is recalled of the others is what the
    # rules allow in the world as it is now: nothing of a deleted channel, nothing of a now-private
    # channel outside it and its threads; and every listed public channel's memory is recalled
    after = Oracle(lost.after)
    problems = []
    for at in lost.after.channels:
        place = Where(at.guild_id, at.channel_id, at.parent_id if at.is_thread else None)
        shown = tokens_in(stm_rows.seen_from(store, at.guild_id, at.channel_id, now, place.parent_id))
        for written in lost.before.channels:
            origin = lost.after.channel(written.channel_id)
            if origin is None or written.channel_id == at.channel_id:
                allowed, required = origin is not None, False
            else:
                where = Where(
                    origin.guild_id, origin.channel_id, origin.parent_id if origin.is_thread else None
                )
                allowed = after.guild_rule(where, place)
                listed = not origin.is_thread or origin.channel_id not in lost.archived
                required = listed and allowed and not after.discord_private(origin)
            if token[written.channel_id] in shown and not allowed:
                problems.append(f"LEAK: {written} recalled in {at}")
            if required and token[written.channel_id] not in shown:
                problems.append(f"MISSING: {written} not recalled in {at}")
    gone = [c for c in lost.before.channels if lost.after.channel(c.channel_id) is None]
    problems += [
        f"KEPT: {channel} was deleted"
        for channel in gone
        if store.get(StmAddress.of(channel.guild_id, USER, channel.channel_id, "kioku")) is not None
    ]
    assert not problems, "\n".join(
        [*problems, f"events: {lost.events}", f"archived: {sorted(lost.archived)}"]
    )


def _empty(table: KiokuTable) -> None:
    """The examples of one test share a table: each starts with it empty."""
    client = make_client()
    for page in client.get_paginator("scan").paginate(TableName=table.name):
        for item in page["Items"]:
            client.delete_item(TableName=table.name, Key={"pk": item["pk"], "sk": item["sk"]})


@pytest.mark.parametrize("forgetter", ["speaker", "subject"])
def test_a_forget_all_landing_between_the_keep_and_the_post_posts_no_notice_and_keeps_nothing(
    dynamodb, forgetter
):
    with fresh_table(dynamodb) as table:
        _forget_all_between_the_keep_and_the_post(
            table,
            forgetter,
            lambda forgotten: forget_all(
                forgotten, DynamoMemoryStore(table), StmStore(table), ledger=TurnLedger(table)
            ),
        )


@pytest.mark.parametrize("forgetter", ["speaker", "subject"])
def test_the_signed_forget_all_click_landing_between_the_keep_and_the_post_posts_no_notice(
    interact, table, forgetter
):
    # The same race, the forget-all asked for and confirmed as Discord sends it, through
    # InteractionsFunction (issue 26, item 10)
    guild, channel = "200000000000000000", "300000000000000000"

    def click_forget_all(forgotten: str) -> dict:
        command = personal("memories", "forget-all", user=forgotten, guild=guild, channel=channel)
        confirm = next(b for b in buttons(interact(command)) if b["label"] == "Forget everything")
        done = interact(click(command, confirm["custom_id"]))
        assert done["data"]["embeds"][0]["title"] == "Done", done
        return done

    _forget_all_between_the_keep_and_the_post(table, forgetter, click_forget_all)


def _forget_all_between_the_keep_and_the_post(
    table: KiokuTable, forgetter: str, land: Callable[[str], object]
) -> None:
    # Given ann's turn saving a memory about bo: its outbox (reply and "Memory saved" notice) is kept
    guild, channel = "200000000000000000", "300000000000000000"
    ann, bo = (
        User(f"40000000000000000{n}", name, f"50000000000000000{n}", frozenset({guild}))
        for n, name in enumerate(("ann", "bo"))
    )
    world = World(
        guilds=(Guild(guild, VIEW_CHANNEL_BIT),), channels=(Channel(channel, guild),), users=(ann, bo)
    )
    plan = TurnPlan(ann.user_id, Where(guild, channel), personal_about=bo.user_id)
    forgotten = ann.user_id if forgetter == "speaker" else bo.user_id
    _configure(ConfigStore(table), world)
    discord, model, clock = FakeDiscord(world), TokenWritingModel(), _Clock()
    # the world's clock is the one a forget-all in a real container reads (what the turn keeps is
    # not past its time there)
    clock.now = kioku_clock.now() - timedelta(minutes=1)
    service = _service(table, discord, model, clock)
    message = discord.user_says(ann, plan.where, f"news {_tokens()(Kind.MESSAGE)}", clock.tick())
    planned = _tool_calls(plan, _tokens(), None)
    model.plan([(call.name, call.arguments) for call in planned])
    keep, landed = service.turns.keep, []

    def keep_then_forget(key, outbox, now, taking_from=None):
        kept = keep(key, outbox, now, taking_from)
        if kept and outbox.answered and not landed:  # forget-all lands right after the keep
            landed.append(land(forgotten))
        return kept

    service.turns.keep = keep_then_forget
    # When the turn goes on to post
    record = service.run(relayed(message))
    # Then no notice quoting the forgotten memory is posted, nothing is captured or kept
    assert landed, "the forget-all never landed"
    posted = [m for messages in discord.messages.values() for m in messages if m["id"] != message["id"]]
    assert not [m for m in posted if m.get("embeds")], posted
    assert len(posted) <= len(record.reply_ids) <= 1  # at most the one reply already on its way
    assert service.run(relayed(message), redelivered=True).duplicate is True
    items, _ = table.query(
        "#pk = :pk", names={"#pk": "pk"}, values={":pk": f"USER#{forgotten}"}, consistent=True
    )
    assert not [item["sk"] for item in items if item["sk"].startswith(("OUTBOX#", "STMLINES#"))]
    assert not [line for row in bursts.stm_rows(table) for line in row.crude if line.user_id == forgotten]


def test_records_and_memories_past_their_time_reach_no_answer_choice_or_export(dynamodb):
    # Given ann's memory about herself expiring in a day, memories about each of them, and turns shown them
    guild, channel = "200000000000000000", "300000000000000000"
    ann, bo = (
        User(f"40000000000000000{n}", name, f"50000000000000000{n}", frozenset({guild}))
        for n, name in enumerate(("ann", "bo"))
    )
    world = World(
        guilds=(Guild(guild, VIEW_CHANNEL_BIT),), channels=(Channel(channel, guild),), users=(ann, bo)
    )
    here = Where(guild, channel)
    turns = (
        TurnPlan(ann.user_id, here, personal_about=ann.user_id, expiring=True),
        TurnPlan(bo.user_id, here, personal_about=ann.user_id),
        TurnPlan(ann.user_id, here, personal_about=bo.user_id),
        # When days pass: the memory expires, and some turns' records pass their 16 days
        TurnPlan(bo.user_id, here, day_passes=True),
        TurnPlan(ann.user_id, here, day_passes=True),
    )
    problems = play(Scenario(world, turns), dynamodb, why_viewers=True)

    # Then "Why this answer?" keeps no record of those, and neither the memory_id choices nor the
    # export hold the expired memory or count the notes past their time
    assert not problems, "\n".join(problems)
