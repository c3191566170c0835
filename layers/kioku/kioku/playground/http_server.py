"""The threaded loopback HTTP server behind every local stand-in and Function URL."""

from __future__ import annotations

import logging
import sys
from http.server import ThreadingHTTPServer
from typing import Final

SHUTDOWN_POLL_SECONDS: Final = 0.05  # how fast shutdown() returns; serve_forever polls at this interval

logger = logging.getLogger(__name__)


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A client that hangs up early (a timed-out caller) is normal here, not an error to print.

    Other errors are logged in one line: the default handler prints a traceback from the request
    thread, and on CPython 3.11.7 formatting one (which parses source with ``ast``) while another
    thread compiles code can fail with "AST constructor recursion depth mismatch".
    """

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        quiet_handle_error(request, client_address)


def quiet_handle_error(request, client_address) -> None:
    """``handle_error`` for any socketserver: skip hang-ups, log the rest in one line."""
    error = sys.exception()
    if isinstance(error, ConnectionError):
        return
    logger.warning("local server error for %s: %r", client_address, error)
