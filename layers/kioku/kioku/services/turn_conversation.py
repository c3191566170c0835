"""A turn's talk with the model: the messages it is shown (``assemble``, a ``Prompt``), each request,
the tool calls it answers with (run through the tools registry, ``services/tools.py``, at most
``MAX_TOOL_CALLS_PER_TURN`` of them over ``MAX_TOOL_ROUNDS``), and its answer (``ask``); the notices
the tools' changes owe are kept through the turn's unit of work as soon as they exist."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kioku.adapters.llm.base import ChatModel, ChatRequest
from kioku.config import Settings
from kioku.discord.models import Member
from kioku.domain.conditions import DiscordRefused
from kioku.domain.ltm.ports import MemberSearchFailed, MemoryStore
from kioku.domain.ltm.recall import Recall
from kioku.domain.ltm.targets import MEMBER_SEARCH_LIMIT
from kioku.domain.models import ContextItem, ContextTag, PrivacyLevel
from kioku.domain.placement import place_short_term_memory
from kioku.domain.replies import CUT_MARK, strip_echoed_metadata
from kioku.domain.stm.capture import turn_lines
from kioku.domain.system_prompt import system_prompt
from kioku.domain.tools import ToolResult
from kioku.domain.turn import LlmUnavailable, Outbox, TurnContext
from kioku.domain.why import trace_of
from kioku.services import tool_failures, tools
from kioku.services.embeddings import TurnEmbeddings
from kioku.services.turn_ports import GuildLookup, TurnDiscord
from kioku.services.turn_state import Loaded, TurnAttempt
from kioku.services.turn_unit_of_work import TurnUnitOfWork

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

MAX_TOOL_ROUNDS: Final = 3
RESERVED_SECONDS: Final = 10.0  # kept back from the model for posting the reply (or the apology)
NUDGE_KIND: Final = "nudge"
CONTEXT_KINDS: Final = {
    ContextTag.SYSTEM_PROMPT: "system",
    ContextTag.KNOWLEDGE_LONG_TERM_MEMORY: "long-term memory",
    ContextTag.KNOWLEDGE_SHORT_TERM_MEMORY: "short-term memory",
    ContextTag.TOOL_HINT: "tool hint",
    ContextTag.DIALOGUE_SAMPLE: "dialogue sample",
    ContextTag.DIALOGUE_HISTORY: "dialogue",
}


@dataclass(frozen=True, slots=True)
class GuildMembers:
    """The member directory target resolution asks (``ltm.ports.MemberDirectory``): Discord's member
    search, and the guild directory's member (cached per container)."""

    discord: TurnDiscord
    directory: GuildLookup

    def search(self, guild_id: str, query: str) -> list[Member]:
        try:
            return self.discord.search_guild_members(guild_id, query, limit=MEMBER_SEARCH_LIMIT)
        except DiscordRefused as exc:
            raise MemberSearchFailed(str(exc)) from exc

    def member(self, guild_id: str, user_id: str) -> Member | None:
        try:
            return self.directory.member(guild_id, user_id)
        except (DiscordRefused, ValueError) as exc:
            raise MemberSearchFailed(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class Prompt:
    """What the model is first shown: its messages, what each one is (``CONTEXT_KINDS``), the tools
    offered."""

    messages: tuple[dict[str, Any], ...]
    kinds: tuple[str, ...]
    tools: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One turn's model and tools, over what the turn loaded and recalled; what a tool's change
    owes is kept through the turn's unit of work, each request and tool result noted in its record."""

    settings: Settings
    model: ChatModel
    discord: TurnDiscord
    directory: GuildLookup
    ltm_store: MemoryStore
    work: TurnUnitOfWork
    attempt: TurnAttempt
    loaded: Loaded
    recalled: Recall
    embeddings: TurnEmbeddings | None

    def assemble(self) -> Prompt:
        """The model's messages (persona, recall, dialogue, short-term memory placed by depth), what
        each one is (see ``CONTEXT_KINDS``), and the tools offered."""
        turn, stm, dialogue = self.loaded.turn, self.loaded.stm, self.loaded.dialogue
        items: list[ContextItem] = [ContextItem("system", ContextTag.SYSTEM_PROMPT, system_prompt(turn))]
        if self.recalled.item is not None:
            items.append(self.recalled.item)
        items += dialogue.items
        memory = stm.context()
        items = place_short_term_memory(
            items,
            memory.memory_items,
            memory.memory_injection_depth,
            memory.nudge_item,
            memory.nudge_injection_depth,
        )
        kinds = tuple(NUDGE_KIND if item is memory.nudge_item else CONTEXT_KINDS[item.tag] for item in items)
        return Prompt(tuple(item.to_openai() for item in items), kinds, tools.offered(self._tool_bench(())))

    def ask(self, prompt: Prompt, earlier: tuple[dict[str, Any], ...]) -> str:
        """The model's answer to ``prompt``, after running the tools it calls for a few rounds."""
        turn, record = self.loaded.turn, self.attempt.record
        messages, bench = list(prompt.messages), self._tool_bench(earlier)
        for round_number in range(MAX_TOOL_ROUNDS + 1):
            offered = prompt.tools if round_number < MAX_TOOL_ROUNDS else []
            budget = self.attempt.time_left() - RESERVED_SECONDS
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
                    result = tool_failures.calls_exhausted()
                    record.tool_calls_not_run += 1
                else:
                    result = tools.run(call.name, call.arguments, bench)
                    record.tool_results.append((call.name, result))
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result.to_model_content()}
                )
            if len(self._notices()) > self.work.notices_kept:
                # a memory was saved: its notice must survive this attempt, whatever the model does next
                self.work.keep_notices(self.owed_notices(earlier), self.quoted(), len(self._notices()))
        raise AssertionError("unreachable: the last round offers no tools")

    def outbox(self, reply: str, chunks: tuple[str, ...], earlier: tuple[dict[str, Any], ...]) -> Outbox:
        """The answer's outbox (the apology's too): what the tools saved stays saved, after an
        apology as well (and an earlier attempt's, ``earlier``): its notices show it."""
        turn, stm, record = self.loaded.turn, self.loaded.stm, self.attempt.record
        return Outbox(
            reply=reply,
            chunks=chunks,
            notices=self.owed_notices(earlier),
            # a person with full privacy has nothing stored, in the outbox either: the turn is counted
            lines=()
            if turn.profile.privacy_level is PrivacyLevel.FULL
            else tuple(turn_lines(self.attempt.job, turn, reply, turn.now, self.loaded.covered)),
            apologised=record.apologised,
            quoted=self.quoted(),
            trace=trace_of(
                turn,
                channel_name=self.loaded.channel.name,
                recalled=self.recalled,
                rows=stm.context().shown,
                tool_results=(result for _, result in record.tool_results),
            ),
            covers=tuple(message.id for message in self.loaded.covered),
        )

    def _write_announced(
        self,
        earlier: tuple[dict[str, Any], ...],
        result: ToolResult,
        write: Callable[[Sequence[Any]], _T],
    ) -> _T:
        """Change a memory (delete or rewrite it) and keep the notice it owes in the same
        transaction: a retry of an attempt killed right after would find nothing to change (the
        memory gone, or saying the new text already), and no notice to post."""
        results = (*(earlier_result for _, earlier_result in self.attempt.record.tool_results), result)
        notices = tuple(r.notification for r in results if r.notification)
        quoted = tuple(dict.fromkeys(r.notification_about for r in results if r.notification_about))
        outbox = Outbox(notices=(*earlier, *(n for n in notices if n not in earlier)), quoted=quoted)
        return self.work.write_announced(outbox, write, len(notices))

    def owed_notices(self, earlier: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
        """An earlier attempt's notices, then this one's that it did not owe already (a retry's
        save of the same memory, known as its own, owes the same notice)."""
        return (*earlier, *(notice for notice in self._notices() if notice not in earlier))

    def _notices(self) -> tuple[dict[str, Any], ...]:
        return tuple(
            result.notification for _, result in self.attempt.record.tool_results if result.notification
        )

    def quoted(self) -> tuple[str, ...]:
        """The people whose personal memories the turn's notices show."""
        results = self.attempt.record.tool_results
        return tuple(
            dict.fromkeys(result.notification_about for _, result in results if result.notification_about)
        )

    def _tool_bench(self, earlier: tuple[dict[str, Any], ...]) -> tools.ToolBench:
        """What this turn's tools work with; a change a tool makes keeps its notice with it."""
        turn = self.loaded.turn
        return tools.ToolBench(
            turn=turn,
            stm=self.loaded.stm,
            recalled=self.recalled,
            embeddings=self.embeddings,
            store=self.ltm_store,
            settings=self.settings,
            members=GuildMembers(self.discord, self.directory),
            speaker_manages_server=lambda: self._manages_server(turn, self.attempt.job.member),
            write_announced=lambda result, write: self._write_announced(earlier, result, write),
        )

    def _manages_server(self, turn: TurnContext, member: Member | None) -> bool:
        if turn.guild_id is None:
            return False
        try:
            return self.directory.manages_server(turn.guild_id, turn.user.user_id, member)
        except (DiscordRefused, ValueError):
            logger.warning("could not tell whether the speaker manages the server; treated as a member")
            return False
