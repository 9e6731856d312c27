"""A function called in a fresh interpreter of its own, its value or its exception handed
back through a pipe: the daemon's checks of a long log (controller/offload.py) and the
chain check's workers (controller/memory/chain.py), seconds of CPU that must not hold the
daemon's interpreter.

Not a multiprocessing child: that imports its parent's main module again before it runs
anything, which in the daemon is the whole daemon (0.29 s of CPU here, about 2 s on a Pi 4,
at every start of the daemon and for each of the chain's workers), where the store's check
needs its own modules only (0.05-0.11 s).
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import threading
from typing import Any

# The child's first lines: the parent's import path, as multiprocessing gives its children,
# so that a daemon run from a source tree finds its modules in the child too.
_START = ("import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
          "from controller.fresh_process import _serve; _serve()")


class FreshProcess:
    """`function(*args, **kwargs)` ("package.module:function") running in a fresh
    interpreter from the moment this is made; `result` waits for it. The arguments go
    through a pipe (a key never shows on a command line); they and the value are pickled.
    OSError when no process can be started (limits)."""

    def __init__(self, function: str, *args: Any, **kwargs: Any) -> None:
        self.function = function
        self._process = subprocess.Popen([sys.executable, "-c", _START],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._process.stdin is not None
        try:
            # The request, and then nothing: the pipe stays open while this side wants the
            # answer. The child ends itself when it reads the pipe's end, which is also what
            # it reads when this process dies, even by SIGKILL, so no check outlives a
            # killed daemon outside systemd (whose control group would end it anyway).
            self._process.stdin.write(
                pickle.dumps(sys.path) + pickle.dumps((function, args, kwargs)))
            self._process.stdin.flush()
        except OSError:  # it died at once
            self.stop()
            raise

    def result(self) -> Any:
        """The function's value, or what it raised raised here; ChildProcessError if the
        process ended without an answer (killed, out of memory, its start failed)."""
        process, answer = self._process, b""
        assert process.stdout is not None
        if not process.stdout.closed:  # (`stop` closed it)
            with process.stdout:
                answer = process.stdout.read()
        self._hang_up()  # answered, or dead: it need not wait for this side any more
        code = process.wait()
        try:
            kind, value = pickle.loads(answer)
        except Exception:
            raise ChildProcessError(f"{self.function} ended without an answer "
                                    f"(exit status {code})") from None
        if kind == "raised":
            raise value
        return value

    @property
    def exit_status(self) -> int | None:
        """The process's exit status once it has ended (negative: the signal that ended
        it), None while it runs."""
        return self._process.poll()

    def stop(self) -> None:
        """Ends the process if it still runs (its caller no longer wants the answer)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._hang_up()
        if self._process.stdout is not None:
            self._process.stdout.close()

    def _hang_up(self) -> None:
        if self._process.stdin is not None and not self._process.stdin.closed:
            try:
                self._process.stdin.close()
            except OSError:  # a broken pipe: the child is gone already
                pass


_answered = threading.Event()  # (in the child) the answer is written


def _serve() -> None:
    """The child's body (`_START`): one call, one answer on the pipe that was its stdout.
    What the function prints goes to stderr instead, so it cannot spoil the answer."""
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    function, args, kwargs = pickle.load(sys.stdin.buffer)
    threading.Thread(target=_end_when_the_parent_hangs_up, name="parent-watch",
                     daemon=True).start()
    module, name = function.split(":")
    outcome: tuple[str, Any]
    try:
        outcome = ("value", getattr(importlib.import_module(module), name)(*args, **kwargs))
    except Exception as exc:
        outcome = ("raised", exc)
    try:
        data = pickle.dumps(outcome)
    except Exception as exc:  # an exception holding what does not pickle
        data = pickle.dumps(("raised", RuntimeError(f"{function} raised {outcome[1]!r}, "
                                                    f"which could not be handed back ({exc})")))
    with answer:
        answer.write(data)
        answer.flush()
        # Before the pipe closes: the parent hangs up once it has read the answer's end,
        # which is no reason to say anything.
        _answered.set()


def _end_when_the_parent_hangs_up() -> None:
    """The child's watch on its parent: the request pipe reaches its end only when the
    parent closed it (it has the answer, or no longer wants it) or died. Either way
    nobody will read the answer, so the child stops its work at once.

    The pipe is read on its file descriptor, not through sys.stdin's buffer: a thread
    blocked in that buffer's read holds its lock, and the interpreter's shutdown after an
    answer waits a second for that lock, then aborts (SIGABRT, "Fatal Python error:
    _enter_buffered_busy"), which every child did once it had answered: a second added
    to each check (two to the history's check at every start: its own process, then its
    chain workers), and a fatal error in the journal each time. What the request left in the
    buffer is never wanted; only the pipe's end is."""
    while os.read(0, 4096):
        pass
    if _answered.is_set():
        return
    print(f"fresh process {os.getpid()}: its parent hung up; ending", file=sys.stderr)
    os._exit(1)
