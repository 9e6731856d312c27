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
                    "controller.cli.supervisor_commands", "controller.cli.support_commands",
                    "controller.cli.conformance_commands", "controller.cli.replay_command",
                    "controller.cli.software_commands")

# Which module registers each command, so that a command imports only its own module
# (`tablectl par-sheet` never loads asyncio or the control client). A command missing here
# still works: the parser then loads every module. tests/cli/test_lazy_imports.py fails
# until a new command is added.
COMMAND_MODULE = {
    "par-sheet": "controller.cli.rules_commands",
    "simulate": "controller.cli.rules_commands",
    "config": "controller.cli.rules_commands",
    "supervisor": "controller.cli.supervisor_commands",
    "support-bundle": "controller.cli.support_commands",
    "conformance": "controller.cli.conformance_commands",
    "software": "controller.cli.software_commands",
    "replay": "controller.cli.replay_command",
    **{name: "controller.cli.table_commands" for name in (
        "status", "devices", "test", "rounds", "meters", "jackpot", "fault", "irregularity",
        "events")},
}


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand in ``argv`` (its first word that is not an option), if any."""
    for word in argv:
        if not word.startswith("-"):
            return word
        if word in ("-h", "--help", "--version"):
            return None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """tablectl's parser; given ``argv``, with only the module of the command it names."""
    import importlib

    command = _command_named(argv) if argv is not None else None
    modules = ((COMMAND_MODULE[command],) if command in COMMAND_MODULE
               else _COMMAND_MODULES)
    parser = argparse.ArgumentParser(
        prog="tablectl",
        description="Diagnose and operate a baccarat table controller.",
    )
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}",
                        help="print tablectl's version and exit (the daemon's is in 'status')")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module_name in modules:
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
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
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
