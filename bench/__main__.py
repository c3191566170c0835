"""``make bench``: run every benchmark module and print its numbers."""

from __future__ import annotations

import importlib
import logging
import os

MODULES = (
    "bench.artifact",
    "bench.interactions",
    "bench.stm",
    "bench.ltm",
    "bench.memory",
    "bench.turn",
    "bench.load",
)


def main() -> None:
    logging.disable(logging.CRITICAL)
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # EMF lines would mix with the numbers
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        print(f"# {name}")
        module.main()


if __name__ == "__main__":
    main()
