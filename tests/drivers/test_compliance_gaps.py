"""The per-seat progressive wagering device (drivers/seats.py) against the clauses that ask for one.

631c.2(d)(1), 627b.3(a)(1) and 627b.6(d)(1) require a wagering device at each betting
position that acknowledges or accepts the progressive wager: here each seat's sensor
reports the chip (debounced), its LED switches to ACCEPTED, and the lock-out reports
exactly the seats whose own sensor held a chip, with no crosstalk between positions.
"""

from __future__ import annotations

import pytest

from drivers.protocols import LedState, LockedOut, SeatSensorChanged
from drivers.seats import DEBOUNCE_S, GpioSeatPanel

from .conftest import TEN_SEATS, FakeClock, Recorder

ALL = frozenset(TEN_SEATS)

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


def _place(panel: GpioSeatPanel, seat: int) -> None:
    panel.pin_factory.pin(TEN_SEATS[seat].sensor_pin).drive_low()  # active-low sensor


def _led_pin(panel: GpioSeatPanel, seat: int) -> bool:
    return bool(panel.pin_factory.pin(TEN_SEATS[seat].led_pin).state)


@pytest.mark.parametrize("seat", sorted(TEN_SEATS))
async def test_each_betting_position_acknowledges_its_own_wager_631c_2_d_1_627b_3_a_1_627b_6_d_1(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock, seat: int) -> None:
    """631c.2(d)(1), 627b.3(a)(1), 627b.6(d)(1): one device per betting position acknowledges
    (LED ACCEPTED, a SeatSensorChanged for that seat only) and the lock accepts only it."""
    panel.open_betting(ALL)
    assert {s: panel.led(s) for s in ALL} == {s: LedState.AWAITING for s in ALL}
    _place(panel, seat)
    clock.advance(DEBOUNCE_S)
    panel.tick()
    assert recorder.of(SeatSensorChanged) == [SeatSensorChanged(seat, True)]
    assert panel.led(seat) is LedState.ACCEPTED and _led_pin(panel, seat) is True
    assert {s for s in ALL if panel.led(s) is not LedState.AWAITING} == {seat}
    assert panel.recognised() == frozenset({seat})
    locked = panel.lock("button")
    assert locked == LockedOut("button", clock.now, frozenset({seat}))
    assert panel.led(seat) is LedState.LOCKED
    assert {s for s in ALL if panel.led(s) is LedState.OFF} == ALL - {seat}


async def test_a_position_not_offered_the_progressive_never_accepts_631c_2_d_1(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    """631c.2(d)(1): the device acknowledges only at positions where the wager is offered
    this round (the controller leaves out seats whose progressive is unavailable)."""
    panel.open_betting(frozenset({1, 2, 3}))
    _place(panel, 2)
    _place(panel, 8)
    clock.advance(DEBOUNCE_S)
    panel.tick()
    assert recorder.of(SeatSensorChanged) == [SeatSensorChanged(2, True)]
    assert (panel.led(2), panel.led(8)) == (LedState.ACCEPTED, LedState.OFF)
    assert panel.lock("button").wagers == frozenset({2})
