"""One composition root: the services are handed their stores, never look them up or build them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kioku
from kioku.config import Settings
from kioku.entrypoints.composition import Container
from kioku.signatures import new_key_pair

PACKAGE = Path(kioku.__file__).resolve().parent
ROOT = PACKAGE / "entrypoints" / "composition.py"
STORES = {
    "KiokuTable",
    "ConfigStore",
    "StmStore",
    "StmJanitor",
    "DynamoMemoryStore",
    "TurnLedger",
    "RateLedger",
    "TurnRepository",
    "TurnQueue",
    "DeadLetterQueue",
    "LtmVectorBackfill",
}
"""The data-access classes: a container builds one of each, in the root."""


def deployment_settings(**values: str) -> Settings:
    """A deployment's settings (nothing sent to AWS until a part is used), with ``values`` over them."""
    public_key = new_key_pair()[1]
    return Settings.from_environ(
        {
            "TABLE_NAME": "kioku-table",
            "TURN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/kioku.fifo",
            "DISCORD_APPLICATION_ID": "100000000000000001",
            "DISCORD_PUBLIC_KEY": public_key,
            "RELAY_PUBLIC_KEY": public_key,
            **values,
        }
    )


@pytest.fixture
def settings() -> Settings:
    return deployment_settings()


def modules(*rooms: str) -> list[Path]:
    return sorted(path for room in rooms for path in (PACKAGE / room).rglob("*.py"))


def imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def called_names(tree: ast.AST) -> set[str]:
    calls = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            calls.add(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
    return calls


def test_no_service_looks_up_a_store_through_a_global_registry():
    offenders = {}
    for path in modules("services"):
        tree = ast.parse(path.read_text(), str(path))
        registries = {
            name
            for name in imported_modules(tree)
            if name.startswith("kioku.entrypoints") or name.split(".")[-1] == "warm"
        }
        registries |= {
            f"{node.value.id}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in {"warm", "composition"}
        }
        if registries:
            offenders[str(path.relative_to(PACKAGE))] = sorted(registries)
    assert offenders == {}


def test_only_the_composition_root_builds_stores_and_queues():
    builders = {}
    for path in modules("services", "entrypoints"):
        built = STORES & called_names(ast.parse(path.read_text(), str(path)))
        if built:
            builders[str(path.relative_to(PACKAGE))] = sorted(built)
    assert builders == {"entrypoints/composition.py": sorted(STORES)}


def test_a_container_builds_each_part_once_on_one_table(settings: Settings):
    # Given a container for a deployment's settings
    container = Container(settings)
    # When its stores are asked for, twice
    first = (container.config_store, container.stm_store, container.ltm_store, container.turn_ledger)
    again = (container.config_store, container.stm_store, container.ltm_store, container.turn_ledger)
    # Then each is built once (nothing is sent to AWS), and all of them share the container's table
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert {id(store._table) for store in first} == {id(container.table)}


def test_a_part_handed_in_replaces_the_one_the_container_would_build(settings: Settings):
    handed = object()
    assert Container(settings, config_store=handed).config_store is handed
    with pytest.raises(TypeError, match="no part called 'config_stor'"):
        Container(settings, config_stor=handed)
