"""Long reads of the store, kept off the event loop.

Chain verification over a million entries, or a read of 100,000 events, takes
seconds of CPU: on the loop it would stall the table, every client and the
watchdog's pings. Here each runs in a worker thread on a read-only connection
of its own (`Store.reader`), with at most `MAX_PARALLEL` at once; concurrent
requests for the same long check (chain verification) share one run.
The loop only awaits the result; the worker's result is built (JSON-ready
dicts) in the worker too.

The chain verification of a long log runs in a child process instead (`verify_file`):
it calls back into Python for each of a million rows from inside SQLite, and a
thread doing that holds on to the GIL closely enough to keep the event loop
waiting hundreds of milliseconds (bench/bench_control.py measured 365 ms on a
1M-entry log with two threads; under 100 ms in a child process). A short log is
checked in a worker thread: the whole check then takes less than a child's start
(a fresh interpreter importing the check's modules, controller/fresh_process.py: about
0.11 s of CPU here, and before issue 31 a multiprocessing child that imported the whole
daemon again, 0.3-0.4 s), so it can stall the loop for less than that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from controller.fresh_process import FreshProcess
from controller.memory.chain import full_check_workers
from controller.memory.store import Store

T = TypeVar("T")

MAX_PARALLEL = 2  # of 2 cores on a Pi-sized machine, leave the loop one to itself
# Up to this many log entries a check runs in a thread: about 4 us an entry here (25 us on
# a Pi 4), so at most ~20 ms of checking here (~125 ms there), against a child's start.
IN_THREAD_ENTRIES = 5_000


class StoreWork:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._slots = asyncio.Semaphore(MAX_PARALLEL)
        self._running: dict[Hashable, asyncio.Future[Any]] = {}

    async def read(self, work: Callable[[Store], T]) -> T:
        """`work(reader)` in a worker thread; the reader is closed afterwards."""
        if self._store.path == ":memory:":  # no second connection can see it
            return work(self._store)
        async with self._slots:
            self._store.write_unwritten()  # the reader's connection sees every entry given out
            return await asyncio.to_thread(self._in_worker, work)

    def _in_worker(self, work: Callable[[Store], T]) -> T:
        reader = self._store.reader()
        try:
            return work(reader)
        finally:
            reader.close()

    async def verify_file(self, store_path: str, key: bytes, paths: Any, *, full: bool) -> Any:
        """controller.memory.check.verify_file in a child process of its own (in a worker
        thread while the log holds at most IN_THREAD_ENTRIES); its IntegrityError is raised
        here as if the check had run in this process."""
        async with self._slots:
            self._store.write_unwritten()  # the check sees every entry given out
            if self._store.log_seq <= IN_THREAD_ENTRIES:
                from controller.memory.check import verify_file

                return await asyncio.to_thread(verify_file, store_path, key, paths, full=full)
            # Every core: a full check holds the table at start (Daemon._check_history), and
            # a daily one runs at a quiet hour. Starting and joining a process blocks its
            # caller: a worker thread does both.
            child = await asyncio.to_thread(
                FreshProcess, "controller.memory.check:verify_file", store_path, key, paths,
                full=full, workers=full_check_workers())
            try:
                return await asyncio.to_thread(child.result)  # its IntegrityError raised here
            finally:
                child.stop()  # answered: nothing to do; else nobody waits for its answer now

    async def once(self, key: Hashable, start: Callable[[], Awaitable[T]]) -> T:
        """`start()`'s result; callers arriving while a run for the same `key` is under way
        share it (its answer is the same for all) instead of starting another."""
        running = self._running.get(key)
        if running is None:
            running = self._running[key] = asyncio.ensure_future(start())
            running.add_done_callback(lambda done: self._finished(key, done))
        return await asyncio.shield(running)

    def _finished(self, key: Hashable, done: asyncio.Future[Any]) -> None:
        self._running.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved: a failure is reported to every waiting caller
