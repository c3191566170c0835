"""The functions' log lines go to whatever stdout is when they are written (on Lambda, CloudWatch
Logs), never to a stream that was stdout when the logger was made: a test, the playground or the
scaling script that swaps stdout and closes its buffer must not leave the logger writing into it."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from kioku.observability import logger


def test_a_log_line_goes_to_the_stdout_of_the_moment_it_is_written():
    first, second = io.StringIO(), io.StringIO()
    with redirect_stdout(first):
        logger.info("into the first")
    first.close()
    with redirect_stdout(second):
        logger.info("into the second")
        previous = logger.registered_handler.setStream(io.StringIO())  # flushes the old stream
        logger.registered_handler.setStream(previous)
    assert "into the second" in second.getvalue()
