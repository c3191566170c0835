"""The turn on in-memory fakes of its ports (``kioku.services.turn_ports``): each outcome of a turn,
from what the channel shows and what the turn's items hold afterwards. The same turn on moto and over
HTTP: ``tests/integration/test_turn_ledger.py``, ``tests/e2e/test_chat_turns.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kioku.adapters.discord_rest import DiscordError
from kioku.adapters.llm.base import ChatRequest, ChatResponse, ToolCall
from kioku.discord.guild import Channel, Role
from kioku.discord.models import Embed, Member, Message, MessageReference, User
from kioku.discord.protocol import ChannelType
from kioku.domain.forgetting import SpeakerForgotten, first_snowflake_at, forgotten_since
from kioku.domain.ltm.ports import RecallSet
from kioku.domain.ltm.tools import CREATE_TOOL_NAME
from kioku.domain.models import ServerConfig, UserProfile
from kioku.domain.privacy import ChannelDescription, Place, PrivacyPolicy
from kioku.domain.stm.capture import TurnCapture
from kioku.domain.stm.context import StmState
from kioku.domain.turn import (
    LlmUnavailable,
    Outbox,
    RateTaken,
    TurnAlreadyRecorded,
    TurnEnd,
    TurnKey,
    TurnOutcome,
)
from kioku.domain.turn_jobs import TurnJob
from kioku.domain.turn_read import TurnMemoryLoad, TurnMemoryQuery, TurnRead
from kioku.services.turn import APOLOGY, RATE_NOTICE, TurnRecord, TurnService
from tests.unit.ltm_fakes import BOT, FakeMemoryStore, settings

GUILD = "200000000000000001"
CHANNEL = "300000000000000001"
SENT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ALICE = User(id="400000000000000001", username="alice", global_name="Alice")
REPLY = "Happy to help."


def snowflake(at: datetime, n: int = 0) -> str:
    return str(first_snowflake_at(at) + n)


# -- the fakes --------------------------------------------------------------------------------------


@dataclass
class FakeDiscord:
    """A guild channel: what is posted is kept in order, and served back as its history. ``refusing``:
    the HTTP status Discord answers a read of the channel with; ``after_post``: what happens
    meanwhile, after each post (another worker, a forget-all)."""

    messages: list[Message] = field(default_factory=list)
    refusing: int | None = None
    after_post: Callable[[], None] = lambda: None

    def posted(self) -> list[Message]:
        return [message for message in self.messages if message.author.id == BOT.user_id]

    def trigger_typing(self, channel_id: str) -> None:
        pass

    def get_channel(self, channel_id: str) -> Channel:
        if self.refusing is not None:
            raise DiscordError(self.refusing, 50001, "Missing Access")
        return Channel(channel_id, type=ChannelType.GUILD_TEXT, name="general")

    def search_guild_members(self, guild_id: str, query: str, limit: int = 10) -> list[Member]:
        return []

    def get_channel_messages(
        self, channel_id: str, limit: int, *, before: str | None = None, after: str | None = None
    ) -> list[Message]:
        found = sorted(
            (
                m
                for m in self.messages
                if (before is None or int(m.id) < int(before)) and (after is None or int(m.id) > int(after))
            ),
            key=lambda message: int(message.id),
        )
        page = found[:limit] if after is not None else found[-limit:]
        return page[::-1]

    def create_message(
        self,
        channel_id: str,
        content: str,
        *,
        reply_to: str | None = None,
        embeds: list[dict[str, Any]] | None = None,
        nonce: str | None = None,
    ) -> dict[str, Any]:
        message = Message(
            id=snowflake(SENT + timedelta(seconds=1), len(self.messages) + 1),
            author=User(id=BOT.user_id, username=BOT.username, bot=True),
            content=content,
            channel_id=channel_id,
            embeds=tuple(Embed(embed.get("title"), embed.get("description")) for embed in embeds or ()),
            reference=MessageReference(message_id=reply_to) if reply_to else None,
        )
        self.messages.append(message)
        self.after_post()
        return {"id": message.id}

    def edit_original_response(
        self,
        application_id: str,
        interaction_token: str,
        content: str,
        embeds: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        raise AssertionError("a relayed message's turn has no interaction to answer")


class PublicGuild:
    """A guild whose channels are all public, with no roles, where nobody manages the server."""

    def describe_channel(self, guild_id: str, channel: Channel) -> ChannelDescription:
        return ChannelDescription(channel.id, name=channel.name, private=False)

    def guild_roles(self, guild_id: str) -> tuple[Role, ...] | None:
        return ()

    def channel_names(self, guild_id: str, place: Place, policy: PrivacyPolicy) -> dict[str, str]:
        return {}

    def manages_server(self, guild_id: str, user_id: str, member: Member | None) -> bool:
        return False

    def member(self, guild_id: str, user_id: str) -> Member | None:
        return None


@dataclass
class FakeTurnStore:
    """The turn's items as ``TurnRepository`` keeps them: a record once done, an outbox until then
    (refused once its author forgot everything since the message), what each commit captured."""

    memories: FakeMemoryStore = field(default_factory=FakeMemoryStore)
    records: dict[TurnKey, TurnOutcome] = field(default_factory=dict)
    outboxes: dict[TurnKey, Outbox] = field(default_factory=dict)
    captures: dict[TurnKey, TurnCapture] = field(default_factory=dict)
    forgotten_at: dict[str, datetime] = field(default_factory=dict)

    def _forgotten(self, person: str, key: TurnKey) -> bool:
        return forgotten_since(self.forgotten_at.get(person), key.sent_at)

    def read(
        self,
        key: TurnKey,
        memory: TurnMemoryQuery,
        *,
        recall_lineage: int,
        recall_people: Sequence[str] = (),
        webhook_of: tuple[str, str] | None = None,
        later: Sequence[str] = (),
    ) -> TurnRead:
        return TurnRead(
            memory=TurnMemoryLoad(
                ServerConfig(guild_id=memory.guild_id), UserProfile(key.author_id), StmState()
            ),
            done=self.records.get(key),
            outbox=self.outboxes.get(key),
            author_forgotten_at=self.forgotten_at.get(key.author_id),
            query=memory,
            recall_lineage=recall_lineage,
            recall_people=tuple(recall_people),
        )

    def done(self, key: TurnKey) -> TurnOutcome | None:
        return self.records.get(key)

    def recall(
        self, read: TurnRead, lineage: int, *, place: Place, policy: PrivacyPolicy, now=None
    ) -> RecallSet:
        return self.memories.recall(
            read.query.guild_id, lineage, read.recall_people, place=place, policy=policy, now=now
        )

    def keep(self, key: TurnKey, outbox: Outbox, now: datetime, taking_from: str | None = None) -> bool:
        if any(self._forgotten(person, key) for person in (key.author_id, *outbox.quoted)):
            return False
        self.outboxes[key] = outbox
        return True

    def write_announced(
        self,
        key: TurnKey,
        outbox: Outbox,
        now: datetime,
        write: Callable[[Sequence[dict[str, Any]]], Any],
        taking_from: str | None = None,
    ) -> tuple[Any, bool]:
        written = write(())
        return written, self.keep(key, outbox, now)

    def drop(self, key: TurnKey, outbox: Outbox) -> None:
        self.outboxes.pop(key, None)

    def record_posted(self, key: TurnKey, outbox: Outbox, taking_from: str | None = None) -> bool:
        if key not in self.outboxes:
            return False
        self.outboxes[key] = outbox
        return True

    def wait_for(self, key: TurnKey, claim: str, waiter: str) -> None:
        raise AssertionError("no other attempt holds an outbox in these tests")

    def commit(self, key: TurnKey, outcome: TurnOutcome, now: datetime, capture: TurnCapture | None) -> None:
        if key in self.records:
            raise TurnAlreadyRecorded("another attempt already recorded this turn")
        if capture is not None and capture.said is not None and self._forgotten(capture.said.user_id, key):
            raise SpeakerForgotten("the speaker forgot everything since")
        self.records[key] = outcome
        self.outboxes.pop(key, None)
        if capture is not None:
            self.captures[key] = capture


@dataclass
class FakeRates:
    """Turns per person per minute, each turn counted once: its number, None past ``limit + 1``."""

    counted: dict[tuple[str, datetime], list[str]] = field(default_factory=dict)

    def take(self, user_id: str, turn_id: str, sent_at: datetime, limit: int) -> RateTaken:
        turns = self.counted.setdefault((user_id, sent_at.replace(second=0, microsecond=0)), [])
        before = turn_id in turns
        if not before:
            if len(turns) > limit:
                return RateTaken(None)
            turns.append(turn_id)
        return RateTaken(turns.index(turn_id) + 1, before)


@dataclass
class FakeModel:
    """Answers from a script, one response (or ``LlmUnavailable``) a request."""

    script: list[ChatResponse | LlmUnavailable] = field(default_factory=lambda: [ChatResponse(REPLY)])
    requests: list[ChatRequest] = field(default_factory=list)

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        answer = self.script.pop(0)
        if isinstance(answer, LlmUnavailable):
            raise answer
        return answer


class NoShortTermMemoryWrites:
    def write_memory(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("no turn here saves short-term memory")


# -- a turn among them ------------------------------------------------------------------------------


@dataclass
class World:
    discord: FakeDiscord = field(default_factory=FakeDiscord)
    turns: FakeTurnStore = field(default_factory=FakeTurnStore)
    model: FakeModel = field(default_factory=FakeModel)
    rates: FakeRates = field(default_factory=FakeRates)

    def service(self, **overrides: Any) -> TurnService:
        return TurnService(
            settings=settings(**overrides),
            discord=self.discord,
            model=self.model,
            stm_store=NoShortTermMemoryWrites(),
            ltm_store=self.turns.memories,
            turns=self.turns,
            directory=PublicGuild(),
            clock=lambda: SENT + timedelta(seconds=1),
            rates=self.rates,
        )

    def say(self, text: str, n: int = 1) -> TurnJob:
        """Alice says ``text`` to the bot in the channel: the turn's job."""
        message = Message(
            id=snowflake(SENT, n),
            author=ALICE,
            content=text,
            timestamp=SENT,
            channel_id=CHANNEL,
            guild_id=GUILD,
        )
        self.discord.messages.append(message)
        return TurnJob.from_message(message)

    def run(self, job: TurnJob, *, redelivered: bool = False, **overrides: Any) -> TurnRecord:
        return self.service(**overrides).run(job, redelivered=redelivered)


