"""``make real-llm-check``: a few turns against a real OpenAI-compatible server, and what was posted.

A scripted stand-in answers the way the tests tell it to; a real model imitates the history it is
shown (``[Name | UserID:…]`` headers, ``Sent:`` lines, ``<som>``/``<eom>`` markers, recalled lines'
``⏎``) in ways nobody scripts. This runs the local stack (the real handlers on moto, the Discord
stand-in, the relay's signed POST) against ``LLM_BASE_URL`` with a history full of that format, and
fails when a posted reply still carries any of it, is empty, or is the apology. It is not part of
CI: it needs a model server (docs/operations.md: one built offline from PyPI, and what it found).

    python -m llama_cpp.server --model a-small-model.gguf --port 8080   # or llama.cpp's llama-server
    LLM_BASE_URL=http://127.0.0.1:8080/v1 make real-llm-check

``LLM_API_KEY`` defaults to ``local`` (llama.cpp's server takes any), ``LLM_SUPPORTS_TOOLS`` and
``LLM_SUPPORTS_VISION`` to false (llama.cpp takes tools only with ``--jinja``); set them to test
otherwise. ``LLM_MODEL``, ``LLM_MAX_TOKENS`` and ``LLM_TIMEOUT_SECONDS`` pass through. Each turn's
time is printed (from the relay's POST to the reply posted: nearly all of it is the model's). Exit
status: 0 when every reply is clean, 1 when one is not, 2 when no server is configured or it cannot
be reached.
"""

from __future__ import annotations

import html
import os
import re
import statistics
import sys
import time
from typing import Any, Final

import httpx

from kioku.domain.text import END_OF_MESSAGE, START_OF_MESSAGE
from kioku.playground.stack import LocalStack, gateway_dispatch
from kioku.services.turn import APOLOGY, EMPTY_REPLY
from kioku.signatures import sign_request
from scripts.sam_template import load as load_template

GUILD: Final = "200000000000000091"
CHANNEL: Final = "300000000000000091"
OTHER_CHANNEL: Final = "300000000000000092"
DEFAULTS: Final = {"LLM_API_KEY": "local", "LLM_SUPPORTS_TOOLS": "false", "LLM_SUPPORTS_VISION": "false"}
PASSED_THROUGH: Final = ("LLM_MODEL", "LLM_MAX_TOKENS", "LLM_TIMEOUT_SECONDS")
ASKED: Final = (
    "what did alice say about the trip?",
    "and what should we bring? answer in two short lines",
    "thanks! anything else to remember for Friday?",
)
ESCAPED_MARKERS: Final = (html.escape(START_OF_MESSAGE), html.escape(END_OF_MESSAGE))
_MARKER: Final = re.compile(r"</?(?:som|eom)>")
_ECHOED_HEADER: Final = re.compile(r"\[[^\[\]\n]*\|\s*UserID:")
_SENT_LINE: Final = re.compile(r"^\W*Sent: \d{4}-\d\d-\d\d \d\d:\d\d", re.MULTILINE)
_TEMPLATE_TOKEN: Final = re.compile(
    r"</?s>|\[/?INST\]|<\|im_(?:start|end)\|>|<(?:start|end)_of_turn>|<\|eot_id\|>"
)
"""Chat-template tokens of llama-2, ChatML, Gemma and Llama 3, leaked as text."""


