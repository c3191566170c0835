"""The long-term memory tools as the model is offered them (seed 003's ``create_long_term_memory``,
and kioku's update and search): their schemas, and when a turn offers each. What they do is
``services/ltm.py``'s; ``services/tools.py`` lists every tool a turn may offer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kioku.domain.ltm.arguments import MAX_EXPIRY_DAYS, MIN_EXPIRY_DAYS, RequestedScope
from kioku.domain.ltm.recall import Recall
from kioku.domain.models import MemoryModeration, ServerConfig
from kioku.domain.turn import TurnContext

CREATE_TOOL_NAME: Final = "create_long_term_memory"
UPDATE_TOOL_NAME: Final = "update_long_term_memory"
SEARCH_TOOL_NAME: Final = "search_long_term_memory"

CREATE_TOOL: Final[dict[str, Any]] = {
    "type": "function",
    "function": {
        "name": CREATE_TOOL_NAME,
        "description": (
            "Save one new, lasting fact or preference so you remember it in later conversations. "
            "Save only what will still matter next week, one distinct fact per call, and never something "
            "already listed in your long-term memories (correct those with update_long_term_memory). "
            "Write {user} for the person the fact is about and {bot} for yourself instead of names, "
            "e.g. '{user} is allergic to peanuts' or '{bot} promised {user} a haiku every Friday'. "
            "For a plan or a passing state ('{user} is in Tokyo this week', '{user} has an exam on "
            "Friday'), give expires_in_days so it is forgotten once it is no longer true."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "memory_content": {
                    "type": "string",
                    "description": "The fact, in one or two sentences, using {user} and {bot} instead of names.",
                },
                "memory_scope": {
                    "type": "string",
                    "enum": [scope.value for scope in RequestedScope],
                    "description": (
                        "'target_user' for a fact about one person (their preferences, life, history); "
                        "'server_wide' for a fact about this server, its community, rules or running jokes."
                    ),
                },
                "target_user": {
                    "type": "string",
                    "description": (
                        "With 'target_user': the person's display name as seen in the conversation "
                        "(or their mention). Leave out for 'server_wide'."
                    ),
                },
                "expires_in_days": {
                    "type": "integer",
                    "minimum": MIN_EXPIRY_DAYS,
                    "maximum": MAX_EXPIRY_DAYS,
                    "description": (
                        "For plans and passing states only: after how many days the fact stops being "
                        "true and is forgotten. Leave out for lasting facts."
                    ),
                },
            },
            "required": ["memory_content", "memory_scope"],
        },
    },
}

UPDATE_TOOL: Final = {
    "type": "function",
    "function": {
        "name": UPDATE_TOOL_NAME,
        "description": (
            "Correct or forget a long-term memory you saved earlier, quoting its id from your memories "
            "(the number in [#12345]). Give the full corrected fact as memory_content, or an empty "
            "memory_content to delete the memory when it is wrong or the person asks you to forget it. "
            "When a plan or passing state changes how long it holds, give expires_in_days (from now); "
            "0 when it now stays true."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "memory_id": {
                    "type": "integer",
                    "description": "The id shown as [#12345] before the memory.",
                },
                "memory_content": {
                    "type": "string",
                    "description": "The corrected fact, with {user} and {bot} for names; empty to delete.",
                },
                "target_user": {
                    "type": "string",
                    "description": "For a personal memory: whose it is (display name or mention).",
                },
                "expires_in_days": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_EXPIRY_DAYS,
                    "description": (
                        "After how many days from now the fact stops being true and is forgotten; "
                        "0 clears its expiry. Leave out to keep it as it is."
                    ),
                },
            },
            "required": ["memory_id", "memory_content"],
        },
    },
}

SEARCH_TOOL: Final = {
    "type": "function",
    "function": {
        "name": SEARCH_TOOL_NAME,
        "description": (
            "Search the long-term memories that did not fit in your context this turn. Use it when "
            "the person asks about something you may have been told before and your memories shown "
            "do not answer it. Answers the best matches with their ids (correct them with "
            "update_long_term_memory, with target_user set to 'about' for a personal memory)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What to look for: names, places, dates, topics, in a few words.",
                },
            },
            "required": ["query"],
        },
    },
}


SERVER_ONLY_CREATE_TOOL: Final = {
    "type": "function",
    "function": {
        "name": CREATE_TOOL_NAME,
        "description": CREATE_TOOL["function"]["description"]
        + " This server keeps no memories about one person: save only facts about the server.",
        "parameters": {
            "type": "object",
            "properties": {
                "memory_content": CREATE_TOOL["function"]["parameters"]["properties"]["memory_content"],
                "memory_scope": {
                    "type": "string",
                    "enum": [RequestedScope.SERVER_WIDE.value],
                    "description": "'server_wide': a fact about this server, its community, rules or running jokes.",
                },
            },
            "required": ["memory_content", "memory_scope"],
        },
    },
}
"""The create tool of a server that turned personal memories off: no ``target_user``, no personal scope."""


def create_tool(turn: TurnContext) -> dict[str, Any]:
    """The create tool as this turn offers it."""
    return CREATE_TOOL if turn.config.capabilities.personal_memories_enabled else SERVER_ONLY_CREATE_TOOL


def saving_offered(turn: TurnContext) -> bool:
    """Saving and correcting memories: unless the model takes no tools or self-teaching is off."""
    return turn.llm_has_tools and turn.config.capabilities.self_teaching_enabled


def search_offered(turn: TurnContext, recalled: Recall | None) -> bool:
    """Searching: when the model takes tools and recall left memories out."""
    return turn.llm_has_tools and recalled is not None and bool(recalled.left_out)


def long_term_memory_tools(turn: TurnContext, recalled: Recall | None = None) -> list[dict[str, Any]]:
    """The memory tools to offer this turn, in the order the model is given them."""
    tools = [create_tool(turn), UPDATE_TOOL] if saving_offered(turn) else []
    return [*tools, SEARCH_TOOL] if search_offered(turn, recalled) else tools


def offered_update_tool(turn: TurnContext) -> str | None:
    """The update tool's name when this turn offers it: recall explains corrections only then."""
    return UPDATE_TOOL_NAME if saving_offered(turn) else None


def awaits_review(config: ServerConfig, speaker_manages_server: Callable[[], bool]) -> bool:
    """Whether a server memory saved now waits for a manager's approval: on a server that reviews
    memories, one a member who does not manage the server saves (asked only then)."""
    return config.memory_moderation is MemoryModeration.APPROVAL and not speaker_manages_server()
