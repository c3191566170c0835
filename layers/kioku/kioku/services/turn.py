"""One chat turn, from a queued job to a posted reply.

Load the memory state, assemble the context (persona, long-term recall, the dialogue of seed 004,
short-term memory placed by depth), ask the model, run its tools for a few rounds, post the reply
and the memory notifications, then capture the turn into short-term memory.

A model that fails gets the user a short apology; the turn is still captured and counted, as the
channel saw it. Discord refusing the reply raises, so the queue retries the turn; a reply Discord
took only part of is kept (``UnfinishedReply``) and the retry posts the rest of the same text. Every
post carries a nonce derived from the turn, so a retry never doubles a message, and the capture is
keyed by message ids, so it never doubles a counter.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from kioku import clock as kioku_clock
from kioku.adapters.discord_rest import DiscordError, DiscordRest
from kioku.adapters.dynamodb.errors import StoreError
from kioku.adapters.dynamodb.forgetting import forgotten_at_from_item, forgotten_key
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.stm_store import StmStore, TurnAlreadyRecorded
from kioku.adapters.dynamodb.turn_ledger import (
    RateLedger,
    TurnLedger,
    TurnOutcome,
    UnfinishedReply,
    outbox_key,
    outcome_from_item,
    turn_record_key,
    unfinished_from_item,
)
from kioku.adapters.llm.base import ChatModel, ChatRequest, LlmUnavailable, ToolCall
from kioku.config import Settings
from kioku.domain.dialogue import (
    DIALOGUE_CONVENTIONS,
    Dialogue,
    participants_from_messages,
    read_dialogue,
    user_names,
)
from kioku.domain.forgetting import Said, forgotten_since, snowflake_time
from kioku.domain.ltm.memory import MemoryStoreFailed
from kioku.domain.ltm.ports import MemberSearchFailed
from kioku.domain.ltm.ranking import RecallQuery
from kioku.domain.ltm.recall import Recall, recall_query, recall_subjects
from kioku.domain.ltm.targets import MEMBER_SEARCH_LIMIT
from kioku.domain.models import ContextItem, ContextTag, Participant, ServerConfig, UserProfile
from kioku.domain.placement import place_short_term_memory
from kioku.domain.privacy import ChannelDescription
from kioku.domain.replies import at_most, split_reply, strip_echoed_metadata
from kioku.domain.stm.entries import CrudeMessage, CrudeRole, StmLimits
from kioku.domain.stm.intent import has_explicit_long_term_intent
from kioku.domain.stm.update_tool import TOOL_NAME as STM_TOOL_NAME
from kioku.domain.text import MentionNames, person_label, readable_mentions
from kioku.domain.tools import ToolResult
from kioku.domain.turn import BotIdentity, TurnContext
from kioku.domain.turn_jobs import TurnJob, TurnSource
from kioku.services import ltm
from kioku.services.commands.discord import MESSAGE_FLAG_LOADING
from kioku.services.guild_directory import GuildDirectory
from kioku.services.stm import ShortTermMemoryTurn, hinted_persona, load_turn_memory

logger = logging.getLogger(__name__)

MAX_TOOL_ROUNDS: Final = 3
MAX_MESSAGES_AFTER: Final = 100  # how far past a redelivered turn's message its answer is looked for
DEFAULT_TURN_SECONDS: Final = 120.0
RESERVED_SECONDS: Final = 10.0  # kept back from the model for posting the reply (or the apology)
APOLOGY: Final = "Sorry, I couldn't think of an answer just now. Please try again in a little while."
EMPTY_REPLY: Final = "…"
PERMANENT_REFUSALS: Final = frozenset({403, 404})
RATE_NOTICE: Final = "You're talking to me faster than I can keep up. Give me a minute, then try again."
TOOL_CALLS_EXHAUSTED: Final = "not run: this turn has used all the tool calls it may make; answer without it"
NOTIFICATION_NONCE_MARK: Final = "n"
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
    model_seconds: list[float] = field(default_factory=list)
    context_kinds: list[str] = field(default_factory=list)
    """What each message of the first request is; later rounds add the tool calls and results."""
    tool_calls_not_run: int = 0


@dataclass
class TurnService:
    settings: Settings
    discord: DiscordRest
    model: ChatModel
    stm_store: StmStore
    ltm_store: DynamoMemoryStore
    ledger: TurnLedger
    clock: Callable[[], datetime] = kioku_clock.now
    directory: GuildDirectory | None = None
    rates: RateLedger | None = None
    """Turns per person per minute (``TURN_RATE_LIMIT_PER_MINUTE``); None counts nothing."""

    def __post_init__(self) -> None:
        if self.directory is None:
            self.directory = GuildDirectory(self.discord)

    def run(
        self,
        job: TurnJob,
        *,
        redelivered: bool = False,
        time_left: Callable[[], float] = lambda: DEFAULT_TURN_SECONDS,
    ) -> TurnRecord:
        """Answer ``job``. ``redelivered``: SQS has handed it out before, so an earlier attempt may
        have replied and died before recording the turn; Discord is asked before answering again.
        ``time_left``: seconds until the turn must be done (Lambda's remaining time); model calls
        stop short of it, so a slow model still ends in an apology."""
        record = TurnRecord()
        now = self.clock()
        # An earlier attempt that posted (part of) the answer has been counted against the rate.
        answered = redelivered and self._answered_before(job)
        if not answered:
            if not self._within_rate(job, record, now):
                return record
            self._typing(job.channel_id)
        try:
            channel = self._describe_channel(job)
            history = self._history(job, now)
        except DiscordError as exc:
            if exc.status not in PERMANENT_REFUSALS:
                raise
            # The bot lost access to the channel, or it is gone: no retry can answer it.
            logger.warning("turn %s ends unanswered: Discord refused its channel (%s)", job.turn_id, exc)
            record.unanswerable = True
            self._record_alone(job, record, now)
            return record
        bot = BotIdentity(
            user_id=self.settings.DISCORD_APPLICATION_ID, username=_bot_username(history, self.settings)
        )
        participants = tuple(participants_from_messages(history, bot.user_id))
        # The persona's name heads the bot's own messages, as the system prompt calls it: the name
        # this container last saw; a wrong guess (the persona was renamed) reads the history again.
        guessed_name = hinted_persona(job.guild_id).name
        names = self._mention_names(job, channel, history, bot.user_id, guessed_name)
        dialogue = self._dialogue(history, bot.user_id, names, guessed_name)
        turn = TurnContext(
            server_id=job.guild_id,
            channel_id=job.channel_id,
            user=_author(job, participants),
            bot=bot,
            config=ServerConfig(server_id=job.guild_id),
            profile=UserProfile(user_id=str(job.author["id"])),
            now=now,
            parent_channel_id=channel.parent_channel_id,
            participants=participants,
            llm_provider=self.settings.LLM_PROVIDER,
            llm_has_tools=self.settings.LLM_SUPPORTS_TOOLS,
            explicit_ltm_intent=has_explicit_long_term_intent(job.content),
            channel_private=channel.private,
            private_thread=channel.private_thread,
            author_ids=frozenset(dialogue.author_ids),
            mention_names=names,
            sent_at=snowflake_time(job.turn_id),
        )

        # One BatchGetItem for everything with a known key (configuration, profile, short-term rows,
        # long-term memory books, this turn's completion record and unfinished reply, the author's
        # forget-all mark), one Query for other channels.
        limits = StmLimits.from_settings(self.settings)
        guessed_lineage = hinted_persona(job.guild_id).lineage_id
        subject_ids = [person.user_id for person in recall_subjects(turn)]
        done_key = turn_record_key(job.source.value, job.turn_id)
        unfinished_at = outbox_key(turn.user.user_id, job.source.value, job.turn_id)
        forgotten_mark = forgotten_key(turn.user.user_id)
        loaded = load_turn_memory(
            self.stm_store,
            server_id=job.guild_id,
            channel_id=job.channel_id,
            user_id=turn.user.user_id,
            parent_channel_id=turn.parent_channel_id,
            now=now,
            limits=limits,
            extra_keys=[
                done_key,
                unfinished_at,
                forgotten_mark,
                *self.ltm_store.recall_keys(job.guild_id, guessed_lineage, subject_ids),
            ],
        )
        done = outcome_from_item(loaded.extra.get((done_key["pk"], done_key["sk"])))
        if done is not None:
            logger.info("turn %s was already completed", job.turn_id)
            record.duplicate = True
            record.reply_ids = list(done.reply_ids)
            return record
        turn = replace(turn, config=loaded.config, profile=loaded.profile)
        if turn.bot_name != guessed_name:
            names = self._mention_names(job, channel, history, bot.user_id, turn.bot_name)
            dialogue = self._dialogue(history, bot.user_id, names, turn.bot_name)
            turn = replace(turn, mention_names=names)
        unfinished = unfinished_from_item(loaded.extra.get((unfinished_at["pk"], unfinished_at["sk"])))
        forgotten_at = forgotten_at_from_item(loaded.extra.get((forgotten_mark["pk"], forgotten_mark["sk"])))
        if forgotten_since(forgotten_at, snowflake_time(job.turn_id)):
            unfinished = None  # forget-all dropped it: its reply and notices quote what was forgotten
        if answered and unfinished is None:
            logger.info("turn %s was answered by an earlier attempt", job.turn_id)
            record.duplicate = True
            self._record_alone(job, record, now)
            return record

        stm = ShortTermMemoryTurn(self.stm_store, turn, loaded.state, limits, channel.name, described_at=now)
        if unfinished is not None:
            logger.info("turn %s: posting the rest of the reply an earlier attempt began", job.turn_id)
            record.apologised = unfinished.apologised
            record.reply_ids = list(unfinished.reply_ids)
            self._adopt_posted(job, unfinished.chunks, record)
            self._finish(job, turn, stm, unfinished, record, now, kept=True)
            return record

        query = recall_query(turn, readable_mentions(job.content, turn.mention_names), dialogue.items)
        recalled = self._recall(turn, loaded.extra, guessed_lineage, subject_ids, query)
        messages, record.context_kinds = self._context(turn, stm, dialogue, recalled.item)
        tools = [
            tool for tool in [stm.tool_definition(), *ltm.long_term_memory_tools(turn, recalled)] if tool
        ]
        try:
            reply = self._converse(turn, stm, messages, tools, record, time_left, job.member, recalled)
            chunks = at_most(split_reply(reply), self.settings.MAX_REPLY_MESSAGES) or [EMPTY_REPLY]
        except LlmUnavailable as exc:
            logger.warning("the model failed for turn %s: %s", job.turn_id, exc)
            record.apologised = True
            reply, chunks = APOLOGY, [APOLOGY]
        # what the tools saved stays saved, after an apology too: show it
        notices = tuple(result.notification for _, result in record.tool_results if result.notification)
        quoted = tuple(
            result.notification_about for _, result in record.tool_results if result.notification_about
        )
        answer = UnfinishedReply(
            reply, tuple(chunks), notices=notices, apologised=record.apologised, quoted=quoted
        )
        self._finish(job, turn, stm, answer, record, now)
        return record

    def _finish(
        self,
        job: TurnJob,
        turn: TurnContext,
        stm: ShortTermMemoryTurn,
        answer: UnfinishedReply,
        record: TurnRecord,
        now: datetime,
        *,
        kept: bool = False,
    ) -> None:
        """Post the chunks of ``answer`` not posted yet and its notifications, then capture the turn
        (an apologised one too: the channel saw it) with its completion record. A chunk Discord
        refuses raises, having kept what is needed to post the rest on redelivery; ``kept``: the
        answer is such a kept one, dropped with the capture (the reply's text stays no longer)."""
        try:
            self._post(job, list(answer.chunks), record)
        except DiscordError:
            self._keep_unfinished(job, replace(answer, reply_ids=tuple(record.reply_ids)), now)
            raise
        self._notify(job, answer.notices)
        also = [self.ledger.op_record(job.source.value, job.turn_id, _outcome(record), now)]
        if kept:
            also.append(self.ledger.op_forget_unfinished(turn.user.user_id, job.source.value, job.turn_id))
        try:
            captured = stm.capture(self._crude_turn(job, turn, answer.reply, record, now), also=also)
        except TurnAlreadyRecorded:
            logger.info("turn %s was recorded by another attempt meanwhile", job.turn_id)
            return
        if not captured:
            self._record_alone(job, record, now)

    def _keep_unfinished(self, job: TurnJob, unfinished: UnfinishedReply, now: datetime) -> None:
        said = Said(str(job.author["id"]), snowflake_time(job.turn_id))
        try:
            if not self.ledger.keep_unfinished(job.source.value, job.turn_id, unfinished, now, said=said):
                logger.info(
                    "turn %s: its reply is not kept, someone it quotes forgot everything since", job.turn_id
                )
        except StoreError:
            logger.exception("could not keep the unfinished reply of turn %s", job.turn_id)

    # -- context --------------------------------------------------------------------------------

    def _recall(
        self,
        turn: TurnContext,
        items: Mapping[tuple[str, str], Any],
        guessed_lineage: int,
        subject_ids: list[str],
        query: RecallQuery,
    ) -> Recall:
        """Long-term recall from the books read with the turn; a wrong lineage guess costs one read."""
        lineage = turn.config.persona.lineage_id
        try:
            where = {"place": turn.place, "policy": turn.config.privacy}
            if lineage == guessed_lineage:
                memories = self.ltm_store.recall_from_items(
                    items, turn.server_id, lineage, subject_ids, **where
                )
            else:
                memories = self.ltm_store.recall(turn.server_id, lineage, subject_ids, **where)
        except MemoryStoreFailed:
            logger.exception("long-term memory recall failed; the turn goes on without it")
            return Recall()
        return ltm.recall_context(turn, memories, query=query, budget=self.settings.LTM_RECALL_BUDGET_CHARS)

    def _context(
        self, turn: TurnContext, stm: ShortTermMemoryTurn, dialogue: Dialogue, recalled: ContextItem | None
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """The model's messages, and what each one is (see ``CONTEXT_KINDS``)."""
        items: list[ContextItem] = [ContextItem("system", ContextTag.SYSTEM_PROMPT, system_prompt(turn))]
        if recalled is not None:
            items.append(recalled)
        items += dialogue.items
        memory = stm.context()
        items = place_short_term_memory(
            items,
            memory.memory_items,
            memory.memory_injection_depth,
            memory.nudge_item,
            memory.nudge_injection_depth,
        )
        kinds = [NUDGE_KIND if item is memory.nudge_item else CONTEXT_KINDS[item.tag] for item in items]
        return [item.to_openai() for item in items], kinds

    def _within_rate(self, job: TurnJob, record: TurnRecord, now: datetime) -> bool:
        """Count the turn against its author's minute. The first turn over the limit gets one short
        notice; later ones are dropped in silence (a ``/chat`` still gets the notice: its answer
        would otherwise stay "thinking…")."""
        if self.rates is None:
            return True
        limit = self.settings.TURN_RATE_LIMIT_PER_MINUTE
        try:
            taken = self.rates.take(str(job.author["id"]), now, limit)
        except StoreError:
            logger.warning("the turn rate could not be counted; the turn goes on")
            return True
        if taken is not None and taken <= limit:
            return True
        logger.info("turn %s is over its author's rate of %d a minute", job.turn_id, limit)
        record.rate_limited = True
        if taken is not None or job.source is TurnSource.SLASH_COMMAND:
            self._post(job, [RATE_NOTICE], record)
        self._record_alone(job, record, now)
        return False

    def _record_alone(self, job: TurnJob, record: TurnRecord, now: datetime) -> None:
        """Mark the turn done when no capture carried the record (an apology, a failed capture)."""
        try:
            self.ledger.record(job.source.value, job.turn_id, _outcome(record), now)
        except StoreError:
            logger.exception("could not record turn %s as done", job.turn_id)

    # -- the model and its tools ----------------------------------------------------------------

    def _converse(
        self,
        turn: TurnContext,
        stm: ShortTermMemoryTurn,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        record: TurnRecord,
        time_left: Callable[[], float],
        member: dict[str, Any] | None = None,
        recalled: Recall | None = None,
    ) -> str:
        for round_number in range(MAX_TOOL_ROUNDS + 1):
            offered = tools if round_number < MAX_TOOL_ROUNDS else []
            budget = time_left() - RESERVED_SECONDS
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
                return strip_echoed_metadata(response.content or "").strip()
            messages.append(response.assistant_message())
            for call in response.tool_calls:
                if len(record.tool_results) >= self.settings.MAX_TOOL_CALLS_PER_TURN:
                    result = ToolResult("error", {"message": TOOL_CALLS_EXHAUSTED})
                    record.tool_calls_not_run += 1
                else:
                    result = self._run_tool(call, turn, stm, member, recalled or Recall())
                    record.tool_results.append((call.name, result))
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result.to_model_content()}
                )
        raise AssertionError("unreachable: the last round offers no tools")

    def _run_tool(
        self,
        call: ToolCall,
        turn: TurnContext,
        stm: ShortTermMemoryTurn,
        member: dict[str, Any] | None,
        recalled: Recall,
    ) -> ToolResult:
        common = {
            "store": self.ltm_store,
            "search_members": self._search_members,
            "lookup_member": self._lookup_member,
            "settings": self.settings,
        }
        try:
            if call.name == STM_TOOL_NAME:
                return stm.run_update_tool(call.arguments)
            if call.name == ltm.CREATE_TOOL_NAME:
                return ltm.create_long_term_memory(
                    call.arguments,
                    turn,
                    speaker_manages_server=lambda: self._manages_server(turn, member),
                    recalled=recalled,
                    **common,
                )
            if call.name == ltm.UPDATE_TOOL_NAME:
                return ltm.update_long_term_memory(call.arguments, turn, **common)
            if call.name == ltm.SEARCH_TOOL_NAME:
                return ltm.search_long_term_memory(call.arguments, turn, recalled)
        except Exception:
            logger.exception("tool %s failed", call.name)
            return ToolResult("error", {"message": "the tool failed on our side; do not retry it this turn"})
        return ToolResult("error", {"message": f"there is no tool named {call.name!r}"})

    def _search_members(self, guild_id: str, query: str) -> list[dict[str, Any]]:
        try:
            return self.discord.search_guild_members(guild_id, query, limit=MEMBER_SEARCH_LIMIT)
        except DiscordError as exc:
            raise MemberSearchFailed(str(exc)) from exc

    def _manages_server(self, turn: TurnContext, member: dict[str, Any] | None) -> bool:
        assert self.directory is not None
        if turn.server_id is None:
            return False
        try:
            return self.directory.manages_server(turn.server_id, turn.user.user_id, member)
        except (DiscordError, ValueError):
            logger.warning("could not tell whether the speaker manages the server; treated as a member")
            return False

    def _lookup_member(self, guild_id: str, user_id: str) -> dict[str, Any] | None:
        assert self.directory is not None
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
        assert self.directory is not None
        return self.directory.describe_channel(job.guild_id, self.discord.get_channel(job.channel_id))

    def _dialogue(
        self, history: list[dict[str, Any]], bot_user_id: str, names: MentionNames, bot_name: str
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
        history: list[dict[str, Any]],
        bot_user_id: str,
        bot_name: str,
    ) -> MentionNames:
        """Names for the mentions in the turn's text: the people the history carries (the bot by its
        persona's name), the guild's roles (read for the channel's privacy already, so no extra
        request) and this channel."""
        roles = (self.directory.roles(job.guild_id) if self.directory and job.guild_id else None) or []
        return MentionNames(
            users={**user_names(history), bot_user_id: bot_name},
            roles={str(role.get("id")): str(role.get("name") or "") for role in roles if role.get("name")},
            channels={channel.channel_id: channel.name} if channel.name else {},
        )

    def _history(self, job: TurnJob, now: datetime) -> list[dict[str, Any]]:
        """The conversation as it stood when the turn's message was sent, newest first as Discord
        returns it: a turn that waited in the queue must not answer what was said after it."""
        limit = self.settings.DIALOGUE_HISTORY_LIMIT
        own = _slash_message(job, now) if job.source is TurnSource.SLASH_COMMAND else job.message
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

    def _answered_before(self, job: TurnJob) -> bool:
        """Whether an earlier attempt already posted this turn's answer."""
        if job.source is TurnSource.SLASH_COMMAND:
            original = self.discord.get_original_response(str(job.application_id), str(job.interaction_token))
            loading = int(original.get("flags") or 0) & MESSAGE_FLAG_LOADING
            return not loading and bool(original.get("content") or original.get("embeds"))
        later = self.discord.get_channel_messages(job.channel_id, MAX_MESSAGES_AFTER, after=job.turn_id)
        bot_user_id = self.settings.DISCORD_APPLICATION_ID
        return any(
            str((message.get("author") or {}).get("id")) == bot_user_id
            and str((message.get("message_reference") or {}).get("message_id")) == job.turn_id
            for message in later
        )

    def _adopt_posted(self, job: TurnJob, chunks: Sequence[str], record: TurnRecord) -> None:
        """Count as posted the next chunks Discord holds though their attempt never heard back (it
        died, or the answer was lost): the bot's messages after the turn, in order, with their text."""
        if len(record.reply_ids) >= len(chunks):
            return
        later = self.discord.get_channel_messages(job.channel_id, MAX_MESSAGES_AFTER, after=job.turn_id)
        bot_user_id = self.settings.DISCORD_APPLICATION_ID
        for message in sorted(later, key=lambda message: int(message["id"])):
            index = len(record.reply_ids)
            if index >= len(chunks) or (job.source is TurnSource.SLASH_COMMAND and index == 0):
                return
            own = str((message.get("author") or {}).get("id")) == bot_user_id
            if own and str(message["id"]) not in record.reply_ids and message.get("content") == chunks[index]:
                record.reply_ids.append(str(message["id"]))

    def _post(self, job: TurnJob, chunks: list[str], record: TurnRecord) -> None:
        """Post the chunks from the first one ``record`` has no id for."""
        for index, chunk in enumerate(chunks):
            if index < len(record.reply_ids):
                continue
            if job.source is TurnSource.SLASH_COMMAND and index == 0:
                posted = self.discord.edit_original_response(
                    str(job.application_id), str(job.interaction_token), chunk
                )
            else:
                reply_to = job.turn_id if job.source is TurnSource.MESSAGE and index == 0 else None
                posted = self.discord.create_message(
                    job.channel_id, chunk, reply_to=reply_to, nonce=f"{job.turn_id}-{index}"
                )
            record.reply_ids.append(str(posted.get("id", "")))

    def _notify(self, job: TurnJob, notices: Sequence[dict[str, Any]]) -> None:
        for index, embed in enumerate(notices):
            try:
                self.discord.create_message(
                    job.channel_id, "", embeds=[embed], nonce=f"{job.turn_id}{NOTIFICATION_NONCE_MARK}{index}"
                )
            except DiscordError as exc:
                logger.warning("memory notification could not be posted: %s", exc)

    def _crude_turn(
        self, job: TurnJob, turn: TurnContext, reply: str, record: TurnRecord, now: datetime
    ) -> list[CrudeMessage]:
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
            ts=now,
            message_id=record.reply_ids[0] if record.reply_ids else f"{job.turn_id}-reply",
        )
        return [said, answered]


