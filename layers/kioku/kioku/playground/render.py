"""The playground's renderers: what Discord shows, as text. Pure functions of what Discord sent
(a message, an interaction's answer, a form) or of a turn's record (``:context``); the console prints
them and the web inspector shows Discord's markdown made ``readable`` with ``named_mentions``."""

from __future__ import annotations

import json
import re
import textwrap
from datetime import UTC, datetime
from typing import Any, Final

from kioku import clock
from kioku.discord.interactions import ResponseType
from kioku.discord.protocol import MessageFlag
from kioku.playground.inspect import rounds_of, tool_schema
from kioku.services.turn import TurnRecord

CONTEXT_LINE_CHARS = 160
TIMESTAMP_MARKUP = re.compile(r"<t:(-?\d{1,12})(?::[tTdDfFR])?>")
HEADING_MARKUP = re.compile(r"^(?:#{1,3}|-#) ", re.MULTILINE)  # headings and subtext
EMPHASIS_MARKUP = (
    re.compile(r"\*\*(.+?)\*\*"),
    re.compile(r"__(.+?)__"),
    re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"),
    re.compile(r"~~(.+?)~~"),
    re.compile(r"`([^`]+)`"),
)


def render_form(modal: dict) -> str:
    """A modal as text: its title and each field with what it is prefilled with."""
    data = modal.get("data") or {}
    lines = [f'┌ form: {data.get("title", "")}   (fill in with :submit field:"text" …)']
    for row in data.get("components") or []:
        field = row["components"][0]
        lines.append(f"│ {field['custom_id']} — {field.get('label', '')}: {field.get('value', '')!r}")
    return "\n".join(lines)


def render_message(message: dict[str, Any]) -> str:
    """A message as text; a persona's (posted through kioku's webhook) with its name and avatar."""
    author = message.get("author", {})
    name = author.get("username", "?")
    if message.get("webhook_id"):
        avatar = author.get("avatar_url")
        name = f"{name} [persona{', avatar ' + avatar if avatar else ''}]"
    lines = [f"{name}: {message.get('content') or ''}".rstrip()]
    lines += [render_embed(embed) for embed in message.get("embeds") or []]
    lines += [
        f"  [attached file: {attachment.get('filename')}, {attachment.get('size', 0)} bytes]"
        for attachment in message.get("attachments") or []
    ]
    return "\n".join(lines)


JSON_FILE_LINES: Final = 40


def render_json_file(data: bytes) -> str:
    """A JSON file as indented text, its first lines (the rest are in the file written)."""
    try:
        lines = json.dumps(json.loads(data), indent=2, ensure_ascii=False).splitlines()
    except ValueError:
        return "  (not JSON)"
    shown = lines[:JSON_FILE_LINES]
    if len(lines) > JSON_FILE_LINES:
        shown.append(f"… ({len(lines) - JSON_FILE_LINES} more lines in the file)")
    return "\n".join("  " + line for line in shown)


