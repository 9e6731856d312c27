"""The controller's side of a driver's ``emit``, for tests and HIL scenarios.

Thread-safe (GPIO callbacks emit from gpiozero's thread) and awaitable: a test
awaits the event it expects, with a timeout, instead of sleeping.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from drivers.protocols import DeviceEvent

E = TypeVar("E")


class Recorder:
    """The controller's side of ``emit``: thread-safe, and awaitable for a matching event."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None
        try:
            self._loop = asyncio.get_running_loop()
            self._changed = asyncio.Event()
        except RuntimeError:
            pass

    def __call__(self, event: DeviceEvent) -> None:
        with self._lock:
            self.events.append(event)
        if self._loop is not None and self._changed is not None:
            try:
                self._loop.call_soon_threadsafe(self._changed.set)
            except RuntimeError:  # loop closed at teardown
                pass

    def of(self, kind: type[E]) -> list[E]:
        with self._lock:
            return [e for e in self.events if isinstance(e, kind)]

    def clear(self) -> None:
        with self._lock:
            self.events.clear()

    async def wait_for(self, kind: type[E], predicate: Callable[[E], bool] = lambda e: True,
                       *, timeout: float = 5.0, start: int = 0) -> E:
        """The first event of ``kind`` (from index ``start``) matching ``predicate``; awaits it."""
        changed = self._changed
        assert changed is not None, "Recorder made outside the event loop"

        async def scan() -> E:
            while True:
                changed.clear()
                with self._lock:
                    for event in self.events[start:]:
                        if isinstance(event, kind) and predicate(event):
                            return event
                await changed.wait()

        try:
            return await asyncio.wait_for(scan(), timeout)
        except TimeoutError:
            raise AssertionError(
                f"no {kind.__name__} matching within {timeout} s; events: {self.events}") from None


THREAD_EXIT_TIMEOUT_S = 2.0
"""How long a stopped driver's or simulator's threads get to finish before they count as leaked."""
_POOL_THREADS = ("asyncio_", "ThreadPoolExecutor")
"""The event loop's default executor threads live until the loop closes, after the test."""


def leaked_threads(before: set[threading.Thread]) -> Iterator[threading.Thread]:
    """Threads started since ``before`` that do not finish within THREAD_EXIT_TIMEOUT_S."""
    for thread in threading.enumerate():
        if thread in before or thread.name.startswith(_POOL_THREADS):
            continue
        thread.join(THREAD_EXIT_TIMEOUT_S)
        if thread.is_alive():
            yield thread
