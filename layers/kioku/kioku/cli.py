"""The ``kioku`` console script: one sub-command per operator task, each imported only when used."""

from __future__ import annotations

import argparse
import importlib
import sys

from kioku import __version__

SUBCOMMANDS = {
    "register-commands": ("kioku.services.registration", "Bulk-overwrite the slash commands on Discord."),
    "doctor": ("kioku.services.doctor_cli", "Check a deployed stack from outside, hop by hop."),
    "relay": ("kioku.relay.cli", "Run the gateway relay that forwards messages to RelayFunction."),
    "playground": ("kioku.playground.console", "Run the local playground (what `make run` starts)."),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = "\n".join(f"  {name:<18} {summary}" for name, (_, summary) in sorted(SUBCOMMANDS.items()))
    parser = argparse.ArgumentParser(
        prog="kioku",
        description="kioku operator commands; `kioku COMMAND --help` for a command's options.",
        epilog=f"commands:\n{commands}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kioku {__version__}")
    parser.add_argument(
        "command", metavar="COMMAND", choices=sorted(SUBCOMMANDS), help="one of the commands below"
    )
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    if not argv:
        parser.print_help()
        return 2
    options = parser.parse_args(argv[:1])
    module = importlib.import_module(SUBCOMMANDS[options.command][0])
    return int(module.run(argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
