"""The embeds that tell the channel what the bot now remembers (or forgot)."""

from __future__ import annotations

from typing import Any, Final

from kioku.discord.ui import (
    EMBED_COLOR_INFO,
    EMBED_COLOR_MUTED,
    EMBED_COLOR_SUCCESS,
    EMBED_COLOR_WARNING,
    embed,
)
from kioku.domain.ltm.memory import ScopeKind
from kioku.domain.text import expand_macros, shorten

NOTIFICATION_CONTENT_LIMIT: Final = 300
NOT_SHOWN_HERE: Final = "*(Not shown here: this memory is not recalled in this channel.)*"


def show_names(content: str, *, user_name: str, bot_name: str) -> str:
    """``content`` with its ``{user}``/``{bot}`` tokens written as names, for people to read."""
    if "{" not in content:  # most memories, on every turn: skip the pattern
        return content
    if "{bot}" in user_name:  # a name that writes a token itself: one pass, as the pattern reads
        return expand_macros(content, {"user": user_name, "bot": bot_name})
    return content.replace("{user}", user_name).replace("{bot}", bot_name)


def memory_saved_embed(
    content: str | None,
    memory_id: str,
    *,
    scope: ScopeKind,
    subject_name: str,
    bot_name: str,
    personal_memories_enabled: bool,
) -> dict[str, Any]:
    """The success embed of a new memory; ``subject_name`` is whom ``{user}`` stands for."""
    if scope is ScopeKind.SERVER:
        footer = f"Server memory #{memory_id} · {bot_name} will remember this here"
    elif personal_memories_enabled:
        footer = f"Personal memory #{memory_id} about {subject_name}"
    else:
        footer = (
            f"Personal memory #{memory_id} about {subject_name} · personal memories are turned off "
            "on this server, so it will not be recalled here"
        )
    return _embed("Memory saved", content, subject_name, bot_name, footer, EMBED_COLOR_SUCCESS)


def memory_pending_embed(content: str, memory_id: str, *, subject_name: str, bot_name: str) -> dict[str, Any]:
    """A server memory saved for review: not remembered until a manager approves it."""
    footer = f"Server memory #{memory_id} · awaits a manager's review (/server memories review)"
    return _embed("Memory awaiting review", content, subject_name, bot_name, footer, EMBED_COLOR_WARNING)


def memory_updated_embed(
    content: str | None, memory_id: str, *, subject_name: str, bot_name: str
) -> dict[str, Any]:
    footer = f"Memory #{memory_id} updated"
    return _embed("Memory updated", content, subject_name, bot_name, footer, EMBED_COLOR_INFO)


def memory_forgotten_embed(
    content: str | None, memory_id: str, *, subject_name: str, bot_name: str
) -> dict[str, Any]:
    footer = f"Memory #{memory_id} deleted"
    return _embed("Memory forgotten", content, subject_name, bot_name, footer, EMBED_COLOR_MUTED)


def _embed(
    title: str, content: str | None, subject: str, bot: str, footer: str, colour: int
) -> dict[str, Any]:
    """``content`` None: the memory may not be recalled where the embed is posted, so its text is not shown."""
    if content is None:
        shown = NOT_SHOWN_HERE
    else:
        shown = shorten(show_names(content, user_name=subject, bot_name=bot), NOTIFICATION_CONTENT_LIMIT)
    return embed(title, shown, color=colour, footer=footer)
