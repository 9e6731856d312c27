"""When Python's cyclic garbage collector runs in the daemon: between rounds, never in a
card's step (the p99 of card -> decision), with what start-up built frozen out of its way."""

from __future__ import annotations

import asyncio
import gc
from typing import Protocol

from controller.memory.delivery import WhenDurable
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

class Stateful(Protocol):
    """The table, as far as the collector looks at it."""

    @property
    def state(self) -> TableState: ...


class RoundCollector:
    def __init__(self) -> None:
        self._threshold = gc.get_threshold()
        self._waiting = False  # a collection waits for a report (`after_report`)

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

    def after_report(self, table: Stateful, when_durable: WhenDurable) -> None:
        """`between_rounds` once what the step committed is reported. With group commit a
        round's settlement is given out only when its flush returns, and the flush starts
        after the step's loop turn: a collection in that turn (0.7 ms here) would stand in
        front of both. It runs in a loop turn of its own after the report instead, if the
        table is still where no card is expected."""
        if self._waiting or not self._due(table.state):
            return
        self._waiting = True

        def collect() -> None:
            self._waiting = False
            self.between_rounds(table.state)

        def reported(_: BaseException | None) -> None:
            try:
                asyncio.get_running_loop().call_soon(collect)
            except RuntimeError:  # no loop runs (a store closed after it): now, then
                collect()

        when_durable(reported)

    @staticmethod
    def _due(state: TableState) -> bool:
        return state in GC_QUIET and gc.get_count()[0] >= GC_BETWEEN_ROUNDS

    def between_rounds(self, state: TableState) -> None:
        """The young generations' collection, when the step left the table where no card is
        expected at once (a round ended and its result is out): never in a card's."""
        if self._due(state):
            # Every tenth time the old generation too, as the collector itself would after
            # ten young collections (its default), or a week's cycles would never be freed.
            gc.collect(2 if gc.get_count()[2] >= GC_FULL_AFTER else 1)
