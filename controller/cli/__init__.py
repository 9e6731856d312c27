"""tablectl: the technician's command line.

Each subcommand group lives in its own module and registers itself through
`register(subparsers)`; exit codes are the constants in `controller.cli.exitcodes`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from controller.cli import exitcodes

# Modules that contribute subcommands; each has register(subparsers) -> None.
_COMMAND_MODULES = ("controller.cli.rules_commands", "controller.cli.table_commands",
                    "controller.cli.supervisor_commands")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(
        prog="tablectl",
        description="Diagnose and operate a baccarat table controller.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module_name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.register(subparsers)
    return parser




def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad arguments, 0 on --help
        return exitcodes.BAD_ARGUMENTS if exc.code not in (0, None) else exitcodes.OK
    handler = args.handler
    return int(handler(args) or exitcodes.OK)


if __name__ == "__main__":
    sys.exit(main())
