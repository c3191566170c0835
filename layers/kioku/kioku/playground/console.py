"""``make run``: a console where a person types what they would type in Discord and sees what
Discord would show. ``--script FILE`` (or piped stdin) runs non-interactively for CI."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import textwrap
from typing import TextIO

import httpx

from kioku.playground.events import slash_command
from kioku.playground.stack import LocalStack
from kioku.signatures import sign_request

BANNER = """\
kioku playground: the real handlers on an embedded moto DynamoDB; no Discord or AWS account.
Type a slash command as in Discord, e.g. /help stm   (:help for console commands, :quit to leave)"""

CONSOLE_HELP = """\
/name [subcommand] [option=value ...]   send a signed slash command to InteractionsFunction
:help                                   this text
:quit                                   leave"""


class Playground:
    def __init__(self, stack: LocalStack, out: TextIO) -> None:
        self.stack = stack
        self.out = out
        self.http = httpx.Client(timeout=30)
        self.failures = 0

    def handle_line(self, line: str) -> bool:
        """Run one console line; False when the console should stop."""
        line = line.strip()
        if not line or line.startswith("#"):
            return True
        if line in {":quit", ":q", ":exit"}:
            return False
        if line == ":help":
            self.print(CONSOLE_HELP)
        elif line.startswith("/"):
            self.slash(line)
        else:
            self.print("Chat is not wired yet: type a slash command such as /help stm.")
        return True

    def slash(self, line: str) -> None:
        try:
            words = shlex.split(line[1:])
        except ValueError as exc:
            self.fail(f"could not read that command: {exc}")
            return
        if not words:
            self.fail("type a command name after the slash")
            return
        name, rest = words[0], words[1:]
        subcommand = rest[0] if rest and "=" not in rest[0] else None
        options = dict(word.split("=", 1) for word in rest[1 if subcommand else 0 :] if "=" in word)
        payload = slash_command(self.stack.application_id, name, subcommand, options)
        body = json.dumps(payload).encode()
        response = self.http.post(
            self.stack.urls["interactions"],
            content=body,
            headers={"content-type": "application/json", **sign_request(self.stack.signing_key, body)},
        )
        if response.status_code != 200:
            self.fail(f"HTTP {response.status_code}: {response.text}")
            return
        self.print(render_interaction_response(response.json()))

    def fail(self, text: str) -> None:
        self.failures += 1
        self.print(f"! {text}")

    def print(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def render_interaction_response(response: dict) -> str:
    """What Discord would show for an interaction response, as plain text."""
    data = response.get("data") or {}
    lines: list[str] = []
    if response.get("type") == 5:
        lines.append("kioku is thinking…")
    if data.get("flags", 0) & 64:
        lines.append("(only you can see this)")
    if data.get("content"):
        lines.append(data["content"])
    for embed in data.get("embeds") or []:
        lines.append(render_embed(embed))
    for choice in data.get("choices") or []:
        lines.append(f"  • {choice.get('name')}")
    return "\n".join(lines) or json.dumps(response)


def render_embed(embed: dict) -> str:
    parts = []
    if embed.get("title"):
        parts.append(f"┃ {embed['title']}")
    if embed.get("description"):
        parts.extend("┃ " + line for line in textwrap.wrap(embed["description"], 96))
    for field in embed.get("fields") or []:
        parts.append(f"┃ ▸ {field.get('name')}")
        for paragraph in str(field.get("value", "")).splitlines():
            parts.extend("┃   " + line for line in textwrap.wrap(paragraph, 94) or [""])
    if (embed.get("footer") or {}).get("text"):
        parts.append(f"┃ — {embed['footer']['text']}")
    return "\n".join(parts)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kioku playground", description=__doc__)
    parser.add_argument(
        "--script", type=argparse.FileType("r", encoding="utf-8"), help="run these lines and exit"
    )
    options = parser.parse_args(argv)
    source = options.script or sys.stdin
    interactive = options.script is None and sys.stdin.isatty()
    with LocalStack() as stack:
        playground = Playground(stack, sys.stdout)
        if interactive:
            playground.print(BANNER)
        for line in _lines(source, interactive):
            if not interactive and line.strip():
                playground.print(f"> {line.rstrip()}")
            if not playground.handle_line(line):
                break
    return 1 if playground.failures and not interactive else 0


def _lines(source: TextIO, interactive: bool):
    if not interactive:
        yield from source
        return
    while True:
        try:
            yield input("kioku> ")
        except EOFError:
            return
