"""How long the store's flushes take: the one figure that says whether the table's storage
keeps up. Every money step's report waits for a flush (a wager's reply, the lock-out, a
settlement: docs/architecture.md, "Durable writes"), and on a Pi that flush is the SD
card's. A card that wears out or is failing can grow slow long before it returns an
error, and the dealer sees it as a table that answers late. The technician sees it here
(`tablectl status`, the metrics' `tabled_store_flush_seconds`), and the journal names a
flush slow enough for the dealer to notice (`store_flush_slow`). Where the flushes run is
kept here too ([store] flush_in, docs/rulings.md C30): a flush that slow on the event loop's
own thread moves every later one to a thread of its own (`store_flush_moved_to_thread`).

Kept as a histogram (fixed bounds, a count each), not as the durations: recording is a
bisection and an addition, at any rate, for as long as the daemon runs, and the figures
shown are bounds read from it ("99 % within 2 ms"), which is what a technician compares
with the storage's specification.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

import structlog

from controller.memory.flush_in import FLUSH_IN_LOOP, FLUSH_IN_THREAD

log = structlog.get_logger("tabled.store")

BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
"""Upper bounds of the histogram's buckets, seconds (a flush equal to a bound is in it, as
Prometheus' `le` says): from this project's CI disk, whose flushes take well under 1 ms
(docs/performance.md), to a flush slower than any dealer would wait for."""

SLOW_FLUSH_S = 0.5
"""A flush at least this long is named in the journal: a money step's reply half a second
late is a wait the dealer notices."""

SLOW_LINE_INTERVAL_S = 60.0
"""At most one `store_flush_slow` line this often: a failing card slows every flush, and
one line a minute (counting those between) tells as much as one a flush."""


class FlushTimes:
    """The store's flushes since it was opened, recorded on the store's thread."""

    def __init__(self, *, wall_clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._wall_clock = wall_clock
        self._monotonic = monotonic
        self.counts = [0] * (len(BUCKETS_S) + 1)
        """Flushes per bucket; the last, past every bound, holds those over 5 s."""
        self.count = 0
        self.total_s = 0.0
        self.slowest_s = 0.0
        self.slowest_at: float | None = None  # when the slowest ended (epoch seconds)
        self.slow = 0  # at least SLOW_FLUSH_S
        self._slow_since_line = 0
        self._last_line: float | None = None  # monotonic
        self.flush_in = FLUSH_IN_LOOP  # where they run: the store's own thread, or a thread
        self.moved_after_s: float | None = None  # the loop's flush that moved them, if one did

    def moved_to_a_thread(self, seconds: float) -> None:
        """A flush on the event loop's thread took `seconds`, at least SLOW_FLUSH_S: the
        flushes after it run in a thread of their own (controller/memory/delivery.py)."""
        self.flush_in, self.moved_after_s = FLUSH_IN_THREAD, seconds
        log.warning("store_flush_moved_to_thread", seconds=round(seconds, 3),
                    threshold_s=SLOW_FLUSH_S,
                    detail="a flush stopped the event loop that long: the flushes run in a "
                           "thread of their own until the daemon restarts (docs/technician-"
                           "guide.md, 'Slow storage')")

    def add(self, seconds: float) -> None:
        """One flush that took `seconds` (a negative one, a clock's step, counts as 0)."""
        seconds = max(0.0, seconds)
        self.counts[bisect_left(BUCKETS_S, seconds)] += 1
        self.count += 1
        self.total_s += seconds
        if seconds > self.slowest_s or self.slowest_at is None:
            self.slowest_s, self.slowest_at = seconds, self._wall_clock()
        if seconds < SLOW_FLUSH_S:
            return
        self.slow += 1
        self._slow_since_line += 1
        now = self._monotonic()
        if self._last_line is None or now - self._last_line >= SLOW_LINE_INTERVAL_S:
            log.warning("store_flush_slow", seconds=round(seconds, 3),
                        slow_flushes=self._slow_since_line, threshold_s=SLOW_FLUSH_S,
                        detail="the storage is slow to flush: every money step's report "
                               "waits for it (docs/technician-guide.md, 'Slow storage')")
            self._slow_since_line, self._last_line = 0, now

    def within(self, share: float) -> float | None:
        """The least bound that `share` of the flushes (0 < share <= 1) took at most, in
        seconds; None with no flush, or when that many took longer than the last bound."""
        if not 0 < share <= 1:
            raise ValueError(f"share = {share}: must be over 0 and at most 1")
        if self.count == 0:
            return None
        needed, seen = share * self.count, 0
        for bound, count in zip(BUCKETS_S, self.counts):
            seen += count
            if seen >= needed:
                return bound
        return None

    def status(self) -> dict[str, Any]:
        """What `tablectl status` shows (milliseconds, as a technician reads them)."""
        half, most = self.within(0.5), self.within(0.99)
        return {"flushes": self.count,
                "half_within_ms": None if half is None else round(half * 1000, 3),
                "p99_within_ms": None if most is None else round(most * 1000, 3),
                "slowest_ms": round(self.slowest_s * 1000, 1) if self.count else None,
                "slowest_at": self.slowest_at,
                "slow": self.slow, "slow_threshold_ms": SLOW_FLUSH_S * 1000,
                "flush_in": self.flush_in,
                **({} if self.moved_after_s is None else
                   {"flush_moved_after_ms": round(self.moved_after_s * 1000, 1)})}
