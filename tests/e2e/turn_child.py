"""TurnFunction containers for the crash harness: this process imports the handler once, then for
each SQS event it reads (a JSON line on stdin, with the file to write the response to) forks a
fresh container (with the request's ``env`` added to its environment, and its clock moved by the
request's ``clock_ahead_seconds``, behind when negative), says its pid, and says how it ended. A
forked container starts as a cold Lambda container does after its init: modules imported, no
client, no cache, nothing of an earlier turn. Done once here instead, as read-only as they are
costly: botocore's parse of the DynamoDB and SQS models and its registration of its built-in
handlers (tests/botocore_models.py), httpx's default TLS context (tests/shared_tls.py), the embedded
model's load (tests/embedded_model_once.py), and the imports a turn makes on first use
(``LAZY_IMPORTS``): a container redoing them took twice the CPU its turn did.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import botocore.endpoint

from kioku import clock
from kioku.playground.functions import LambdaContext, load_handler
from tests.botocore_models import parse_service_models, share_builtin_handlers, share_service_models
from tests.embedded_model_once import load_embedded_model_once
from tests.shared_tls import share_tls_context

LAZY_IMPORTS = ("httpx", "kioku.adapters.llm.completion", "kioku.adapters.embedded_model")
"""What a turn imports where it first needs it (not at a cold start): here before the first fork."""


def main() -> None:
    # botocore's backoff waits (up to seconds a retry, doubled) take no time here: the harness
    # counts attempts and outcomes, not seconds (a refusal six times in a row waited 20 s)
    botocore.endpoint.time = SimpleNamespace(sleep=lambda seconds: None)
    share_service_models()
    share_builtin_handlers()
    parse_service_models("dynamodb", "sqs")
    share_tls_context()
    _warm()
    handler = load_handler("turn")
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _contain(handler, request)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {os.waitstatus_to_exitcode(status)}", flush=True)


def _warm() -> None:
    """The lazy imports made, and the embedded model loaded for every container to take (a release
    checkout run by the harness may lack either: it then pays for them in each container)."""
    for name in LAZY_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    try:
        from kioku.adapters.embedded_model import EmbeddedModel, EmbeddedModelUnavailable
    except ImportError:
        return
    load_embedded_model_once()
    try:
        EmbeddedModel.load()
    except EmbeddedModelUnavailable:
        return


def _contain(handler, request: dict) -> None:
    """One container's life; it never returns."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the metrics Powertools prints must not mix with what the harness reads
    errors = os.open(request["errors"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(errors, 2)
    os.environ.update(request.get("env") or {})
    clock._offset = timedelta(seconds=request.get("clock_ahead_seconds", 0))  # either way, unlike advance
    try:
        response = handler(request["event"], LambdaContext())
        Path(request["answer"]).write_text(json.dumps(response))
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


if __name__ == "__main__":
    main()
