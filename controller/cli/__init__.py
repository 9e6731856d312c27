"""tablectl: the technician's command line.

Each subcommand group lives in its own module and registers itself through
`register(subparsers)`; exit codes are the constants in `controller.cli.exitcodes`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import IO, Any, NoReturn

from controller import __version__
from controller.cli import exitcodes
from controller.cli.arg_types import cut_long_values
from controller.cli.output import fit, print_json
from controller.errors import CommandError
from controller.interrupted import wants_json

# Modules that contribute subcommands; each has register(subparsers) -> None.
_COMMAND_MODULES = ("controller.cli.rules_commands", "controller.cli.table_commands",
                    "controller.cli.supervisor_commands", "controller.cli.support_commands",
                    "controller.cli.conformance_commands", "controller.cli.replay_command",
                    "controller.cli.software_commands", "controller.cli.linked_command")

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
    "linked": "controller.cli.linked_command",
    **{name: "controller.cli.table_commands" for name in (
        "status", "devices", "test", "rounds", "meters", "jackpot", "fault", "irregularity",
        "events")},
}


# Options every daemon-facing command takes, accepted before the command too
# (`tablectl --socket PATH status`, as `git -C DIR status`): option -> its destination.
GLOBAL_OPTIONS = {"--socket": "socket", "--json": "json"}
_GLOBAL_DEST = "global_"  # where the top-level parser keeps them until main() hands them on


class BadArguments(CommandError):
    """argparse's complaint about the command line, raised instead of exiting so that main()
    can answer it in JSON too when --json was asked for."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


def help_lines(text: str, width: int) -> list[str]:
    """A help text's lines, broken at spaces, never at a hyphen: at 80 columns the default
    key's path came out as '/etc/tabled/release-' and 'signing.pub' on the next line."""
    import textwrap

    return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's own, with `help_lines`' breaks: tablectl's, and tools/release.py's before
    argparse's RawDescriptionHelpFormatter (its description kept as written)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return help_lines(text, width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line for line in help_lines(text, width - len(indent)))


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are BadArguments (its subparsers are of this class too),
    with help that breaks lines only at spaces."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise BadArguments(self, cut_long_values(message))


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand in ``argv`` (its first word that is not an option or a global
    option's value), if any."""
    words = iter(argv)
    for word in words:
        if word == "--socket":
            next(words, None)
        elif not word.startswith("-"):
            return word
        elif word in ("-h", "--help", "--version"):
            return None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """tablectl's parser; given ``argv``, with only the module of the command it names."""
    import importlib

    command = _command_named(argv) if argv is not None else None
    modules = ((COMMAND_MODULE[command],) if command in COMMAND_MODULE
               else _COMMAND_MODULES)
    parser = _Parser(
        prog="tablectl",
        description="Diagnose and operate a baccarat table controller. --socket and --json "
                    "may be given before the command or after it.",
    )
    parser.add_argument("--version", action="version", version=f"tablectl {__version__}",
                        help="print tablectl's version and exit (the daemon's is in 'status')")
    # SUPPRESS: absent unless given, so main() knows what was given before the command.
    parser.add_argument("--socket", dest=_GLOBAL_DEST + "socket", default=argparse.SUPPRESS,
                        metavar="PATH", help="tabled's control socket, for the commands that "
                                             "talk to it (default: $TABLECTL_SOCKET or "
                                             "/run/tabled/control.sock)")
    parser.add_argument("--json", dest=_GLOBAL_DEST + "json", action="store_true",
                        default=argparse.SUPPRESS,
                        help="machine-readable JSON, for the commands that offer it")
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


def _command_parser(parser: argparse.ArgumentParser,
                    args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command that `args` names: `tablectl events verify`'s."""
    while True:
        subparsers = next((a for a in parser._actions
                           if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, subparsers.dest, None) if subparsers is not None else None
        if subparsers is None or chosen is None:
            return parser
        parser = subparsers.choices[chosen]


def _hand_on_global_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Give the options given before the command to the command, as if given after it;
    BadArguments if the command does not take one."""
    command = _command_parser(parser, args)
    for option, dest in GLOBAL_OPTIONS.items():
        value = getattr(args, _GLOBAL_DEST + dest, None)
        if value is None:
            continue
        delattr(args, _GLOBAL_DEST + dest)
        if option not in command._option_string_actions:
            raise BadArguments(command, f"{option}: '{command.prog}' does not take it")
        if getattr(args, dest, None) in (None, False):  # given after the command: that wins
            setattr(args, dest, value)


class _Recorded:
    """A text stream that passes everything on and remembers whether anything was written
    and what was written last, so that main() can keep --json's promise for every command.
    With `fitted`, a line longer than the terminal is wrapped on its way (stderr is for
    people: every message, refusal and hint fits the screen)."""

    def __init__(self, stream: IO[str], *, fitted: bool = False) -> None:
        self._stream = stream
        self._fitted = fitted
        self.written = False
        self.last = ""

    def write(self, text: str) -> int:
        if text.strip():
            self.written = True
            self.last = (self.last + text)[-2000:]
        return self._stream.write(fit(text) if self._fitted else text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _last_message(recorded: _Recorded) -> str:
    lines = [line.strip() for line in recorded.last.splitlines() if line.strip()]
    return lines[-1].removeprefix("tablectl: ") if lines else ""


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    json_wanted = wants_json(argv)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
        _hand_on_global_options(parser, args)
    except BadArguments as exc:
        exc.parser.print_usage(sys.stderr)
        print(f"{exc.parser.prog}: error: {exc.message}", file=sys.stderr)
        if json_wanted:
            print_json({"ok": False, "error": exc.message, "reason": "bad_arguments"})
        return exitcodes.BAD_ARGUMENTS
    except SystemExit as exc:  # --help and --version
        return exitcodes.BAD_ARGUMENTS if exc.code not in (0, None) else exitcodes.OK
    json_wanted = bool(getattr(args, "json", False))
    out, err = _Recorded(sys.stdout), _Recorded(sys.stderr, fitted=True)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = int(args.handler(args) or exitcodes.OK)
        sys.stdout.flush()  # a cut pipe shows here when the last lines are still buffered
    except BrokenPipeError:
        sys.stdout, sys.stderr = saved
        return _reader_went_away()
    except KeyboardInterrupt:  # Ctrl-C: whatever was running, one line and no traceback
        print("\ninterrupted", file=sys.stderr)
        code = exitcodes.INTERRUPTED
    finally:
        sys.stdout, sys.stderr = saved
    if json_wanted and not out.written:
        # Every --json answer is one JSON document, a refusal or a failure too: the command
        # said why on stderr only, so that is the error here.
        print_json({"ok": code == exitcodes.OK, "exit_code": code,
                    "error": _last_message(err) or None,
                    "reason": "interrupted" if code == exitcodes.INTERRUPTED else "failed"})
    return code


if __name__ == "__main__":
    sys.exit(main())
