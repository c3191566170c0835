"""The real relay in a subprocess (``python -m kioku.cli relay``), as an operator runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

EXIT_TIMEOUT: Final = 20.0


@dataclass
class RelayProcess:
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text()

    def wait(self, timeout: float = EXIT_TIMEOUT) -> int:
        return self.process.wait(timeout)

    def terminate(self) -> int:
        """SIGTERM, as systemd and container runtimes stop it; the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.wait()


def start_relay_process(log_path: Path, *args: str, **variables: str) -> RelayProcess:
    """Start the relay with command-line ``args`` and ``variables`` over the environment (proxies and
    other relay or Discord variables dropped), its output in ``log_path``."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.lower().endswith("_proxy") and not name.startswith(("RELAY_", "DISCORD_"))
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kioku.cli", "relay", *args],
            env=env | variables,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return RelayProcess(process, log_path)
