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
    print("this goes to stderr, not into the answer")
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