def problems(reply: str) -> list[str]:
    """What is wrong with one posted reply: the history's format left in it (or escaped by the
    server), nothing at all, or the apology posted when the model did not answer."""
    found = []
    if not reply.strip():
        found.append("empty")
    if reply == APOLOGY:
        found.append("the apology: the model gave no answer in time (its error is logged above)")
    if reply == EMPTY_REPLY:
        found.append("only …: nothing was left of the answer once cleaned")
    if any(marker in reply for marker in ESCAPED_MARKERS):
        found.append(
            "an HTML-escaped <som>/<eom>: the server's chat template escapes the prompt "
            "(llama-cpp-python's chatml-function-calling does)"
        )
    if _MARKER.search(reply):
        found.append("a <som>/<eom> marker")
    if "⏎" in reply:
        found.append("a recalled line's ⏎")
    if _ECHOED_HEADER.search(reply):
        found.append("a [Name | UserID:…] header")
    if _SENT_LINE.search(reply):
        found.append("a Sent: line")
    if _TEMPLATE_TOKEN.search(reply):
        found.append(
            "a chat-template token (<s>, [INST], <|im_start|>…): the server's chat template does not "
            "match the model (a GGUF without one gets llama-2's from llama-cpp-python)"
        )
    return found


def _say(stack: LocalStack, author: dict[str, Any], text: str) -> None:
    message = stack.discord.seed_message(CHANNEL, author, f"<@{stack.application_id}> {text}")
    body = gateway_dispatch(message, GUILD, {"nick": None, "roles": []})
    headers = {"content-type": "application/json", **sign_request(stack.relay_signing_key, body)}
    response = httpx.post(stack.urls["relay"], content=body, headers=headers, timeout=10)
    response.raise_for_status()
    stack.deliver_turns()


def main() -> int:
    base_url = os.environ.get("LLM_BASE_URL")
    if not base_url:
        print(
            "LLM_BASE_URL is not set: point it at an OpenAI-compatible server (see --help)", file=sys.stderr
        )
        return 2
    try:
        httpx.get(base_url.rstrip("/") + "/models", timeout=5)
    except httpx.HTTPError as exc:
        print(f"{base_url} cannot be reached: {exc}", file=sys.stderr)
        return 2
    env = {name: os.environ.get(name, default) for name, default in DEFAULTS.items()}
    env |= {name: os.environ[name] for name in PASSED_THROUGH if os.environ.get(name)}
    # A model on a CPU takes the deployed TurnFunction's time, not the playground's short one.
    turn_timeout = load_template()["Resources"]["TurnFunction"]["Properties"]["Timeout"]
    with LocalStack(llm_base_url=base_url, extra_env=env, turn_timeout_seconds=turn_timeout) as stack:
        discord = stack.discord
        discord.seed_channel(CHANNEL, name="general", guild_id=GUILD)
        discord.seed_channel(OTHER_CHANNEL, name="trip-planning", guild_id=GUILD)
        alice = discord.seed_user("alice", global_name="Alice")
        bob = discord.seed_user("bob", global_name="Bob")
        discord.seed_message(CHANNEL, alice, f"the trip is on Friday, details in <#{OTHER_CHANNEL}>")
        discord.seed_message(CHANNEL, bob, "nice!\nwho is driving?")
        discord.seed_message(CHANNEL, alice, f"<@{bob['id']}> you are :)")
        failures, seconds = 0, []
        for text in ASKED:
            before = len(discord.channel_messages(CHANNEL))
            started = time.monotonic()
            _say(stack, bob, text)
            seconds.append(time.monotonic() - started)
            posted = [
                m["content"]
                for m in discord.channel_messages(CHANNEL)[before:]
                if m["author"]["id"] == discord.bot_user["id"]
            ]
            found = [problem for reply in posted for problem in problems(reply)] or (
                [] if posted else ["no reply"]
            )
            failures += bool(found)
            verdict = "FAIL: " + ", ".join(found) if found else "ok"
            print(f"bob: {text}\nkioku: {' / '.join(posted)!r}\n  {verdict} ({seconds[-1]:.1f} s)\n")
    print(
        f"{len(ASKED) - failures} of {len(ASKED)} replies clean; a turn took "
        f"{statistics.median(seconds):.1f} s (median), {max(seconds):.1f} s at most"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    if "--help" in sys.argv[1:] or "-h" in sys.argv[1:]:
        print(__doc__)
        sys.exit(0)
    sys.exit(main())
