"""A package's import graph, read from its source with ast: nothing is imported or run.

Each import is one of three kinds: ``eager`` (it runs when the module is imported: at module level,
in a class body, in a ``try`` or an ``if``), ``lazy`` (inside a function: it runs when the function
is called) or ``typing`` (under ``if TYPE_CHECKING:``, which never runs: no cycle at import, yet
the two modules still lean on each other, so ``declared`` counts it). A
string constant naming one of the package's modules (``"pkg.mod"`` or ``"pkg.mod:attr"``, as an
``importlib.import_module`` table holds them) counts as a lazy import.

Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so an import is also an edge to
the packages above its target, except those above the importing module itself (they are already
being imported when it runs).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path


class Kind(Enum):
    EAGER = "eager"
    LAZY = "lazy"
    TYPING = "typing"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool

    @property
    def package(self) -> str:
        """The package relative imports start from."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


def modules_under(root: Path, package: str) -> dict[str, Module]:
    """Every module of ``package`` (a folder in ``root``), by its dotted name."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found[name] = Module(name, path, is_package)
    return found


def ancestors(name: str) -> list[str]:
    """``a.b.c`` → ``a.b``, ``a``."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(len(parts) - 1, 0, -1)]


def imports_of(source: str, module: Module, modules: Mapping[str, Module]) -> set[tuple[str, Kind]]:
    """The modules of ``modules`` that ``source`` (``module``'s text) imports, each with its kind."""
    found: set[tuple[str, Kind]] = set()

    def known(name: str) -> str | None:
        """``name`` if it is a module, else the module it is an attribute of."""
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def add(target: str | None, kind: Kind) -> None:
        if target is None or target == module.name:
            return
        own = set(ancestors(module.name))
        for each in [target, *ancestors(target)]:
            if each in modules and each not in own:
                found.add((each, kind))

    def visit(node: ast.AST, kind: Kind) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, Kind.TYPING)
            for child in node.orelse:
                visit(child, kind)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            kind = Kind.LAZY
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(known(alias.name), kind)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.package
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in modules else known(base), kind)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = node.value.partition(":")[0]
            if named in modules:
                add(named, Kind.LAZY)
        for child in ast.iter_child_nodes(node):
            visit(child, kind)

    visit(ast.parse(source), Kind.EAGER)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@dataclass(frozen=True)
class ImportGraph:
    modules: dict[str, Module]
    edges: dict[str, set[tuple[str, Kind]]]

    @classmethod
    def of(cls, root: Path, package: str) -> ImportGraph:
        modules = modules_under(root, package)
        edges = {
            name: imports_of(m.path.read_text(encoding="utf-8"), m, modules) for name, m in modules.items()
        }
        return cls(modules, edges)

    def imported_by(self, source: str, module: Module) -> set[tuple[str, Kind]]:
        """What a file outside the package (a Lambda handler) imports of it."""
        return imports_of(source, module, self.modules)

    def eager(self) -> dict[str, set[str]]:
        """Who imports whom when a module is imported: the graph a cycle would break."""
        return {
            name: {target for target, kind in out if kind is Kind.EAGER} for name, out in self.edges.items()
        }

    def declared(self) -> dict[str, set[str]]:
        """Who names whom at module level, for running or for typing only: a circle here is modules
        that cannot be read (or moved) one without the other, even if importing them works."""
        kinds = (Kind.EAGER, Kind.TYPING)
        return {name: {target for target, kind in out if kind in kinds} for name, out in self.edges.items()}

    def every(self) -> dict[str, set[str]]:
        """Who may import whom, at import or in a function (typing-only imports are left out)."""
        return {
            name: {target for target, kind in out if kind is not Kind.TYPING}
            for name, out in self.edges.items()
        }

    def reachable(self, start: Iterable[str]) -> set[str]:
        """Every module an import of ``start`` may run, now or later (in any function)."""
        every, seen = self.every(), set()
        pending = list(start)
        while pending:
            name = pending.pop()
            if name not in seen:
                seen.add(name)
                pending += every.get(name, ())
        return seen


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One cycle (``[a, b, …, a]``) through each strongly connected group of modules, sorted."""
    return sorted(_cycle_in(group, graph) for group in _strongly_connected(graph) if len(group) > 1)


def _strongly_connected(graph: Mapping[str, Iterable[str]]) -> Iterator[set[str]]:
    """Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                yield group


def _cycle_in(group: set[str], graph: Mapping[str, Iterable[str]]) -> list[str]:
    """A shortest cycle through the group's first module (breadth first, inside the group)."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(set(graph.get(node, ())) & group):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle in the strongly connected group {sorted(group)}")
