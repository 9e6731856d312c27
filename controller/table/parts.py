"""`TableParts`: what every collaborator of the table is handed, once, by the table."""

from __future__ import annotations

from typing import NamedTuple

from controller.table.journal import Journal
from controller.table.machine import TableMachine
from controller.table.ports import Ports
from controller.table.rules_seam import RulesAdapter
from controller.table.state import SavedState


class TableParts(NamedTuple):
    """The saved state a collaborator changes, the rules it asks, the ports it acts through,
    the journal it writes to and the machine it moves; the same objects for every one."""

    saved: SavedState
    rules: RulesAdapter
    ports: Ports
    journal: Journal
    machine: TableMachine
