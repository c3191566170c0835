"""What the web inspector's JSON says: a turn's labelled model requests, Discord messages with
readable embeds, the short-term memory row and long-term memories. Pure functions of records."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from kioku.domain.ltm.memory import Memory
from kioku.domain.stm.entries import StmEntry
from kioku.playground.console import readable
from kioku.playground.inspect import ModelRound, rounds_of, tool_schema
from kioku.services.turn import TurnRecord


def turn_json(number: int, turn: TurnRecord) -> dict[str, Any]:
    """Turn ``number`` (counted from the inspector's start): every model request, labelled."""
    rounds = rounds_of(turn)
    return {
        "number": number,
        "reply_ids": list(turn.reply_ids),
        "apologised": turn.apologised,
        "rate_limited": turn.rate_limited,
        "duplicate": turn.duplicate,
        "rounds": [
            round_json(model_round, rounds[model_round.number - 2] if model_round.number > 1 else None)
            for model_round in rounds
        ],
    }


def round_json(model_round: ModelRound, previous: ModelRound | None) -> dict[str, Any]:
    """One model request; tools offered again unchanged are named, not repeated."""
    unchanged = previous is not None and previous.tools == model_round.tools
    return {
        "number": model_round.number,
        "messages": [asdict(message) for message in model_round.messages],
        "tool_names": [tool_json(tool)["name"] for tool in model_round.tools],
        "tools": [] if unchanged else [tool_json(tool) for tool in model_round.tools],
        "tools_as_in": previous.number if unchanged and previous else None,
    }


def tool_json(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)
    return {
        "name": function.get("name", "?"),
        "description": function.get("description", ""),
        "schema": tool_schema(tool),
    }


def message_json(
    message: dict[str, Any], turn_number: int | None, mentions: dict[str, str]
) -> dict[str, Any]:
    """A Discord message as the page shows it; ``mentions`` turns ``<@id>`` into ``@name``."""
    author = message.get("author") or {}
    return {
        "id": message.get("id"),
        "author": author.get("global_name") or author.get("username") or "?",
        "bot": bool(author.get("bot")),
        "timestamp": message.get("timestamp"),
        "content": readable(_named(message.get("content") or "", mentions)),
        "embeds": [embed_json(embed) for embed in message.get("embeds") or []],
        "attachments": [attachment.get("filename") for attachment in message.get("attachments") or []],
        "turn": turn_number,
    }


def embed_json(embed: dict[str, Any]) -> dict[str, Any]:
    """An embed's parts with Discord's markdown made readable (the console's ``readable``)."""
    return {
        "title": readable(str(embed.get("title") or "")),
        "description": readable(str(embed.get("description") or "")),
        "fields": [
            {"name": readable(str(field.get("name", ""))), "value": readable(str(field.get("value", "")))}
            for field in embed.get("fields") or []
        ],
        "footer": readable(str((embed.get("footer") or {}).get("text") or "")),
    }


def stm_json(entry: StmEntry | None) -> dict[str, Any] | None:
    """The channel's short-term memory row as stored (expiry not applied)."""
    if entry is None:
        return None
    labels = dict(entry.category_labels)
    return {
        "turns_since_refresh": entry.turns_since_refresh,
        "last_updated": _iso(entry.last_updated),
        "summary": entry.summary,
        "summary_updated_at": _iso(entry.summary_updated_at),
        "categories": [
            {"slug": slug, "label": labels.get(slug, slug), "text": text}
            for slug, text in entry.categories.items()
        ],
        "categories_updated_at": _iso(entry.categories_updated_at),
        "private": entry.private,
        "raw": [
            {"speaker": line.speaker, "role": str(line.role), "text": line.text, "ts": _iso(line.ts)}
            for line in entry.crude
        ],
    }


def memory_json(memory: Memory, *, in_scope: bool, names: dict[str, str]) -> dict[str, Any]:
    """A long-term memory, and whether a turn in the selected channel may be shown it."""
    origin = memory.origin
    return {
        "id": memory.memory_id,
        "scope": str(memory.scope.kind),
        "owner": names.get(memory.scope.owner_id, memory.scope.owner_id),
        "about": names.get(memory.about, memory.about) if memory.about else None,
        "content": memory.content,
        "status": str(memory.status),
        "in_scope": in_scope,
        "origin": {
            "channel": names.get(origin.channel_id or "", origin.channel_id),
            "private": origin.private,
        },
        "updated_at": _iso(memory.updated_at),
    }


def _named(text: str, mentions: dict[str, str]) -> str:
    for user_id, name in mentions.items():
        text = text.replace(f"<@{user_id}>", f"@{name}").replace(f"<@!{user_id}>", f"@{name}")
    return text


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment else None
