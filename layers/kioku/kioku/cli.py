"""The ``kioku`` console script: one sub-command per operator task, each imported only when used."""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "register-commands": ("kioku.services.registration", "Bulk-overwrite the slash commands on Discord."),
    "doctor": ("kioku.services.doctor", "Check a deployed stack from outside, hop by hop."),
    "relay": ("kioku.relay.cli", "Run the gateway relay that forwards messages to RelayFunction."),
    "playground": ("kioku.playground.console", "Run the local playground (what `make run` starts)."),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="kioku", description="kioku operator commands")
    parser.add_argument("command", choices=sorted(SUBCOMMANDS), help="what to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the command")
    if not argv or argv[0] in {"-h", "--help"}:
        parser.print_help()
        for name, (_, summary) in sorted(SUBCOMMANDS.items()):
            print(f"  {name:<18} {summary}")
        return 0 if argv else 2
    options = parser.parse_args(argv[:1])
    module = importlib.import_module(SUBCOMMANDS[options.command][0])
    return int(module.run(argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
