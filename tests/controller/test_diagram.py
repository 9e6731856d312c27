"""The published state diagram is generated from the machine and kept current."""

from __future__ import annotations

from pathlib import Path

from controller.diagram import mermaid
from controller.table.machine import TRANSITION_TABLE, TableState

DOC = Path(__file__).parents[2] / "docs" / "state-machine.md"


def test_committed_diagram_matches_the_machine():
    assert DOC.read_text(encoding="utf-8") == mermaid(), \
        "regenerate: python -m controller.diagram > docs/state-machine.md"


def test_every_state_appears_in_the_diagram():
    text = mermaid()
    for state in TableState:
        assert state.value in text


def test_every_trigger_drawn_is_one_the_table_pulls():
    """An arrow no code can take is not the table's behaviour: `close_table` stood in the
    diagram (four arrows into `closed`) with no command or step that made it."""
    table = Path(__file__).parents[2] / "controller" / "table"
    source = "\n".join(path.read_text(encoding="utf-8") for path in sorted(table.glob("*.py"))
                       if path.name != "machine.py")
    triggers = {spec.trigger for spec in TRANSITION_TABLE}
    assert sorted(t for t in triggers if f".{t}()" not in source) == []
    assert triggers == {
        "open_table", "start_shuffle", "shuffle_verified", "shoe_loaded", "burn_done",
        "lock_out", "first_card", "four_cards", "third_card_due", "hands_complete",
        "announce_result", "next_round", "shoe_finished", "void_round", "first_card_unknown",
        "card_withdrawn", "device_failed", "integrity_failed", "device_recovered"}