def key_of(job: TurnJob) -> TurnKey:
    return TurnKey(job.source.value, job.turn_id, job.author.id, SENT)


def texts(messages: list[Message]) -> list[str]:
    return [message.content or (message.embeds[0].title or "") for message in messages]


# -- the outcomes -----------------------------------------------------------------------------------


def test_an_answered_turn_posts_its_reply_once_captures_its_lines_and_is_recorded_done():
    # Given Alice asks the bot something
    world = World()
    job = world.say("can you help me?")

    # When the turn runs, and SQS hands it out again afterwards
    record = world.run(job)
    again = world.run(job, redelivered=True)

    # Then the reply is posted once, as a reply to her message
    assert texts(world.discord.posted()) == [REPLY]
    assert world.discord.posted()[0].reference == MessageReference(message_id=job.turn_id)
    # And her message and the reply are captured, and the turn is recorded done with its post
    captured = world.turns.captures[key_of(job)]
    assert [line.text for line in captured.lines] == ["can you help me?", REPLY]
    assert world.turns.records[key_of(job)].reply_ids == tuple(record.reply_ids)
    assert world.turns.outboxes == {} and record.end is TurnEnd.DELIVERED
    # And the second delivery found it done, without asking the model
    assert again.duplicate and again.end is TurnEnd.ALREADY_DONE and len(world.model.requests) == 1


