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
from collections.abc import Callable, Mapping
from typing import Any

from controller import crash_points
from controller.memory.store import Store
from drivers.protocols import CardDrawn, CommittingShoe, Device, DeviceEvent, ShoeLoaded


class CardCommits:
    """Between the table's store and a shoe driver that takes acknowledgements."""

    def __init__(self, shoe: CommittingShoe, last_card_index: Callable[[], int]) -> None:
        """``last_card_index``: the table's saved shoe index (-1 before the batch's first
        card), read after each durable commit, when it is what the commit stored."""
        self._shoe = shoe
        self._last_card_index = last_card_index
        self._loads = 0  # ShoeLoaded the table has stepped since start (the driver counts too)

    @classmethod
    def attach(cls, devices: Mapping[str, Device], last_card_index: Callable[[], int],
               store: Store) -> CardCommits | None:
        """For a configured shoe whose driver takes acknowledgements (not a test's stand-in):
        listen to ``store``'s durable commits."""
        shoe = devices.get("shoe")
        if not isinstance(shoe, CommittingShoe):
            return None
        commits = cls(shoe, last_card_index)
        store.on_durable_commit(commits._durable)
        return commits

    def resume(self) -> None:
        """After the table's state is restored, before the shoe starts."""
        self._shoe.resume_cards_from(self._last_card_index() + 1)

    def before_step(self, event: DeviceEvent) -> None:
        """Each device event, before the table's step: a new batch makes every later
        acknowledgement one for the new batch (the driver counts the same ShoeLoaded)."""
        if isinstance(event, ShoeLoaded):
            self._loads += 1
        elif isinstance(event, CardDrawn):
            crash_points.before_card_step(event.index)  # the HIL test's cut; inert unless set

    def _durable(self, seal: Any, db: sqlite3.Connection) -> None:
        self._shoe.cards_committed(self._loads, self._last_card_index() + 1)
