"""Per-seat progressive wager sensors and LEDs plus the dealer's lock-out button, on GPIO.

``GpioSeatPanel`` implements ``drivers.protocols.SeatPanel`` over gpiozero
devices on an injectable pin factory: ``"lgpio"`` on a Pi (set explicitly, never
gpiozero's guess), ``"mock"`` for gpiozero's ``MockFactory`` and ``"module:attr"``
for anything else (the HIL harness uses ``hil.mock_pins:BridgedMockFactory``).

Regulatory behaviour:

* 631c.2(d)(2), 627b.6(d)(2), 627b.3(a)(2): once the dealer presses the lock-out
  button (or the first card leaves the shoe, ``lock("first-card")``) no
  progressive wager is recognised. The lock runs in the GPIO callback thread
  under one ``threading.Lock`` that every sensor callback also takes, so each
  sensor edge is totally ordered against the lock: before it, it counts; after
  it, it is a ``LateSensorChange`` and never a wager.
* ``LockedOut.wagers`` are the seats whose sensor held a wager at the instant of
  the lock (the raw level, not the debounced one: a chip settled 10 ms before
  the lock was placed before "no more bets").
* 631a.2(a): 10 to 14 seats.

Debouncing is this project's own (gpiozero's mock pins ignore ``bounce_time``)
and uses the injected ``clock``, so tests drive it with a fake clock and
``tick()``. In service nothing polls: the GPIO edge callbacks wake the event loop,
which runs ``tick()`` exactly when something falls due (a change settling after
the debounce time, a faulted sensor readmitted, an LED blinking to its next
level) and sleeps otherwise, so an idle table costs no CPU. A
sensor that chatters, or that already reads a wager when betting opens (stuck
or a chip left on the spot), is taken out of play (LED UNAVAILABLE, never a
wager) with a ``DeviceFault`` until it reads quiet/empty again.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import importlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from drivers.errors import SeatPanelConfigError
from drivers.protocols import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealth,
    Emit,
    LateSensorChange,
    LedState,
    LinkChanged,
    LinkState,
    LockedOut,
    SeatSensorChanged,
    SelfTestResult,
)

log = structlog.get_logger()

MIN_SEATS, MAX_SEATS = 10, 14
"""631a.2(a): a baccarat table has numbered positions for 10 to 14 players."""

DEBOUNCE_S = 0.05
"""Default sensor debounce: a chip settling on the spot bounces for a few ms; 50 ms is well
above that and well below the time a player takes to place a chip."""
WAKE_LATE_S = 0.001
"""A timer wakes this long after the instant it is due: the event loop may run a timer up to
its clock resolution early, and a wake just before an LED's edge would find nothing to do."""
CHATTER_EDGES = 8
"""Raw edges within CHATTER_WINDOW_S that mark a sensor as chattering (a placed chip makes
at most a handful of bounce edges, then one more when it is taken away)."""
CHATTER_WINDOW_S = 1.0
CHATTER_QUIET_S = 2.0
"""A chattering sensor is readmitted after this long without an edge."""
LATE_CHANGE_CAP = 32
"""LateSensorChange events per seat per round; more are counted, not queued, so a
chattering sensor after the lock cannot flood the controller's queue."""

_CLOCK_EPSILON_S = 1e-9
"""Float rounding of clock differences; far below any timing that matters here."""

LED_PATTERNS: Mapping[LedState, tuple[float, float] | bool] = {
    # steady level, or (on seconds, off seconds); see docs/wiring.md
    LedState.OFF: False,
    LedState.AWAITING: (0.5, 0.5),
    LedState.ACCEPTED: True,
    LedState.LOCKED: (1.9, 0.1),
    LedState.WON: (0.1, 0.1),
    LedState.UNAVAILABLE: (0.1, 1.9),
}

PinId = int | str


@dataclass(frozen=True, slots=True)
class SeatPins:
    """GPIO pins of one seat (BCM numbers or gpiozero pin names such as ``"GPIO17"``)."""

    sensor_pin: PinId
    led_pin: PinId


class SeatStatus(enum.Enum):
    OK = "ok"
    PRESENT_AT_OPEN = "present-at-open"  # stuck sensor or a chip left on the spot
    CHATTER = "chatter"