def test_a_turn_already_done_posts_nothing_and_does_not_ask_the_model():
    # Given a turn an earlier attempt answered and recorded
    world = World()
    job = world.say("hello")
    world.turns.records[key_of(job)] = TurnOutcome(reply_ids=("9",))

    # When it is run again
    record = world.run(job)

    # Then it ends where it reads its record
    assert record.duplicate and record.reply_ids == ["9"]
    assert world.discord.posted() == [] and world.model.requests == []
    assert world.turns.captures == {}


def test_the_first_turn_over_the_rate_gets_the_rate_notice_only():
    # Given Alice's earlier turn took the one turn a minute allowed
    world = World()
    world.run(world.say("first", n=1), TURN_RATE_LIMIT_PER_MINUTE=1)
    job = world.say("second", n=2)

    # When her next turn of the same minute runs
    record = world.run(job, TURN_RATE_LIMIT_PER_MINUTE=1)

    # Then it posts the rate notice, asks no model and captures nothing, and is recorded done
    assert record.rate_limited and record.end is TurnEnd.DELIVERED
    assert texts(world.discord.posted()) == [REPLY, RATE_NOTICE]
    assert len(world.model.requests) == 1
    assert key_of(job) not in world.turns.captures and key_of(job) in world.turns.records


def test_a_turn_whose_author_forgot_everything_since_posts_and_keeps_nothing():
    # Given Alice asked to forget everything after sending her message
    world = World()
    job = world.say("remember my address")
    world.turns.forgotten_at[ALICE.id] = SENT + timedelta(milliseconds=500)

    # When the turn runs
    record = world.run(job)

    # Then the model is not asked (her words are not sent anywhere), nothing is posted, no outbox
    # stays and nothing of her message is captured
    assert world.discord.posted() == [] and record.reply_ids == [] and record.end is TurnEnd.WITHDRAWN
    assert world.model.requests == []
    assert world.turns.outboxes == {} and world.turns.captures == {}


