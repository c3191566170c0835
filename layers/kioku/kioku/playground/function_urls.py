"""Serve a function's ``lambda_handler`` on localhost the way a Lambda Function URL would."""

from __future__ import annotations

import base64
import threading
from http.server import BaseHTTPRequestHandler

from kioku.playground.events import function_url_event
from kioku.playground.functions import LambdaContext, LambdaHandler
from kioku.playground.http_server import SHUTDOWN_POLL_SECONDS, LoopbackHTTPServer

_TEXT_TYPES = ("application/json", "text/")


class FunctionUrlServer:
    """An HTTP server on 127.0.0.1 that turns each request into a payload 2.0 event."""

    def __init__(self, handler: LambdaHandler, host: str = "127.0.0.1", port: int = 0) -> None:
        lock = threading.Lock()

        class RequestHandler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def _invoke(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                content_type = self.headers.get("content-type", "")
                as_text = content_type.startswith(_TEXT_TYPES) and _is_utf8(body)
                event = function_url_event(
                    body,
                    {k: v for k, v in self.headers.items()},
                    base64_body=not as_text,
                    method=self.command,
                    path=self.path,
                )
                with lock:  # one invocation at a time, like one Lambda container
                    response = handler(event, LambdaContext())
                payload = response.get("body") or ""
                data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode()
                self.send_response(int(response.get("statusCode", 200)))
                for name, value in (response.get("headers") or {}).items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = do_PUT = _invoke

            def log_message(self, *args: object) -> None:
                return

        self._server = LoopbackHTTPServer((host, port), RequestHandler)
        self.url = f"http://{host}:{self._server.server_port}/"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(SHUTDOWN_POLL_SECONDS,), daemon=True
        )

    def __enter__(self) -> FunctionUrlServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
