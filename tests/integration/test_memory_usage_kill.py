"""A janitor's fold of the turns' records into ``last_shown``, its process SIGKILLed midway and run
again, on moto over HTTP (a child process, as another Lambda container)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from typing import Final

from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.domain.ltm.memory import ScopeKind
from tests.integration.test_memory_usage import (
    DAY,
    NOW,
    SERVER,
    last_shown,
    twenty_records_showing_a_and_their_own,
)

_CHILD: Final = """
import sys, time
from datetime import datetime
import boto3
from kioku.adapters.dynamodb.ltm_store import DynamoMemoryStore
from kioku.adapters.dynamodb.table import KiokuTable

url, name, now = sys.argv[1], sys.argv[2], datetime.fromisoformat(sys.argv[3])
table = KiokuTable(name, client=boto3.client("dynamodb", endpoint_url=url))
table.clock = lambda: now
update = table.update

def noisy(*args, **kwargs):
    result = update(*args, **kwargs)
    if str(args[0].sk).startswith("M#"):
        print("wrote", flush=True)
        time.sleep(0.05)
    return result

table.update = noisy
DynamoMemoryStore(table).fold_last_shown(now)
print("done", flush=True)
"""


def test_a_janitor_process_killed_midway_is_resumed_by_the_next_run(moto_server):
    # Given twenty records, each showing memory A (in turn order) and its own memory, on moto over HTTP
    table = moto_server.table()
    table.clock = lambda: NOW
    store = DynamoMemoryStore(table)
    a, own = twenty_records_showing_a_and_their_own(store, table)

    # When a janitor process is SIGKILLed after its twelfth memory write, and a new run follows
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, moto_server.url, moto_server.resources.table_name, NOW.isoformat()],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    lines = [child.stdout.readline() for _ in range(12)]
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    seen = {m: last_shown(store, ScopeKind.SERVER, SERVER, m) for m in own}
    store.fold_last_shown(NOW)

    # Then it was killed midway, and every memory ends at its latest record, none gone back
    assert lines == ["wrote\n"] * 12 and child.returncode == -signal.SIGKILL
    assert sum(at is not None for at in seen.values()) < 20
    assert last_shown(store, ScopeKind.SERVER, SERVER, a) == NOW - DAY + 19 * timedelta(minutes=10)
    for n, memory_id in enumerate(own):
        latest = last_shown(store, ScopeKind.SERVER, SERVER, memory_id)
        assert latest == NOW - DAY + n * timedelta(minutes=10)
        assert seen[memory_id] is None or seen[memory_id] <= latest