def test_an_outbox_whose_author_forgot_everything_since_is_dropped_unposted():
    # Given an earlier attempt kept its answer, then Alice asked to forget everything
    world = World()
    job = world.say("remember my address")
    world.turns.outboxes[key_of(job)] = Outbox(reply=REPLY, chunks=(REPLY,))
    world.turns.forgotten_at[ALICE.id] = SENT + timedelta(milliseconds=500)

    # When the turn is redelivered
    record = world.run(job, redelivered=True)

    # Then the outbox goes unposted and uncaptured, and the model is not asked
    assert record.end is TurnEnd.WITHDRAWN and key_of(job) in world.turns.records
    assert world.discord.posted() == [] and world.model.requests == []
    assert world.turns.outboxes == {} and world.turns.captures == {}


def test_a_model_that_fails_gets_the_user_an_apology_posted_once_and_captured():
    # Given a model that cannot answer
    world = World(model=FakeModel([LlmUnavailable("down")]))
    job = world.say("are you there?")

    # When the turn runs, then again
    record = world.run(job)
    world.run(job, redelivered=True)

    # Then the apology is posted once, captured as the channel saw it, and recorded as such
    assert record.apologised
    assert texts(world.discord.posted()) == [APOLOGY]
    assert [line.text for line in world.turns.captures[key_of(job)].lines] == ["are you there?", APOLOGY]
    assert world.turns.records[key_of(job)].apologised