@dataclass
class _Seat:
    """Mutable per-seat state; guarded by GpioSeatPanel._mutex."""

    raw: bool = False
    raw_changed_at: float = 0.0
    stable: bool = False
    status: SeatStatus = SeatStatus.OK
    edges: collections.deque[float] = field(default_factory=lambda: collections.deque(maxlen=64))
    late_changes: int = 0
    led: LedState = LedState.OFF
    led_level: bool | None = None  # last level written to the pin; None = never written


def make_pin_factory(spec: str, options: Mapping[str, Any]) -> Any:
    """Build the gpiozero pin factory named by ``[gpio] pin_factory``."""
    if spec == "lgpio":
        from gpiozero.pins.lgpio import LGPIOFactory

        return LGPIOFactory(**options)
    if spec == "mock":
        from gpiozero.pins.mock import MockFactory

        return MockFactory(**options)
    target = resolve_import_path(spec, "gpio.pin_factory")
    from gpiozero import Factory

    if isinstance(target, Factory):
        return target
    made = target(**options)
    if not isinstance(made, Factory):
        raise SeatPanelConfigError(
            f"gpio.pin_factory = {spec!r}: {made!r} is not a gpiozero pin Factory")
    return made


def _is_instance_spec(spec: str) -> bool:
    from gpiozero import Factory

    return isinstance(resolve_import_path(spec, "gpio.pin_factory"), Factory)


