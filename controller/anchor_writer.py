"""The critical-memory anchor, moved off the event loop and at most once a second.

The anchor (controller/critical.py) names the newest durable commit, outside the
store, so that a store put back from an older copy is caught at boot. Writing it
costs two flushes (the file, then its directory), so writing it after every
durable step would triple the flushes of a shoe and put them in front of every
wager, lock and settlement. Here a thread of its own writes the newest anchor
handed to it, then waits ANCHOR_INTERVAL_S before the next: the steps in between
are coalesced into one write. The anchor therefore lags the store by at most
that interval (the store may be ahead of its anchor, never behind: a power cut
gives the same), and a clean stop writes the last one before the store closes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import structlog

log = structlog.get_logger()

ANCHOR_INTERVAL_S = 1.0
"""The most a running table's anchor lags its store. A store rolled back by less than this
(and within a power cut of the stop) is not told apart from a power cut; anything older is."""

A = TypeVar("A")


class AnchorWriter(Generic[A]):
    """Writes the newest submitted anchor from its own thread, at most once per interval.

    Owned by the one Store that made it (its writing connection); only that Store's close()
    stops it. A read-only view of the store never has one (Store.reader)."""

    def __init__(self, write: Callable[[A], None], *,
                 interval_s: float = ANCHOR_INTERVAL_S) -> None:
        self._write = write
        self._interval_s = interval_s
        self._changed = threading.Condition()
        self._pending: A | None = None
        self._closing = False
        self.writes = 0
        """Anchors written (benchmarks and tests read it)."""
        self._thread = threading.Thread(target=self._run, name="anchor-writer", daemon=True)
        self._thread.start()

    def submit(self, anchor: A) -> None:
        """The newest durable commit's anchor; replaces one not yet written. After close()
        nothing would ever write it: that is a bug of the caller's, said at once."""
        with self._changed:
            if self._closing:
                raise RuntimeError("anchor writer already stopped: the store that owns it "
                                   "was closed")
            self._pending = anchor
            self._changed.notify()

    def close(self) -> None:
        """Stop the thread and write what is still pending, before the store closes."""
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join()
        with self._changed:
            anchor, self._pending = self._pending, None
        if anchor is not None:
            self._write_logged(anchor)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending is not None or self._closing)
                if self._closing:
                    return  # close() writes what is pending, from its own thread
                anchor, self._pending = self._pending, None
            assert anchor is not None  # wait_for returned on it, under the lock
            self._write_logged(anchor)
            with self._changed:  # coalesce: what arrives meanwhile waits for one write
                self._changed.wait_for(lambda: self._closing, timeout=self._interval_s)

    def _write_logged(self, anchor: A) -> None:
        try:
            self._write(anchor)
            self.writes += 1
        except OSError as exc:  # the store is committed; the anchor catches up next time
            log.error("anchor_write_failed", error=str(exc))
