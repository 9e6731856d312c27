"""tabled's command line: run the table, or one of the once-only steps on its critical
memory (--init-store, --clear-store, --register-witness) and exit."""

from __future__ import annotations

import argparse

from controller import __version__
from controller.logsetup import add_log_level_argument

_SUPERVISED = ("with --clear-store, or --init-store and --register-witness for a table the "
               "witness already knows")


def command_line() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tabled", description="Baccarat table controller daemon")
    parser.add_argument("--version", action="version", version=f"tabled {__version__}")
    parser.add_argument("--config", required=True, help="the table's configuration (TOML)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a configuration value, e.g. shoe.url=/dev/ttyUSB1")
    add_log_level_argument(parser)
    once = parser.add_mutually_exclusive_group()
    once.add_argument("--init-store", action="store_true",
                      help="initialise a new table's critical memory (key, store, anchor) and "
                           "exit; run once, as the daemon's user (docs/deployment.md)")
    once.add_argument("--clear-store", action="store_true",
                      help="a supervisor clears critical memory: the old store is kept as "
                           "evidence, a new one records the last meter values; then exit")
    once.add_argument("--register-witness", action="store_true",
                      help="register this table's key with the witness [witness] names (a "
                           "table initialised before it had one); a table the witness knows "
                           "needs --supervisor, --reason and the PIN; then exit")
    parser.add_argument("--supervisor", help=f"{_SUPERVISED}: the supervisor's name")
    parser.add_argument("--reason", default="", help=f"{_SUPERVISED}: why")
    parser.add_argument("--pin-stdin", action="store_true",
                        help=f"{_SUPERVISED}: read the PIN from standard input")
    return parser