DEFAULT_PERSONA_PROMPT: Final = (
    "You are {bot}, a friendly, thoughtful member of this Discord community. You remember what people "
    "tell you: short-term memory keeps the recent conversation of each channel, long-term memory keeps "
    "lasting facts. Answer naturally and briefly, as one participant in a group chat, in the language "
    "you are addressed in."
)


def system_prompt(turn: TurnContext) -> str:
    persona = turn.config.persona
    base = persona.system_prompt or DEFAULT_PERSONA_PROMPT
    where = "a direct message" if turn.is_dm else "a Discord server channel"
    return "\n\n".join(
        [
            base.replace("{bot}", persona.name).replace("{user}", turn.user.display_name),
            f"You are talking in {where}. The person who just addressed you is {turn.user.display_name}. "
            f"Current time (UTC): {turn.now:%Y-%m-%d %H:%M}.",
            DIALOGUE_CONVENTIONS,
        ]
    )


def _outcome(record: TurnRecord) -> TurnOutcome:
    return TurnOutcome(reply_ids=tuple(record.reply_ids), apologised=record.apologised)


def _author(job: TurnJob, participants: tuple[Participant, ...]) -> Participant:
    author_id = str(job.author["id"])
    for participant in participants:
        if participant.user_id == author_id:
            return participant
    return Participant(
        user_id=author_id,
        username=str(job.author.get("username") or author_id),
        global_name=job.author.get("global_name"),
        nickname=(job.member or {}).get("nick"),
        is_bot=bool(job.author.get("bot")),
    )


def _bot_username(history: list[dict[str, Any]], settings: Settings) -> str:
    for message in history:
        author = message.get("author") or {}
        if str(author.get("id")) == settings.DISCORD_APPLICATION_ID and author.get("username"):
            return str(author["username"])
    return "kioku"


def _slash_message(job: TurnJob, now: datetime) -> dict[str, Any]:
    """The ``/chat`` text as the newest channel message, so the dialogue reads as usual."""
    return {
        "id": job.turn_id,
        "channel_id": job.channel_id,
        "author": job.author,
        "member": job.member,
        "content": job.content,
        "timestamp": now.isoformat(),
        "type": 0,
    }


def _message_time(job: TurnJob, now: datetime) -> datetime:
    stamp = job.message.get("timestamp") if job.message else None
    if isinstance(stamp, str):
        try:
            return kioku_clock.parse_time(stamp)
        except ValueError:
            pass
    return now
