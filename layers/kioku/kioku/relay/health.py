"""``/healthz``: whether every shard of this relay process holds a live gateway session, and the
forwarder's counters, for an orchestrator's liveness and readiness checks.

``RelayHealth`` is the state (the gateway adapter reports shard sessions to it; the forwarder's
counters are read as they are); ``HealthServer`` serves it from a daemon thread with the standard
library's ``http.server``, so a busy or stalled event loop cannot make the check lie by timing out
instead of answering. ``python -m kioku.relay.health`` is the probe for a container's own health
check (exit 0 on 200): the image has no curl.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from kioku.relay.forwarder import ForwarderCounters

HEALTH_PATH: Final = "/healthz"
DEFAULT_HEALTH_HOST: Final = "127.0.0.1"
PROBE_TIMEOUT_SECONDS: Final = 5.0
ANY_ADDRESS: Final = frozenset({"0.0.0.0", "::"})
STATUS_OK: Final = "ok"
STATUS_STARTING: Final = "starting"
STATUS_DISCONNECTED: Final = "disconnected"

logger = logging.getLogger(__name__)


class RelayHealth:
    """Shard sessions and delivery counts; safe to read from the health thread while the gateway writes.

    ``shard_ids`` are the shards this process opens, when known up front; otherwise they are learnt
    from the first session (hikari then opens every shard of the count in this process).
    ``starting`` until each of them has had a session, then ``ok`` while all are connected and
    ``disconnected`` while any is not.
    """

    def __init__(
        self,
        counters: ForwarderCounters,
        *,
        shard_ids: Iterable[int] | None = None,
        buffered: Callable[[], int] = lambda: 0,
    ) -> None:
        self._counters = counters
        self._buffered = buffered
        self._expected: frozenset[int] | None = frozenset(shard_ids) if shard_ids is not None else None
        self._connected: set[int] = set()
        self._ever_connected: set[int] = set()
        self._lock = threading.Lock()

    def shard_connected(self, shard_id: int, shard_count: int) -> None:
        with self._lock:
            if self._expected is None:
                self._expected = frozenset(range(shard_count))
            self._connected.add(shard_id)
            self._ever_connected.add(shard_id)

    def shard_disconnected(self, shard_id: int) -> None:
        with self._lock:
            self._connected.discard(shard_id)

    def report(self) -> tuple[int, dict[str, Any]]:
        """The HTTP status (200 only when every shard is connected) and the JSON body."""
        with self._lock:
            expected = sorted(self._expected) if self._expected is not None else []
            shards = {str(shard_id): shard_id in self._connected for shard_id in expected}
            if not expected or not self._ever_connected >= set(expected):
                status = STATUS_STARTING
            elif all(shards.values()):
                status = STATUS_OK
            else:
                status = STATUS_DISCONNECTED
        body = {"status": status, "shards": shards, **asdict(self._counters), "buffered": self._buffered()}
        return (HTTPStatus.OK if status == STATUS_OK else HTTPStatus.SERVICE_UNAVAILABLE), body


class HealthServerError(OSError):
    """The health endpoint cannot listen where it was told to (port taken, address not local)."""


class HealthServer:
    """Serves ``GET /healthz`` (and ``HEAD``) for ``health`` on ``host:port`` from a daemon thread."""

    def __init__(self, health: RelayHealth, host: str, port: int) -> None:
        handler = type("HealthHandler", (_HealthHandler,), {"health": health})
        try:
            self._server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise HealthServerError(f"cannot serve {HEALTH_PATH} on {host}:{port}: {exc.strerror}") from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="kioku-relay-health", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{HEALTH_PATH}"

    def __enter__(self) -> HealthServer:
        self._thread.start()
        logger.info("health endpoint on %s", self.url)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _HealthHandler(BaseHTTPRequestHandler):
    health: RelayHealth
    server_version = "kioku-relay-health"

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _answer(self, *, with_body: bool) -> None:
        status: int
        if self.path.split("?", 1)[0] != HEALTH_PATH:
            status, body = HTTPStatus.NOT_FOUND, {"error": f"only {HEALTH_PATH} is served here"}
        else:
            status, body = self.health.report()
        payload = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if with_body:
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a probe every few seconds would drown the relay's log."""


def probe(environ: Mapping[str, str]) -> int:
    """GET this container's ``/healthz`` (``RELAY_HEALTH_PORT``, ``RELAY_HEALTH_HOST``); 0 when it
    answers 200, 1 otherwise, with the answer on stdout for the orchestrator's log."""
    port = environ.get("RELAY_HEALTH_PORT", "").strip()
    if not port:
        print("RELAY_HEALTH_PORT is not set: the relay serves no /healthz to probe", file=sys.stderr)
        return 1
    host = environ.get("RELAY_HEALTH_HOST", "").strip() or DEFAULT_HEALTH_HOST
    host = DEFAULT_HEALTH_HOST if host in ANY_ADDRESS else host
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}{HEALTH_PATH}"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_SECONDS) as response:
            print(response.read().decode())
            return 0
    except urllib.error.HTTPError as exc:
        print(f"{exc.code} {exc.read().decode()}")
    except (urllib.error.URLError, OSError) as exc:
        print(f"{url}: {exc}")
    return 1


if __name__ == "__main__":
    sys.exit(probe(os.environ))
