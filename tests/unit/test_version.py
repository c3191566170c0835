"""One version, written once (kioku/__init__.py), and the same wherever it is read: the installed
package's metadata, `kioku --version`, the CHANGELOG's newest section, the release steps."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import version

from packaging.version import Version
from scripts.layer_requirements import REPO_ROOT

import kioku

HEADING = re.compile(
    r"^## (?P<version>\S+) \((?P<when>unreleased|\d{4}-\d{2}-\d{2})\)$|^## (?P<first>0\.1\.0)$"
)


def changelog_sections() -> list[tuple[Version, str]]:
    """(version, date or "unreleased") of each `## ` heading, top to bottom; a heading that is not a
    release fails here (0.1.0, from before tags, has no date)."""
    sections = []
    for line in (REPO_ROOT / "CHANGELOG.md").read_text().splitlines():
        if line.startswith("## "):
            match = HEADING.match(line)
            assert match, (
                f"CHANGELOG heading {line!r} is not `## X.Y.Z (YYYY-MM-DD)` or `## X.Y.Z (unreleased)`"
            )
            sections.append((Version(match["version"] or match["first"]), match["when"] or ""))
    return sections


def test_the_version_is_written_once_and_the_package_metadata_reads_it():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kioku.__version__"}
    # the venv's install (make venv reinstalls when pyproject changes) carries the same version
    assert version("kioku") == kioku.__version__


def test_kioku_version_prints_it():
    done = subprocess.run(
        [sys.executable, "-m", "kioku.cli", "--version"], capture_output=True, text=True, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"kioku {kioku.__version__}\n"


def test_the_changelog_has_a_section_per_release_newest_first_and_its_top_is_this_version():
    sections = changelog_sections()
    current = Version(kioku.__version__)

    versions = [v for v, _ in sections]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    # the top section is this version's: a release has its date, the work towards one is unreleased
    top, when = sections[0]
    assert top == Version(current.base_version)
    assert (when == "unreleased") == current.is_devrelease
    assert all(when != "unreleased" for _, when in sections[1:])


def test_the_release_steps_tag_the_version_the_package_says():
    operations = (REPO_ROOT / "docs" / "operations.md").read_text()
    release = operations[operations.index("## Release") :]
    release = release[: release.index("\n## ", 1)]

    assert "layers/kioku/kioku/__init__.py" in release
    assert 'git tag -a "v$VERSION"' in release and "git push origin" in release
    assert "kioku --version" in release
