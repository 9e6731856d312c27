"""Fixtures of the HIL device tests: one test body, two backends (simulators, or a rig).

Every fixture below is parametrised over ``BACKENDS``; the ``rig`` variants
skip with ``NO_RIG_REASON`` unless ``TABLE_HIL_RIG`` names a rig file (the
pattern of gpiozero's ``test_real_pins``). Tests that inject faults ask for
``sim_only`` and skip on a rig, whose devices cannot be told to misread.
"""

from __future__ import annotations

import random
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cards import BackColour, Card
from drivers.reconnect import ReconnectPolicy
from drivers.seats import SeatPins
from hil.display_sim import SimulatedDisplay
from hil.mock_pins import PinBridgeClient
from hil.recorder import Recorder, leaked_threads
from hil.rig import NO_RIG_REASON, CardFeeder, RigConfig, rig_from_env
from hil.shoe_sim import SimulatedShoe, build_stack

BACKENDS = ["sim", "rig"]
SEED = 681

FAST_RECONNECT = ReconnectPolicy(initial_delay_s=0.05, max_delay_s=0.2, jitter=0.0,
                                 refused_reprobe_s=0.3)
"""Tests notice an unplug/replug in tenths of a second instead of the service's seconds."""
EVENT_TIMEOUT_S = 10.0
"""Longest wait for one expected event (link silence detection is 3 s; margin for a loaded CI)."""

# Ten seats of docs/wiring.md, table A.
SIM_SEATS = {seat: SeatPins(sensor_pin=s, led_pin=led)
             for seat, (s, led) in enumerate(zip(
                 [4, 5, 6, 12, 13, 16, 17, 18, 19, 20],
                 [21, 22, 23, 24, 25, 26, 27, 7, 8, 9]), start=1)}
SIM_LOCKOUT_PIN = 10


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """'sim' always; 'rig' only when TABLE_HIL_RIG names a rig file."""
    if request.param == "rig" and rig_from_env() is None:
        pytest.skip(NO_RIG_REASON)
    return str(request.param)


@pytest.fixture
def rig(backend: str) -> RigConfig | None:
    return rig_from_env() if backend == "rig" else None


@pytest.fixture
def sim_only(backend: str) -> None:
    """For tests that inject faults: only the simulators can be told to fail on demand."""
    if backend != "sim":
        pytest.skip("fault injection needs the simulator")


@pytest.fixture
async def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def short_dir() -> Iterator[str]:
    """A short temporary folder: Unix socket paths are limited to 108 bytes."""
    with tempfile.TemporaryDirectory(prefix="hil-", dir="/tmp") as tmp:
        yield tmp


# --- shoe -----------------------------------------------------------------------------


@dataclass
class ShoeBench:
    """Where the shoe driver connects, and the dealer's hand."""

    url: str
    sim: SimulatedShoe | None = None
    feeder: CardFeeder | None = None

    async def draw(self) -> Card | None:
        """Deal one card (None: the cover card). On a rig the card is unknown to the test."""
        if self.sim is not None:
            return await self.sim.draw()
        assert self.feeder is not None
        import asyncio

        await asyncio.to_thread(self.feeder.draw)
        return None

    @property
    def simulator(self) -> SimulatedShoe:
        assert self.sim is not None, "fault injection needs the simulator (use sim_only)"
        return self.sim


def new_stack(seed: int = SEED, decks: int = 8) -> tuple[list[Card], int]:
    return build_stack(decks, random.Random(seed))


@pytest.fixture
async def shoe_bench(backend: str, rig: RigConfig | None) -> AsyncIterator[ShoeBench]:
    if rig is not None:
        if rig.shoe_feeder_socket is None:
            pytest.skip(f"rig {rig.path} has no card feeder ([shoe] feeder_socket)")
        yield ShoeBench(url=rig.shoe_url, feeder=CardFeeder(rig.shoe_feeder_socket))
        return
    stack, cover = new_stack()
    shoe = SimulatedShoe(stack, BackColour.RED, cover)
    await shoe.start()
    try:
        yield ShoeBench(url=shoe.port, sim=shoe)
    finally:
        await shoe.stop()


# --- display ----------------------------------------------------------------------------


@dataclass
class DisplayBench:
    url: str
    sim: SimulatedDisplay | None = None


@pytest.fixture
async def display_bench(backend: str, rig: RigConfig | None) -> AsyncIterator[DisplayBench]:
    if rig is not None:
        if rig.display_url is None:
            pytest.skip(f"rig {rig.path} has no display ([display] url)")
        yield DisplayBench(url=rig.display_url)
        return
    display = SimulatedDisplay()
    await display.start()
    try:
        yield DisplayBench(url=display.port, sim=display)
    finally:
        await display.stop()


# --- seats --------------------------------------------------------------------------------


@dataclass
class SeatBench:
    """How to build the panel and how the harness presses sensors and reads LEDs."""

    seats: dict[int, SeatPins]
    lockout_pin: int | str
    pin_factory: str
    factory_options: dict[str, Any]
    relay_socket: str

    def pins(self) -> PinBridgeClient:
        return PinBridgeClient(self.relay_socket)


@pytest.fixture
def seat_bench(backend: str, rig: RigConfig | None, short_dir: str) -> SeatBench:
    if rig is not None:
        return SeatBench(dict(rig.seats), rig.lockout_pin, rig.pin_factory,
                         dict(rig.factory_options), rig.relay_socket)
    socket_path = str(Path(short_dir) / "pins.sock")
    return SeatBench(dict(SIM_SEATS), SIM_LOCKOUT_PIN, "hil.mock_pins:BridgedMockFactory",
                     {"bridge_socket": socket_path}, socket_path)


# --- shuffler ---------------------------------------------------------------------------------


@dataclass
class ShufflerBench:
    vendor_id: int
    product_id: int
    backend: str
    sim: Any = None  # hil.usb_shuffler.SimulatedShuffler

    @property
    def simulator(self) -> Any:
        assert self.sim is not None, "fault injection needs the simulator (use sim_only)"
        return self.sim


@pytest.fixture
def shuffler_bench(backend: str, rig: RigConfig | None) -> Iterator[ShufflerBench]:
    if rig is not None:
        yield ShufflerBench(rig.shuffler_vendor_id, rig.shuffler_product_id, rig.shuffler_backend)
        return
    from hil import usb_shuffler

    usb_shuffler.reset_backend()
    sim = usb_shuffler.add_shuffler(batches={BackColour.RED: 1, BackColour.BLUE: 1},
                                    held=BackColour.BLUE)
    try:
        yield ShufflerBench(sim.vendor_id, sim.product_id, "hil.usb_shuffler:get_backend", sim)
    finally:
        usb_shuffler.reset_backend()


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Fails a test whose drivers or simulators leave threads running (pymodbus does the same)."""
    before = set(threading.enumerate())
    yield
    leaked = [thread.name for thread in leaked_threads(before)]
    assert not leaked, f"threads still running after the test: {leaked}"
