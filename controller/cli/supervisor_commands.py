"""`tablectl supervisor hash-pin`: make the PIN hash for a table's [supervisors] section."""

from __future__ import annotations

import argparse
import getpass
import sys

from controller.auth import hash_pin
from controller.cli import exitcodes


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("supervisor", help="floor supervisor PINs")
    sub = parser.add_subparsers(dest="supervisor_command", metavar="ACTION")
    sub.required = True
    hash_parser = sub.add_parser(
        "hash-pin", help="print the hash of a PIN for the configuration's [supervisors] table")
    hash_parser.add_argument("name", help="the supervisor's name, e.g. 'ana'")
    hash_parser.add_argument("--pin-stdin", action="store_true",
                             help="read the PIN from standard input instead of prompting")
    hash_parser.set_defaults(handler=_hash_pin)


def _hash_pin(args: argparse.Namespace) -> int:
    if args.pin_stdin:
        pin = sys.stdin.readline().strip()
    else:
        try:
            pin = getpass.getpass("PIN (4 to 12 digits 0-9): ")
            again = getpass.getpass("PIN again: ")
        except EOFError:  # stdin ended (a script, /dev/null): nothing to hash
            print("\ntablectl: no PIN entered; --pin-stdin reads one line", file=sys.stderr)
            return exitcodes.BAD_ARGUMENTS
        if again != pin:
            print("error: the two PINs differ", file=sys.stderr)
            return exitcodes.BAD_ARGUMENTS
    try:
        digest = hash_pin(pin)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    print(f'{args.name} = "{digest}"')
    return exitcodes.OK
