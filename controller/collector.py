"""When Python's cyclic garbage collector runs in the daemon: between rounds, never in a
card's step (the p99 of card -> decision), with what start-up built frozen out of its way."""

from __future__ import annotations

import gc

from controller.table.machine import TableState

GC_YOUNG_LIMIT = 50_000
"""Allocations after which Python's cyclic collector runs by itself (700 by default). At the
default a young collection (0.1-1 ms here, about four times that on a Pi) fell in about one
card step in fifty: the p99 of card -> decision. The daemon collects the young generations
itself between rounds (`RoundCollector.between_rounds`); this bounds a table that deals long
without a round ending."""
GC_BETWEEN_ROUNDS = 2_000  # allocations since the last collection that make one worth it
GC_FULL_AFTER = 10  # young collections between full ones
GC_QUIET = (TableState.BETTING_OPEN, TableState.END_OF_SHOE, TableState.SHUFFLING,
            TableState.CLOSED, TableState.OPENING)  # no card is expected at once


class RoundCollector:
    def __init__(self) -> None:
        self._threshold = gc.get_threshold()

    def start(self) -> None:
        """At ready: what start-up built stays; no collection walks it again."""
        self._threshold = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(GC_YOUNG_LIMIT, *self._threshold[1:])

    def stop(self) -> None:
        """The collector as it was (a daemon run inside another program: the tests)."""
        gc.set_threshold(*self._threshold)
        gc.unfreeze()

    def between_rounds(self, state: TableState) -> None:
        """The young generations' collection, when the step left the table where no card is
        expected at once (a round ended: its result is already out): never in a card's."""
        if state in GC_QUIET and gc.get_count()[0] >= GC_BETWEEN_ROUNDS:
            # Every tenth time the old generation too, as the collector itself would after
            # ten young collections (its default), or a week's cycles would never be freed.
            gc.collect(2 if gc.get_count()[2] >= GC_FULL_AFTER else 1)
