"""The table is a facade over collaborators (controller/table/): only its entry points
open the store's transaction and apply the save rule; every event goes through the one
journal; no collaborator calls back into the facade. Read from the source, and shown on
a live table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cards import BackColour, Card
from controller.memory.store import Store
from controller.table.errors import CommandRefused
from controller.table.machine import TableState
from drivers.protocols import CardDrawn
from tests.controller.test_table import betting

PACKAGE = Path(__file__).parents[2] / "controller" / "table"
FACADE = PACKAGE / "table.py"
JOURNAL = PACKAGE / "journal.py"


def _calls_of(path: Path, method: str) -> list[int]:
    """The lines where `path` calls `<anything>.<method>(...)`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == method]


def test_only_the_facade_opens_the_store_transaction() -> None:
    opened = {path.name: _calls_of(path, "step") + _calls_of(path, "transaction")
              for path in PACKAGE.glob("*.py")}
    assert {name for name, lines in opened.items() if lines} == {"table.py"}


def test_only_the_journal_writes_to_the_event_log() -> None:
    writes = {path.name: _calls_of(path, "append_event") for path in PACKAGE.glob("*.py")}
    assert {name for name, lines in writes.items() if lines} == {"journal.py"}
    assert len(writes["journal.py"]) == 1  # Journal.record


def test_only_the_facade_saves_the_table_state() -> None:
    saves = {path.name: _calls_of(path, "save_table_state") for path in PACKAGE.glob("*.py")}
    assert {name for name, lines in saves.items() if lines} == {"table.py"}
    assert len(saves["table.py"]) == 1  # Table._step, by the save rule


def test_no_collaborator_imports_the_facade() -> None:
    importers = sorted(
        path.name for path in PACKAGE.glob("*.py") if path != FACADE
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == "controller.table.table")
    assert importers == []


def test_every_module_of_the_table_is_at_most_400_lines() -> None:
    long = {path.name: n for path in PACKAGE.glob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


def test_the_saved_state_is_read_through_the_table_never_set(tmp_path: Path) -> None:
    store = Store(tmp_path / "table.sqlite")
    table, _ = betting(store)
    assert table.shoe is table.saved.shoe and table.wagers is table.saved.wagers
    with pytest.raises(AttributeError, match="round_no is part of the saved state"):
        table.round_no = 7  # type: ignore[misc]
    assert table.saved.round_no == 0
    store.close()


def test_a_refused_command_saves_nothing_and_leaves_no_save_for_the_next_card(
        tmp_path: Path) -> None:
    """The save rule (Table._saves_state) counts only what a step that commits changed: a
    refusal raised inside a step writes nothing, and the round's next card, which changes
    only what its log entry holds, still saves no state."""
    store = Store(tmp_path / "table.sqlite")
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_no_more_bets()
    dealer.draw("2♠")  # the deal begins (631a.9(c)): a transition the cards imply
    assert table.state is TableState.DEALING
    saves: list[str] = []
    save = store.save_table_state
    store.save_table_state = lambda state, data: (saves.append(state), save(state, data))[1]
    seq = store.events()[-1].seq
    with pytest.raises(CommandRefused, match="no fault to acknowledge; the table is dealing"):
        table.cmd_acknowledge_fault("floor")
    assert (saves, store.events()[-1].seq) == ([], seq)
    table.handle(CardDrawn("shoe", dealer.index, Card.parse("3♥"), BackColour.RED, False))
    assert saves == []
    assert [e.kind for e in store.events(after_seq=seq)] == ["card", "prompt"]
    store.close()
