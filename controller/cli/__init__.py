"""tablectl: the technician's command line.

Each subcommand group lives in its own module and registers itself through
`register(subparsers)`; exit codes are the constants in `controller.cli.exitcodes`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from controller import __version__
from controller.cli import exitcodes

# Modules that contribute subcommands; each has register(subparsers) -> None.
_COMMAND_MODULES = ("controller.cli.rules_commands", "controller.cli.table_commands",
                    "controller.cli.supervisor_commands", "controller.cli.support_commands")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(
        prog="tablectl",
        description="Diagnose and operate a baccarat table controller.",
    )
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}",
                        help="print tablectl's version and exit (the daemon's is in 'status')")
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


def _reader_went_away() -> int:
    """The reader of our output stopped reading (`tablectl status | head -1`, a closed
    pager). Not an error of ours: stop writing, quietly. stdout is pointed at /dev/null so
    that the interpreter's final flush of what is still buffered cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (a test's capture)
        pass
    finally:
        os.close(devnull)
    return exitcodes.OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad arguments, 0 on --help and --version
        return exitcodes.BAD_ARGUMENTS if exc.code not in (0, None) else exitcodes.OK
    handler = args.handler
    try:
        code = int(handler(args) or exitcodes.OK)
        sys.stdout.flush()  # a cut pipe shows here when the last lines are still buffered
    except BrokenPipeError:
        return _reader_went_away()
    return code


if __name__ == "__main__":
    sys.exit(main())
