"""The published state diagram is generated from the machine and kept current."""

from __future__ import annotations

from pathlib import Path

from controller.diagram import mermaid
from controller.table.machine import TableState

DOC = Path(__file__).parents[2] / "docs" / "state-machine.md"


def test_committed_diagram_matches_the_machine():
    assert DOC.read_text(encoding="utf-8") == mermaid(), \
        "regenerate: python -m controller.diagram > docs/state-machine.md"


def test_every_state_appears_in_the_diagram():
    text = mermaid()
    for state in TableState:
        assert state.value in text
