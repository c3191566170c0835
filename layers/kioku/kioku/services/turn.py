"""One chat turn, from a queued job to a posted reply, as named steps over one ``TurnState``:

    gate (the author's rate) → read Discord → read memory (and the turn's own record and outbox:
    a turn already done ends here) → recall → assemble the context → converse (the model and its
    tools) → deliver (the outbox) → commit (capture, record as done, drop the outbox).

Once an answer exists, it is put in the turn's outbox (``TurnRepository``) before anything is
posted; a redelivered turn that finds an answered outbox skips to delivery and never asks the model
again. A model that fails gets the user a short apology, still captured and counted, as the channel
saw it. Discord refusing a post raises, so the queue retries the turn; a store failing the commit
raises too, the outbox still there for the retry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final, TypeVar

from kioku import clock as kioku_clock
from kioku.adapters.discord_rest import DiscordError
from kioku.adapters.dynamodb.errors import StoreError
from kioku.adapters.dynamodb.turn_repository import TurnRead
from kioku.adapters.llm.base import ChatModel, ChatRequest
from kioku.config import Settings
from kioku.discord.models import Member, Message
from kioku.discord.protocol import MessageType
from kioku.discord.snowflake import is_snowflake
from kioku.domain.dialogue import Dialogue, participants_from_messages, read_dialogue, user_names
from kioku.domain.forgetting import SpeakerForgotten, forgotten_since, snowflake_time
from kioku.domain.ltm.memory import MemoryStoreFailed
from kioku.domain.ltm.ports import Embedder, MemberSearchFailed, MemoryStore
from kioku.domain.ltm.recall import Recall, recall_query, recall_subjects
from kioku.domain.ltm.targets import MEMBER_SEARCH_LIMIT
from kioku.domain.models import (
    ContextItem,
    ContextTag,
    Participant,
    PrivacyLevel,
    ServerConfig,
    UserProfile,
)
from kioku.domain.placement import place_short_term_memory
from kioku.domain.privacy import ChannelDescription
from kioku.domain.replies import CUT_MARK, at_most, split_reply, strip_echoed_metadata
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmLimits
from kioku.domain.stm.intent import has_explicit_long_term_intent
from kioku.domain.system_prompt import system_prompt
from kioku.domain.text import MentionNames, mentioned_channels, person_label, readable_mentions
from kioku.domain.tools import ToolResult
from kioku.domain.turn import (
    BotIdentity,
    LlmUnavailable,
    Outbox,
    TurnAlreadyRecorded,
    TurnContext,
    TurnKey,
    TurnOutcome,
)
from kioku.domain.turn_jobs import TurnJob, TurnSource
from kioku.domain.why import trace_of
from kioku.services import ltm, tools
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.stm import ShortTermMemoryTurn, hinted_persona, remember_persona, turn_memory_query
from kioku.services.turn_delivery import Delivery, DeliveryInterrupted, DeliveryWithdrawn, responder_for
from kioku.services.turn_ports import GuildLookup, ShortTermMemoryWrites, TurnDiscord, TurnRates, TurnStore

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

MAX_TOOL_ROUNDS: Final = 3
DEFAULT_TURN_SECONDS: Final = 120.0
RESERVED_SECONDS: Final = 10.0  # kept back from the model for posting the reply (or the apology)
APOLOGY: Final = "Sorry, I couldn't think of an answer just now. Please try again in a little while."
EMPTY_REPLY: Final = "…"
PERMANENT_REFUSALS: Final = frozenset({403, 404})
RATE_NOTICE: Final = "You're talking to me faster than I can keep up. Give me a minute, then try again."
TOOL_CALLS_EXHAUSTED: Final = "not run: this turn has used all the tool calls it may make; answer without it"
NUDGE_KIND: Final = "nudge"
CONTEXT_KINDS: Final = {
    ContextTag.SYSTEM_PROMPT: "system",
    ContextTag.KNOWLEDGE_LONG_TERM_MEMORY: "long-term memory",
    ContextTag.KNOWLEDGE_SHORT_TERM_MEMORY: "short-term memory",
    ContextTag.TOOL_HINT: "tool hint",
    ContextTag.DIALOGUE_SAMPLE: "dialogue sample",
    ContextTag.DIALOGUE_HISTORY: "dialogue",
}


@dataclass
class TurnRecord:
    """What a turn did: the model requests it sent (for the playground's /context) and what it posted."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    reply_ids: list[str] = field(default_factory=list)
    tool_results: list[tuple[str, ToolResult]] = field(default_factory=list)
    apologised: bool = False
    duplicate: bool = False
    rate_limited: bool = False
    unanswerable: bool = False
    """Discord refused the turn's channel for good (403/404): nothing could be posted."""
    resumed: bool = False
    """An earlier attempt had recorded the answer: this one delivered it without asking the model."""
    model_seconds: list[float] = field(default_factory=list)
    context_kinds: list[str] = field(default_factory=list)
    """What each message of the first request is; later rounds add the tool calls and results."""
    tool_calls_not_run: int = 0


@dataclass
class TurnState:
    """Everything one turn knows, filled in step by step; ``finished``: no further step runs."""

    job: TurnJob
    key: TurnKey
    now: datetime
    redelivered: bool
    time_left: Callable[[], float]
    delivery: Delivery
    record: TurnRecord = field(default_factory=TurnRecord)
    finished: bool = False
    capture: bool = True
    """False: the turn stores no lines (a rate notice, a channel refused for good)."""
    rate_notice: bool = False
    channel: ChannelDescription | None = None
    history: list[Message] = field(default_factory=list)
    turn: TurnContext | None = None
    dialogue: Dialogue | None = None
    dialogue_bot_name: str = ""
    guessed_lineage: int = 0
    subject_ids: list[str] = field(default_factory=list)
    read: TurnRead | None = None
    stm: ShortTermMemoryTurn | None = None
    recalled: Recall = field(default_factory=Recall)
    embeddings: TurnEmbeddings | None = None
    """The turn's embeddings (``EMBEDDINGS_MODEL``): each text embedded once, none after a failure."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    outbox: Outbox | None = None
    """What must still be posted and captured; ``outbox_kept``: it is in DynamoDB as it stands."""
    outbox_kept: bool = False
    notices_kept: int = 0
    """How many of this attempt's notices are kept in its outbox."""

    @property
    def answered(self) -> bool:
        return self.outbox is not None and self.outbox.answered


@dataclass
class TurnService:
    """A turn's collaborators are its ports (``turn_ports``, ``ChatModel``, ``MemoryStore``,
    ``Embedder``): the composition root hands it the adapters, the unit tests in-memory fakes."""

    settings: Settings
    discord: TurnDiscord
    model: ChatModel
    stm_store: ShortTermMemoryWrites
    ltm_store: MemoryStore
    turns: TurnStore
    directory: GuildLookup
    clock: Callable[[], datetime] = kioku_clock.now
    rates: TurnRates | None = None
    """Turns per person per minute (``TURN_RATE_LIMIT_PER_MINUTE``); None counts nothing."""
    embedder: Embedder | None = None
    """``EMBEDDINGS_MODEL``'s endpoint; None ranks memories by their words alone."""

    def run(
        self,
        job: TurnJob,
        *,
        redelivered: bool = False,
        time_left: Callable[[], float] = lambda: DEFAULT_TURN_SECONDS,
    ) -> TurnRecord:
        """Answer ``job``. ``redelivered``: SQS has handed it out before, so an earlier attempt
        counted it against the rate and may have left an outbox. ``time_left``: seconds until the
        turn must be done (Lambda's remaining time); model calls stop short of it, so a slow model
        still ends in an apology."""
        state = TurnState(
            job=job,
            key=TurnKey(job.source.value, job.turn_id, job.author.id, snowflake_time(job.turn_id)),
            now=self.clock(),
            redelivered=redelivered,
            time_left=time_left,
            delivery=Delivery(
                self.discord, job, responder_for(job, self.discord), self.settings.DISCORD_APPLICATION_ID
            ),
        )
        steps = (
            self._gate,
            self._read_discord,
            self._read_memory,
            self._recall,
            self._assemble,
            self._converse,
            self._deliver,
            self._commit,
        )
        for step in steps:
            step(state)
            if state.finished:
                break
        return state.record

    # -- the steps ------------------------------------------------------------------------------

    def _gate(self, state: TurnState) -> None:
        """Count the turn against the minute its author sent it in, once ever (a redelivery, a
        duplicate, a redrive get the number its first attempt got). The first turn over the limit
        gets one short notice, posted and recorded like an answer; later ones end in silence,
        unrecorded (a ``/chat`` still gets the notice: its answer would otherwise stay
        "thinking…"). A turn already done ends here before any notice."""
        job = state.job
        if state.redelivered or self.rates is None:
            return
        limit = self.settings.TURN_RATE_LIMIT_PER_MINUTE
        try:
            taken = self.rates.take(state.key.author_id, job.turn_id, state.key.sent_at, limit)
        except StoreError:
            logger.warning("the turn rate could not be counted; the turn goes on")
            return
        if taken is not None and taken <= limit:
            return
        if self._done_already(state):
            return
        logger.info("turn %s is over its author's rate of %d a minute", job.turn_id, limit)
        state.record.rate_limited = True
        state.capture = False
        if taken is not None or job.source is TurnSource.SLASH_COMMAND:
            state.rate_notice = True
            state.outbox = Outbox(reply=RATE_NOTICE, chunks=(RATE_NOTICE,), capture=False)
        else:
            state.finished = True  # not recorded: a redrive of it is weighed again, never lost as "done"

    def _done_already(self, state: TurnState) -> bool:
        """Whether the turn is recorded as done (a copy back after SQS's deduplication window): read
        on its own only where the turn would not reach its first read (``_read_memory``)."""
        done = self.turns.done(state.key)
        if done is None:
            return False
        logger.info("turn %s was already completed", state.job.turn_id)
        state.record.duplicate = True
        state.record.reply_ids = list(done.reply_ids)
        state.finished = True
        return True

    def _read_discord(self, state: TurnState) -> None:
        """The channel (its privacy, read on every turn: a channel can turn private at any moment)
        and the conversation as it stood when the turn's message was sent."""
        job = state.job
        if state.rate_notice:
            return  # nothing of the channel is needed
        self._typing(job.channel_id)
        try:
            state.channel = self._describe_channel(job)
            state.history = self._history(job, state.now)
        except DiscordError as exc:
            if exc.status not in PERMANENT_REFUSALS:
                raise
            # The bot lost access to the channel, or it is gone: no retry can answer it.
            logger.warning("turn %s ends unanswered: Discord refused its channel (%s)", job.turn_id, exc)
            state.record.unanswerable = True
            state.outbox, state.capture = None, False
            self._commit(state)
            return
        bot = BotIdentity(
            user_id=self.settings.DISCORD_APPLICATION_ID,
            username=_bot_username(state.history, self.settings),
        )
        participants = tuple(participants_from_messages(state.history, bot.user_id))
        # The persona's name heads the bot's own messages, as the system prompt calls it: the name
        # this container last saw; a wrong guess (the persona was renamed) reads the history again.
        guessed_name = hinted_persona(job.guild_id).name
        # Other channels are named only once the server's privacy settings are read, with memory.
        names = self._mention_names(job, state.channel, state.history, bot.user_id, guessed_name, None)
        state.dialogue = self._dialogue(state.history, bot.user_id, names, guessed_name)
        state.dialogue_bot_name = guessed_name
        state.turn = TurnContext(
            guild_id=job.guild_id,
            channel_id=job.channel_id,
            user=_author(job, participants),
            bot=bot,
            config=ServerConfig(guild_id=job.guild_id),
            profile=UserProfile(user_id=state.key.author_id),
            now=state.now,
            parent_channel_id=state.channel.parent_channel_id,
            participants=participants,
            llm_provider=self.settings.LLM_PROVIDER,
            llm_has_tools=self.settings.LLM_SUPPORTS_TOOLS,
            explicit_ltm_intent=has_explicit_long_term_intent(job.content),
            channel_private=state.channel.private,
            private_thread=state.channel.private_thread,
            author_ids=frozenset(state.dialogue.author_ids),
            mention_names=names,
            sent_at=state.key.sent_at,
            turn_id=job.turn_id,
        )

    def _read_memory(self, state: TurnState) -> None:
        """One BatchGetItem for everything with a known key (configuration, profile, short-term
        rows, long-term memory books, this turn's record and outbox), one Query for other channels.
        A turn already done ends here; an outbox an earlier attempt left is taken up."""
        job, turn = state.job, state.turn
        if turn is None:
            return
        limits = StmLimits.from_settings(self.settings)
        state.guessed_lineage = hinted_persona(job.guild_id).lineage_id
        state.subject_ids = [person.user_id for person in recall_subjects(turn)]
        read = self.turns.read(
            state.key,
            turn_memory_query(
                guild_id=job.guild_id,
                channel_id=job.channel_id,
                user_id=turn.user.user_id,
                parent_channel_id=turn.parent_channel_id,
                now=state.now,
                limits=limits,
            ),
            recall_lineage=state.guessed_lineage,
            recall_people=state.subject_ids,
        )
        remember_persona(job.guild_id, read.memory.config.persona)
        state.read = read
        if read.done is not None:
            logger.info("turn %s was already completed", job.turn_id)
            state.record.duplicate = True
            state.record.reply_ids = list(read.done.reply_ids)
            state.finished = True
            return
        if read.outbox is not None and _author_forgotten_since(read, state.key):
            # forget-all came after the message: what the outbox would post or capture quotes it
            logger.warning(
                "turn %s: its outbox is dropped unposted, its author forgot everything", job.turn_id
            )
            state.outbox, state.capture = None, False
            self._commit(state)
            return
        loaded = read.memory
        turn = replace(turn, config=loaded.config, profile=loaded.profile)
        if state.channel is not None and (
            turn.bot_name != state.dialogue_bot_name
            or _mentions_another_channel(job, state.channel, state.history)
        ):
            names = self._mention_names(
                job, state.channel, state.history, turn.bot.user_id, turn.bot_name, turn
            )
            state.dialogue = self._dialogue(state.history, turn.bot.user_id, names, turn.bot_name)
            turn = replace(turn, mention_names=names)
        state.turn = turn
        state.stm = ShortTermMemoryTurn(
            self.stm_store,
            turn,
            loaded.state,
            limits,
            state.channel.name if state.channel else None,
            described_at=state.now,
        )
        if read.outbox is not None:
            state.outbox, state.outbox_kept = read.outbox, True
            state.capture = read.outbox.capture
            if read.outbox.answered:
                logger.warning(
                    "turn %s: delivering the answer an earlier attempt recorded (%d of %d chunks posted)",
                    job.turn_id,
                    len(read.outbox.reply_ids),
                    len(read.outbox.chunks),
                )
                state.record.resumed = True
                state.record.apologised = read.outbox.apologised

    def _recall(self, state: TurnState) -> None:
        """Long-term recall from the books read with the turn; a wrong lineage guess costs one read."""
        turn, read = state.turn, state.read
        if state.answered or turn is None or read is None:
            return
        lineage = turn.config.persona.lineage_id
        if self.embedder is not None:
            state.embeddings = TurnEmbeddings(self.embedder)
        try:
            memories = self.turns.recall(read, lineage, place=turn.place, policy=turn.config.privacy)
        except MemoryStoreFailed:
            logger.exception("long-term memory recall failed; the turn goes on without it")
            return
        query = recall_query(
            turn,
            readable_mentions(state.job.content, turn.mention_names),
            state.dialogue.items if state.dialogue else [],
        )
        state.recalled = ltm.recall_context(
            turn,
            memories,
            query=query,
            budget=self.settings.LTM_RECALL_BUDGET_CHARS,
            embeddings=state.embeddings,
        )

    def _assemble(self, state: TurnState) -> None:
        """The model's messages (persona, recall, dialogue, short-term memory placed by depth), what
        each one is (see ``CONTEXT_KINDS``), and the tools offered."""
        turn, stm = state.turn, state.stm
        if state.answered or turn is None or stm is None or state.dialogue is None:
            return
        items: list[ContextItem] = [ContextItem("system", ContextTag.SYSTEM_PROMPT, system_prompt(turn))]
        if state.recalled.item is not None:
            items.append(state.recalled.item)
        items += state.dialogue.items
        memory = stm.context()
        items = place_short_term_memory(
            items,
            memory.memory_items,
            memory.memory_injection_depth,
            memory.nudge_item,
            memory.nudge_injection_depth,
        )
        kinds = [NUDGE_KIND if item is memory.nudge_item else CONTEXT_KINDS[item.tag] for item in items]
        state.messages, state.record.context_kinds = [item.to_openai() for item in items], kinds
        state.tools = tools.offered(self._tool_bench(state, ()))

    def _converse(self, state: TurnState) -> None:
        """Ask the model, running its tools for a few rounds, and put the answer in the outbox."""
        turn, stm, job = state.turn, state.stm, state.job
        if state.answered or turn is None or stm is None:
            return
        earlier = state.outbox.notices if state.outbox is not None else ()
        try:
            reply = self._ask(state, earlier)
            chunks = at_most(split_reply(reply), self.settings.MAX_REPLY_MESSAGES) or [EMPTY_REPLY]
        except LlmUnavailable as exc:
            logger.warning("the model failed for turn %s: %s", job.turn_id, exc)
            state.record.apologised = True
            reply, chunks = APOLOGY, [APOLOGY]
        # what the tools saved stays saved, after an apology too (and an earlier attempt's): show it
        state.outbox = Outbox(
            reply=reply,
            chunks=tuple(chunks),
            notices=self._owed_notices(state, earlier),
            # a person with full privacy has nothing stored, in the outbox either: the turn is counted
            lines=()
            if turn.profile.privacy_level is PrivacyLevel.FULL
            else tuple(self._crude_turn(job, turn, reply, state.now)),
            apologised=state.record.apologised,
            quoted=self._quoted(state),
            trace=trace_of(
                turn,
                channel_name=state.channel.name if state.channel else None,
                recalled=state.recalled,
                rows=stm.context().shown,
                tool_results=(result for _, result in state.record.tool_results),
            ),
        )
        state.outbox_kept = False

    def _deliver(self, state: TurnState) -> None:
        """Keep the outbox, then post what it has not posted: it is in DynamoDB before the first post."""
        if state.outbox is None:
            return
        delivery = state.delivery
        just_kept = not state.outbox_kept
        if just_kept:
            if not self.turns.keep(state.key, state.outbox, state.now):
                logger.warning(
                    "turn %s posts nothing: someone it answers or quotes forgot everything", state.job.turn_id
                )
                state.outbox, state.capture = None, False
                return
            state.outbox_kept = True
        else:  # an earlier attempt's: what it posted may be in the channel, unrecorded
            state.outbox = delivery.adopt(state.outbox)
        try:
            state.outbox = delivery.post(
                state.outbox, lambda: self.turns.still_kept(state.key), just_kept=just_kept
            )
        except DeliveryWithdrawn as exc:
            logger.warning(
                "turn %s stops posting: forget-all withdrew its outbox (%d of %d chunks, %d of %d notices posted)",
                state.job.turn_id,
                len(exc.outbox.reply_ids),
                len(exc.outbox.chunks),
                len(exc.outbox.notice_ids),
                len(exc.outbox.notices),
            )
            state.record.reply_ids = list(exc.outbox.reply_ids)
            state.outbox, state.capture = None, False
            return
        except DeliveryInterrupted as exc:
            self._keep_posted(state, exc.outbox)
            raise exc.cause from exc
        state.record.reply_ids = list(state.outbox.reply_ids)

    def _commit(self, state: TurnState) -> None:
        """Capture the turn (an apologised one too: the channel saw it), record it as done and drop
        its outbox, in one transaction."""
        state.finished = True
        outbox, stm = state.outbox, state.stm
        outcome = TurnOutcome(
            reply_ids=tuple(state.record.reply_ids),
            apologised=state.record.apologised,
            trace=outbox.trace if outbox is not None else None,
        )
        capture = None
        if state.capture and outbox is not None and stm is not None:
            capture = stm.capture_of(_with_reply_id(outbox.lines, outcome.reply_ids))
        try:
            self.turns.commit(state.key, outcome, state.now, capture)
        except TurnAlreadyRecorded:
            logger.info("turn %s was recorded by another attempt meanwhile", state.job.turn_id)
            if outbox is not None:
                self._drop_outbox(state, outbox)
        except SpeakerForgotten:
            logger.warning(
                "turn %s is dropped, not captured: its speaker asked to forget everything since",
                state.job.turn_id,
            )
            with suppress(TurnAlreadyRecorded):
                self.turns.commit(state.key, outcome, state.now, None)

    def _drop_outbox(self, state: TurnState, outbox: Outbox) -> None:
        """Drop what this attempt kept after a twin worker committed the turn (its commit deleted
        the outbox before this one's keep landed): the user's words must not wait 16 days there."""
        try:
            self.turns.drop(state.key, outbox)
        except StoreError:
            logger.exception(
                "turn %s: the outbox of a twin attempt stays until it expires", state.job.turn_id
            )

    def _keep_posted(self, state: TurnState, outbox: Outbox) -> None:
        try:
            self.turns.keep(state.key, outbox, state.now)
        except StoreError:
            logger.exception(
                "could not note what turn %s posted; the retry reads the channel", state.job.turn_id
            )

    # -- the model and its tools ----------------------------------------------------------------

    def _ask(self, state: TurnState, earlier: tuple[dict[str, Any], ...]) -> str:
        turn, stm, record = state.turn, state.stm, state.record
        assert turn is not None and stm is not None
        messages, bench = state.messages, self._tool_bench(state, earlier)
        for round_number in range(MAX_TOOL_ROUNDS + 1):
            offered = state.tools if round_number < MAX_TOOL_ROUNDS else []
            budget = state.time_left() - RESERVED_SECONDS
            if budget <= 0:
                raise LlmUnavailable("no time left in this turn for the model")
            request = ChatRequest(
                messages=list(messages),
                tools=offered,
                time_budget_seconds=budget,
                max_tokens=self.settings.LLM_MAX_TOKENS,
            )
            record.requests.append({"messages": request.messages, "tools": request.tools})
            asked = time.perf_counter()
            try:
                response = self.model.complete(request)
            finally:
                record.model_seconds.append(time.perf_counter() - asked)
            if not response.tool_calls or not offered:
                # An answer stopped by the token limit ends mid-sentence: it says so, as a reply cut
                # to MAX_REPLY_MESSAGES does; marked before cleaning, the mark goes with any part
                # the cleaner drops (the model writing someone else's turn).
                answer = (response.content or "").rstrip() + (CUT_MARK if response.cut_short else "")
                return strip_echoed_metadata(answer, turn.bot.user_id).strip()
            messages.append(response.assistant_message())
            for call in response.tool_calls:
                if len(record.tool_results) >= self.settings.MAX_TOOL_CALLS_PER_TURN:
                    result = ToolResult("error", {"message": TOOL_CALLS_EXHAUSTED})
                    record.tool_calls_not_run += 1
                else:
                    result = tools.run(call.name, call.arguments, bench)
                    record.tool_results.append((call.name, result))
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result.to_model_content()}
                )
            if len(self._notices(state)) > state.notices_kept:
                # a memory was saved: its notice must survive this attempt, whatever the model does next
                notes = Outbox(notices=self._owed_notices(state, earlier), quoted=self._quoted(state))
                self.turns.keep(state.key, notes, state.now)
                state.notices_kept = len(self._notices(state))
        raise AssertionError("unreachable: the last round offers no tools")

    def _write_announced(
        self,
        state: TurnState,
        earlier: tuple[dict[str, Any], ...],
        result: ToolResult,
        write: Callable[[Sequence[Any]], _T],
    ) -> _T:
        """Change a memory (delete or rewrite it) and keep the notice it owes in the same
        transaction: a retry of an attempt killed right after would find nothing to change (the
        memory gone, or saying the new text already), and no notice to post."""
        results = (*(earlier_result for _, earlier_result in state.record.tool_results), result)
        notices = tuple(r.notification for r in results if r.notification)
        quoted = tuple(dict.fromkeys(r.notification_about for r in results if r.notification_about))
        outbox = Outbox(notices=(*earlier, *(n for n in notices if n not in earlier)), quoted=quoted)
        written, kept = self.turns.write_announced(state.key, outbox, state.now, write)
        if kept:
            state.notices_kept = len(notices)
        return written

    @classmethod
    def _owed_notices(
        cls, state: TurnState, earlier: tuple[dict[str, Any], ...]
    ) -> tuple[dict[str, Any], ...]:
        """An earlier attempt's notices, then this one's that it did not owe already (a retry's
        save of the same memory, known as its own, owes the same notice)."""
        return (*earlier, *(notice for notice in cls._notices(state) if notice not in earlier))

    @staticmethod
    def _notices(state: TurnState) -> tuple[dict[str, Any], ...]:
        return tuple(result.notification for _, result in state.record.tool_results if result.notification)

    @staticmethod
    def _quoted(state: TurnState) -> tuple[str, ...]:
        """The people whose personal memories the turn's notices show."""
        results = state.record.tool_results
        return tuple(
            dict.fromkeys(result.notification_about for _, result in results if result.notification_about)
        )

    def _tool_bench(self, state: TurnState, earlier: tuple[dict[str, Any], ...]) -> tools.ToolBench:
        """What this turn's tools work with; a change a tool makes keeps its notice with it."""
        turn, stm = state.turn, state.stm
        assert turn is not None and stm is not None
        return tools.ToolBench(
            turn=turn,
            stm=stm,
            recalled=state.recalled,
            embeddings=state.embeddings,
            store=self.ltm_store,
            settings=self.settings,
            search_members=self._search_members,
            lookup_member=self._lookup_member,
            speaker_manages_server=lambda: self._manages_server(turn, state.job.member),
            write_announced=lambda result, write: self._write_announced(state, earlier, result, write),
        )

    def _search_members(self, guild_id: str, query: str) -> list[dict[str, Any]]:
        try:
            return self.discord.search_guild_members(guild_id, query, limit=MEMBER_SEARCH_LIMIT)
        except DiscordError as exc:
            raise MemberSearchFailed(str(exc)) from exc

    def _manages_server(self, turn: TurnContext, member: Member | None) -> bool:
        if turn.guild_id is None:
            return False
        try:
            return self.directory.manages_server(turn.guild_id, turn.user.user_id, member)
        except (DiscordError, ValueError):
            logger.warning("could not tell whether the speaker manages the server; treated as a member")
            return False

    def _lookup_member(self, guild_id: str, user_id: str) -> dict[str, Any] | None:
        try:
            return self.directory.member(guild_id, user_id)
        except (DiscordError, ValueError) as exc:
            raise MemberSearchFailed(str(exc)) from exc

    # -- Discord --------------------------------------------------------------------------------

    def _typing(self, channel_id: str) -> None:
        try:
            self.discord.trigger_typing(channel_id)
        except DiscordError as exc:
            logger.info("typing indicator failed: %s", exc)

    def _describe_channel(self, job: TurnJob) -> ChannelDescription:
        """The channel's name, thread parent and privacy, asked of Discord on every guild turn: a
        channel can turn private at any moment. A guild turn whose channel cannot be described fails
        and is retried (without the parent, a thread of a private channel would pass for public)."""
        if job.guild_id is None:
            return ChannelDescription(job.channel_id, private=False)
        return self.directory.describe_channel(job.guild_id, self.discord.get_channel(job.channel_id))

    def _dialogue(
        self, history: list[Message], bot_user_id: str, names: MentionNames, bot_name: str
    ) -> Dialogue:
        return read_dialogue(
            history,
            bot_user_id=bot_user_id,
            supports_vision=self.settings.LLM_SUPPORTS_VISION,
            limit=self.settings.DIALOGUE_HISTORY_LIMIT,
            names=names,
            max_images=self.settings.MAX_IMAGES_PER_REQUEST,
            bot_name=bot_name,
        )

    def _mention_names(
        self,
        job: TurnJob,
        channel: ChannelDescription,
        history: list[Message],
        bot_user_id: str,
        bot_name: str,
        turn: TurnContext | None,
    ) -> MentionNames:
        """Names for the mentions in the turn's text: the people the history carries (the bot by its
        persona's name), the guild's roles (read for the channel's privacy already, so no extra
        request), this channel and, only when a message mentions another one, the guild's channels
        ``turn`` may name under its server's privacy settings (one cached request; None: not read
        yet, none named)."""
        roles = (self.directory.guild_roles(job.guild_id) if job.guild_id else None) or ()
        channels = {channel.channel_id: channel.name} if channel.name else {}
        if job.guild_id and turn and _mentions_another_channel(job, channel, history):
            named = self.directory.channel_names(job.guild_id, turn.place, turn.config.privacy)
            channels = {**named, **channels}
        return MentionNames(
            users={**user_names(history), bot_user_id: bot_name},
            roles={role.id: role.name for role in roles if role.name},
            channels=channels,
        )

    def _history(self, job: TurnJob, now: datetime) -> list[Message]:
        """The conversation as it stood when the turn's message was sent, newest first as Discord
        returns it: a turn that waited in the queue must not answer what was said after it."""
        limit = self.settings.DIALOGUE_HISTORY_LIMIT
        own = job.message if job.message is not None else _slash_message(job, now)
        if limit == 1:
            return [own]
        try:
            earlier = self.discord.get_channel_messages(job.channel_id, limit - 1, before=job.turn_id)
        except DiscordError:
            if job.source is not TurnSource.SLASH_COMMAND:
                raise
            # /chat works where the bot may not read the history: answer the question alone.
            logger.warning("channel history unavailable for /chat %s", job.turn_id)
            earlier = []
        return [own, *earlier]

    def _crude_turn(self, job: TurnJob, turn: TurnContext, reply: str, now: datetime) -> list[CrudeMessage]:
        """The message and its answer as short-term lines, on Discord's clock where it gave one (the
        message's time here, the reply's first post when it is captured: ``_with_reply_id``), so a
        worker's clock off from Discord's neither puts the answer first nor ages the lines."""
        said = CrudeMessage(
            speaker=person_label(turn.user.display_name, turn.user.username),
            user_id=turn.user.user_id,
            role=CrudeRole.USER,
            text=readable_mentions(job.content, turn.mention_names),
            ts=_message_time(job, now),
            message_id=job.turn_id,
        )
        answered = CrudeMessage(
            speaker=turn.bot_name,
            user_id=turn.bot.user_id,
            role=CrudeRole.ASSISTANT,
            text=reply,
            ts=max(now, said.ts),
            message_id=f"{job.turn_id}-reply",
        )
        return [said, answered]


