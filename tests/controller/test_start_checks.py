"""The checks of critical memory at start return results; the daemon records them
(controller/memory/boot_check.py, history_check.py; the daemon's side: test_daemon.py,
test_critical_memory.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from controller.control import ControlError
from controller.memory.critical import IntegrityError, Verified
from controller.memory.boot_check import BootCheck, check_at_boot
from controller.memory.history_check import check_history


class Meters:
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        self.asked = 0

    def verify(self) -> list[str]:
        self.asked += 1
        return self.problems


def store_verified(entries: int, log_seq: int) -> Any:
    return SimpleNamespace(verified=Verified(entries=entries, log_seq=log_seq, from_seq=1,
                                             state_rows=0, commit_no=0, anchor_behind=0))


def test_a_store_that_failed_when_opened_is_the_result_and_the_meters_are_not_read() -> None:
    opened = IntegrityError("event chain", "entry 7: MAC mismatch")
    meters = Meters(["never read"])
    assert check_at_boot(store_verified(0, 0), opened, meters) == BootCheck(opened)
    assert meters.asked == 0


def test_meters_that_disagree_with_the_log_fail_the_start_naming_each_problem() -> None:
    result = check_at_boot(store_verified(3, 3), None, Meters(["a/major: 100 cents", "b/minor"]))
    assert result.failure is not None
    assert (result.failure.check, result.failure.detail) == (
        "progressive meters", "a/major: 100 cents; b/minor")


def test_a_passing_start_says_how_much_of_the_log_it_read() -> None:
    assert check_at_boot(store_verified(120, 4_000), None, Meters([])) == BootCheck(None, 120, 4_000)
    assert check_at_boot(store_verified(0, 0), None, None) == BootCheck(None, 0, 0)


def test_a_full_history_that_passes_is_a_status_with_its_entries() -> None:
    async def verify() -> dict[str, Any]:
        return {"entries": 1_000_000}

    result = asyncio.run(check_history(verify))
    assert result.passed and result.hold == "" and result.error is None
    assert result.status["state"] == "passed" and result.status["entries"] == 1_000_000


def test_a_history_that_fails_is_the_checks_answer_and_holds_nothing_more() -> None:
    """The full check holds the table itself when it finds a failure; the result only
    says so (the same answer `tablectl events verify --full` gets)."""
    async def verify() -> dict[str, Any]:
        raise ControlError("IntegrityError: event chain: entry 9: MAC mismatch", "internal")

    result = asyncio.run(check_history(verify))
    assert not result.passed and result.hold == "" and result.error is None
    assert dict(result.status) == {"state": "failed",
                                   "detail": "IntegrityError: event chain: entry 9: MAC mismatch"}


def test_a_history_check_that_cannot_run_holds_the_table_naming_why() -> None:
    failure = OSError(28, "No space left on device")

    async def verify() -> dict[str, Any]:
        raise failure

    result = asyncio.run(check_history(verify))
    assert not result.passed and result.error is failure
    assert result.hold == f"history check: could not run ({failure!r})"
    assert dict(result.status) == {"state": "failed", "detail": repr(failure)}
