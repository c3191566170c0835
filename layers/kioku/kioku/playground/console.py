"""``make run``: a console where a person types what they would type in Discord and sees what
Discord would show. ``--script FILE`` (or piped stdin) runs non-interactively for CI; ``--web``
serves the same session as the web inspector instead.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from kioku.playground.session import Playground
from kioku.playground.stack import LocalStack, chat_model_choice
from kioku.playground.web.server import serve_forever

PROMPT = "kioku> "

BANNER = """\
kioku playground: the real handlers on an embedded moto DynamoDB and a Discord stand-in.
You are {user} in {channel}. Say "@kioku …" to address the bot (as on a server that just added it,
it has no trigger words: /server addressing trigger_words:kioku makes "kioku, …" work); in a DM
just talk. Slash commands work as in Discord (/help stm, /chat message:hi). :help lists the rest."""


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kioku playground", description=__doc__)
    parser.add_argument(
        "--script", type=argparse.FileType("r", encoding="utf-8"), help="run these lines and exit"
    )
    parser.add_argument(
        "--file", action="append", default=[], metavar="FILE", help="attach a text file to the first message"
    )
    parser.add_argument("--web", action="store_true", help="serve the web inspector on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="the inspector's port (0: any free one)")
    options = parser.parse_args(argv)
    source = options.script or sys.stdin
    interactive = options.script is None and sys.stdin.isatty()
    # The functions' CloudWatch metrics and INFO lines (JSON on stdout) would drown the conversation.
    quiet = {"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"}
    model = chat_model_choice(os.environ)
    with LocalStack(extra_env=quiet) as stack, log_lines_to(sys.stdout):
        playground = Playground(stack, sys.stdout)
        for path in options.file:
            playground.attach(path)
        if interactive or model.half_set:
            playground.print(model.sentence)
        if options.web:
            return serve_forever(playground, options.port)
        if interactive:
            playground.print(BANNER.format(user="Alice", channel=playground.label(playground.channel)))
        for line in _lines(source, interactive):
            if not interactive and line.strip():
                playground.print(f"> {line.rstrip()}")
            if not playground.handle_line(line):
                break
    return 1 if playground.failures and not interactive else 0


class _OneLine(logging.Handler):
    """The functions' warnings and errors as one plain line each in the conversation; the notices
    of a retry still under way (``retry_in_seconds``) are left to the line that says how it ended."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(logging.WARNING)
        self.out = out

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "retry_in_seconds"):
            return
        self.out.write(f"({record.levelname.lower()}: {record.getMessage()})\n")
        self.out.flush()


@contextmanager
def log_lines_to(out: TextIO) -> Iterator[None]:
    """While the console runs, the functions' JSON log records (Powertools', on stdout) are
    replaced with ``_OneLine``'s lines."""
    from kioku.observability import logger

    json_lines, plain = logger.registered_handler, _OneLine(out)
    level = json_lines.level
    json_lines.setLevel(logging.CRITICAL + 1)
    logging.getLogger(logger.name).addHandler(plain)
    try:
        yield
    finally:
        logging.getLogger(logger.name).removeHandler(plain)
        json_lines.setLevel(level)


def _lines(source: TextIO, interactive: bool):
    if not interactive:
        yield from source
        return
    import readline  # noqa: F401 -- importing it gives input() line editing and history at a terminal

    while True:
        try:
            yield input(PROMPT)
        except EOFError:
            return
