"""docs/configuration.md cannot drift: every setting the code reads and every template parameter is
documented there, with the default the code actually has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scripts.sam_template import load

from kioku.config import Settings
from kioku.relay import cli as relay_cli

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def rows() -> dict[str, str]:
    """First column (each back-quoted name in it) → the row's default column."""
    table = {}
    for line in DOCS.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 3:
            for name in re.findall(r"`([^`]+)`", cells[0]):
                table[name] = cells[1]
    return table


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_every_function_setting_is_documented_with_its_default(name):
    field = Settings.model_fields[name]
    documented = rows()
    assert name in documented
    if not field.is_required() and field.default is not None:
        default = field.default
        shown = (
            str(default).lower()
            if isinstance(default, bool)
            else f"{default:g}"
            if isinstance(default, float)
            else str(default)
        )
        assert f"`{shown}`" in documented[name], (name, documented[name])


def test_every_template_parameter_is_documented_with_its_default():
    documented = rows()
    for name, parameter in load()["Parameters"].items():
        assert name in documented, name
        if "Default" in parameter:
            shown = f"`{parameter['Default']}`" if parameter["Default"] != "" else "empty"
            assert shown in documented[name], (name, documented[name])


def test_every_relay_variable_is_documented():
    documented = rows()
    variables = [value for name, value in vars(relay_cli).items() if name.endswith("_VARIABLE")]
    assert variables and set(variables) <= set(documented)


def test_the_readmes_guided_deploy_table_answers_every_prompt():
    # sam deploy --guided asks for every template parameter, in the README's table each is answered
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    answered = {
        name.strip()
        for row in re.findall(r"^\| Parameter ([^|]+)\|", readme, re.MULTILINE)
        for name in row.split(",")
    }

    assert answered == set(load()["Parameters"])
