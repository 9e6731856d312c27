"""Protocol 1.2's card commit acknowledgement on the daemon's side (docs/protocol.md 6.6).

The link acknowledges a CardDrawn when its frame arrives, before the table's step has
stored the card; a power cut in between used to lose a card the shoe believed delivered,
and the round was voided (docs/rulings.md C7). With a shoe that announces CAP_CARD_COMMIT
the shoe keeps every card until told it is committed, and sends the kept ones again after
each handshake. This part tells it, and only once the card is on the disk: a card's step
inside a round is grouped (controller/memory/store.py, GROUPED_KINDS) and reaches the disk
with the next flushed commit, so the acknowledgement follows every durable commit, never a
grouped one [M-6.6a]. It also tells the shoe's driver where the restored table is in the
batch, below which a replayed card is one the table already has [M-6.6d], and whether it
has the batch's cover card, which the shoe keeps and sends again too [M-6.6e].
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
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

    def __init__(self, shoe: CommittingShoe | None, table: Table) -> None:
        """``shoe`` None: the configured shoe takes no acknowledgements (a test's stand-in);
        then nothing is sent and this only passes the table's steps through."""
        self._shoe = shoe
        self._table = table
        self._loads = 0  # ShoeLoaded the table has stepped since start (the driver counts too)

    @classmethod
    def attach(cls, devices: Mapping[str, Device], table: Table, store: Store) -> CardCommits:
        """For the configured shoe: tell its driver where the table is, and listen to
        ``store``'s durable commits."""
        shoe = devices.get("shoe")
        if not isinstance(shoe, CommittingShoe):
            store.hold_when(None)
            return cls(None, table)
        # A card's entries wait in memory (docs/rulings.md C31) only while the shoe keeps
        # the cards until they are committed: a daemon that dies then loses none of them.
        store.hold_when(lambda: shoe.card_commit)
        commits = cls(shoe, table)
        shoe.follow_table(commits._replay_floor, commits._has_cover)
        store.on_durable_commit(commits._durable)
        return commits

    def stepping(self, step: Callable[[DeviceEvent], None]) -> Callable[[DeviceEvent], None]:
        """``step`` (the daemon's step of each device event through the table), with
        ``before_step`` before it."""
        def stepped(event: DeviceEvent) -> None:
            self.before_step(event)
            step(event)
        return stepped

    def _next_index(self) -> int:
        """The index below which the table has every card of the batch (its saved state, as
        the last commit left it)."""
        return self._table.saved.shoe.last_card_index + 1

    def _replay_floor(self) -> int:
        """For the shoe's driver (until it counts the batch itself): below this index the
        table has every card. A table waiting for a new batch (WAITING_FOR_A_BATCH) still
        holds the old batch's last index, which says nothing of the cards a newly loaded shoe
        sends: nothing is dropped then (a ShoeLoaded lost in a cut must not make the new
        batch's first cards look like replays)."""
        return 0 if self._table.state.value in WAITING_FOR_A_BATCH else self._next_index()

    def _has_cover(self) -> bool:
        """For the shoe's driver: the table has the batch's cover card (6.6 [M-6.6e]), one
        the shoe may send again until a card after it is committed. Unlike the card's floor,
        this holds while the table waits for the next batch too: the batch in the shoe is
        the one the table last saw loaded, and its cover card sent again is a replay."""
        return self._table.saved.shoe.cover_card_seen

    def before_step(self, event: DeviceEvent) -> None:
        """Each device event, before the table's step: a new batch makes every later
        acknowledgement one for the new batch (the driver counts the same ShoeLoaded)."""
        if isinstance(event, ShoeLoaded):
            self._loads += 1
        elif isinstance(event, CardDrawn):
            crash_points.before_card_step(event.index)  # the HIL test's cut; inert unless set

    def _durable(self, seal: Any, db: sqlite3.Connection) -> None:
        assert self._shoe is not None  # only a committing shoe's CardCommits listens
        self._shoe.cards_committed(self._loads, self._next_index())
