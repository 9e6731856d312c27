"""The table's journal lines (controller/table/journal.py): written once the step has ended,
so that with group commit they are made while the step's flush runs, not in front of it
(issue 31), each with the shoe and round bound when its record was made."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import structlog
import structlog.testing

from controller import logsetup
from controller.events import records as ev
from controller.logsetup import bind_round
from controller.memory.store import Store
from controller.table.journal import Journal
from controller.table.ports import Ports
from controller.table.state import SavedState


def test_a_steps_lines_are_written_after_it_with_the_round_bound_when_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Debug lines written, whatever another test in this process configured: the flag the
    # journal reads and structlog's own level filter (configure_logging sets both, and
    # capture_logs replaces only the processors).
    monkeypatch.setattr(logsetup, "debug_enabled", True)
    saved = structlog.get_config()["wrapper_class"]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    store = Store(tmp_path / "t.sqlite")
    journal = Journal(Ports(store), SavedState())
    try:
        with structlog.testing.capture_logs(
                processors=[structlog.contextvars.merge_contextvars]) as logs:
            with store.transaction():
                bind_round(2, 7)
                journal.record(ev.NoMoreBets("button", 3, (ev.Wager(4, "banker", 500),), ()))
                bind_round(2, None)  # as a round's last step unbinds it before it ends
                journal.record(ev.Prompt("place_bets", round_no=4))  # debug: written too
                assert logs == []  # nothing while the step is open
            assert [(e["event"], e["log_level"], e["shoe_no"], e["round_id"]) for e in logs] == [
                ("no_more_bets", "info", 2, 7), ("prompt", "debug", 2, None)]
            assert logs[0]["wagers"] == [{"amount_cents": 500, "seat": 4, "wager": "banker"}]
    finally:
        structlog.contextvars.clear_contextvars()
        structlog.configure(wrapper_class=saved)
        store.close()


def test_a_step_that_rolls_back_still_writes_its_lines(tmp_path: Path) -> None:
    """As before the lines waited for the step's end: a failed step's lines help find why."""
    store = Store(tmp_path / "t.sqlite")
    journal = Journal(Ports(store), SavedState())
    try:
        with structlog.testing.capture_logs() as logs:
            try:
                with store.transaction():
                    journal.record(ev.NoMoreBets("button", 3, (), ()))
                    raise RuntimeError("the step fails")
            except RuntimeError:
                pass
        assert [e["event"] for e in logs] == ["no_more_bets"]
        assert store.events() == []  # the entry itself rolled back
    finally:
        store.close()
