"""tablectl's entry point (the `tablectl` command; `python -m controller.cli` too).

A Ctrl-C ends tablectl with one line and exit status 130, never a traceback. The CLI
answers a Ctrl-C itself while a command runs (controller/cli/__init__.py, `main`); this
covers the moment before that: importing the CLI and building its parser take a tenth of
a second and more on a busy machine, and Python's own handler printed a traceback there.
So the CLI is imported inside the handler, and the answer comes from a leaf module
(controller/interrupted.py) that is already loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from controller.interrupted import answer_interrupted, clear_unhandled_mark


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    try:
        from controller.cli import main as run_cli

        code = run_cli(argv)
    except KeyboardInterrupt:
        code = answer_interrupted(argv)
    # tablectl chose its status: a Ctrl-C it caught on the way, answered as interrupted
    # (130) or by finishing with what it had (`events --follow`, the guided tests), is not
    # Python's to answer again by ending the process with SIGINT.
    clear_unhandled_mark()
    return code


if __name__ == "__main__":
    sys.exit(main())
