"""Where a cold path's time goes, on the sam-built artifact: each case of ``bench.artifact`` run in
fresh ``python3.13 -I`` processes, several builds alternating run by run (so a load spike hits
them alike), reporting the fastest and median wall-clock, the process's CPU time (user + system,
from the OS: interpreter start-up included), and with ``--importtime`` the top-level imports'
cumulative times of the fastest run.

    python -m bench.cold_paths [--runs N] [--importtime | --instructions] [--cases ping,chat] DIR [DIR ...]

The machine is shared: read CPU and fastest-of-N, and print ``uptime`` with the figures; or count
instructions (``--instructions``: each run under valgrind's callgrind, tens of times slower), which
another process's load does not change.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import time
from pathlib import Path

from bench.artifact import DRIVER, artifact_setup, python313, runtime_boto3

VALGRIND = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]


def _run(command: list[str], env: dict[str, str], stdin: str) -> tuple[float, float, str, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, input=stdin, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the artifact failed:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout, done.stderr


def top_imports(stderr: str, limit: int = 25) -> list[tuple[int, str]]:
    """The top-level imports of an ``-X importtime`` log (indent 0), by cumulative microseconds."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if not name[1:].startswith(" "):  # nested imports are indented two spaces a level
            rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)[:limit]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("builds", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--cases", default="ping,chat,relay,relay_read")
    args = parser.parse_args()
    python = python313()
    wanted = args.cases.split(",")
    with artifact_setup() as (env, cases):
        counter = [*VALGRIND, python] if args.instructions else [python]
        bare = [_run([*counter, "-I", "-c", "pass"], env, "") for _ in range(args.runs)]
        if args.instructions:
            counts = [int(re.findall(r"Collected : (\d+)", b[3])[-1]) for b in bare]
            print(f"bare: instructions fewest {min(counts) / 1e6:.0f} M")
        print(
            f"bare: fastest wall {min(b[0] for b in bare) * 1000:.1f} ms, cpu {min(b[1] for b in bare) * 1000:.1f} ms"
        )
        for name in wanted:
            function, make_event = cases[name]
            results: dict[Path, list[tuple[float, float, str, str]]] = {b: [] for b in args.builds}
            for i in range(args.runs):
                for build in args.builds:
                    layer = build / "KiokuLayer" / "python"
                    paths = json.dumps([str(build / function), str(layer), str(runtime_boto3(build, python))])
                    flags = ["-X", "importtime"] if args.importtime else []
                    counter = [*VALGRIND, python] if args.instructions else [python]
                    command = [*counter, "-I", *flags, "-c", DRIVER, paths]
                    results[build].append(_run(command, env, json.dumps(make_event(i))))
            for build, runs in results.items():
                outcome = json.loads(runs[-1][2].strip().splitlines()[-1])
                walls, cpus = [r[0] * 1000 for r in runs], [r[1] * 1000 for r in runs]
                print(
                    f"{name} {build.name}: HTTP {outcome['status']} wall fastest {min(walls):.1f} median "
                    f"{statistics.median(walls):.1f}; cpu fastest {min(cpus):.1f} median "
                    f"{statistics.median(cpus):.1f} ms; heavy {','.join(outcome['heavy']) or 'none'}; "
                    f"load {os.getloadavg()[0]:.1f}"
                )
                if args.instructions:
                    counts = [int(re.findall(r"Collected : (\d+)", r[3])[-1]) for r in runs]
                    print(
                        f"  instructions fewest {min(counts) / 1e6:.0f} M, median {statistics.median(counts) / 1e6:.0f} M"
                    )
                if args.importtime:
                    fastest = min(runs, key=lambda r: r[1])
                    total = sum(c for c, _ in top_imports(fastest[3], 10_000))
                    print(
                        f"  imports {total / 1000:.1f} ms; top: "
                        + ", ".join(f"{n} {c / 1000:.1f}" for c, n in top_imports(fastest[3], 12))
                    )


if __name__ == "__main__":
    main()
