"""The slowest tests start first on every worker, so that no worker is left with a long test while
the others have finished (``make test``: ``-n 2 --dist worksteal`` after pytest-randomly's shuffle).

pytest-xdist's work stealing hands each worker a contiguous share of the collection, then lets an
idle worker take the back half of a busy one's queue. So the collection is cut into the shares the
scheduler will hand out, each share starting with its part of the slow modules (assigned heaviest
first to the lightest share), then the rest in pytest-randomly's order. A slow module's tests stay
together: several build a module-scoped world (a stack, a crash harness) once. Deterministic from the
shuffled order, so every worker collects the same list.
"""

from __future__ import annotations

import os
from typing import Final

import pytest

SLOW: Final[dict[str, float]] = {
    # node id prefix (a module, or its slow tests): those tests' rough seconds in all (measured on a
    # loaded 2-core machine, 2026-12-06; only their order matters). A new slow module belongs here:
    # `make test` prints the slowest tests of each run.
    "tests/integration/test_privacy_properties.py": 730.0,
    "tests/e2e/test_playground.py": 600.0,
    "tests/e2e/test_persona_redelivery.py": 500.0,
    "tests/e2e/test_turn_crash_points.py": 470.0,
    "tests/e2e/test_redelivery_faults.py": 345.0,
    "tests/e2e/test_load.py": 140.0,
    "tests/e2e/test_memory_change_twins.py": 100.0,
    "tests/e2e/test_clock_skew.py": 90.0,
    "tests/e2e/test_redelivery_under_load.py": 80.0,
    "tests/integration/test_guild_reconcile.py::test_a_500_channel_guild": 80.0,
    "tests/integration/test_stm_concurrency.py::test_concurrent_captures_count_every_turn": 70.0,
    "tests/integration/test_scaling_doc.py": 50.0,
    "tests/integration/test_server_removal.py": 48.0,
    "tests/integration/test_ltm_concurrency.py": 40.0,
    "tests/e2e/test_inspector.py": 35.0,
    "tests/e2e/test_relay_gateway.py": 35.0,
    "tests/e2e/test_redelivery_mid_turn.py": 30.0,
    "tests/e2e/test_context_fidelity.py": 20.0,
}


def _prefix(nodeid: str) -> str | None:
    return next((prefix for prefix in SLOW if nodeid.startswith(prefix)), None)


def _shares(count: int, workers: int) -> list[int]:
    """How many tests work stealing first hands each worker (``WorkStealingScheduling.check_schedule``)."""
    sizes = []
    for index in range(workers):
        sizes.append(count // (workers - index))
        count -= sizes[-1]
    return sizes


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    groups: dict[str, list[pytest.Item]] = {}
    light: list[pytest.Item] = []
    for item in items:
        prefix = _prefix(item.nodeid)
        if prefix is None:
            light.append(item)
        else:
            groups.setdefault(prefix, []).append(item)
    sizes = _shares(len(items), workers)
    slow: list[list[pytest.Item]] = [[] for _ in sizes]
    load = [0.0] * len(sizes)
    for prefix in sorted(groups, key=lambda prefix: -SLOW[prefix]):
        share = min(range(len(sizes)), key=lambda index: (load[index], index))
        slow[share] += groups[prefix]
        load[share] += SLOW[prefix]
    ordered: list[pytest.Item] = []
    for share, size in enumerate(sizes):
        fill = max(0, size - len(slow[share]))
        ordered += slow[share] + light[:fill]
        del light[:fill]
    items[:] = ordered + light
