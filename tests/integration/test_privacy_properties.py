"""Property tests of the privacy model: random Discord worlds, real turns, an independent oracle.

Each example builds a world (guilds, channels with @everyone overwrites, threads, members, DMs), then
plays a random sequence of messages to the bot through the real ``TurnService``, ``StmStore``,
``DynamoMemoryStore`` and ``TurnLedger`` on in-process moto, with a fresh table. Every message holds
a secret token, and the model writes more tokens into short-term summaries and long-term memories,
and rewrites or forgets memories saved earlier. After each turn, every token in the model's requests
must be one the rules let this turn see, or one of this channel's own dialogue (else: LEAK); every
token the rules say it must see must be there (MISSING); nothing forgotten or rewritten may still be
shown (STALE); and only a memory's author or subject may change it, where it could be shown
(TAMPERED).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings

from kioku.adapters.dynamodb.config_store import ConfigStore
from kioku.adapters.dynamodb.ltm_store import BookLayout, DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore
from kioku.adapters.dynamodb.table import KiokuTable, make_client
from kioku.adapters.dynamodb.turn_ledger import TurnLedger
from kioku.config import Settings
from kioku.domain.models import ServerConfig, UserProfile
from kioku.domain.privacy import PrivacyMode
from kioku.domain.stm.update_tool import SUMMARY_FIELD
from kioku.domain.stm.update_tool import TOOL_NAME as STM_TOOL
from kioku.domain.turn_jobs import TurnJob
from kioku.playground.aws import create_table, load_template
from kioku.services.ltm import CREATE_TOOL_NAME, UPDATE_TOOL_NAME
from kioku.services.personal_memories import forget_everything
from kioku.services.turn import TurnService
from tests.integration.privacy_world import (
    BOT_ID,
    PRIVATE_THREAD,
    VIEW_CHANNEL_BIT,
    Channel,
    FakeDiscord,
    Guild,
    Kind,
    Oracle,
    Overwrite,
    Probe,
    Scenario,
    TokenWritingModel,
    TurnPlan,
    User,
    Where,
    World,
    Written,
    scenarios,
    tokens_in,
)

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
BYPASS_EXAMPLES: Final = 25
PROPERTY_SETTINGS: Final = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI cannot flake
    database=None,
    # The moto mock and its client (function-scoped fixtures) serve every example; each example
    # makes its own table.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


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


@settings(PROPERTY_SETTINGS, max_examples=BYPASS_EXAMPLES)
@given(scenario=scenarios(admin_settings=True, bypass_switches=True))
def test_the_bypass_widens_reading_while_it_is_on_and_never_moves_a_memory(dynamodb, scenario: Scenario):
    # Given a random world with overrides, whose managers switch the bypass on and off between turns
    # When its people talk to the bot, rewriting and forgetting memories in most turns
    problems = play(scenario, dynamodb)

    # Then every turn sees what the bypass allows while it is on, and a memory rewritten through it
    # is recalled afterwards only where it was said: never in a DM or another guild
    assert not problems, "\n".join([*problems, "", story(scenario)])


# -- gaps the properties found, kept closed ---------------------------------------------------------
# 1. A guild's overrides travel with what is said: a memory someone saves about themself is stamped
#    with the privacy its channel had after the guild's overrides, so it follows them (or not) elsewhere.
# 2. A rewritten memory belongs where (and to whom) its new text was written.


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
    """One client for every example of a test: a client per example would load botocore's models again."""
    return make_client()


