"""The load test of `make bench`, small: several TurnFunction processes at once on one moto server,
and every relayed message answered exactly once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def test_concurrent_workers_answer_every_message_exactly_once():
    env = {**os.environ, "LOAD_MESSAGES": "40", "LOAD_WORKERS": "3", "LOAD_DEADLINE_SECONDS": "120"}
    result = subprocess.run(
        [sys.executable, "-m", "bench.load"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^load\.replies=40/40$", result.stdout, re.MULTILINE)
    assert re.search(r"^load\.doubled=0$", result.stdout, re.MULTILINE)
    assert re.search(r"^load\.turns_per_second=\d", result.stdout, re.MULTILINE)
    assert re.search(r"^load\.relay_retries=\d+ ", result.stdout, re.MULTILINE)


def test_one_of_four_workers_killed_mid_turn_leaves_every_message_answered_exactly_once():
    # Given four workers on the queue, the one that posts the fifth reply killed once Discord took it
    # (before it recorded the turn), its message back after a short visibility timeout
    env = {
        **os.environ,
        "LOAD_MESSAGES": "24",
        "LOAD_WORKERS": "4",
        "LOAD_KILL_AT_REPLY": "5",
        "LOAD_VISIBILITY_SECONDS": "6",
        "LOAD_DEADLINE_SECONDS": "90",
    }

    # When the messages are relayed and worked through
    result = subprocess.run(
        [sys.executable, "-m", "bench.load"], cwd=REPO, env=env, capture_output=True, text=True, timeout=240
    )

    # Then one worker was killed, every message answered once (none twice), every turn recorded done
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^load\.killed=1 ", result.stdout, re.MULTILINE)
    assert re.search(r"^load\.replies=24/24$", result.stdout, re.MULTILINE)
    assert re.search(r"^load\.doubled=0$", result.stdout, re.MULTILINE)
    assert re.search(r"^load\.completed=24/24 ", result.stdout, re.MULTILINE)
