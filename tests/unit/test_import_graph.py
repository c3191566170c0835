"""kioku's imports, read from the source (tests/unit/import_graph.py): the package has no import
cycle, the playground's modules depend one way, and no Lambda handler can reach the playground or
the relay, which the layer does not ship.

A cycle here is one among the imports that run when a module is imported. Imports inside a function
(kioku's lazy imports, kept for the cold start) do not count: they run after every module involved
is loaded. Imports under ``if TYPE_CHECKING:`` never run, yet two modules that name each other that
way are still one knot to read and move: a second test counts them, so such a circle is seen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.unit.import_graph import ImportGraph, Kind, Module, cycles, imports_of

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
PACKAGE_ROOT: Final = REPO_ROOT / "layers" / "kioku"
HANDLERS: Final = sorted((REPO_ROOT / "functions").glob("*/app.py"))
NOT_SHIPPED: Final = ("kioku.playground", "kioku.relay", "kioku.adapters.llm.scripted")
NAMED_BUT_REFUSED: Final = frozenset({"kioku.adapters.llm.scripted"})
"""Not shipped, yet reached by name (the chat model registry's table): Settings refuses
LLM_PROVIDER=scripted wherever Lambda runs a function (tests/unit/test_config.py)."""

KNOWN_CYCLES: Final[list[list[str]]] = []
"""Cycles main still has, each as ``cycles`` prints it, until the part that owns them breaks them."""


@pytest.fixture(scope="module")
def kioku() -> ImportGraph:
    return ImportGraph.of(PACKAGE_ROOT, "kioku")


def test_the_package_has_no_import_cycle(kioku):
    found = cycles(kioku.eager())
    assert found == KNOWN_CYCLES, "import cycles (a → b: a imports b when it is imported):\n" + "\n".join(
        " → ".join(cycle) for cycle in found
    )


def test_the_package_has_no_import_cycle_even_through_typing_only_imports(kioku):
    found = cycles(kioku.declared())
    assert found == [], "import cycles, counting imports under TYPE_CHECKING:\n" + "\n".join(
        " → ".join(cycle) for cycle in found
    )


def test_the_playground_depends_one_way_even_through_its_lazy_imports(kioku):
    # console → web → session → render: the web inspector never reaches back into the console
    playground = {
        name: {target for target in targets if target.startswith("kioku.playground")}
        for name, targets in kioku.every().items()
        if name.startswith("kioku.playground")
    }
    assert cycles(playground) == []
    assert "kioku.playground.console" not in kioku.reachable(["kioku.playground.web.server"])


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda path: path.parent.name)
def test_no_handler_path_imports_the_playground_or_the_relay(kioku, handler):
    # Given what the handler imports, and everything that may import in turn, now or in any function
    outside = Module(f"functions.{handler.parent.name}.app", handler, is_package=False)
    imported = {target for target, _ in kioku.imported_by(handler.read_text(encoding="utf-8"), outside)}
    reached = kioku.reachable(imported)
    # Then it reaches its entry point, and nothing the layer leaves out
    assert any(name.startswith("kioku.entrypoints.") for name in reached)
    assert (
        sorted(name for name in reached if name.startswith(NOT_SHIPPED) and name not in NAMED_BUT_REFUSED)
        == []
    )


def test_the_turn_handler_reaches_the_modules_it_loads_lazily_and_by_name(kioku):
    # The graph is only a proof if it follows what the turn worker imports late: the adapters in
    # turn_service(), and a chat model named in a table for importlib
    outside = Module("functions.turn.app", REPO_ROOT / "functions" / "turn" / "app.py", is_package=False)
    imported = {target for target, _ in kioku.imported_by(outside.path.read_text(encoding="utf-8"), outside)}
    reached = kioku.reachable(imported)
    assert {
        "kioku.adapters.discord_rest",
        "kioku.adapters.llm.openai",
        "kioku.adapters.llm.scripted",
    } <= reached


# -- the graph itself, on a package made for the purpose ---------------------------------------------


def write_package(root: Path, files: dict[str, str]) -> ImportGraph:
    for name, source in {"pkg/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(source)
    return ImportGraph.of(root, "pkg")


def test_two_modules_importing_each_other_are_a_cycle_printed_in_order(tmp_path):
    graph = write_package(
        tmp_path,
        {
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "import pkg.c\n",
            "pkg/c.py": "from pkg.a import VALUE\n",
            "pkg/d.py": "from . import a\n",
        },
    )
    assert cycles(graph.eager()) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_imports_in_functions_and_for_type_checking_are_no_cycle(tmp_path):
    graph = write_package(
        tmp_path,
        {
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.a import A\n"
                "def later():\n    from pkg import a\n"
            ),
        },
    )
    assert cycles(graph.eager()) == []
    assert cycles(graph.every()) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert ("pkg.a", Kind.LAZY) in graph.edges["pkg.b"]


def test_a_circle_through_a_typing_only_import_is_declared(tmp_path):
    # Given a module that names another only for typing, which imports it back at run time
    graph = write_package(
        tmp_path,
        {
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n",
            "pkg/c.py": "def later():\n    from pkg import a\n",
            "pkg/d.py": "from pkg import c\n",
        },
    )
    # Then importing works (no eager cycle), but the circle is declared; a lazy import is not
    assert cycles(graph.eager()) == []
    assert cycles(graph.declared()) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert ("pkg.a", Kind.TYPING) in graph.edges["pkg.b"]
    assert "pkg.a" not in graph.every()["pkg.b"]
    assert "pkg.a" not in graph.declared()["pkg.c"]


def test_importing_a_submodule_runs_the_packages_above_it(tmp_path):
    # Importing pkg.sub.inner runs pkg/sub/__init__ first, which imports the importer back
    graph = write_package(
        tmp_path,
        {
            "pkg/sub/__init__.py": "from pkg.other import Y\n",
            "pkg/sub/inner.py": "X = 1\n",
            "pkg/other.py": "from pkg.sub.inner import X\nY = 2\n",
        },
    )
    assert cycles(graph.eager()) == [["pkg.other", "pkg.sub", "pkg.other"]]


def test_a_package_importing_its_own_modules_is_no_cycle(tmp_path):
    graph = write_package(
        tmp_path,
        {
            "pkg/sub/__init__.py": "from pkg.sub.inner import X\n",
            "pkg/sub/inner.py": "from pkg.sub.helper import Z\nX = Z\n",
            "pkg/sub/helper.py": "Z = 1\n",
        },
    )
    assert cycles(graph.eager()) == []


def test_a_module_named_in_a_string_is_a_lazy_import(tmp_path):
    modules = {"pkg": Module("pkg", tmp_path, True), "pkg.impl": Module("pkg.impl", tmp_path, False)}
    here = Module("pkg.table", tmp_path, False)
    assert imports_of('PROVIDERS = {"x": "pkg.impl:Model"}\n', here, modules) == {("pkg.impl", Kind.LAZY)}


LAYERS: Final = {
    # a layer: the kioku packages (besides itself) its modules may import, lazily or not
    "kioku.clock": set(),
    "kioku.public_keys": set(),
    "kioku.discord": {"kioku.clock"},
    "kioku.config": {"kioku.discord", "kioku.public_keys"},
    "kioku.observability": set(),
    "kioku.signatures": set(),
    "kioku.domain": {"kioku.discord", "kioku.clock"},
    "kioku.adapters": {"kioku.domain", "kioku.discord", "kioku.config", "kioku.clock", "kioku.observability"},
    "kioku.services": {
        "kioku.adapters",
        "kioku.domain",
        "kioku.discord",
        "kioku.config",
        "kioku.clock",
        "kioku.observability",
        "kioku.signatures",
    },
}
"""docs/architecture.md's rule: each layer imports only the layers below it (the entry points, the
playground and the relay sit on top and may import any)."""


def _layer_of(name: str) -> str | None:
    return next((layer for layer in LAYERS if name == layer or name.startswith(layer + ".")), None)


def _allowed(target: str, layer: str) -> bool:
    return target == "kioku" or any(
        target == allowed or target.startswith(allowed + ".") for allowed in {layer, *LAYERS[layer]}
    )


def test_each_layer_imports_only_the_layers_below_it(kioku):
    crossings = sorted(
        f"{source} → {target}"
        for source, targets in kioku.every().items()
        if (layer := _layer_of(source)) is not None
        for target in targets
        if not _allowed(target, layer)
    )
    assert crossings == [], "imports against docs/architecture.md's layers:\n" + "\n".join(crossings)


TOP: Final = ("kioku.entrypoints", "kioku.playground", "kioku.relay", "kioku.cli")
"""What sits above every layer, as docs/architecture.md draws it."""


def test_every_module_is_in_a_layer_or_on_top(kioku):
    placed = [*LAYERS, *TOP]
    unplaced = sorted(
        name
        for name in kioku.every()
        if name != "kioku" and not any(name == top or name.startswith(top + ".") for top in placed)
    )
    assert unplaced == []


def test_the_layer_rule_catches_a_domain_module_reaching_for_an_adapter(tmp_path):
    package = tmp_path / "kioku"
    (package / "domain").mkdir(parents=True)
    (package / "adapters").mkdir()
    for init in (package, package / "domain", package / "adapters"):
        (init / "__init__.py").write_text("")
    (package / "adapters" / "store.py").write_text("")
    (package / "domain" / "rule.py").write_text("def f():\n    from kioku.adapters import store\n")
    graph = ImportGraph.of(tmp_path, "kioku")
    reached = graph.every()["kioku.domain.rule"]
    assert "kioku.adapters.store" in reached
    assert [target for target in reached if not _allowed(target, "kioku.domain")]
