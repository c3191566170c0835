"""What the web inspector's JSON says: a turn's labelled model requests, Discord messages with
readable embeds, the short-term memory row and long-term memories. Pure functions of records."""

from __future__ import annotations

import itertools
from dataclasses import asdict
from datetime import datetime
from typing import Any

from kioku.discord.protocol import MessageFlag, TextInputStyle
from kioku.domain.ltm.memory import Memory
from kioku.domain.ltm.wording import for_people
from kioku.domain.stm.entries import StmEntry
from kioku.playground.inspect import ModelRound, rounds_of, tool_schema
from kioku.playground.render import named_mentions as _named
from kioku.playground.render import readable
from kioku.services.turn import TurnRecord


def turn_json(number: int, turn: TurnRecord) -> dict[str, Any]:
    """Turn ``number`` (counted from the playground's start): every model request, labelled."""
    rounds = rounds_of(turn)
    return {
        "number": number,
        "reply_ids": list(turn.reply_ids),
        "apologised": turn.apologised,
        "rate_limited": turn.rate_limited,
        "duplicate": turn.duplicate,
        "persona": turn.persona,
        "lineage": None
        if turn.lineage is None
        else str(turn.lineage),  # a snowflake: JSON numbers lose digits
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
        "persona": bool(message.get("webhook_id")),
        "avatar_url": author.get("avatar_url"),
        "timestamp": message.get("timestamp"),
        "content": readable(_named(message.get("content") or "", mentions)),
        "embeds": [embed_json(embed, mentions) for embed in message.get("embeds") or []],
        "attachments": [attachment.get("filename") for attachment in message.get("attachments") or []],
        "turn": turn_number,
    }


def embed_json(embed: dict[str, Any], mentions: dict[str, str] | None = None) -> dict[str, Any]:
    """An embed's parts with Discord's markdown made readable (the console's ``readable``) and
    mentions shown as names."""

    def shown(text: Any) -> str:
        return readable(_named(str(text or ""), mentions or {}))

    return {
        "title": shown(embed.get("title")),
        "description": shown(embed.get("description")),
        "fields": [
            {"name": shown(field.get("name", "")), "value": shown(field.get("value", ""))}
            for field in embed.get("fields") or []
        ],
        "footer": shown((embed.get("footer") or {}).get("text")),
    }


def answer_json(
    answer_id: int,
    response: dict[str, Any],
    *,
    line: str,
    by: str,
    timestamp: str,
    mentions: dict[str, str],
) -> dict[str, Any]:
    """An interaction's answer as Discord shows it in the conversation: kioku's message under the
    command that asked for it, marked when only its asker sees it, with its buttons."""
    data = response.get("data") or {}
    buttons = [
        [
            {
                "custom_id": part["custom_id"],
                "label": part.get("label", ""),
                "style": part.get("style", 2),
                "disabled": bool(part.get("disabled")),
            }
            for part in row.get("components", [])
            if "custom_id" in part
        ]
        for row in data.get("components") or []
    ]
    return {
        "id": f"answer-{answer_id}",
        "author": "kioku",
        "bot": True,
        "timestamp": timestamp,
        "content": readable(_named(data.get("content") or "", mentions)),
        "embeds": [embed_json(embed, mentions) for embed in data.get("embeds") or []],
        "attachments": [attachment.get("filename") for attachment in data.get("attachments") or []],
        "turn": None,
        "answer": {
            "id": answer_id,
            "line": line,
            "used": used(line),
            "by": by,
            "ephemeral": bool((data.get("flags") or 0) & MessageFlag.EPHEMERAL),
            "buttons": [row for row in buttons if row],
        },
    }


def used(line: str) -> str:
    """What Discord heads an answer with after "Alice used": the command's name and subcommands
    (``/server memories list``), a message command's name (``Why this answer?``), never the values."""
    words = line.split()
    if not words:
        return line
    if words[0] == ":why":
        return "Why this answer?"
    if not words[0].startswith("/"):
        return words[0]
    named = itertools.takewhile(lambda word: not any(mark in word for mark in ':="'), words)
    return " ".join(named)


def form_json(modal: dict[str, Any]) -> dict[str, Any]:
    """A modal (form) as the page lays it out: its title and each text input, prefilled."""
    data = modal.get("data") or {}
    fields = []
    for row in data.get("components") or []:
        field = row["components"][0]
        fields.append(
            {
                "id": field["custom_id"],
                "label": field.get("label", ""),
                "value": field.get("value", ""),
                "placeholder": field.get("placeholder", ""),
                "long": field.get("style") == TextInputStyle.PARAGRAPH,
                "required": bool(field.get("required")),
                "max_length": field.get("max_length"),
            }
        )
    return {"custom_id": data.get("custom_id"), "title": data.get("title", ""), "fields": fields}


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


def memory_json(memory: Memory, *, in_scope: bool, names: dict[str, str], bot: str) -> dict[str, Any]:
    """A long-term memory, and whether a turn in the selected channel may be shown it."""
    origin = memory.origin
    return {
        "id": memory.memory_id,
        "scope": str(memory.scope.kind),
        "owner": names.get(memory.scope.owner_id, memory.scope.owner_id),
        "about": names.get(memory.about, memory.about) if memory.about else None,
        # as the people it names would read it, not the raw {user}: the inspector is for eyes
        "content": for_people(
            memory.content,
            about_you=False,
            name=names.get(memory.about or memory.scope.owner_id, "someone"),
            bot=bot,
        ),
        "status": str(memory.status),
        "in_scope": in_scope,
        "origin": {
            "channel": names.get(origin.channel_id or "", origin.channel_id),
            "private": origin.private,
        },
        "updated_at": _iso(memory.updated_at),
        "expires_at": _iso(memory.expires_at),
        "last_shown": _iso(memory.last_shown),
        "changes": memory.changes,
        # its earlier texts, newest first, as the inspector shows them on click
        "history": [
            {
                "content": for_people(
                    version.content,
                    about_you=False,
                    name=names.get(memory.about or memory.scope.owner_id, "someone"),
                    bot=bot,
                ),
                "since": _iso(version.since),
                "until": _iso(version.until),
                "changed_by": names.get(version.changed_by, version.changed_by),
                "expires_at": _iso(version.expires_at),
            }
            for version in reversed(memory.history)
        ],
    }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment else None
