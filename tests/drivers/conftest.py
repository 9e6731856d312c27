"""Shared fixtures for the driver tests: a fake clock, an event recorder, a seat panel on mock pins."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest

from drivers.protocols import DeviceEvent
from drivers.seats import GpioSeatPanel, SeatPins

E = TypeVar("E")

# Ten seats fit one Pi header with their LEDs (21 lines); BCM numbers as in docs/wiring.md.
TEN_SEATS = {seat: SeatPins(sensor_pin=s, led_pin=led)
             for seat, (s, led) in enumerate(zip(
                 [4, 5, 6, 12, 13, 16, 17, 18, 19, 20],
                 [21, 22, 23, 24, 25, 26, 27, 7, 8, 9]), start=1)}
LOCKOUT_PIN = 10


class FakeClock:
    """A monotonic clock the test advances by hand (STYLE.md 11)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


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
        assert self._changed is not None, "Recorder made outside the event loop"

        async def scan() -> E:
            while True:
                self._changed.clear()
                with self._lock:
                    for event in self.events[start:]:
                        if isinstance(event, kind) and predicate(event):
                            return event
                await self._changed.wait()

        try:
            return await asyncio.wait_for(scan(), timeout)
        except TimeoutError:
            raise AssertionError(
                f"no {kind.__name__} matching within {timeout} s; events: {self.events}") from None


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def panel(clock: FakeClock, recorder: Recorder) -> AsyncIterator[GpioSeatPanel]:
    """Ten seats on gpiozero's MockFactory, no background tick: the test calls tick()."""
    p = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory="mock", clock=clock, tick_s=None)
    await p.start(recorder)
    yield p
    await p.stop()
