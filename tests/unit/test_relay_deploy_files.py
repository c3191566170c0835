"""The relay's Containerfile and systemd unit, checked without Docker or a systemd host."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTAINERFILE = REPO / "deploy" / "relay" / "Containerfile"
UNIT = REPO / "deploy" / "relay" / "kioku-relay.service"
SECRET_VARIABLES = ("DISCORD_BOT_TOKEN", "RELAY_SIGNING_KEY", "LLM_API_KEY")


def instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n\s*", " ", path.read_text())
    return [
        tuple(line.split(None, 1)) for line in text.splitlines() if line.strip() and not line.startswith("#")
    ]


def test_the_container_installs_the_hashed_lock_then_the_package_with_its_relay_extra():
    steps = instructions(CONTAINERFILE)
    runs = [argument for kind, argument in steps if kind == "RUN"]
    copies = [argument for kind, argument in steps if kind == "COPY"]
    assert "deploy/relay/requirements.txt ./requirements.txt" in copies
    assert any("--require-hashes" in run and "-r requirements.txt" in run for run in runs)
    package = next(run for run in runs if "[relay]" in run)
    assert "--no-deps" in package  # nothing beyond the lock gets in
    assert runs.index(package) > next(i for i, run in enumerate(runs) if "--require-hashes" in run)


def test_the_container_runs_the_console_script_as_pid_1_without_root():
    steps = dict(instructions(CONTAINERFILE))
    entrypoint = json.loads(steps["ENTRYPOINT"])
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint == ["kioku", "relay"] and entrypoint[0] in scripts
    assert steps["USER"] != "root" and steps["USER"] != "0"
    assert not any(name in CONTAINERFILE.read_text() for name in (f"{v}=" for v in SECRET_VARIABLES))


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(UNIT.read_text())
    return parser


def test_the_unit_restarts_on_failure_but_not_on_configuration_errors():
    service = unit()["Service"]
    assert service["Restart"] == "on-failure"
    assert set(service["RestartPreventExitStatus"].split()) == {"2", "3"}
    program, *arguments = service["ExecStart"].split()
    assert Path(program).name == "kioku" and arguments == ["relay"]
    assert service["User"] != "root"


def test_the_unit_reads_secrets_from_an_environment_file_and_holds_none():
    service = unit()["Service"]
    assert service["EnvironmentFile"].startswith("/")
    assert "Environment" not in service
    assert not any(variable in UNIT.read_text() for variable in SECRET_VARIABLES)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_unit():
    done = subprocess.run(
        ["systemd-analyze", "verify", str(UNIT)], capture_output=True, text=True, check=False
    )
    exec_start = unit()["Service"]["ExecStart"].split()[0]
    problems = [
        line
        for line in (done.stdout + done.stderr).splitlines()
        if line.strip() and f"{exec_start} is not executable" not in line  # installed on the relay host
    ]
    assert problems == []
