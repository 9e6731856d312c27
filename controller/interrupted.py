"""What tablectl answers to a Ctrl-C: exit status 130, the line "interrupted" and, with
--json, the answer that says so (docs/technician-guide.md).

A leaf: it imports nothing of the project's and nothing that takes time, because the
entry point (controller/tablectl.py) answers with it a Ctrl-C that comes while the CLI is
still being imported; the CLI (controller/cli/) reads the same names.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command it interrupted


def wants_json(argv: Sequence[str]) -> bool:
    """Whether --json is on the command line (before a `--` that ends the options)."""
    words = list(argv)
    return "--json" in (words[:words.index("--")] if "--" in words else words)


def answer_interrupted(argv: Sequence[str]) -> int:
    """A Ctrl-C before the CLI ran: the same line, status and JSON answer as the CLI's own
    for a command it interrupted (tests/cli/test_global_options_and_json.py compares the
    two byte for byte)."""
    sys.stderr.write("\ninterrupted\n")
    if wants_json(argv):
        import json  # small, and only here

        sys.stdout.write(json.dumps({"ok": False, "exit_code": INTERRUPTED,
                                     "error": "interrupted", "reason": "interrupted"},
                                    indent=2) + "\n")
    sys.stdout.flush()
    return INTERRUPTED


def clear_unhandled_mark() -> None:
    """Once tablectl has its status: clear CPython's own mark of an unhandled
    KeyboardInterrupt, so that the interpreter exits with that status (130 for a Ctrl-C
    answered as interrupted, 0 for `events --follow` ended by one).

    CPython 3.11 marks a KeyboardInterrupt that leaves code run from a source text (an
    `exec` or `eval` of a string, as `dataclasses` makes the methods of a class it
    decorates) as unhandled, even when a caller catches it; under `python -m` the
    interpreter then ends itself by SIGINT after the answer (status -2 to a parent
    process, not 130). The mark is cleared as such a text starts to run: an empty one
    clears it and runs nothing. The installed `tablectl` script runs as a file, which
    exits with the status it is given either way."""
    exec("")  # noqa: S102 - an empty text: see above