def resolve_import_path(spec: str, key: str) -> Any:
    """Import ``"module:attr"``; raise a config error naming the key and value otherwise."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SeatPanelConfigError(
            f"{key} = {spec!r}: expected 'lgpio', 'mock' or an import path 'module:attr'")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise SeatPanelConfigError(f"{key} = {spec!r}: cannot import it ({exc})") from exc


class GpioSeatPanel:
    """Seat sensors, seat LEDs and the lock-out button of one table (``drivers.protocols.SeatPanel``)."""

    kind = "seats"

    def __init__(
        self,
        name: str,
        seats: Mapping[int, SeatPins],
        lockout_pin: PinId,
        *,
        pin_factory: str = "lgpio",
        factory_options: Mapping[str, Any] | None = None,
        debounce_s: float = DEBOUNCE_S,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
        sensor_active_low: bool = True,
        lockout_active_low: bool = True,
        led_pin_factory: str | None = None,
        led_factory_options: Mapping[str, Any] | None = None,
        seat_rule: tuple[int, int, str] = (MIN_SEATS, MAX_SEATS, "631a.2(a)"),
    ) -> None:
        """``background=False`` schedules nothing on the event loop (tests call ``tick()``
        with a fake clock); otherwise ``clock`` must be ``time.monotonic``, the loop's own.

        ``led_pin_factory`` puts the seat LEDs on a second pin factory: 14 seats need
        14 sensors + 14 LEDs + the button = 29 lines, one more than the 28 GPIOs of a
        Pi header, so a 13- or 14-seat table drives its LEDs through an I/O expander
        (docs/wiring.md). ``None`` = the LEDs share the sensors' factory.

        ``seat_rule``: (fewest, most, section) seats the table's game allows; a 21 Baccarat
        table has at most eight (681a.2(a)), so the 631a default must not refuse it.
        """
        fewest, most, section = seat_rule
        if not fewest <= len(seats) <= most:
            raise SeatPanelConfigError(
                f"seats: {len(seats)} configured; {section} allows {fewest} to {most}")
        pins: dict[str, str] = {}
        for seat, seat_pins in sorted(seats.items()):
            for role, pin in (("sensor_pin", seat_pins.sensor_pin), ("led_pin", seat_pins.led_pin)):
                key = str(pin).upper().removeprefix("GPIO")
                if role == "led_pin" and led_pin_factory is not None:
                    key = "led:" + key  # the LEDs live on their own factory's pins
                if key in pins:
                    raise SeatPanelConfigError(
                        f"seats.{seat}.{role} = {pin!r}: already used by {pins[key]}")
                pins[key] = f"seats.{seat}.{role}"
        if str(lockout_pin).upper().removeprefix("GPIO") in pins:
            raise SeatPanelConfigError(f"gpio.lockout_pin = {lockout_pin!r}: already used by a seat")
        if debounce_s < 0:
            # the configuration's [gpio] debounce_ms, in seconds here
            raise SeatPanelConfigError(f"gpio.debounce_ms = {debounce_s * 1000:g}: not allowed; "
                                       "allowed: 0 to 500 milliseconds")
        for spec, key in ((pin_factory, "gpio.pin_factory"), (led_pin_factory, "gpio.led_pin_factory")):
            if spec is not None and spec not in ("lgpio", "mock"):
                resolve_import_path(spec, key)  # fail at configuration time, not at start
        self.name = name
        self._seat_pins = dict(seats)
        self._lockout_pin = lockout_pin
        self._factory_spec = pin_factory
        self._factory_options = dict(factory_options or {})
        self._led_factory_spec = led_pin_factory
        self._led_factory_options = dict(led_factory_options or {})
        self._led_factory: Any = None
        self._debounce_s = debounce_s
        self._clock = clock
        self._background = background
        self._sensor_active_low = sensor_active_low
        self._lockout_active_low = lockout_active_low

        # One lock orders every sensor edge against the lock-out (631c.2(d)(2)).
        self._mutex = threading.Lock()
        # LED pins are written outside _mutex (keeps the lock-out short); this orders the writes.
        self._led_mutex = threading.Lock()
        self._seats = {seat: _Seat() for seat in seats}
        self._allowed: frozenset[int] = frozenset()
        self._open = False
        self._locked: LockedOut | None = None
        self._last_button_edge: float | None = None
        self._emit: Emit | None = None
        self._factory: Any = None
        self._own_factory = False
        self._sensors: dict[int, Any] = {}
        self._leds: dict[int, Any] = {}
        self._button: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._link = LinkState.STOPPED
        self._last_error = ""
        self._counters: collections.Counter[str] = collections.Counter()

    # --- lifecycle ------------------------------------------------------------

    @property
    def pin_factory(self) -> Any:
        """The gpiozero pin factory in use (a MockFactory in tests), or None before start()."""
        return self._factory

    @property
    def led_pin_factory(self) -> Any:
        """The factory driving the seat LEDs (the sensors' one unless configured apart)."""
        return self._led_factory if self._led_factory is not None else self._factory

    async def start(self, emit: Emit) -> None:
        """Claim the pins and begin reporting; a GPIO failure is REFUSED + DeviceFault, not a crash."""
        self._emit = emit
        try:
            self._claim_pins()
        except Exception as exc:  # lgpio missing, pin busy, not a Pi: the technician must act
            self._release_pins()
            self._last_error = f"{type(exc).__name__}: {exc}"
            self._link = LinkState.REFUSED
            log.error("seat panel GPIO unavailable", device=self.name, error=self._last_error)
            emit(LinkChanged(self.name, LinkState.REFUSED, self._last_error))
            emit(DeviceFault(self.name, "gpio_unavailable", self._last_error,
                             "Check gpio.pin_factory (lgpio on a Pi) and that no other program "
                             "holds the seat pins; then restart the table service."))
            return
        self._link = LinkState.UP
        emit(LinkChanged(self.name, LinkState.UP, f"pin factory {self._factory_spec}"))
        if self._background:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            self._wake()

    async def stop(self) -> None:
        self._loop = None  # edges arriving from now on schedule nothing
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._release_pins()
        if self._link is not LinkState.STOPPED and self._emit is not None:
            self._emit(LinkChanged(self.name, LinkState.STOPPED))
        self._link = LinkState.STOPPED

    def _claim_pins(self) -> None:
        from gpiozero import LED, DigitalInputDevice

        self._factory = make_pin_factory(self._factory_spec, self._factory_options)
        # A factory instance named by import path belongs to whoever made it: never close it.
        self._own_factory = self._factory_spec in ("lgpio", "mock") or not _is_instance_spec(
            self._factory_spec)
        if self._led_factory_spec is not None:
            self._led_factory = make_pin_factory(self._led_factory_spec, self._led_factory_options)
        led_factory = self.led_pin_factory
        now = self._clock()
        for seat, pins in self._seat_pins.items():
            sensor = DigitalInputDevice(pins.sensor_pin, pull_up=self._sensor_active_low,
                                        bounce_time=None, pin_factory=self._factory)
            self._sensors[seat] = sensor
            self._leds[seat] = LED(pins.led_pin, pin_factory=led_factory)
            state = self._seats[seat]
            state.raw = state.stable = bool(sensor.is_active)
            state.raw_changed_at = now
            # Default-argument binding: each lambda keeps its own seat number.
            sensor.when_activated = lambda s=seat: self._on_sensor(s, True)
            sensor.when_deactivated = lambda s=seat: self._on_sensor(s, False)
        # DigitalInputDevice, not Button: Button's hold thread is not needed and costs a
        # thread polling every 100 ms.
        self._button = DigitalInputDevice(self._lockout_pin, pull_up=self._lockout_active_low,
                                          bounce_time=None, pin_factory=self._factory)
        self._button.when_activated = self._on_button
        self._button.when_deactivated = self._on_button_released

    def _release_pins(self) -> None:
        for device in [*self._sensors.values(), *self._leds.values(), self._button]:
            if device is not None:
                try:
                    device.close()
                except Exception as exc:  # closing must never mask the reason we are stopping
                    log.warning("closing GPIO device failed", device=self.name, error=str(exc))
        self._sensors.clear()
        self._leds.clear()
        self._button = None
        for factory in (self._led_factory, self._factory if self._own_factory else None):
            if factory is not None:
                try:
                    factory.close()
                except Exception as exc:
                    log.warning("closing pin factory failed", device=self.name, error=str(exc))
        self._factory = None
        self._led_factory = None

    # --- SeatPanel ------------------------------------------------------------

    def open_betting(self, seats_allowed: frozenset[int]) -> None:
        """Unlock: sensors at these seats may register a wager (LEDs show awaiting/accepted)."""
        unknown = set(seats_allowed) - set(self._seats)
        if unknown:
            raise SeatPanelConfigError(
                f"open_betting: seats {sorted(unknown)} are not configured ({sorted(self._seats)})")
        with self._mutex:
            self._allowed = frozenset(seats_allowed)
            self._open = True
            self._locked = None
            for seat, state in self._seats.items():
                state.late_changes = 0
                state.stable = state.raw
                if seat not in self._allowed:
                    state.led = LedState.OFF
                    continue
                if state.status is SeatStatus.OK and state.raw:
                    # A wager "placed" before betting opened is a stuck sensor or a leftover chip.
                    state.status = SeatStatus.PRESENT_AT_OPEN
                    self._fault(seat, "seat_sensor_present_at_open",
                                f"seat {seat}: the progressive sensor reads a wager as betting opens",
                                f"Clear seat {seat}'s progressive spot; if it is empty the sensor is "
                                "stuck: check its wiring (docs/wiring.md).")
                state.led = LedState.AWAITING if state.status is SeatStatus.OK else LedState.UNAVAILABLE
            self._counters["rounds_opened"] += 1
        self._write_leds()
        self._wake()

    def lock(self, cause: str) -> LockedOut:
        """Lock every seat now, from any thread; idempotent until the next open_betting()."""
        with self._mutex:
            result = self._lock_locked(cause)
        self._write_leds()
        self._wake()
        return result

    def set_led(self, seat: int, state: LedState) -> None:
        """Show ``state`` on the seat's LED (the controller sets WON / UNAVAILABLE / OFF)."""
        if seat not in self._seats:
            raise SeatPanelConfigError(f"set_led: seat {seat} is not configured ({sorted(self._seats)})")
        with self._mutex:
            self._seats[seat].led = state
        self._write_leds()
        self._wake()

    # --- queries --------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def locked_out(self) -> LockedOut | None:
        """The lock of the current round, or None while betting is open."""
        return self._locked

    def led(self, seat: int) -> LedState:
        return self._seats[seat].led

    def seat_status(self, seat: int) -> SeatStatus:
        return self._seats[seat].status

    def recognised(self) -> frozenset[int]:
        """Seats whose debounced sensor shows a wager now (what the LEDs show as ACCEPTED)."""
        with self._mutex:
            return frozenset(s for s in self._allowed
                             if self._seats[s].stable and self._seats[s].status is SeatStatus.OK)

    def health(self) -> DeviceHealth:
        return DeviceHealth(
            device=self.name, kind=self.kind, link=self._link, port=f"gpio:{self._factory_spec}",
            counters=dict(self._counters), last_error=self._last_error)

    async def self_test(self) -> SelfTestResult:
        """Lamp test (each LED on, read back, restored) and report sensors reading a wager while locked."""
        if self._link is not LinkState.UP:
            return SelfTestResult(self.name, False, f"GPIO not available: {self._last_error or 'stopped'}")
        problems: list[str] = []
        with self._led_mutex:
            for seat, led in sorted(self._leds.items()):
                before = bool(led.value)
                led.on()
                lit = bool(led.value)
                led.off()
                dark = not bool(led.value)
                led.value = before
                self._seats[seat].led_level = None  # rewritten from the LED state below
                if not (lit and dark):
                    problems.append(f"seat {seat} LED does not follow its pin")
        with self._mutex:
            if not self._open:
                covered = sorted(s for s, st in self._seats.items() if st.raw)
                if covered:
                    problems.append(f"sensors read a wager while betting is closed at seats {covered}"
                                    " (clear the spots; if empty, the sensors are stuck)")
            for seat, st in sorted(self._seats.items()):
                if st.status is not SeatStatus.OK:
                    problems.append(f"seat {seat} sensor {st.status.value}")
        self._write_leds()
        return SelfTestResult(self.name, not problems,
                              "; ".join(problems) or f"{len(self._seats)} seats, LEDs and sensors ok")

    # --- GPIO callbacks (gpiozero's thread) -----------------------------------

    def _on_button(self) -> None:
        now = self._clock()
        with self._mutex:
            previous, self._last_button_edge = self._last_button_edge, now
            # No debounce that could drop a press: a missed lock-out would let wagers in after
            # "no more bets" (631c.2(d)(2)), while a bounce can at worst lock a round that was
            # opened within the debounce time of the button's release: safe, and a repeated
            # lock is idempotent. Close edges are only counted, for the technician.
            if previous is not None and now - previous < self._debounce_s:
                self._counters["button_bounces"] += 1
            self._counters["button_presses"] += 1
            self._lock_locked("button")
        self._write_leds()
        self._wake()

    def _on_button_released(self) -> None:
        with self._mutex:
            self._last_button_edge = self._clock()

    def _on_sensor(self, seat: int, present: bool) -> None:
        with self._mutex:
            now = self._clock()
            state = self._seats[seat]
            state.raw = present
            state.raw_changed_at = now
            state.edges.append(now)
            self._counters["sensor_edges"] += 1
            if not self._open:
                # 631c.2(d)(2), 627b.6(d)(2): after "no more bets" a change is never a wager.
                self._counters["late_sensor_changes"] += 1
                if state.late_changes < LATE_CHANGE_CAP:
                    state.late_changes += 1
                    self._send(LateSensorChange(seat, present, now))
                else:
                    self._counters["late_sensor_changes_suppressed"] += 1
                return
            if state.status is not SeatStatus.CHATTER and self._chattering(state, now):
                state.status = SeatStatus.CHATTER
                state.led = LedState.UNAVAILABLE if seat in self._allowed else state.led
                self._counters["chatter_faults"] += 1
                self._fault(seat, "seat_sensor_chatter",
                            f"seat {seat}: {CHATTER_EDGES} sensor edges within {CHATTER_WINDOW_S} s",
                            f"Seat {seat}'s progressive wagers are not accepted until its sensor "
                            "is quiet; check the sensor and its cable (docs/wiring.md).")
        if state.led is LedState.UNAVAILABLE:
            self._write_leds()
        self._wake()  # the change settles after the debounce time

    # --- internals --------------------------------------------------------------

    def _lock_locked(self, cause: str) -> LockedOut:
        """The lock itself; caller holds _mutex."""
        if self._locked is not None:
            return self._locked
        now = self._clock()
        if not self._open:
            # Betting was never opened this round: nothing to lock, nothing recognised.
            self._locked = LockedOut(cause, now, frozenset())
            return self._locked
        wagers = frozenset(
            seat for seat in self._allowed
            if self._seats[seat].raw and self._seats[seat].status is SeatStatus.OK)
        self._open = False
        self._locked = LockedOut(cause, now, wagers)
        for seat, state in self._seats.items():
            if seat in self._allowed and state.status is SeatStatus.OK:
                state.led = LedState.LOCKED if seat in wagers else LedState.OFF
        self._counters["lockouts"] += 1
        # Emitted under the mutex so no LateSensorChange can be queued ahead of it.
        self._send(self._locked)
        return self._locked

    @staticmethod
    def _chattering(state: _Seat, now: float) -> bool:
        recent = sum(1 for t in state.edges if now - t <= CHATTER_WINDOW_S)
        return recent >= CHATTER_EDGES

    def tick(self) -> None:
        """Settle debounced sensor changes, readmit recovered sensors and step LED blinking.

        Runs on the event loop (a background task, or the test with a fake clock).
        """
        with self._mutex:
            now = self._clock()
            for seat, state in self._seats.items():
                settled = now - state.raw_changed_at >= self._debounce_s - _CLOCK_EPSILON_S
                if state.status is SeatStatus.CHATTER:
                    if state.edges and now - state.edges[-1] >= CHATTER_QUIET_S - _CLOCK_EPSILON_S:
                        self._readmit(seat, state, "seat_sensor_chatter")
                    continue
                if state.status is SeatStatus.PRESENT_AT_OPEN:
                    if settled and not state.raw:
                        self._readmit(seat, state, "seat_sensor_present_at_open")
                    continue
                if self._open and seat in self._allowed and settled and state.raw != state.stable:
                    state.stable = state.raw
                    state.led = LedState.ACCEPTED if state.raw else LedState.AWAITING
                    self._send(SeatSensorChanged(seat, state.raw))
        self._write_leds(now)

    def _readmit(self, seat: int, state: _Seat, code: str) -> None:
        """A faulted sensor is quiet (chatter) or empty (present-at-open) again."""
        self._send(DeviceFaultCleared(self.name, f"{code}:{seat}"))
        if state.raw:
            # Quiet but reading a wager: it must be seen empty once before it counts again.
            state.status = SeatStatus.PRESENT_AT_OPEN
            self._fault(seat, "seat_sensor_present_at_open",
                        f"seat {seat}: the sensor settled reading a wager",
                        f"Lift the chip off seat {seat}'s progressive spot and place it again.")
            return
        state.status = SeatStatus.OK
        state.stable = False
        if seat in self._allowed:
            state.led = LedState.AWAITING if self._open else LedState.OFF

    def _fault(self, seat: int, code: str, detail: str, action: str) -> None:
        # The code carries the seat so the controller can clear exactly this fault.
        self._send(DeviceFault(self.name, f"{code}:{seat}", detail, action))

    def _send(self, event: Any) -> None:
        if self._emit is not None:
            self._emit(event)

    def _write_leds(self, now: float | None = None) -> None:
        t = self._clock() if now is None else now
        with self._led_mutex:
            for seat, led in self._leds.items():
                state = self._seats[seat]
                pattern = LED_PATTERNS[state.led]
                if isinstance(pattern, bool):
                    level = pattern
                else:
                    on_s, off_s = pattern
                    level = (t % (on_s + off_s)) < on_s
                if level is not state.led_level:
                    state.led_level = level
                    led.value = level

    # --- waking the loop only when something falls due ------------------------------

    def next_due(self) -> float | None:
        """The clock time at which ``tick()`` next has something to do, or None (only an
        edge or a command can change anything then)."""
        with self._mutex:
            now = self._clock()
            due: list[float] = []
            for seat, state in self._seats.items():
                if state.status is SeatStatus.CHATTER:
                    if state.edges:
                        due.append(state.edges[-1] + CHATTER_QUIET_S)
                elif state.status is SeatStatus.PRESENT_AT_OPEN:
                    if not state.raw:
                        due.append(state.raw_changed_at + self._debounce_s)
                elif self._open and seat in self._allowed and state.raw != state.stable:
                    due.append(state.raw_changed_at + self._debounce_s)
                if seat in self._leds:
                    pattern = LED_PATTERNS[state.led]
                    if not isinstance(pattern, bool):
                        on_s, off_s = pattern
                        phase = now % (on_s + off_s)
                        due.append(now + (on_s - phase if phase < on_s else on_s + off_s - phase))
        return min(due) if due else None

    def _wake(self) -> None:
        """Re-plan the next timer; safe from gpiozero's thread and from the loop."""
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._plan()
        else:
            try:
                loop.call_soon_threadsafe(self._plan)
            except RuntimeError:  # the loop closed while the pins were being released
                pass

    def _plan(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._loop is None:
            return
        due = self.next_due()
        if due is not None:
            delay = max(0.0, due - self._clock()) + WAKE_LATE_S
            self._timer = self._loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        try:
            self.tick()
        except Exception as exc:  # a bad tick must not stop debouncing for good
            self._last_error = f"tick: {exc}"
            log.exception("seat panel tick failed", device=self.name)
        self._plan()
