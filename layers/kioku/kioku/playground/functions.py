"""Load each function's ``functions/<name>/app.py`` as Lambda would, under a module name of its own."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

FUNCTIONS_DIR = Path(__file__).resolve().parents[4] / "functions"
LambdaHandler = Callable[[dict[str, Any], Any], Any]


def load_function_module(name: str) -> ModuleType:
    path = FUNCTIONS_DIR / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"kioku_function_{name}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_handler(name: str) -> LambdaHandler:
    return load_function_module(name).lambda_handler


class LambdaContext:
    """The few attributes of Lambda's context object that Powertools and the turn worker read.

    As in Lambda, the remaining time runs down from ``timeout_seconds`` from the invocation's start,
    so a turn's model calls share one deadline however many tool rounds it takes."""

    function_name = "kioku-local"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:kioku-local"
    aws_request_id = "local-request"

    def __init__(self, timeout_seconds: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._deadline = clock() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - self._clock()) * 1000))