def play(scenario: Scenario, client, oracle: Oracle | None = None) -> list[str]:
    """Run every turn of ``scenario`` on a fresh table (moto already running); the problems found, one
    line each (see the module's docstring)."""
    world = scenario.world
    oracle = oracle or Oracle(world)
    problems: list[str] = []
    written: list[Written] = []
    with fresh_table(client) as table:
        _configure(ConfigStore(table), world)
        discord, model = FakeDiscord(world), TokenWritingModel()
        clock = _Clock()
        service = TurnService(
            settings=SETTINGS,
            discord=discord,  # type: ignore[arg-type]
            model=model,
            stm_store=StmStore(table),
            ltm_store=DynamoMemoryStore(table, layout=TinyBooks(server_limit=6, personal_limit=6)),
            ledger=TurnLedger(table),
            clock=clock,
        )
        new_token = _tokens()
        for number, plan in enumerate(scenario.turns):
            now = clock.tick()
            speaker = world.user(plan.speaker)
            if plan.bypass is not None and plan.where.guild_id:
                _switch_bypass(ConfigStore(table), plan.where.guild_id, plan.bypass)
                oracle.bypass[plan.where.guild_id] = plan.bypass
            if plan.forget_all:
                forget_everything(speaker.user_id, service.ltm_store, service.stm_store)
                written = [_after_forget_all(w, speaker.user_id) for w in written]
            said = new_token(Kind.MESSAGE)
            mention = world.user(plan.mention) if plan.mention else None
            content = f"news {said}" + (f" for <@{mention.user_id}>" if mention else "")
            message = discord.user_says(speaker, plan.where, content, now, mention=mention)
            revised = _memory_to_revise(plan, written)
            planned = _tool_calls(plan, new_token, revised)
            model.plan([(call.name, call.arguments) for call in planned])
            discord.fetched.clear()
            first_request = len(model.requests)

            record = service.run(TurnJob.from_gateway_message(message))

            assert not record.apologised and not record.duplicate, f"turn {number} did not complete"
            shown = [message, *discord.fetched][:HISTORY_LIMIT]
            probe = Probe(plan.where, speaker.user_id, _taking_part(plan, shown))
            seen = tokens_in([request.messages for request in model.requests[first_request:]])
            problems += _check(oracle, probe, number, seen, tokens_in(shown), written, world)

            results = {
                id(arguments): result
                for (_, arguments), (_, result) in zip(model.made, record.tool_results, strict=True)
            }
            written.append(Written(said, Kind.MESSAGE, plan.where, speaker.user_id))
            for call in planned:
                result = results.get(id(call.arguments))
                done = result is not None and result.ok
                if call.revises is None:
                    if call.token:
                        memory_id = result.data.get("memory_id") if done and result else None
                        written.append(
                            Written(
                                call.token,
                                call.kind,
                                plan.where,
                                speaker.user_id,
                                call.subject,
                                stored=done,
                                memory_id=memory_id,
                            )
                        )
                    continue
                target = call.revises
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
                    )
                    written.append(replace(rewritten, where=oracle.rewritten_at(target, rewritten)))
    return problems


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
) -> list[str]:
    problems = []
    newest_summaries = {w.row: w.token for w in written if w.kind is Kind.SUMMARY and w.stored}
    where = f"turn {number}: {_person(world, probe.speaker)} in {_place(oracle, probe.where)}"
    for w in written:
        if w.token in seen and w.token not in dialogue and w.gone:
            problems.append(f"STALE at {where} saw {_origin(oracle, w)}, forgotten or rewritten since")
        elif w.token in seen and w.token not in dialogue and not oracle.may_show(w, probe):
            problems.append(f"LEAK at {where} saw {_origin(oracle, w)}")
        newest = newest_summaries.get(w.row) == w.token
        if w.token not in seen and oracle.must_show(w, probe, newest_summary=newest):
            problems.append(f"MISSING at {where} did not see {_origin(oracle, w)}")
    return problems


