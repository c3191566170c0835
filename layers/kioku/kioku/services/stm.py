"""Short-term memory for one turn: what to load, the context, the tool, what the turn captures.

No cache: every load reads DynamoDB (the current row with a consistent read), so no container ever
sees state older than a write acknowledged before the read began. The only thing remembered across
turns is which persona a server had, and that is a guess for a key, checked on every load.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from kioku.domain.models import Persona, PrivacyLevel
from kioku.domain.stm.capture import StmRowIdentity, TurnCapture
from kioku.domain.stm.categories import active_categories
from kioku.domain.stm.context import StmContext, StmState, build_short_term_memory_context
from kioku.domain.stm.entries import CrudeMessage, StmAddress, StmLimits
from kioku.domain.stm.update_tool import (
    REFUSALS,
    TOOL_NAME,
    InvalidStmUpdate,
    parse_update,
    refusal_message,
    tool_definition,
    unavailable_reason,
    value_macros,
)
from kioku.domain.tools import ToolResult, parse_tool_arguments
from kioku.domain.turn import TurnContext
from kioku.domain.turn_read import TurnMemoryQuery
from kioku.services.tool_failures import answer_for
from kioku.services.turn_ports import ShortTermMemoryWrites


class PersonaGuesses:
    """The persona this container last saw on each server: a guess for the keys of a turn's first
    read (its short-term memory row, its memory books), checked against the configuration that read
    returns. It lives as long as the turn service that owns it (the container's, in Lambda)."""

    def __init__(self) -> None:
        self._seen: dict[str, Persona] = {}

    def guess(self, guild_id: str | None) -> Persona:
        """The persona last seen on ``guild_id``; the default one where none was (and in a DM)."""
        return self._seen.get(guild_id or "", Persona())

    def saw(self, guild_id: str | None, persona: Persona) -> None:
        """Note the persona a turn's read found on ``guild_id``: the next turn's guess."""
        if guild_id:
            self._seen[guild_id] = persona


def turn_memory_query(
    *,
    guild_id: str | None,
    channel_id: str,
    user_id: str,
    parent_channel_id: str | None,
    now: datetime,
    limits: StmLimits,
    guessed: Persona,
    speaking: str | None = None,
) -> TurnMemoryQuery:
    """What a turn reads of short-term memory, with the server config and the user's profile, in two
    requests (cross-server folding included): the row of the persona ``speaking`` (an alter persona's
    id), else of the main persona ``guessed`` (``PersonaGuesses``), and the other channels' rows
    active within the retention."""
    return TurnMemoryQuery(
        guild_id=guild_id,
        channel_id=channel_id,
        user_id=user_id,
        parent_channel_id=parent_channel_id,
        persona_hint=speaking or guessed.persona_id,
        active_since=now - limits.retention,
        crude_since=now - limits.crude_ttl,
        other_limit=limits.max_other_channels,
        speaking=speaking,
    )


class ShortTermMemoryTurn:
    """The short-term memory side of one turn; the update tool runs at most once per turn."""

    def __init__(
        self,
        store: ShortTermMemoryWrites,
        turn: TurnContext,
        state: StmState,
        limits: StmLimits,
        channel_name: str | None = None,
        *,
        described_at: datetime | None = None,
    ) -> None:
        self._store = store
        self._turn = turn
        self._state = state
        self._limits = limits
        self._identity = StmRowIdentity(
            address=StmAddress.of(
                turn.guild_id, turn.user.user_id, turn.channel_id, turn.config.persona.persona_id
            ),
            lineage_id=turn.config.persona.lineage_id,
            parent_channel_id=turn.parent_channel_id,
            channel_name=channel_name,
            private=turn.channel_private and not turn.is_dm,
            private_thread=turn.private_thread,
            described_at=described_at,
        )
        self._tool_used = False

    def context(self) -> StmContext:
        return build_short_term_memory_context(self._turn, self._state, self._limits)

    def tool_definition(self) -> dict[str, Any] | None:
        """The ``update_short_term_memory`` tool for the model request, or None when not offered."""
        return tool_definition(self._turn, self._limits)

    def run_update_tool(self, arguments: str | dict[str, Any] | None) -> ToolResult:
        """Validate and save the model's short-term memory; every refusal and error says why."""
        turn, limits = self._turn, self._limits
        reason = unavailable_reason(turn) or (REFUSALS["once"] if self._tool_used else None)
        if reason:
            return _error(refusal_message(reason))
        categories = active_categories(turn.config.categories, limits.max_categories)
        try:
            update = parse_update(
                parse_tool_arguments(arguments), categories, limits, value_macros(turn, limits)
            )
        except InvalidStmUpdate as exc:
            return _answer(exc)
        try:
            self._store.write_memory(
                self._identity,
                update,
                categories,
                turn.now,
                limits.retention,
                said=turn.said if turn.is_dm else None,  # a DM's row is the speaker's own
            )
        except Exception as exc:
            return _answer(exc)
        self._tool_used = True
        data: dict[str, Any] = {"message": "Short-term memory saved."}
        if update.shortened:
            data["shortened"] = list(update.shortened)
            data["message"] += f" Over {limits.max_summary_length} characters, so it was shortened."
        return ToolResult(status="success", data=data)

    def capture_of(self, messages: Sequence[CrudeMessage]) -> TurnCapture:
        """What the turn's commit writes to short-term memory, once per bot turn: its messages
        appended to the row as this turn read it, and the turn counted (nothing of it if the speaker
        asked to forget everything after sending the message). A speaker with full privacy has
        nothing stored; the turn is still counted."""
        turn = self._turn
        return TurnCapture(
            identity=self._identity,
            read=self._state.current,
            lines=tuple(messages),
            speaker_id=turn.user.user_id,
            now=turn.now,
            limits=self._limits,
            said=turn.said,
            keep_lines=turn.profile.privacy_level is not PrivacyLevel.FULL,
        )


def _error(message: str) -> ToolResult:
    return ToolResult(status="error", data={"message": message})


def _answer(exc: Exception) -> ToolResult:
    """The tool's answer to a condition that stopped it (``tool_failures``); anything else raises."""
    answer = answer_for(TOOL_NAME, exc)
    if answer is None:
        raise exc
    return answer
