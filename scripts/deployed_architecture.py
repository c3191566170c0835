"""The Architecture a stack is deployed with, as `sam deploy` reads it from samconfig.toml: the
`parameter_overrides` that `sam deploy --guided` saves, in the deploy section or the global one.

``python -m scripts.deployed_architecture [SAMCONFIG]`` prints it, or nothing when no Architecture is
saved (a first deploy: the template's default). `make build` builds for it, so an upgrade
(`git pull && make build && sam deploy`) ships the wheels of the machine the stack runs on.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from pathlib import Path

SAMCONFIG = Path(__file__).resolve().parents[1] / "samconfig.toml"
ENVIRONMENT = "default"


def overrides(value: str | list[str]) -> dict[str, str]:
    """`Key=Value` pairs, as sam takes them: one string (values quoted) or a list of them."""
    pairs = shlex.split(value) if isinstance(value, str) else value
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


def deployed_architecture(samconfig: Path = SAMCONFIG) -> str | None:
    if not samconfig.is_file():
        return None
    environment = tomllib.loads(samconfig.read_text()).get(ENVIRONMENT, {})
    for section in ("deploy", "global"):
        saved = environment.get(section, {}).get("parameters", {}).get("parameter_overrides")
        if saved and (architecture := overrides(saved).get("Architecture")):
            if not re.fullmatch(r"arm64|x86_64", architecture):
                raise SystemExit(f"{samconfig}: Architecture={architecture} is neither arm64 nor x86_64")
            return architecture
    return None


if __name__ == "__main__":
    print(deployed_architecture(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMCONFIG) or "")