def render_time(when: datetime | None) -> str:
    """``2026-12-06 04:26 UTC (3 minutes ago)``: to the minute, in UTC, with its age."""
    if when is None:
        return "never"
    ago = clock.now() - when
    minutes = max(int(ago.total_seconds() // 60), 0)
    age = "just now" if minutes == 0 else f"{minutes} minute{'s' if minutes != 1 else ''} ago"
    if minutes >= 120:
        hours = minutes // 60
        age = f"{hours} hours ago"
    return f"{when.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({age})"


def render_interaction_response(response: dict) -> str:
    """What Discord would show for an interaction response, as plain text."""
    data = response.get("data") or {}
    lines: list[str] = []
    if response.get("type") == ResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE:
        lines.append("kioku is thinking…")
    if response.get("type") == ResponseType.UPDATE_MESSAGE:
        lines.append("(the message you clicked now reads)")
    if data.get("flags", 0) & MessageFlag.EPHEMERAL:
        lines.append("(only you can see this)")
    if data.get("content"):
        lines.append(data["content"])
    for embed in data.get("embeds") or []:
        lines.append(render_embed(embed))
    for choice in data.get("choices") or []:
        lines.append(f"  • {choice.get('name')}")
    lines += render_buttons(data.get("components") or [])
    return "\n".join(lines) or json.dumps(response)


def render_buttons(rows: list[dict]) -> list[str]:
    """Each action row on a line, its buttons numbered as ``:click N`` takes them."""
    lines, number = [], 0
    for row in rows:
        shown = []
        for button in row.get("components", []):
            if "custom_id" not in button:
                continue
            number += 1
            shown.append(
                f"[{number}: {button.get('label', '')}{' (disabled)' if button.get('disabled') else ''}]"
            )
        if shown:
            lines.append("  " + "  ".join(shown))
    if lines:
        lines.append("  (click with :click LABEL or :click N)")
    return lines


def render_embed(embed: dict) -> str:
    """An embed as Discord lays it out: title, the description's own lines, fields, footer."""
    parts = []
    if embed.get("title"):
        parts.append(f"┃ {readable(embed['title'])}")
    parts += _wrapped(embed.get("description"), "┃ ", 96)
    for field in embed.get("fields") or []:
        parts.append(f"┃ ▸ {readable(str(field.get('name', '')))}")
        parts += _wrapped(field.get("value"), "┃   ", 94)
    if (embed.get("footer") or {}).get("text"):
        parts.append(f"┃ — {readable(embed['footer']['text'])}")
    return "\n".join(parts)


def _wrapped(text: Any, prefix: str, width: int) -> list[str]:
    """``text`` made readable and wrapped, each of its own line breaks kept."""
    if not text:
        return []
    return [
        prefix + line
        for paragraph in readable(str(text)).splitlines()
        for line in textwrap.wrap(paragraph, width, replace_whitespace=False) or [""]
    ]


def named_mentions(text: str, mentions: dict[str, str]) -> str:
    """``<@id>`` as ``@name``; a ``#id`` key names a channel, ``<#id>`` shown as ``#name``."""
    for key, name in mentions.items():
        if key.startswith("#"):
            text = text.replace(f"<{key}>", f"#{name}")
        else:
            text = text.replace(f"<@{key}>", f"@{name}").replace(f"<@!{key}>", f"@{name}")
    return text


def readable(text: str) -> str:
    """Discord markdown as a reader sees it: emphasis without its stars, timestamps as dates."""
    text = TIMESTAMP_MARKUP.sub(
        lambda m: f"{datetime.fromtimestamp(int(m[1]), UTC):%Y-%m-%d %H:%M} UTC", text
    )
    text = HEADING_MARKUP.sub("", text)
    for pattern in EMPHASIS_MARKUP:
        text = pattern.sub(r"\1", text)
    return text


def render_context(
    turn: TurnRecord, *, full: bool = False, schemas_shown: set[str] | None = None
) -> list[str]:
    """Every model request of ``turn``: each message labelled with its kind and dialogue depth, then
    the tools offered with their schemas; ``full`` prints every line whole. A schema already in
    ``schemas_shown`` (the console's, across turns) is named, not printed again; each printed one is
    added to it."""
    printed: list[str] = []
    rounds = rounds_of(turn)
    shown = set() if schemas_shown is None else schemas_shown
    for model_round in rounds:
        printed.append(
            f"── model request {model_round.number} of {len(rounds)} of the last turn: "
            f"{len(model_round.messages)} messages ──"
        )
        for message in model_round.messages:
            depth = f" · depth {message.depth}" if message.depth is not None else ""
            who = message.role + (f" name={message.name}" if message.name else "")
            printed.append(f"[{message.index}] {message.kind}{depth} · {who}")
            for line in [*message.text.splitlines(), *message.tool_calls]:
                printed.append(textwrap.indent(shortened(line, full), "    "))
        tools = model_round.tools
        names = ", ".join(tool["function"]["name"] for tool in tools) or "none"
        if model_round.number > 1 and tools == rounds[model_round.number - 2].tools:
            printed.append(f"── tools offered: {names}, as in request {model_round.number - 1} ──")
            continue
        schemas = [tool_schema(tool) for tool in tools]
        new = [schema for schema in schemas if schema not in shown]
        if schemas and not new:
            printed.append(f"── tools offered: {names}, schemas as shown before (:context tools) ──")
            continue
        printed.append(f"── tools offered: {names} ──")
        for schema in new:
            shown.add(schema)
            for line in schema.splitlines():
                printed.append(textwrap.indent(shortened(line, full), "    "))
    return printed


def shortened(line: str, full: bool = False) -> str:
    """``line`` cut to ``CONTEXT_LINE_CHARS`` (its indent kept) unless ``full``."""
    if full or len(line) <= CONTEXT_LINE_CHARS:
        return line
    text = line.lstrip()
    indent = line[: len(line) - len(text)]
    width = max(CONTEXT_LINE_CHARS - len(indent), 20)
    return indent + (textwrap.shorten(text, width, placeholder=" …") or text[:width] + " …")
