"""A function called in a fresh interpreter (controller/fresh_process.py): its value, its
exception (a failed check's IntegrityError with its parts), a death without an answer, and
a call nobody waits for any more."""

from __future__ import annotations

import os
import sys
import time

import pytest

from controller.fresh_process import FreshProcess
from controller.memory.errors import IntegrityError


def talks_and_answers(a: int, *, b: int) -> tuple[int, list[str]]:
    # One write of the whole line: print() writes the text and its newline apart when the
    # stream is unbuffered (PYTHONUNBUFFERED in the environment), and three children's
    # halves then interleave on the shared stderr (a CI run saw "answerthis goes...").
    sys.stdout.write("this goes to stderr, not into the answer\n")
    return a + b, sorted(name for name in sys.modules if name.startswith("controller.daemon"))


def fails(check: str) -> None:
    raise IntegrityError(check, "entry 7 was altered", "call the floor supervisor")


def dies() -> None:
    os._exit(3)


def sleeps() -> None:
    time.sleep(60)


def test_the_value_comes_back_and_the_daemon_is_not_imported() -> None:
    assert FreshProcess(f"{__name__}:talks_and_answers", 2, b=3).result() == (5, [])


def test_an_integrity_error_is_raised_with_its_parts() -> None:
    with pytest.raises(IntegrityError) as failed:
        FreshProcess(f"{__name__}:fails", "event chain").result()
    assert (failed.value.check, failed.value.detail, failed.value.action) == (
        "event chain", "entry 7 was altered", "call the floor supervisor")


def test_a_child_that_dies_without_an_answer_is_named() -> None:
    with pytest.raises(ChildProcessError, match=f"^{__name__}:dies ended without an answer "
                       r"\(exit status 3\)$"):
        FreshProcess(f"{__name__}:dies").result()


def test_a_call_nobody_waits_for_is_ended() -> None:
    child = FreshProcess(f"{__name__}:sleeps")
    started = time.monotonic()
    child.stop()
    assert time.monotonic() - started < 5
    with pytest.raises(ChildProcessError):
        child.result()


def test_a_child_ends_when_its_parent_is_killed() -> None:
    """A parent killed by SIGKILL (a daemon outside systemd) leaves no check running: the
    child reads the end of its request pipe and ends itself."""
    import signal
    import subprocess

    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; sys.path[:0] = [sys.argv[1]]\n"
         "from controller.fresh_process import FreshProcess\n"
         f"child = FreshProcess('{__name__}:sleeps')\n"
         "print(child._process.pid, flush=True); time.sleep(60)",
         os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.abspath(__file__))})
    assert parent.stdout is not None and parent.stderr is not None
    child_pid = int(parent.stdout.readline())
    # The child has started its call (it is sleeping) before the parent dies.
    deadline = time.monotonic() + 30
    while _state(child_pid) not in ("S", "gone") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # past its start, into the call
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while _state(child_pid) != "gone" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(child_pid) == "gone", f"child {child_pid} still {_state(child_pid)}"
    assert f"fresh process {child_pid}: its parent hung up; ending" in parent.stderr.read()


def test_a_child_that_answered_says_nothing_when_its_parent_hangs_up(
        capfd: pytest.CaptureFixture[str]) -> None:
    """Nor does its interpreter's shutdown: every child once aborted there (exit status
    -6, "Fatal Python error: _enter_buffered_busy" on stderr, a core dump where they are
    kept), its parent watch blocked in a read of stdin's buffer that held the buffer's
    lock. Only what the function itself printed reaches stderr, and each child exits 0."""
    children = [FreshProcess(f"{__name__}:talks_and_answers", 1, b=1) for _ in range(3)]
    assert [child.result() for child in children] == [(2, [])] * 3
    assert [child.exit_status for child in children] == [0, 0, 0]
    assert capfd.readouterr().err == "this goes to stderr, not into the answer\n" * 3


def _state(pid: int) -> str:
    """A process's state letter from /proc, "gone" once it has ended (a zombie left for
    a parent that no longer reaps it counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return "gone"
    return "gone" if state in ("Z", "X") else state
