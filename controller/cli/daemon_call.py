"""Running a tablectl command against the daemon: the socket, --json, and every way of
failing turned into a message and an exit code (controller.cli.exitcodes); the
supervisor's name and PIN for the commands that need one."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from controller.cli import exitcodes
from controller.cli.client import Daemon, DaemonUnavailable, UnsupportedCommand, default_socket
from controller.cli.output import print_json, wrap
from controller.control import ControlError


_REFUSAL_CODES = {"refused", "unauthorised", "forbidden"}


def socket_path(args: argparse.Namespace) -> str:
    return getattr(args, "socket", None) or default_socket()


def wants_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def call_daemon(args: argparse.Namespace, body: Callable[[Daemon], Awaitable[int]]) -> int:
    """Connect, run `body`, and turn every way of failing into a message and an exit code."""

    async def go() -> int:
        async with Daemon(socket_path(args)) as daemon:
            return await body(daemon)

    try:
        return asyncio.run(go())
    except DaemonUnavailable as exc:
        print(exc.explain(), file=sys.stderr)
        json_error(args, str(exc), exc.reason, socket=exc.path)
        return exitcodes.DAEMON_NOT_RUNNING
    except UnsupportedCommand as exc:
        print(f"tablectl: {exc}", file=sys.stderr)
        json_error(args, str(exc), "unsupported")
        return exitcodes.UNSUPPORTED
    except ControlError as exc:
        # bad_request: the daemon, which owns what is valid (an event kind, a device), says
        # what was wrong and what is allowed; to the technician that is a bad argument.
        print(wrap(f"tablectl: the daemon refused: {exc} ({exc.code})", hanging="  "),
              file=sys.stderr)
        json_error(args, str(exc), exc.code)
        if exc.code == "bad_request":
            return exitcodes.BAD_ARGUMENTS
        return exitcodes.REFUSED if exc.code in _REFUSAL_CODES else exitcodes.FAILURE
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        json_error(args, "interrupted (Ctrl-C)", "interrupted")
        return exitcodes.INTERRUPTED


def json_error(args: argparse.Namespace, message: str, reason: str, **extra: Any) -> None:
    """With --json, a failure is a JSON document on stdout too: a script reading stdout
    must not be left with nothing to parse. The human text stays on stderr."""
    if wants_json(args):
        print_json({"ok": False, "error": message, "reason": reason, **extra})


def emit_json(args: argparse.Namespace, obj: Any) -> bool:
    """Print `obj` as JSON if --json was given; returns whether it did."""
    if wants_json(args):
        print_json(obj)
        return True
    return False


def show_listing(args: argparse.Namespace, command: str,
                 render: Callable[[Any], str], nothing: str) -> int:
    """A read command whose answer is a list: rendered, `nothing` when empty, or --json."""
    async def body(d: Daemon) -> int:
        answer = await d.call(command)
        if not emit_json(args, answer):
            print(render(answer) if answer else nothing)
        return exitcodes.OK
    return call_daemon(args, body)


SUPERVISOR_HELP = "the floor supervisor's name in the configuration's [supervisors]"


def supervisor_arguments(parser: argparse.ArgumentParser) -> None:
    """A floor supervisor's name; the PIN is asked for, or read from stdin."""
    parser.add_argument("--supervisor", required=True, metavar="NAME", help=SUPERVISOR_HELP)
    parser.add_argument("--pin-stdin", action="store_true", help="read the PIN from stdin")


def read_pin(args: argparse.Namespace) -> str | None:
    """The supervisor's PIN: one line of stdin with --pin-stdin, else asked without echo.
    None (after saying why) when there is none."""
    if args.pin_stdin:
        pin = sys.stdin.readline().rstrip("\r\n")
    else:
        try:
            pin = getpass.getpass(f"PIN for supervisor {args.supervisor}: ")
        except (EOFError, KeyboardInterrupt):
            print("\ntablectl: no PIN entered", file=sys.stderr)
            return None
    if not pin:
        print("tablectl: an empty PIN is not accepted", file=sys.stderr)
        return None
    return pin


def not_accepted(args: argparse.Namespace, what: str) -> int:
    message = (f"supervisor {args.supervisor!r} and that PIN were not accepted; nothing was "
               f"{what}")
    print(f"tablectl: {message}", file=sys.stderr)
    json_error(args, message, "unauthorised")
    return exitcodes.REFUSED