def _after_forget_all(written: Written, user_id: str) -> Written:
    """What forget-all leaves of ``written``: it erases memories about the person (server memories that
    name them too), the lines they wrote anywhere, and everything of their DM's short-term memory; a
    server memory they only saved stays, linked to nobody. The summaries of servers' rows stay
    (docs/privacy.md)."""
    if written.kind in (Kind.PERSONAL_MEMORY, Kind.SERVER_MEMORY) and written.subject_id == user_id:
        return replace(written, stored=False, gone=True)
    if written.kind is Kind.SERVER_MEMORY and written.author_id == user_id:
        return replace(written, author_id="")
    if written.kind is Kind.MESSAGE and written.author_id == user_id:
        return replace(written, stored=False, gone=True)
    if written.kind is Kind.SUMMARY and written.where.guild_id is None and written.author_id == user_id:
        return replace(written, stored=False, gone=True)
    return written


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


def _tool_calls(plan: TurnPlan, new_token: Callable[[Kind], str], revised: Written | None) -> list[_Call]:
    calls = []
    if plan.summary:
        token = new_token(Kind.SUMMARY)
        calls.append(_Call(STM_TOOL, {SUMMARY_FIELD: f"Notes {token}"}, token, Kind.SUMMARY))
    if plan.server_memory:
        token = new_token(Kind.SERVER_MEMORY)
        arguments = {"memory_content": _server_fact(plan, token), "memory_scope": "server_wide"}
        subject = plan.speaker if plan.names_speaker else None
        calls.append(_Call(CREATE_TOOL_NAME, arguments, token, Kind.SERVER_MEMORY, subject))
    if plan.personal_about:
        token = new_token(Kind.PERSONAL_MEMORY)
        arguments = {
            "memory_content": f"Fact {token}",
            "memory_scope": "target_user",
            "target_user": f"<@{plan.personal_about}>",
        }
        calls.append(_Call(CREATE_TOOL_NAME, arguments, token, Kind.PERSONAL_MEMORY, plan.personal_about))
    if revised is not None and revised.memory_id:
        token = None if plan.forget else new_token(revised.kind)
        content, subject = f"Fact {token}", revised.subject_id
        if revised.kind is Kind.PERSONAL_MEMORY:
            arguments = {"target_user": f"<@{revised.subject_id}>"}
        else:
            arguments = {}
            content = _server_fact(plan, token)
            subject = plan.speaker if plan.names_speaker else subject
        arguments |= {"memory_id": int(revised.memory_id), "memory_content": content if token else ""}
        calls.append(_Call(UPDATE_TOOL_NAME, arguments, token, revised.kind, subject, revised))
    return calls


def _server_fact(plan: TurnPlan, token: str | None) -> str:
    """A server memory's text: about the speaker when it writes ``{user}`` (pinned to their name)."""
    return f"Fact {{user}} {token}" if plan.names_speaker else f"Fact {token}"


def _taking_part(plan: TurnPlan, shown: list[dict]) -> frozenset[str]:
    if plan.where.guild_id is None:
        return frozenset({plan.speaker})
    authors = {str(message["author"]["id"]) for message in shown} - {BOT_ID}
    return frozenset({plan.speaker, *authors})


def _configure(store: ConfigStore, world: World) -> None:
    for guild in world.guilds:
        if guild.overrides or guild.bypass:
            config = ServerConfig(
                server_id=guild.guild_id, channel_privacy=guild.overrides, stm_privacy_bypass=guild.bypass
            )
            store.save_server_config(config)
    for user in world.users:
        if user.cross_server:
            store.save_user_profile(UserProfile(user_id=user.user_id, cross_server_opt_in=True))


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
        lines.append(f"  guild{guild.guild_id[-1]} @everyone={guild.everyone_permissions}{settings_text}")
    for channel in world.channels:
        where = Where(channel.guild_id, channel.channel_id, channel.parent_id if channel.is_thread else None)
        lines.append(f"  {_place(oracle, where)} overwrite={channel.overwrite.value}")
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
        if plan.forget_all:
            does.insert(0, "forget-all first")
        mention = f" mentioning {_person(world, plan.mention)}" if plan.mention else ""
        lines.append(
            f"  {number}: {_person(world, plan.speaker)} in {_place(oracle, plan.where)}{mention}: "
            + (", ".join(does) or "just talks")
        )
    return "\n".join(lines)
