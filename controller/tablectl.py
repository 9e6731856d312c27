"""tablectl's entry point (the `tablectl` command and `python -m controller.cli`).

A Ctrl-C ends tablectl with one line, "interrupted", and exit status 130 (with --json, one
JSON answer as well), never a traceback (docs/technician-guide.md). The CLI answers a Ctrl-C
itself while a command runs (controller/cli/__init__.py, `main`); this module covers the
moment before that: importing the CLI and building its parser take a tenth of a second and
more on a busy machine, and Python's own handler printed a traceback there. So this module
imports nothing that takes time, and imports the CLI inside its handler.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command it interrupted


def wants_json(argv: Sequence[str]) -> bool:
    """Whether --json is on the command line (before a `--` that ends the options)."""
    words = list(argv)
    return "--json" in (words[:words.index("--")] if "--" in words else words)


def interrupted(argv: Sequence[str]) -> int:
    """What a Ctrl-C before the CLI ran answers: the same line, status and JSON answer as
    the CLI's own for a command it interrupted (tests/cli/test_global_options_and_json.py
    compares the two)."""
    sys.stderr.write("\ninterrupted\n")
    if wants_json(argv):
        import json  # small, and only here

        sys.stdout.write(json.dumps({"ok": False, "exit_code": INTERRUPTED,
                                     "error": "interrupted", "reason": "interrupted"},
                                    indent=2) + "\n")
    sys.stdout.flush()
    return INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    try:
        from controller.cli import main as run_cli

        return run_cli(argv)
    except KeyboardInterrupt:
        return interrupted(argv)


if __name__ == "__main__":
    sys.exit(main())
