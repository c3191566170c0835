"""``kioku playground --web``: the inspector page and its JSON API, on 127.0.0.1 only.

``GET /`` (with ``/app.js`` and ``/app.css``) is the page; ``GET /api/state?channel=general&member=alice``
is what it shows that member; ``POST /api/say`` ``{"channel", "member", "text"}`` says something;
``POST /api/command`` ``{"channel", "member", "line"}`` runs a slash command or a console line
(``:wait 25h``, ``:janitor``, ``:private #general``); ``POST /api/click`` ``{…, "answer", "button"}``
clicks a button (its custom_id) of an answer shown; ``POST /api/form`` ``{…, "fields"}`` sends the
form open for that member (``"fields": null`` closes it). Bad input is a 400 with ``{"error": …}``; an
action the playground refused is a 422 with its output. Requests naming another host (DNS
rebinding) and cross-origin POSTs are refused with 403.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from kioku.playground.http_server import LoopbackHTTPServer
from kioku.playground.session import Playground
from kioku.playground.web.inspector import BadInput, Inspector

logger = logging.getLogger(__name__)

HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
LOCAL_NAMES: Final = frozenset({"127.0.0.1", "localhost"})
_AUTHORITY: Final = re.compile(r"(?P<host>[A-Za-z0-9.]+)(?::(?P<port>[0-9]{1,5}))?")
MAX_BODY: Final = 64 * 1024
ASSETS: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
}
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Refused(Exception):
    """A request answered with ``status`` and ``{"error": message}``."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def make_server(inspector: Inspector, port: int = DEFAULT_PORT) -> LoopbackHTTPServer:
    """The inspector's server on 127.0.0.1:``port`` (0: a free one), not yet serving."""
    return LoopbackHTTPServer((HOST, port), _handler_class(inspector))


def serve_forever(playground: Playground, port: int) -> int:
    """Serve until Ctrl-C or SIGTERM; prints the URL first (with the port picked for ``--port 0``)."""
    try:
        server = make_server(Inspector(playground), port)
    except OSError as exc:  # most often the port is taken: one line, not a traceback
        print(
            f"kioku inspector: cannot listen on {HOST}:{port} ({exc.strerror or exc}); "
            "stop what uses it, or pick another with --port N (0: any free one)",
            file=sys.stderr,
        )
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"kioku inspector: http://{HOST}:{server.server_address[1]}/  (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _handler_class(inspector: Inspector) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "kioku-inspector"

        def do_GET(self) -> None:
            self._answer(self._get)

        def do_POST(self) -> None:
            self._answer(self._post)

        def _answer(self, route) -> None:
            try:
                self._check_host()
                status, body, content_type = route()
            except Refused as exc:
                status, body, content_type = exc.status, _json({"error": str(exc)}), "application/json"
            except BadInput as exc:
                status, body, content_type = (
                    HTTPStatus.BAD_REQUEST,
                    _json({"error": str(exc)}),
                    "application/json",
                )
            except Exception as exc:
                logger.exception("the inspector failed on %s %s", self.command, self.path)
                error = {"error": f"the playground failed: {exc!r}"}
                status, body, content_type = (
                    HTTPStatus.INTERNAL_SERVER_ERROR,
                    _json(error),
                    "application/json",
                )
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in SECURITY_HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _get(self) -> tuple[HTTPStatus, bytes, str]:
            url = urlsplit(self.path)
            if url.path in ASSETS:
                name, content_type = ASSETS[url.path]
                return HTTPStatus.OK, resources.files(__package__).joinpath(name).read_bytes(), content_type
            if url.path == "/api/state":
                query = parse_qs(url.query)
                channel = query.get("channel", ["general"])[0]
                member = query.get("member", ["alice"])[0]
                return HTTPStatus.OK, _json(inspector.state(channel, member)), "application/json"
            raise Refused(HTTPStatus.NOT_FOUND, f"nothing at {url.path}")

        def _post(self) -> tuple[HTTPStatus, bytes, str]:
            self._check_origin()
            path = urlsplit(self.path).path
            if path not in {"/api/say", "/api/command", "/api/click", "/api/form"}:
                raise Refused(HTTPStatus.NOT_FOUND, f"nothing to post at {path}")
            body = self._json_body()
            where = body.get("channel"), body.get("member")
            if path == "/api/say":
                done = inspector.say(*where, body.get("text"))
            elif path == "/api/click":
                done = inspector.click(*where, body.get("answer"), body.get("button"))
            elif path == "/api/form":
                done = inspector.submit(*where, body.get("fields"))
            else:
                done = inspector.command(*where, body.get("line"))
            status = HTTPStatus.OK if done["ok"] else HTTPStatus.UNPROCESSABLE_ENTITY
            return status, _json(done), "application/json"

        def _check_host(self) -> None:
            """A page of another site whose name resolves to 127.0.0.1 sends its own name as Host."""
            authority = _local_authority(self.headers.get("Host", ""))
            if authority is None or authority[1] not in {None, _port_of(self.server)}:
                raise Refused(HTTPStatus.FORBIDDEN, "the inspector answers only to 127.0.0.1 and localhost")

        def _check_origin(self) -> None:
            """Browsers send Origin with every POST; a page of another origin may not act here."""
            origin = self.headers.get("Origin")
            if origin is None:
                return
            scheme, _, authority = origin.partition("://")
            local = _local_authority(authority) if scheme == "http" else None
            if local is None or local[1] != _port_of(self.server):
                raise Refused(HTTPStatus.FORBIDDEN, f"cross-origin request from {origin!r} refused")

        def _json_body(self) -> dict[str, Any]:
            if self.headers.get_content_type() != "application/json":
                raise Refused(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json")
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                raise Refused(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length") from None
            if not 0 <= length <= MAX_BODY:
                raise Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a body holds at most {MAX_BODY} bytes")
            try:
                body = json.loads(self.rfile.read(length))
            except (ValueError, UnicodeDecodeError) as exc:
                raise BadInput(f"the body is not JSON: {exc}") from None
            if not isinstance(body, dict):
                raise BadInput("the body must be a JSON object")
            return body

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("inspector: " + format, *args)

    return Handler


def _local_authority(authority: str) -> tuple[str, int | None] | None:
    """``authority`` (``host[:port]``, as a Host header or an origin after its scheme) as its local
    name and port; None for anything else, malformed included (a port that is not a number, a path,
    user info), so that every refusal is a 403, never a parser's exception."""
    match = _AUTHORITY.fullmatch(authority)
    if match is None or match["host"].lower() not in LOCAL_NAMES:
        return None
    port = match["port"]
    return match["host"].lower(), None if port is None else int(port)


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def _port_of(server: Any) -> int:
    """The port a request handler's server listens on (typed loosely by ``socketserver``)."""
    return int(server.server_address[1])
