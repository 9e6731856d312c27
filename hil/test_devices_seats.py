"""The real GpioSeatPanel with its pins driven from another process over the pin bridge
(the simulator's BridgedMockFactory, or a rig's relay board), on the real clock."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from drivers.protocols import (
    DeviceFault,
    DeviceFaultCleared,
    LateSensorChange,
    LedState,
    LockedOut,
    SeatSensorChanged,
)
from drivers.seats import CHATTER_EDGES, GpioSeatPanel, SeatPins
from hil.conftest import EVENT_TIMEOUT_S, SeatBench
from hil.recorder import Recorder
from hil.rig import TABLE_A, TABLE_A_LOCKOUT_PIN

pytestmark = [pytest.mark.hil, pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaked_threads")]


@pytest.fixture
async def panel(seat_bench: SeatBench, recorder: Recorder) -> AsyncIterator[GpioSeatPanel]:
    p = GpioSeatPanel("seats", seat_bench.seats, seat_bench.lockout_pin,
                      pin_factory=seat_bench.pin_factory, factory_options=seat_bench.factory_options)
    await p.start(recorder)
    yield p
    await p.stop()


async def _harness(seat_bench: SeatBench, script: str) -> str:
    """Run ``script`` in another process with ``pins`` connected to the bridge/relay board."""
    code = ("from hil.mock_pins import PinBridgeClient\n"
            f"pins = PinBridgeClient({seat_bench.relay_socket!r})\n" + script)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    return out.decode().strip()


def _calls(*calls: tuple[str, int | str]) -> str:
    """The harness script's lines ``pins.<method>(<pin>)``, each pin as a Python literal: a rig
    file may name a pin ``"GPIO17"`` as well as number it (docs/wiring.md)."""
    return "".join(f"pins.{method}({pin!r})\n" for method, pin in calls)


async def test_631c_2_d_2_wagers_before_the_button_count_and_after_do_not(
        panel: GpioSeatPanel, seat_bench: SeatBench, recorder: Recorder) -> None:
    seats = sorted(seat_bench.seats)
    first, second, late = seats[0], seats[1], seats[2]
    panel.open_betting(frozenset(seats))
    await _harness(seat_bench, _calls(("press", seat_bench.seats[first].sensor_pin),
                                      ("press", seat_bench.seats[second].sensor_pin)))
    await recorder.wait_for(SeatSensorChanged, lambda e: e.seat == second and e.present,
                            timeout=EVENT_TIMEOUT_S)
    assert panel.led(first) is LedState.ACCEPTED
    await _harness(seat_bench, _calls(("press", seat_bench.lockout_pin),
                                      ("press", seat_bench.seats[late].sensor_pin),
                                      ("release", seat_bench.lockout_pin)))
    locked = await recorder.wait_for(LockedOut)
    assert (locked.cause, locked.wagers) == ("button", frozenset({first, second}))
    assert await recorder.wait_for(LateSensorChange) == LateSensorChange(
        late, True, recorder.of(LateSensorChange)[0].at_monotonic)
    assert panel.led(first) is LedState.LOCKED and panel.led(late) is LedState.OFF
    # The harness reads the LED the daemon drives (a photodiode on a rig).
    panel.set_led(first, LedState.ACCEPTED)
    assert await _harness(seat_bench, f"print(pins.read_output({seat_bench.seats[first].led_pin!r}))") == "True"
    # The chips are taken back: a rig's relays stay where a test leaves them.
    await _harness(seat_bench, _calls(*(("release", seat_bench.seats[s].sensor_pin)
                                        for s in (first, second, late))))


async def _pins(seat_bench: SeatBench, *calls: tuple[str, object]) -> list[object]:
    """In-process bridge client (the first test proves the cross-process path)."""
    def run() -> list[object]:
        with seat_bench.pins() as pins:
            return [getattr(pins, name)(arg) for name, arg in calls]
    return await asyncio.to_thread(run)


async def test_627b_3_a_2_first_card_locks_before_the_button(
        panel: GpioSeatPanel, seat_bench: SeatBench, recorder: Recorder) -> None:
    seat = sorted(seat_bench.seats)[0]
    panel.open_betting(frozenset(seat_bench.seats))
    await _pins(seat_bench, ("press", seat_bench.seats[seat].sensor_pin))
    locked = panel.lock("first-card")
    assert locked.wagers == frozenset({seat})
    await _pins(seat_bench, ("press", seat_bench.lockout_pin), ("release", seat_bench.lockout_pin),
                ("release", seat_bench.seats[seat].sensor_pin))
    assert recorder.of(LockedOut) == [locked]


async def test_chattering_sensor_injection(
        panel: GpioSeatPanel, seat_bench: SeatBench, recorder: Recorder, sim_only: None) -> None:
    seat = sorted(seat_bench.seats)[3]
    panel.open_betting(frozenset(seat_bench.seats))
    await asyncio.to_thread(lambda: seat_bench.pins().chatter(seat_bench.seats[seat].sensor_pin,
                                                              CHATTER_EDGES + 2))
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == f"seat_sensor_chatter:{seat}")
    assert f"Seat {seat}'s progressive wagers are not accepted" in fault.action
    assert panel.lock("button").wagers == frozenset()
    assert panel.led(seat) is LedState.UNAVAILABLE


async def test_stuck_sensor_injection(
        panel: GpioSeatPanel, seat_bench: SeatBench, recorder: Recorder, sim_only: None) -> None:
    seat = sorted(seat_bench.seats)[4]
    pin = seat_bench.seats[seat].sensor_pin
    await _pins(seat_bench, ("press", pin))  # stuck "chip present"
    panel.open_betting(frozenset(seat_bench.seats))
    await recorder.wait_for(DeviceFault, lambda e: e.code == f"seat_sensor_present_at_open:{seat}")
    assert panel.led(seat) is LedState.UNAVAILABLE
    await _pins(seat_bench, ("release", pin))  # repaired
    await recorder.wait_for(DeviceFaultCleared,
                            lambda e: e.code == f"seat_sensor_present_at_open:{seat}",
                            timeout=EVENT_TIMEOUT_S)
    assert panel.led(seat) is LedState.AWAITING


async def test_pins_named_like_gpio17_are_driven_as_numbered_ones_are(
        short_dir: str, recorder: Recorder) -> None:
    """A rig file's pins may be names ("GPIO17", docs/wiring.md): the harness passes them on
    as written, as strings, on the simulator's bridge as on a relay board."""
    assert _calls(("press", 4), ("release", "GPIO10")) == (
        "pins.press(4)\npins.release('GPIO10')\n")
    socket_path = str(Path(short_dir) / "pins.sock")
    bench = SeatBench({seat: SeatPins(f"GPIO{p.sensor_pin}", f"GPIO{p.led_pin}")
                       for seat, p in TABLE_A.items()}, f"GPIO{TABLE_A_LOCKOUT_PIN}",
                      "hil.mock_pins:BridgedMockFactory", {"bridge_socket": socket_path},
                      socket_path)
    panel = GpioSeatPanel("seats", bench.seats, bench.lockout_pin, pin_factory=bench.pin_factory,
                          factory_options=bench.factory_options)
    await panel.start(recorder)
    try:
        panel.open_betting(frozenset(bench.seats))
        await _harness(bench, _calls(("press", "GPIO4")))  # seat 1's chip
        await recorder.wait_for(SeatSensorChanged, lambda e: e.seat == 1 and e.present,
                                timeout=EVENT_TIMEOUT_S)
        assert await _harness(bench, "print(pins.read_output('GPIO21'))") == "True"  # ACCEPTED
        await _harness(bench, _calls(("press", "GPIO10"), ("release", "GPIO10"), ("release", "GPIO4")))
        locked = await recorder.wait_for(LockedOut)
        assert (locked.cause, locked.wagers) == ("button", frozenset({1}))
    finally:
        await panel.stop()
