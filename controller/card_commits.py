"""Protocol 1.2's card commit acknowledgement on the daemon's side (docs/protocol.md 6.6).

The link acknowledges a CardDrawn when its frame arrives, before the table's step has
stored the card; a power cut in between used to lose a card the shoe believed delivered,
and the round was voided (docs/rulings.md C7). With a shoe that announces CAP_CARD_COMMIT
the shoe keeps every card until told it is committed, and sends the kept ones again after
each handshake. This part tells it, and only once the card is on the disk: a card's step
inside a round is grouped (controller/memory/store.py, GROUPED_KINDS) and reaches the disk
with the next flushed commit, so the acknowledgement follows every durable commit, never a
grouped one [M-6.6a]. At start it gives the shoe's driver the table's own last card index,
below which a replayed card is one the table already has [M-6.6d].
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller import crash_points
from controller.memory.store import Store
from drivers.protocols import CardDrawn, CommittingShoe, Device, DeviceEvent, ShoeLoaded

if TYPE_CHECKING:
    from controller.table.table import Table

WAITING_FOR_A_BATCH = frozenset({"closed", "opening", "shuffling", "cut", "end_of_shoe"})
"""Table states (TableState values) in which the shoe's next batch is yet to be loaded."""


class CardCommits:
    """Between the table's store and a shoe driver that takes acknowledgements."""

    def __init__(self, shoe: CommittingShoe, table: Table) -> None:
        self._shoe = shoe
        self._table = table
        self._loads = 0  # ShoeLoaded the table has stepped since start (the driver counts too)

    @classmethod
    def attach(cls, devices: Mapping[str, Device], table: Table,
               store: Store) -> CardCommits | None:
        """For a configured shoe whose driver takes acknowledgements (not a test's stand-in):
        listen to ``store``'s durable commits."""
        shoe = devices.get("shoe")
        if not isinstance(shoe, CommittingShoe):
            return None
        commits = cls(shoe, table)
        store.on_durable_commit(commits._durable)
        return commits

    def _next_index(self) -> int:
        """The index below which the table has every card of the batch (its saved state, as
        the last commit left it)."""
        return self._table.saved.shoe.last_card_index + 1

    def resume(self) -> None:
        """After the table's state is restored, before the shoe starts. A table waiting for a
        new batch (WAITING_FOR_A_BATCH) still holds the old batch's last index, which says
        nothing of the cards a newly loaded shoe will send: nothing is dropped then (a
        ShoeLoaded lost in a cut must not make the new batch's first cards look like
        replays)."""
        waiting = self._table.state.value in WAITING_FOR_A_BATCH
        self._shoe.resume_cards_from(0 if waiting else self._next_index())

    def before_step(self, event: DeviceEvent) -> None:
        """Each device event, before the table's step: a new batch makes every later
        acknowledgement one for the new batch (the driver counts the same ShoeLoaded)."""
        if isinstance(event, ShoeLoaded):
            self._loads += 1
        elif isinstance(event, CardDrawn):
            crash_points.before_card_step(event.index)  # the HIL test's cut; inert unless set

    def _durable(self, seal: Any, db: sqlite3.Connection) -> None:
        self._shoe.cards_committed(self._loads, self._next_index())
