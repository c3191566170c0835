"""bench.cold_paths reads an ``-X importtime`` log: each top-level import's cumulative time."""

from __future__ import annotations

from bench.cold_paths import top_imports

LOG = """import time: self [us] | cumulative | imported package
import time:       100 |        100 |   _io
import time:       500 |        600 | io
import time:      2000 |       2000 |       botocore.compat
import time:      1000 |       3000 |     botocore.config
import time:       400 |       3400 |   kioku.adapters.turn_queue
import time:       300 |       3700 | app
some other line on stderr
"""


def test_only_top_level_imports_are_read_largest_first():
    assert top_imports(LOG) == [(3700, "app"), (600, "io")]
    assert top_imports(LOG, limit=1) == [(3700, "app")]
