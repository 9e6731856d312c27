"""Seat progressive-wager sensors, seat LEDs and the lock-out button on gpiozero mock pins.

Sensors and the button are wired active-low (docs/wiring.md): a chip on the spot
or a pressed button pulls the pin low.
"""

from __future__ import annotations

import pytest

from drivers.errors import SeatPanelConfigError
from drivers.protocols import (
    DeviceFault,
    DeviceFaultCleared,
    LateSensorChange,
    LedState,
    LinkChanged,
    LinkState,
    LockedOut,
    SeatPanel,
    SeatSensorChanged,
)
from drivers.seats import CHATTER_EDGES, CHATTER_QUIET_S, GpioSeatPanel, SeatPins, SeatStatus

from .conftest import LOCKOUT_PIN, TEN_SEATS, FakeClock, Recorder

ALL = frozenset(TEN_SEATS)

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


def place(panel: GpioSeatPanel, seat: int) -> None:
    panel.pin_factory.pin(TEN_SEATS[seat].sensor_pin).drive_low()


def lift(panel: GpioSeatPanel, seat: int) -> None:
    panel.pin_factory.pin(TEN_SEATS[seat].sensor_pin).drive_high()


def press_lockout(panel: GpioSeatPanel) -> None:
    panel.pin_factory.pin(LOCKOUT_PIN).drive_low()


def release_lockout(panel: GpioSeatPanel) -> None:
    panel.pin_factory.pin(LOCKOUT_PIN).drive_high()


def led_level(panel: GpioSeatPanel, seat: int) -> bool:
    return bool(panel.pin_factory.pin(TEN_SEATS[seat].led_pin).state)


# --- configuration -------------------------------------------------------------


def test_panel_implements_the_seat_panel_protocol(panel: GpioSeatPanel) -> None:
    assert isinstance(panel, SeatPanel)


@pytest.mark.parametrize("count", [9, 15])
def test_631a_2_a_ten_to_fourteen_seats(count: int) -> None:
    seats = {n: SeatPins(n, 100 + n) for n in range(1, count + 1)}
    with pytest.raises(SeatPanelConfigError, match=f"{count} configured; 631a.2\\(a\\) allows 10 to 14"):
        GpioSeatPanel("seats", seats, 2, pin_factory="mock")


def test_681a_2_a_a_21_baccarat_panel_wires_up_to_eight_seats() -> None:
    """The 631a count is only the default: a 21 Baccarat table (681a.2(a)) has 1 to 8."""
    from controller.rules.submission import seat_rule

    eight = {n: SeatPins(n, 100 + n) for n in range(1, 9)}
    panel = GpioSeatPanel("seats", eight, 99, pin_factory="mock",
                          seat_rule=seat_rule("21-baccarat"))
    assert sorted(panel._seats) == list(range(1, 9))
    nine = {n: SeatPins(n, 100 + n) for n in range(1, 10)}
    with pytest.raises(SeatPanelConfigError, match="9 configured; 681a.2\\(a\\) allows 1 to 8"):
        GpioSeatPanel("seats", nine, 99, pin_factory="mock", seat_rule=seat_rule("21-baccarat"))


def test_a_pin_used_twice_is_named() -> None:
    seats = dict(TEN_SEATS)
    seats[2] = SeatPins(sensor_pin=4, led_pin=22)
    with pytest.raises(SeatPanelConfigError, match="seats.2.sensor_pin = 4: already used by seats.1.sensor_pin"):
        GpioSeatPanel("seats", seats, LOCKOUT_PIN, pin_factory="mock")


@pytest.mark.parametrize("spec", ["pigpio-ish", "no.such.module:Factory", "gpiozero:NoSuchFactory"])
def test_unknown_pin_factory_is_a_config_error_naming_the_key(spec: str) -> None:
    with pytest.raises(SeatPanelConfigError, match=f"gpio.pin_factory = '{spec}'"):
        GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory=spec)


async def test_fourteen_seats_with_leds_on_a_second_factory(recorder: Recorder, clock: FakeClock) -> None:
    """631a.2(a) maximum: 14 sensors + button on the header, 14 LEDs on an expander."""
    sensors = [4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 18, 19, 20, 21]
    seats = {n: SeatPins(sensor_pin=pin, led_pin=n) for n, pin in enumerate(sensors, start=1)}
    p = GpioSeatPanel("seats", seats, 22, pin_factory="mock", led_pin_factory="mock",
                      clock=clock, background=False)
    await p.start(recorder)
    try:
        p.open_betting(frozenset(seats))
        p.pin_factory.pin(21).drive_low()  # seat 14's chip
        locked = p.lock("button")
        assert locked.wagers == frozenset({14})
        assert p.led_pin_factory.pin(14).state == 1  # LOCKED pattern starts "on"
        assert p.led_pin_factory is not p.pin_factory
    finally:
        await p.stop()


