"""The browser tests' timing rule (hil/display_watch.py): nine in ten of what a page showed
within the requirement, each within the stall bound; and how a page's observations are
paired with the rounds that caused them."""

from __future__ import annotations

import pytest

from hil.display_watch import STALL_BOUND_MS, Shown, check_keeps_up, rounds_shown


def test_one_stall_of_the_shared_machine_passes() -> None:
    # CI's run of stop 42: one cell 1,229 ms late among ordinary delays.
    check_keeps_up(_labelled([60.0] * 30 + [1229.0]), 500, "the pages")


def test_a_page_late_for_more_than_one_in_ten_fails() -> None:
    with pytest.raises(AssertionError, match=r"^the pages: nine in ten within 600 ms, over "
                                             r"500 ms: \[60, 60, .*600, 600\]$"):
        check_keeps_up(_labelled([60.0] * 8 + [600.0] * 2), 500, "the pages")


def test_a_page_stalled_beyond_the_bound_fails() -> None:
    with pytest.raises(AssertionError, match=rf"^the pit page: shown 30 5001 ms late, over "
                                             rf"the stall bound {STALL_BOUND_MS} ms$"):
        check_keeps_up(_labelled([60.0] * 30 + [5001.0]), 2000, "the pit page")


def _labelled(delays: list[float]) -> dict[str, float]:
    return {f"shown {n}": delay for n, delay in enumerate(delays)}


def _settled(round_no: int, winner: str, at: float) -> dict[str, object]:
    return {"kind": "round_settled", "at": at,
            "payload": {"round_no": round_no, "simulated": False, "result": {"winner": winner}}}


def test_each_round_is_paired_with_its_cells_and_the_last_result() -> None:
    events = [_settled(1, "banker", 10.0), _settled(2, "tie", 11.0),
              _settled(3, "player", 12.0)]
    seen = {"bead:1": 10_050.0, "big:1": 10_060.0, "bead:2": 11_070.0, "bead:3": 12_040.0,
            "big:2": 12_045.0, "result:3": 12_030.0}  # result:1 and 2 drawn over: not asked
    assert rounds_shown(events, seen) == [
        Shown("bead:1", 1, 50.0), Shown("big:1", 1, 60.0), Shown("bead:2", 2, 70.0),
        Shown("bead:3", 3, 40.0), Shown("big:2", 3, 45.0), Shown("result:3", 3, 30.0)]
    del seen["big:2"]
    with pytest.raises(AssertionError, match="^big:2 never appeared in the scoreboard's DOM$"):
        rounds_shown(events, seen)
