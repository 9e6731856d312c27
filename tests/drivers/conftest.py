"""Shared fixtures for the driver tests: a fake clock, an event recorder, a seat panel on mock pins."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from drivers.seats import GpioSeatPanel, SeatPins
from hil.recorder import Recorder, leaked_threads

# Ten seats fit one Pi header with their LEDs (21 lines); BCM numbers as in docs/wiring.md.
TEN_SEATS = {seat: SeatPins(sensor_pin=s, led_pin=led)
             for seat, (s, led) in enumerate(zip(
                 [4, 5, 6, 12, 13, 16, 17, 18, 19, 20],
                 [21, 22, 23, 24, 25, 26, 27, 7, 8, 9]), start=1)}
LOCKOUT_PIN = 10


class FakeClock:
    """A monotonic clock the test advances by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def panel(clock: FakeClock, recorder: Recorder) -> AsyncIterator[GpioSeatPanel]:
    """Ten seats on gpiozero's MockFactory, no background tick: the test calls tick()."""
    p = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory="mock", clock=clock, background=False)
    await p.start(recorder)
    yield p
    await p.stop()


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Fails a test whose drivers or simulators leave threads running (pymodbus does the same)."""
    before = set(threading.enumerate())
    yield
    leaked = [thread.name for thread in leaked_threads(before)]
    assert not leaked, f"threads still running after the test: {leaked}"

