"""The seat panel sleeps until something falls due: no polling on an idle table.

The lock-out itself never waits for a timer (631c.2(d)(2)): it runs in the GPIO
callback under the panel's mutex (test_seats_race.py). Timers only settle
debounced changes, readmit faulted sensors and blink the LEDs.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from drivers.protocols import SeatSensorChanged
from drivers.seats import CHATTER_EDGES, CHATTER_QUIET_S, DEBOUNCE_S, GpioSeatPanel, LedState

from .conftest import LOCKOUT_PIN, TEN_SEATS, FakeClock, Recorder

ALL = frozenset(TEN_SEATS)


def press(panel: GpioSeatPanel, seat: int) -> None:
    panel.pin_factory.pin(TEN_SEATS[seat].sensor_pin).drive_low()  # active low: a chip


def lift(panel: GpioSeatPanel, seat: int) -> None:
    panel.pin_factory.pin(TEN_SEATS[seat].sensor_pin).drive_high()


def test_nothing_is_due_while_betting_is_closed_and_the_leds_are_dark(panel, clock):
    assert panel.next_due() is None


def test_an_open_round_is_due_at_the_awaiting_leds_next_blink(panel, clock: FakeClock):
    clock.now = 1000.2  # AWAITING blinks 0.5 s on, 0.5 s off: on until 1000.5
    panel.open_betting(ALL)
    assert panel.next_due() == pytest.approx(1000.5)
    clock.now = 1000.7  # off until 1001.0
    assert panel.next_due() == pytest.approx(1001.0)


def test_a_sensor_change_is_due_when_its_debounce_time_ends(panel, clock: FakeClock):
    clock.now = 1000.0
    panel.open_betting(ALL)
    clock.now = 1000.43
    press(panel, 4)
    assert panel.next_due() == pytest.approx(1000.43 + DEBOUNCE_S)  # before the blink at 1000.5


def test_a_chattering_sensor_is_due_for_readmission_after_its_quiet_time(panel, clock):
    panel.open_betting(ALL)
    for _ in range(CHATTER_EDGES // 2):
        press(panel, 2)
        clock.advance(0.01)
        lift(panel, 2)
        clock.advance(0.01)
    assert panel.led(2) is LedState.UNAVAILABLE
    last_edge = clock.now - 0.01
    panel.lock("button")  # LOCKED/OFF leds; UNAVAILABLE still blinks
    due = panel.next_due()
    assert due is not None and due <= last_edge + CHATTER_QUIET_S


async def test_in_service_a_timer_settles_the_change_without_any_polling(recorder: Recorder):
    panel = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory="mock",
                          clock=time.monotonic)
    await panel.start(recorder)
    try:
        assert panel._timer is None  # closed table, dark LEDs: nothing scheduled at all
        panel.open_betting(ALL)
        assert panel._timer is not None  # the next blink of the AWAITING LEDs
        press(panel, 6)  # from this thread, as gpiozero's callback thread would
        deadline = time.monotonic() + 10  # generous: the machine may be busy
        while not recorder.of(SeatSensorChanged) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert recorder.of(SeatSensorChanged) == [SeatSensorChanged(6, True)]
        assert panel.led(6) is LedState.ACCEPTED
        locked = panel.lock("button")
        assert locked.wagers == frozenset({6})
        lift(panel, 6)
        panel.set_led(6, LedState.OFF)
        for seat in ALL - {6}:
            panel.set_led(seat, LedState.OFF)
        assert panel.next_due() is None
        await asyncio.sleep(0)  # let the re-plan run
        assert panel._timer is None  # idle again: no timer armed
    finally:
        await panel.stop()