async def test_unavailable_gpio_is_refused_not_a_crash(recorder: Recorder) -> None:
    p = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory="mock",
                      factory_options={"revision": "zz"})
    await p.start(recorder)
    assert recorder.of(LinkChanged)[-1].state is LinkState.REFUSED
    assert recorder.of(DeviceFault)[0].code == "gpio_unavailable"
    assert p.health().link is LinkState.REFUSED
    assert not (await p.self_test()).passed
    await p.stop()


# --- debounce -----------------------------------------------------------------


async def test_debounced_sensor_change_needs_fifty_ms_of_stable_level(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    panel.open_betting(ALL)
    assert panel.led(3) is LedState.AWAITING
    place(panel, 3)
    clock.advance(0.049)
    panel.tick()
    assert recorder.of(SeatSensorChanged) == []
    clock.advance(0.001)
    panel.tick()
    assert recorder.of(SeatSensorChanged) == [SeatSensorChanged(3, True)]
    assert panel.led(3) is LedState.ACCEPTED
    assert led_level(panel, 3) is True
    assert panel.recognised() == frozenset({3})


async def test_bounce_shorter_than_the_debounce_is_one_change(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    panel.open_betting(ALL)
    for _ in range(3):  # a chip rattling onto the spot
        place(panel, 5)
        clock.advance(0.005)
        panel.tick()
        lift(panel, 5)
        clock.advance(0.005)
        panel.tick()
    place(panel, 5)
    clock.advance(0.05)
    panel.tick()
    assert recorder.of(SeatSensorChanged) == [SeatSensorChanged(5, True)]


# --- lock-out: 631c.2(d)(2), 627b.6(d)(2), 627b.3(a)(2) --------------------------


async def test_631c_2_d_2_lockout_button_locks_every_seat_with_the_wagers_at_that_instant(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    panel.open_betting(ALL)
    place(panel, 1)
    place(panel, 7)
    clock.advance(0.2)
    panel.tick()
    place(panel, 9)  # 1 ms before the lock: placed before "no more bets", so it counts
    clock.advance(0.001)
    press_lockout(panel)
    locked = recorder.of(LockedOut)
    assert locked == [LockedOut("button", clock.now, frozenset({1, 7, 9}))]
    assert panel.led(1) is LedState.LOCKED and panel.led(2) is LedState.OFF
    assert not panel.is_open


async def test_631c_2_d_2_a_sensor_change_after_the_lock_is_never_a_wager(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    panel.open_betting(ALL)
    press_lockout(panel)
    clock.advance(0.01)
    place(panel, 4)
    clock.advance(0.1)
    panel.tick()
    assert recorder.of(LockedOut)[0].wagers == frozenset()
    assert recorder.of(LateSensorChange) == [LateSensorChange(4, True, clock.now - 0.1)]
    assert recorder.of(SeatSensorChanged) == []
    assert panel.locked_out is not None and panel.locked_out.wagers == frozenset()
    # LockedOut is queued before the late change.
    kinds = [type(e) for e in recorder.events if isinstance(e, LockedOut | LateSensorChange)]
    assert kinds == [LockedOut, LateSensorChange]


async def test_627b_3_a_2_first_card_locks_and_the_lock_is_idempotent(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    panel.open_betting(ALL)
    place(panel, 2)
    first = panel.lock("first-card")
    clock.advance(1.0)
    press_lockout(panel)
    assert panel.lock("button") is first
    assert first.cause == "first-card" and first.wagers == frozenset({2})
    assert len(recorder.of(LockedOut)) == 1


async def test_631c_2_d_2_a_lockout_press_is_never_dropped_as_a_bounce(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    """Fast rounds (a HIL harness, or a dealer who opens and closes at once): a press 5 ms after
    the previous round's release still locks. Dropping it would let wagers in after "no more
    bets"; a bounce that locks early is the safe failure."""
    panel.open_betting(ALL)
    press_lockout(panel)
    clock.advance(0.002)
    release_lockout(panel)
    panel.open_betting(ALL)
    place(panel, 2)
    clock.advance(0.005)
    press_lockout(panel)
    assert not panel.is_open
    assert [lock.wagers for lock in recorder.of(LockedOut)] == [frozenset(), frozenset({2})]
    assert panel.health().counters["button_bounces"] == 1


async def test_seats_not_offered_this_round_never_hold_a_wager(
        panel: GpioSeatPanel, recorder: Recorder) -> None:
    panel.open_betting(frozenset({1, 2}))
    place(panel, 3)
    assert panel.led(3) is LedState.OFF
    assert panel.lock("button").wagers == frozenset()


# --- sensor faults --------------------------------------------------------------


async def test_sensor_reading_a_wager_when_betting_opens_is_a_fault_until_cleared(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    place(panel, 6)  # stuck, or a chip left on the spot
    panel.open_betting(ALL)
    fault = recorder.of(DeviceFault)[0]
    assert fault.code == "seat_sensor_present_at_open:6"
    assert "Clear seat 6's progressive spot" in fault.action
    assert panel.led(6) is LedState.UNAVAILABLE
    assert panel.lock("button").wagers == frozenset()  # never counted while faulted
    panel.open_betting(ALL)
    lift(panel, 6)
    clock.advance(0.05)
    panel.tick()
    assert recorder.of(DeviceFaultCleared)[-1] == DeviceFaultCleared("seats", "seat_sensor_present_at_open:6")
    assert panel.seat_status(6) is SeatStatus.OK and panel.led(6) is LedState.AWAITING
    place(panel, 6)
    assert panel.lock("button").wagers == frozenset({6})


async def test_a_spot_cleared_in_the_same_betting_period_takes_a_wager_again_C10(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    """docs/rulings.md C10: the seat is out only until its spot reads empty; a chip placed
    after that, while betting is still open, is placed in the betting period (631c.2(d)(2))."""
    place(panel, 6)
    panel.open_betting(ALL)
    assert panel.led(6) is LedState.UNAVAILABLE
    lift(panel, 6)
    clock.advance(0.01)
    panel.tick()
    assert panel.seat_status(6) is SeatStatus.PRESENT_AT_OPEN  # not yet settled empty
    clock.advance(0.04)
    panel.tick()
    assert recorder.of(DeviceFaultCleared) == [
        DeviceFaultCleared("seats", "seat_sensor_present_at_open:6")]
    assert panel.is_open and panel.led(6) is LedState.AWAITING
    place(panel, 6)
    assert panel.lock("button").wagers == frozenset({6})


async def test_chattering_sensor_is_taken_out_of_play(
        panel: GpioSeatPanel, recorder: Recorder, clock: FakeClock) -> None:
    panel.open_betting(ALL)
    for _ in range(CHATTER_EDGES // 2):
        place(panel, 8)
        clock.advance(0.01)
        lift(panel, 8)
        clock.advance(0.01)
    place(panel, 8)
    assert recorder.of(DeviceFault)[0].code == "seat_sensor_chatter:8"
    assert panel.led(8) is LedState.UNAVAILABLE
    assert panel.lock("button").wagers == frozenset()
    lift(panel, 8)
    panel.open_betting(ALL)
    clock.advance(CHATTER_QUIET_S)
    panel.tick()
    assert recorder.of(DeviceFaultCleared) == [DeviceFaultCleared("seats", "seat_sensor_chatter:8")]
    assert panel.seat_status(8) is SeatStatus.OK


async def test_late_changes_are_capped_per_round(panel: GpioSeatPanel, recorder: Recorder) -> None:
    panel.open_betting(ALL)
    panel.lock("button")
    for _ in range(50):
        place(panel, 1)
        lift(panel, 1)
    assert len(recorder.of(LateSensorChange)) == 32
    assert panel.health().counters["late_sensor_changes_suppressed"] == 68


# --- LEDs, health, self-test ------------------------------------------------------


async def test_led_patterns_follow_the_clock(panel: GpioSeatPanel, clock: FakeClock) -> None:
    panel.set_led(1, LedState.WON)  # 0.1 s on / 0.1 s off
    clock.now = 1000.05
    panel.tick()
    assert led_level(panel, 1) is True
    clock.now = 1000.15
    panel.tick()
    assert led_level(panel, 1) is False
    panel.set_led(1, LedState.ACCEPTED)
    assert led_level(panel, 1) is True


async def test_health_and_self_test(panel: GpioSeatPanel) -> None:
    panel.open_betting(ALL)
    place(panel, 1)
    panel.lock("button")
    health = panel.health()
    assert (health.device, health.kind, health.link, health.port) == ("seats", "seats", LinkState.UP, "gpio:mock")
    assert health.counters["lockouts"] == 1
    result = await panel.self_test()
    assert not result.passed
    assert result.detail == ("sensors read a wager while betting is closed at seats [1] "
                             "(clear the spots; if empty, the sensors are stuck)")
    lift(panel, 1)
    assert (await panel.self_test()).passed


def test_a_negative_debounce_is_refused_under_the_configurations_own_key() -> None:
    """The panel is given the configuration's [gpio] debounce_ms in seconds; a caller that
    hands it a negative one (not the configuration, which allows 0 to 500) hears the key a
    technician can find."""
    with pytest.raises(SeatPanelConfigError) as refused:
        GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, debounce_s=-0.005)
    assert str(refused.value) == ("gpio.debounce_ms = -5: not allowed; allowed: 0 to 500 "
                                  "milliseconds")
