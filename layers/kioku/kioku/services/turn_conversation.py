"""A turn's talk with the model: the messages it is shown (``assemble``), each request, the tool calls it answers with (run through the tools
registry, ``services/tools.py``, at most ``MAX_TOOL_CALLS_PER_TURN`` of them over ``MAX_TOOL_ROUNDS``),
and the notices the tools' changes owe, kept in the turn's outbox as soon as they exist."""

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
from kioku.domain.ltm.targets import MEMBER_SEARCH_LIMIT
from kioku.domain.models import ContextItem, ContextTag
from kioku.domain.placement import place_short_term_memory
from kioku.domain.replies import CUT_MARK, strip_echoed_metadata
from kioku.domain.system_prompt import system_prompt
from kioku.domain.tools import ToolResult
from kioku.domain.turn import LlmUnavailable, Outbox, TurnClaimed, TurnContext
from kioku.services import tool_failures, tools
from kioku.services.turn_claims import give_back
from kioku.services.turn_ports import GuildLookup, TurnDiscord, TurnStore
from kioku.services.turn_state import TurnState

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
class Conversation:
    """One turn's model and tools, over the turn's state (its messages, the tools offered, the
    record of requests and tool results)."""

    settings: Settings
    model: ChatModel
    turns: TurnStore
    discord: TurnDiscord
    directory: GuildLookup
    ltm_store: MemoryStore
    state: TurnState

    def assemble(self) -> None:
        """The model's messages (persona, recall, dialogue, short-term memory placed by depth), what
        each one is (see ``CONTEXT_KINDS``), and the tools offered."""
        state = self.state
        turn, stm, dialogue = state.turn, state.stm, state.dialogue
        assert turn is not None and stm is not None and dialogue is not None
        items: list[ContextItem] = [ContextItem("system", ContextTag.SYSTEM_PROMPT, system_prompt(turn))]
        if state.recalled.item is not None:
            items.append(state.recalled.item)
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
        state.messages, state.record.context_kinds = [item.to_openai() for item in items], kinds
        state.tools = tools.offered(self._tool_bench(()))

    def ask(self, earlier: tuple[dict[str, Any], ...]) -> str:
        state = self.state
        turn, stm, record = state.turn, state.stm, state.record
        assert turn is not None and stm is not None
        messages, bench = state.messages, self._tool_bench(earlier)
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
                    result = tool_failures.calls_exhausted()
                    record.tool_calls_not_run += 1
                else:
                    result = tools.run(call.name, call.arguments, bench)
                    record.tool_results.append((call.name, result))
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result.to_model_content()}
                )
            if len(self._notices()) > self.state.notices_kept:
                # a memory was saved: its notice must survive this attempt, whatever the model does next
                self._keep_notices(earlier)
        raise AssertionError("unreachable: the last round offers no tools")

    def _keep_notices(self, earlier: tuple[dict[str, Any], ...]) -> None:
        """Keep the notices owed so far as this attempt's claim: a twin holding the outbox (its
        answer maybe half posted) is left alone, and this attempt gives the turn back."""
        state = self.state
        notes = Outbox(notices=self.owed_notices(earlier), quoted=self.quoted(), claim=str(state.claim))
        try:
            self.turns.keep(state.key, notes, state.now, state.taking_from)
        except TurnClaimed as exc:
            give_back(self.turns, state, exc.claim)
        state.taking_from = None  # this attempt's claim replaced the one it took over
        state.notices_kept = len(self._notices())

    def _write_announced(
        self,
        earlier: tuple[dict[str, Any], ...],
        result: ToolResult,
        write: Callable[[Sequence[Any]], _T],
    ) -> _T:
        """Change a memory (delete or rewrite it) and keep the notice it owes in the same
        transaction: a retry of an attempt killed right after would find nothing to change (the
        memory gone, or saying the new text already), and no notice to post."""
        results = (*(earlier_result for _, earlier_result in self.state.record.tool_results), result)
        notices = tuple(r.notification for r in results if r.notification)
        quoted = tuple(dict.fromkeys(r.notification_about for r in results if r.notification_about))
        state = self.state
        owed = (*earlier, *(n for n in notices if n not in earlier))
        outbox = Outbox(notices=owed, quoted=quoted, claim=str(state.claim))
        try:
            # the outbox is this attempt's claim, as the notices' keep: a twin's change is not made twice
            written, kept = self.turns.write_announced(state.key, outbox, state.now, write, state.taking_from)
        except TurnClaimed as exc:
            give_back(self.turns, state, exc.claim)
        if kept:
            state.taking_from = None  # this attempt's claim replaced the one it took over
            state.notices_kept = len(notices)
        return written

    def owed_notices(self, earlier: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
        """An earlier attempt's notices, then this one's that it did not owe already (a retry's
        save of the same memory, known as its own, owes the same notice)."""
        return (*earlier, *(notice for notice in self._notices() if notice not in earlier))

    def _notices(self) -> tuple[dict[str, Any], ...]:
        return tuple(
            result.notification for _, result in self.state.record.tool_results if result.notification
        )

    def quoted(self) -> tuple[str, ...]:
        """The people whose personal memories the turn's notices show."""
        results = self.state.record.tool_results
        return tuple(
            dict.fromkeys(result.notification_about for _, result in results if result.notification_about)
        )

    def _tool_bench(self, earlier: tuple[dict[str, Any], ...]) -> tools.ToolBench:
        """What this turn's tools work with; a change a tool makes keeps its notice with it."""
        turn, stm = self.state.turn, self.state.stm
        assert turn is not None and stm is not None
        return tools.ToolBench(
            turn=turn,
            stm=stm,
            recalled=self.state.recalled,
            embeddings=self.state.embeddings,
            store=self.ltm_store,
            settings=self.settings,
            members=GuildMembers(self.discord, self.directory),
            speaker_manages_server=lambda: self._manages_server(turn, self.state.job.member),
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
