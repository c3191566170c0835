"""The shipped package stays easy to read (issue 41): no module over 500 lines, no function over 80.
The playground is not shipped (it runs on a developer's machine), so it is not held to them."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "kioku" / "kioku"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def shipped_modules() -> list[Path]:
    return sorted(
        path for path in PACKAGE.rglob("*.py") if "playground" not in path.relative_to(PACKAGE).parts
    )


def test_the_walk_finds_the_package():
    names = {path.relative_to(PACKAGE).as_posix() for path in shipped_modules()}
    assert {"services/turn.py", "relay/cli.py", "discord/interaction.py"} <= names
    assert not any(name.startswith("playground/") for name in names)


def test_no_shipped_module_is_over_500_lines():
    long = {
        path.relative_to(PACKAGE).as_posix(): lines
        for path in shipped_modules()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_shipped_function_is_over_80_lines():
    long = {}
    for path in shipped_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = lines
    assert long == {}
