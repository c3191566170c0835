"""`make build` builds for the Architecture the stack is deployed with (samconfig.toml's saved
parameter_overrides), so `git pull && make build && sam deploy` on an x86_64 stack ships x86_64 wheels."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from scripts.deployed_architecture import deployed_architecture
from scripts.layer_requirements import REPO_ROOT

GUIDED_X86_64 = """version = 0.1
[default.deploy.parameters]
stack_name = "kioku"
parameter_overrides = "DiscordApplicationId=\\"123\\" LogLevel=\\"INFO\\" Architecture=\\"x86_64\\" AlarmEmail=\\"\\""
"""


def make_build(samconfig: Path, *arguments: str, dry_run: bool = True) -> subprocess.CompletedProcess:
    # -o venv: the test's own venv is what it is; make must not reinstall it
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            *(["-n"] if dry_run else []),
            "-o",
            "venv",
            "build",
            f"SAMCONFIG={samconfig}",
            *arguments,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    "saved, architecture",
    [
        (GUIDED_X86_64, "x86_64"),
        ('[default.global.parameters]\nparameter_overrides = ["Architecture=arm64"]\n', "arm64"),
        ('[default.deploy.parameters]\nparameter_overrides = "LogLevel=\\"WARN\\""\n', None),
        ("", None),
    ],
)
def test_the_saved_architecture_is_read_as_sam_deploy_reads_it(tmp_path, saved, architecture):
    samconfig = tmp_path / "samconfig.toml"
    samconfig.write_text(saved)

    assert deployed_architecture(samconfig) == architecture


def test_make_build_builds_for_the_architecture_the_stack_is_deployed_with(tmp_path):
    # Given a stack deployed with --guided for x86_64, its answers saved
    samconfig = tmp_path / "samconfig.toml"
    samconfig.write_text(GUIDED_X86_64)

    # When the upgrade runs a plain make build
    done = make_build(samconfig)

    # Then sam builds for x86_64, not the template's default
    assert done.returncode == 0, done.stderr
    assert "--parameter-overrides Architecture=x86_64" in done.stdout


def test_without_a_saved_architecture_make_build_builds_the_templates_default(tmp_path):
    done = make_build(tmp_path / "no-samconfig.toml")

    assert "--parameter-overrides Architecture=arm64" in done.stdout


def test_a_build_for_another_architecture_than_the_deployed_one_is_refused(tmp_path):
    samconfig = tmp_path / "samconfig.toml"
    samconfig.write_text(GUIDED_X86_64)

    done = make_build(samconfig, "ARCH=arm64", dry_run=False)

    assert done.returncode != 0
    assert "deploys Architecture=x86_64" in done.stdout
    # a build elsewhere (make bench's, make deploy-check's) is not what sam deploy ships
    assert make_build(samconfig, "ARCH=arm64", "BUILD_DIR=.aws-sam/elsewhere").returncode == 0
