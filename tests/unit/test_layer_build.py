"""The layer's makefile (what `sam build` runs for KiokuLayer) and its lock, without AWS or PyPI: a
one-package wheelhouse stands in for the index, so the real target installs, copies and compiles."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from scripts.check_deploy import marker_problems, pyc_problems, unshipped_problems
from scripts.layer_requirements import REPO_ROOT, requirement_name, runtime_requirements

LAYER_DIR = REPO_ROOT / "layers" / "kioku"
LOCK = LAYER_DIR / "requirements.txt"
RELAY_LOCK = REPO_ROOT / "deploy" / "relay" / "requirements.txt"


def pins(lock: Path) -> dict[str, str]:
    return {
        requirement_name(name): pinned
        for name, pinned in re.findall(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", lock.read_text(), re.MULTILINE)
    }


def python313() -> str | None:
    """The Lambda runtime's interpreter, as the Makefile finds it (PATH, else pyenv); pyenv shims
    on PATH may not run it, so ask each candidate."""
    candidates = [
        shutil.which("python3.13"),
        *sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python3.13")),
    ]
    for candidate in filter(None, candidates):
        if subprocess.run([str(candidate), "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return str(candidate)
    return None


def tiny_wheel(wheelhouse: Path) -> Path:
    """A pure-Python wheel, built by hand: name, metadata, record."""
    files = {
        "tinydep/__init__.py": b"VALUE = 1\n",
        "tinydep-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinydep\nVersion: 1.0\n",
        "tinydep-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for name, data in files.items()
    )
    path = wheelhouse / "tinydep-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("tinydep-1.0.dist-info/RECORD", record + "tinydep-1.0.dist-info/RECORD,,\n")
    return path


def test_the_layer_target_installs_the_hashed_lock_and_compiles_everything_unchecked_hash(tmp_path):
    # Given the layer's sources with a lock of one hashed wheel, served from a local wheelhouse
    source = tmp_path / "source"
    shutil.copytree(LAYER_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    wheel = tiny_wheel(wheelhouse)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (source / "requirements.txt").write_text(f"tinydep==1.0 --hash=sha256:{digest}\n")
    python = python313() or sys.executable
    env = {
        **os.environ,
        "ARTIFACTS_DIR": str(tmp_path / "artifacts"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
    }

    # When sam build's make step runs
    subprocess.run(
        ["make", "-f", "Makefile", "build-KiokuLayer", f"PYTHON={python}"], cwd=source, env=env, check=True
    )

    # Then the layer holds the dependency and kioku, every module precompiled, checked by hash only
    site = tmp_path / "artifacts" / "python"
    assert (site / "tinydep" / "__init__.py").is_file()
    tag = subprocess.run(
        [python, "-c", "import sys; print(sys.implementation.cache_tag)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    compiled = [pyc_problems_for(site, tag)]
    assert compiled == [[]]
    assert not list(site.glob("kioku/**/*.py[co]").__iter__()) or all(
        "__pycache__" in str(p) for p in site.rglob("*.pyc")
    )


def pyc_problems_for(site: Path, tag: str) -> list[str]:
    if tag == "cpython-313":
        return pyc_problems(site)
    problems = []
    for source in [*(site / "kioku").rglob("*.py"), site / "tinydep" / "__init__.py"]:
        pyc = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
        if not pyc.is_file() or int.from_bytes(pyc.read_bytes()[4:8], "little") != 0b01:
            problems.append(str(pyc))
    return problems


def test_a_tampered_lock_is_refused(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(LAYER_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    tiny_wheel(wheelhouse)
    (source / "requirements.txt").write_text(f"tinydep==1.0 --hash=sha256:{'0' * 64}\n")
    env = {
        **os.environ,
        "ARTIFACTS_DIR": str(tmp_path / "artifacts"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
    }

    done = subprocess.run(
        ["make", "-f", "Makefile", "build-KiokuLayer", f"PYTHON={sys.executable}"],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
    )

    assert done.returncode != 0 and "hash" in done.stderr.lower()


def x86_64_only_wheel(wheelhouse: Path) -> Path:
    """The tiny wheel, tagged for x86_64 Linux only: pip takes it for that platform and no other."""
    pure = tiny_wheel(wheelhouse)
    tag = "cp313-cp313-manylinux2014_x86_64"
    tagged = wheelhouse / f"tinydep-1.0-{tag}.whl"
    with zipfile.ZipFile(pure) as source, zipfile.ZipFile(tagged, "w") as wheel:
        files = {name: source.read(name) for name in source.namelist() if not name.endswith("RECORD")}
        files["tinydep-1.0.dist-info/WHEEL"] = (
            f"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
        )
        record = "".join(
            f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
            for name, data in files.items()
        )
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("tinydep-1.0.dist-info/RECORD", record + "tinydep-1.0.dist-info/RECORD,,\n")
    pure.unlink()
    return tagged


def run_layer_make_as_sam_does(
    tmp_path: Path, architecture: str, wheel_for=x86_64_only_wheel, **env: str
) -> subprocess.CompletedProcess:
    """sam build's make step: in a copy of the layer, run in the Metadata WorkingDirectory
    `architecture/<Architecture>`, ARTIFACTS_DIR set, against a wheelhouse (x86_64-only by default)."""
    source = tmp_path / "copy-of-layer"
    shutil.copytree(LAYER_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    wheel = wheel_for(wheelhouse)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (source / "requirements.txt").write_text(f"tinydep==1.0 --hash=sha256:{digest}\n")
    environment = {
        **{k: v for k, v in os.environ.items() if k != "KIOKU_ARCHITECTURE"},
        "ARTIFACTS_DIR": str(tmp_path / "artifacts"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
        **env,
    }
    return subprocess.run(
        ["make", "--makefile", str(source / "Makefile"), "build-KiokuLayer", f"PYTHON={sys.executable}"],
        cwd=source / "architecture" / architecture,
        env=environment,
        capture_output=True,
        text=True,
    )


def test_the_layer_is_built_for_the_templates_architecture_without_any_environment(tmp_path):
    # When sam build runs the layer's make step for Architecture=x86_64, nothing else set
    done = run_layer_make_as_sam_does(tmp_path, "x86_64")

    # Then the x86_64 wheels are what it installs (the arm64 default would find none)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "manylinux2014_x86_64" in done.stdout and "aarch64" not in done.stdout
    assert (tmp_path / "artifacts" / "python" / "tinydep" / "__init__.py").is_file()


MACHINES = {"arm64": "aarch64", "x86_64": "x86_64"}


def start_an_entry_point(site: Path) -> subprocess.CompletedProcess:
    """What Lambda's init does first with the layer: import kioku's entry points from it alone."""
    return subprocess.run(
        [sys.executable, "-S", "-c", "import kioku.entrypoints, kioku; print(kioku.__file__)"],
        env={"PYTHONPATH": str(site), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("architecture", ["arm64", "x86_64"])
def test_an_entry_point_starts_only_on_the_machine_the_layer_was_built_for(tmp_path, architecture):
    # Given the layer sam build makes for the template's Architecture (a pure wheel: any machine's)
    built = run_layer_make_as_sam_does(tmp_path, architecture, wheel_for=tiny_wheel)
    assert built.returncode == 0, built.stdout + built.stderr
    site = tmp_path / "artifacts" / "python"

    # When a function on this machine starts with it
    started = start_an_entry_point(site)

    # Then the deploy check reads the machine it was built for
    assert marker_problems(site, architecture) == []
    # and it starts where the wheels fit, and anywhere else refuses, saying what to build
    if MACHINES[architecture] == os.uname().machine:
        assert started.returncode == 0, started.stderr
        assert started.stdout.startswith(str(site))
    else:
        assert started.returncode != 0
        here = {v: k for k, v in MACHINES.items()}[os.uname().machine]
        assert f"built for {MACHINES[architecture]} ({architecture})" in started.stderr
        assert f"make build ARCH={here}" in started.stderr


def test_the_layer_leaves_out_the_playground_and_the_relay_which_no_function_runs(tmp_path):
    # When sam build runs the layer's make step
    done = run_layer_make_as_sam_does(tmp_path, "x86_64")

    # Then kioku is there without its playground and relay packages (modules named alike stay)
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "artifacts" / "python"
    assert (site / "kioku" / "entrypoints" / "relay.py").is_file()
    assert not (site / "kioku" / "playground").exists()
    assert not (site / "kioku" / "relay").exists()
    assert not (site / "kioku" / "adapters" / "llm" / "scripted.py").exists()
    assert (site / "kioku" / "adapters" / "llm" / "openai.py").is_file()
    assert unshipped_problems(site) == []


def test_the_deploy_check_names_a_package_the_layer_must_not_ship(tmp_path):
    site = tmp_path / "python"
    (site / "kioku" / "relay").mkdir(parents=True)

    assert unshipped_problems(site) == ["the layer ships kioku/relay, which no function runs"]


def test_an_arm64_build_does_not_take_x86_64_wheels(tmp_path):
    done = run_layer_make_as_sam_does(tmp_path, "arm64")

    assert done.returncode != 0
    assert "manylinux2014_aarch64" in done.stdout
    assert not (tmp_path / "artifacts" / "python" / "tinydep").exists()


def test_an_environment_that_contradicts_the_template_fails_the_build(tmp_path):
    done = run_layer_make_as_sam_does(tmp_path, "x86_64", KIOKU_ARCHITECTURE="arm64")

    assert done.returncode != 0
    assert "Architecture is x86_64" in done.stdout + done.stderr
    assert not (tmp_path / "artifacts").exists()


def test_the_lock_pins_every_runtime_dependency_within_pyproject_and_leaves_boto3_to_the_runtime():
    locked = pins(LOCK)
    for requirement in map(Requirement, runtime_requirements()):
        assert requirement.specifier.contains(locked[requirement_name(str(requirement))], prereleases=True), (
            requirement
        )
    assert "boto3" not in locked and "botocore" not in locked
    assert all(
        line.strip().startswith(("--hash", "#")) or "==" in line or not line.strip()
        for line in LOCK.read_text().splitlines()
        if not line.rstrip().endswith("\\") or "==" in line
    )


def test_the_tests_run_against_the_locked_versions():
    # make venv installs the dev venv constrained by the lock: what passes here is what deploys
    mismatched = {
        name: (pinned, version(name)) for name, pinned in pins(LOCK).items() if version(name) != pinned
    }
    assert mismatched == {}


def test_the_relay_lock_agrees_with_the_layer_lock_and_hashes_everything():
    layer, relay = pins(LOCK), pins(RELAY_LOCK)
    assert {name: relay[name] for name in layer} == layer
    assert "hikari" in relay
    for lock in (LOCK, RELAY_LOCK):
        blocks = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text())
        assert all("--hash=sha256:" in block for block in blocks if "==" in block)


@pytest.mark.parametrize(
    "step",
    [
        "--require-hashes",
        "--only-binary=:all:",
        "--invalidation-mode unchecked-hash",
        "--python-version 3.13",
    ],
)
def test_the_layer_makefile_keeps_its_reproducibility_steps(step):
    assert step in (LAYER_DIR / "Makefile").read_text()
