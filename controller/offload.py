"""Long reads of the store, kept off the event loop.

Chain verification over a million entries, or a read of 100,000 events, takes
seconds of CPU: on the loop it would stall the table, every client and the
watchdog's pings. Here each runs in a worker thread on a read-only connection
of its own (`Store.reader`), with at most `MAX_PARALLEL` at once, and
concurrent chain verifications share one run (its answer is the same for all).
The loop only awaits the result; the worker's result is built (JSON-ready
dicts) in the worker too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from controller.store import Store

T = TypeVar("T")

MAX_PARALLEL = 2  # of 2 cores on a Pi-sized machine, leave the loop one to itself


class StoreWork:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._slots = asyncio.Semaphore(MAX_PARALLEL)
        self._verifying: asyncio.Future[int] | None = None

    async def read(self, work: Callable[[Store], T]) -> T:
        """`work(reader)` in a worker thread; the reader is closed afterwards."""
        if self._store.path == ":memory:":  # no second connection can see it
            return work(self._store)
        async with self._slots:
            return await asyncio.to_thread(self._in_worker, work)

    def _in_worker(self, work: Callable[[Store], T]) -> T:
        reader = self._store.reader()
        try:
            return work(reader)
        finally:
            reader.close()

    async def verify_chain(self) -> int:
        """Store.verify_chain off the loop; callers arriving while one runs share it."""
        if self._verifying is None:
            self._verifying = asyncio.ensure_future(self.read(lambda s: s.verify_chain()))
            self._verifying.add_done_callback(self._verified)
        return await asyncio.shield(self._verifying)

    def _verified(self, done: asyncio.Future[int]) -> None:
        self._verifying = None
        if not done.cancelled():
            done.exception()  # retrieved: a failure is reported to every waiting caller