def test_a_memory_saved_by_a_tool_is_announced_after_the_reply():
    # Given a model that saves a server memory, then answers
    save = ToolCall(
        "call-1",
        CREATE_TOOL_NAME,
        '{"memory_content": "the picnic is on Saturday", "memory_scope": "server_wide"}',
    )
    world = World(model=FakeModel([ChatResponse(None, (save,)), ChatResponse("Noted!")]))
    job = world.say("remember: the picnic is on Saturday")

    # When the turn runs
    world.run(job)

    # Then the memory is saved, and the channel shows the reply, then the "Memory saved" notice
    assert [memory.content for memory in world.turns.memories.memories.values()] == [
        "the picnic is on Saturday"
    ]
    assert texts(world.discord.posted()) == ["Noted!", "Memory saved"]
    assert key_of(job) in world.turns.records and world.turns.outboxes == {}


def test_a_redelivery_that_finds_its_outbox_posts_what_is_missing_without_asking_the_model():
    # Given an attempt that kept a two-chunk answer, posted its first chunk and died before noting it
    world = World()
    job = world.say("tell me a long story")
    world.discord.create_message(CHANNEL, "Once upon a time", reply_to=job.turn_id)
    world.turns.outboxes[key_of(job)] = Outbox(
        reply="Once upon a time\n\nthe end.", chunks=("Once upon a time", "the end.")
    )

    # When SQS hands the turn out again
    record = world.run(job, redelivered=True)

    # Then only the missing chunk is posted, the model is not asked and the turn is recorded done
    assert record.resumed and world.model.requests == []
    assert texts(world.discord.posted()) == ["Once upon a time", "the end."]
    assert world.turns.records[key_of(job)].reply_ids == tuple(m.id for m in world.discord.posted())
    assert world.turns.outboxes == {}


def test_a_turn_past_the_rate_notice_ends_in_silence_unrecorded():
    # Given Alice's turns of this minute took the one allowed, then the rate notice
    world = World()
    world.run(world.say("first", n=1), TURN_RATE_LIMIT_PER_MINUTE=1)
    world.run(world.say("second", n=2), TURN_RATE_LIMIT_PER_MINUTE=1)
    job = world.say("third", n=3)

    # When her third turn of the minute runs
    record = world.run(job, TURN_RATE_LIMIT_PER_MINUTE=1)

    # Then nothing more is posted and the turn is not recorded: a redrive of it is weighed again
    assert record.rate_limited and record.end is TurnEnd.SILENCED
    assert texts(world.discord.posted()) == [REPLY, RATE_NOTICE]
    assert key_of(job) not in world.turns.records and key_of(job) not in world.turns.outboxes


def test_a_turn_over_the_rate_that_is_done_already_posts_no_notice():
    # Given a turn over the rate that an earlier attempt recorded (a copy back after deduplication)
    world = World()
    world.run(world.say("first", n=1), TURN_RATE_LIMIT_PER_MINUTE=1)
    job = world.say("second", n=2)
    world.turns.records[key_of(job)] = TurnOutcome(reply_ids=("9",))

    # When the copy runs
    record = world.run(job, TURN_RATE_LIMIT_PER_MINUTE=1)

    # Then it ends at the gate, as the earlier attempt left it
    assert record.duplicate and record.end is TurnEnd.ALREADY_DONE and record.reply_ids == ["9"]
    assert texts(world.discord.posted()) == [REPLY]


def test_a_burst_s_message_another_turn_counted_and_answered_ends_at_its_gate_reading_nothing():
    # Given Alice's message that an earlier turn covered: counted against her rate, recorded done
    world = World()
    job = world.say("and another thing", n=2)
    world.rates.take(ALICE.id, job.turn_id, SENT, 10)
    world.turns.records[key_of(job)] = TurnOutcome(reply_ids=("9",))
    world.discord.refusing = 500  # any read of the channel would fail the turn

    # When its own job runs
    record = world.run(job)

    # Then it ends already done at its gate: nothing read of Discord, posted or asked
    assert record.end is TurnEnd.ALREADY_DONE and record.reply_ids == ["9"]
    assert world.discord.posted() == [] and world.model.requests == []


