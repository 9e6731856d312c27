"""Fixtures of the HIL device tests: one test body, two backends (simulators, or a rig).

Every fixture below is parametrised over ``BACKENDS``; the ``rig`` variants
skip with ``NO_RIG_REASON`` unless ``TABLE_HIL_RIG`` names a rig file (the
pattern of gpiozero's ``test_real_pins``). Tests that inject faults ask for
``sim_only`` and skip on a rig, whose devices cannot be told to misread; a rig
without a device skips that device's tests. Both skips are decided in
``backend``, before any device is connected. Every rig test must leave the
relays and LEDs (``rig_left_as_found``) and the devices (``left_as_found``) as
it found them.
"""

from __future__ import annotations

import contextlib
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
from hil.rig import (
    NO_RIG_REASON,
    TABLE_A,
    TABLE_A_LOCKOUT_PIN,
    CardFeeder,
    RigConfig,
    bench_changes,
    bench_state,
    rig_from_env,
)
from hil.shoe_sim import SimulatedShoe, build_stack

BACKENDS = ["sim", "rig"]
SEED = 681

FAST_RECONNECT = ReconnectPolicy(initial_delay_s=0.05, max_delay_s=0.2, jitter=0.0,
                                 refused_reprobe_s=0.3)
"""Tests notice an unplug/replug in tenths of a second instead of the service's seconds."""
EVENT_TIMEOUT_S = 10.0
"""Longest wait for one expected event (link silence detection is 3 s; margin for a loaded CI)."""

SIM_ONLY_REASON = "fault injection needs the simulator"
RIG_NEEDS = {"shoe_bench": "card feeder", "shuffler_bench": "shuffler", "display_bench": "display",
             "seat_bench": "relay board", "known_batch": "known batch"}
"""The rig device a fixture needs (RigConfig.lacks)."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """'sim' always; 'rig' only when TABLE_HIL_RIG names a rig file. Every rig skip is
    decided here, before any device fixture runs: a test asking for ``sim_only``, or for a
    device the rig file has no section for."""
    if request.param == "rig":
        rig = rig_from_env()
        if rig is None:
            pytest.skip(NO_RIG_REASON)
        if "sim_only" in request.fixturenames:
            pytest.skip(SIM_ONLY_REASON)
        for fixture, device in RIG_NEEDS.items():
            if fixture in request.fixturenames:
                skip_unless_rig_has(rig, device)
    return str(request.param)


@pytest.fixture
def rig(backend: str) -> RigConfig | None:
    return rig_from_env() if backend == "rig" else None


def skip_unless_rig_has(rig: RigConfig, device: str) -> None:
    reason = rig.lacks(device)
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def known_batch(backend: str) -> None:
    """For tests that shuffle the batch the shuffler holds: a rig must say how many cards
    it is ([shuffler] batch_cards); ``backend`` skips the rig variant otherwise."""


@pytest.fixture
def sim_only(backend: str) -> None:
    """For tests that inject faults: only the simulators can be told to fail on demand
    (``backend`` skips the rig variant before anything connects)."""
    assert backend == "sim"


@pytest.fixture(autouse=True)
def rig_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """A rig test leaves every relay and LED as it found it, or fails; the relays it left are
    put back so the next test starts clean. A real relay board keeps a relay a test left
    closed, so the next test (or the next night's run) would read a chip nobody placed."""
    if "backend" not in request.fixturenames:
        yield
        return
    rig: RigConfig | None = request.getfixturevalue("rig")
    if rig is None or rig.gpio is None:
        yield
        return
    gpio = rig.gpio
    before = bench_state(gpio)
    yield
    after = bench_state(gpio)
    changes = bench_changes(gpio, before, after)
    if changes:
        with PinBridgeClient(gpio.relay_socket) as board:
            for pin in gpio.relay_pins():
                if after[str(pin)] != before[str(pin)]:
                    board.set_input(pin, before[str(pin)])
    assert not changes, "the test left the rig changed: " + "; ".join(changes)


async def device_state(driver: Any) -> tuple[str, bool, str, Any]:
    """A device's own account of itself: its self-test verdict (an active fault fails it and
    is named), and for a shuffler the batch it holds."""
    result = await driver.self_test()
    return driver.name, result.passed, result.detail, getattr(driver, "held_batch", None)


@contextlib.asynccontextmanager
async def left_as_found(driver: Any, on_rig: bool) -> AsyncIterator[None]:
    """On a rig, a test leaves the device it used in the state it found it (the relays and
    LEDs are ``rig_left_as_found``'s): checked through the test's own driver, before it stops,
    so the check costs no connection of its own. The simulators are new for every test."""
    if not on_rig:
        yield
        return
    found = await device_state(driver)
    yield
    left = await device_state(driver)
    assert left == found, f"the test left the {driver.name} changed: {left[1:]}; it found it {found[1:]}"


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
        assert rig.shoe is not None and rig.shoe.feeder_socket is not None
        yield ShoeBench(url=rig.shoe.url, feeder=CardFeeder(rig.shoe.feeder_socket))
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
        assert rig.display_url is not None
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
        gpio = rig.gpio
        assert gpio is not None
        return SeatBench(dict(gpio.seats), gpio.lockout_pin, gpio.pin_factory,
                         dict(gpio.factory_options), gpio.relay_socket)
    socket_path = str(Path(short_dir) / "pins.sock")
    return SeatBench(dict(TABLE_A), TABLE_A_LOCKOUT_PIN, "hil.mock_pins:BridgedMockFactory",
                     {"bridge_socket": socket_path}, socket_path)


# --- shuffler ---------------------------------------------------------------------------------


@dataclass
class ShufflerBench:
    vendor_id: int
    product_id: int
    backend: str
    sim: Any = None  # hil.usb_shuffler.SimulatedShuffler
    batch_cards: int | None = None
    """Cards in the batch the shuffler holds at the start (a rig's [shuffler] batch_cards)."""

    @property
    def simulator(self) -> Any:
        assert self.sim is not None, "fault injection needs the simulator (use sim_only)"
        return self.sim


@pytest.fixture
def shuffler_bench(backend: str, rig: RigConfig | None,
                   monkeypatch: pytest.MonkeyPatch) -> Iterator[ShufflerBench]:
    if rig is not None:
        shuffler = rig.shuffler
        assert shuffler is not None
        if shuffler.backend_socket is not None:
            from hil.usb_bridge import BRIDGE_SOCKET_ENV

            monkeypatch.setenv(BRIDGE_SOCKET_ENV, shuffler.backend_socket)
        yield ShufflerBench(shuffler.vendor_id, shuffler.product_id, shuffler.backend,
                            batch_cards=shuffler.batch_cards)
        return
    from hil import usb_shuffler

    usb_shuffler.reset_backend()
    sim = usb_shuffler.add_shuffler(batches={BackColour.RED: 1, BackColour.BLUE: 1},
                                    held=BackColour.BLUE)
    try:
        yield ShufflerBench(sim.vendor_id, sim.product_id, "hil.usb_shuffler:get_backend", sim,
                            batch_cards=52)
    finally:
        usb_shuffler.reset_backend()


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Fails a test whose drivers or simulators leave threads running (pymodbus does the same)."""
    before = set(threading.enumerate())
    yield
    leaked = [thread.name for thread in leaked_threads(before)]
    assert not leaked, f"threads still running after the test: {leaked}"