def _mentions_another_channel(job: TurnJob, channel: ChannelDescription, history: list[Message]) -> bool:
    texts = [job.content, *(message.content for message in history)]
    return bool(mentioned_channels(texts) - {channel.channel_id})


def _author_forgotten_since(read: TurnRead, key: TurnKey) -> bool:
    return forgotten_since(read.author_forgotten_at, key.sent_at)


def _with_reply_id(lines: tuple[CrudeMessage, ...], reply_ids: tuple[str, ...]) -> list[CrudeMessage]:
    """The turn's lines with the answer's line under the id of its first posted message, at the
    time Discord posted it."""
    if not reply_ids or not is_snowflake(reply_ids[0]):
        return list(lines)
    posted_at = snowflake_time(reply_ids[0])
    return [
        replace(line, message_id=reply_ids[0], ts=posted_at) if line.role is CrudeRole.ASSISTANT else line
        for line in lines
    ]


def _author(job: TurnJob, participants: tuple[Participant, ...]) -> Participant:
    for participant in participants:
        if participant.user_id == job.author.id:
            return participant
    return Participant(
        user_id=job.author.id,
        username=job.author.username or job.author.id,
        global_name=job.author.global_name,
        nickname=job.member.nick if job.member else None,
        is_bot=job.author.bot,
    )


def _bot_username(history: list[Message], settings: Settings) -> str:
    for message in history:
        if message.author.id == settings.DISCORD_APPLICATION_ID and message.author.username:
            return message.author.username
    return "kioku"


def _slash_message(job: TurnJob, now: datetime) -> Message:
    """The ``/chat`` text as the newest channel message, so the dialogue reads as usual."""
    return Message(
        id=job.turn_id,
        author=job.author,
        content=job.content,
        timestamp=now,
        type=MessageType.DEFAULT,
        channel_id=job.channel_id,
        member=job.member,
    )


def _message_time(job: TurnJob, now: datetime) -> datetime:
    stamp = job.message.timestamp if job.message else None
    return stamp or now