def test_a_channel_discord_refuses_for_good_ends_the_turn_recorded_unanswered():
    # Given a channel the bot lost access to
    world = World()
    job = world.say("hello?")
    world.discord.refusing = 403

    # When the turn runs
    record = world.run(job)

    # Then it asks no model, posts nothing, captures nothing, and is recorded so no retry tries again
    assert record.unanswerable and record.end is TurnEnd.UNANSWERABLE
    assert world.model.requests == [] and world.discord.posted() == []
    assert world.turns.records[key_of(job)] == TurnOutcome() and world.turns.captures == {}


def test_an_outbox_withdrawn_while_posting_stops_and_is_recorded_with_what_it_posted():
    # Given an earlier attempt's two-chunk answer, and a forget-all that drops it after the first post
    world = World()
    job = world.say("tell me a long story")
    world.turns.outboxes[key_of(job)] = Outbox(
        reply="Once upon a time\n\nthe end.", chunks=("Once upon a time", "the end.")
    )
    world.discord.after_post = lambda: world.turns.outboxes.clear()

    # When SQS hands the turn out again
    record = world.run(job, redelivered=True)

    # Then the second chunk is not posted, nothing is captured, and the turn is recorded with its one post
    assert record.end is TurnEnd.WITHDRAWN
    assert texts(world.discord.posted()) == ["Once upon a time"]
    assert (
        world.turns.records[key_of(job)].reply_ids
        == tuple(record.reply_ids)
        == (world.discord.posted()[0].id,)
    )
    assert world.turns.captures == {}


def test_an_answer_to_a_burst_withdrawn_after_its_first_post_still_covers_the_burst():
    # Given an earlier attempt's two-chunk answer to Alice's message and her two after it, and a
    # forget-all that drops it after the first post
    world = World()
    job, later = world.say("tell me a long story"), [world.say("about dragons", n=n) for n in (2, 3)]
    world.turns.outboxes[key_of(job)] = Outbox(
        reply="Once upon a time\n\nthe end.",
        chunks=("Once upon a time", "the end."),
        covers=tuple(j.turn_id for j in later),
    )
    world.discord.after_post = lambda: world.turns.outboxes.clear()

    # When SQS hands the turn out again
    record = world.run(job, redelivered=True)

    # Then its record covers the two later messages with the one post: their own jobs answer nothing
    assert record.end is TurnEnd.WITHDRAWN and len(world.discord.posted()) == 1
    assert world.turns.records[key_of(job)].covered == tuple(j.record_id for j in later)


def test_an_answer_to_a_burst_withdrawn_before_its_first_post_covers_nothing():
    # Given an answer covering Alice's later message, kept, then dropped by a forget-all before it posts
    world = World()
    job, later = world.say("tell me a long story"), world.say("about dragons", n=2)
    world.turns.outboxes[key_of(job)] = Outbox(reply="Once", chunks=("Once",), covers=(later.turn_id,))
    world.turns.record_posted = lambda *args, **kwargs: False  # type: ignore[method-assign]

    # When SQS hands the turn out again
    record = world.run(job, redelivered=True)

    # Then nothing is posted and its record covers nothing: the later message keeps the mark the keep
    # left, and its own job ends as done, unanswered as this one is (withdrawn)
    assert record.end is TurnEnd.WITHDRAWN and world.discord.posted() == []
    assert world.turns.records[key_of(job)].covered == ()


def test_a_turn_a_twin_worker_recorded_meanwhile_drops_its_outbox_and_captures_nothing():
    # Given a twin worker that records the turn while this one posts
    world = World()
    job = world.say("hello")
    world.discord.after_post = lambda: world.turns.records.setdefault(key_of(job), TurnOutcome(("twin",)))

    # When the turn runs
    record = world.run(job)

    # Then this attempt's commit writes nothing, and the outbox it kept does not stay behind
    assert record.end is TurnEnd.DELIVERED and texts(world.discord.posted()) == [REPLY]
    assert world.turns.records[key_of(job)] == TurnOutcome(("twin",))
    assert world.turns.outboxes == {} and world.turns.captures == {}
