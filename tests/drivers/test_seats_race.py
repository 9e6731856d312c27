"""The lock-out against sensor changes from another thread, with every interleaving forced.

631c.2(d)(2), 627b.6(d)(2), 627b.3(a)(2): no wager may be recognised once the
lock-out button is pressed (or the first card leaves the shoe). Each sensor edge
and the lock take the panel's one mutex, so every edge is either before the lock
(``LockedOut.wagers`` reflects it) or after it (a ``LateSensorChange``).

The interleavings are not left to the scheduler (on a loaded machine it serialised
whole rounds, and the old test failed for lack of races): the players' thread stops
at a barrier at a lock position drawn from the seed, so the test knows, as an
outside ground truth, exactly which changes came before the lock, and asserts the
wagers and the late changes from it. Two more tests park one side *inside* the
panel's critical section while the other arrives, the instants a scheduler could
produce only by luck.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest

from drivers.protocols import LateSensorChange, LockedOut
from drivers.seats import GpioSeatPanel

from .conftest import LOCKOUT_PIN, TEN_SEATS, FakeClock

ROUNDS = 10_000
SEED = 20261121
BARRIER_S = 30  # a generous bound for a loaded machine: a stuck thread fails, it never flakes

pytestmark = pytest.mark.usefixtures("no_leaked_threads")

Change = tuple[int, bool]  # seat, chip present afterwards


def round_plan(rng: random.Random, seats: list[int]) -> list[Change]:
    """1-6 seats, each placing, lifting and placing again (1-3 changes), interleaved."""
    per_seat: dict[int, list[bool]] = {}
    slots: list[int] = []
    for seat in rng.sample(seats, rng.randint(1, 6)):
        per_seat[seat] = [i % 2 == 0 for i in range(rng.randint(1, 3))]
        slots.extend([seat] * len(per_seat[seat]))
    rng.shuffle(slots)  # seats interleave; each seat's own changes stay in order
    order = {seat: iter(changes) for seat, changes in per_seat.items()}
    return [(seat, next(order[seat])) for seat in slots]


def expected_outcome(plan: list[Change], lock_at: int) -> tuple[frozenset[int], dict[int, list[bool]]]:
    """The ground truth: wagers are the seats whose last change before the lock placed a
    chip; every change after the lock is late, in order."""
    present: dict[int, bool] = {}
    for seat, chip in plan[:lock_at]:
        present[seat] = chip
    late: dict[int, list[bool]] = {}
    for seat, chip in plan[lock_at:]:
        late.setdefault(seat, []).append(chip)
    return frozenset(s for s, chip in present.items() if chip), late


def observed(emitted: list[object]) -> tuple[list[LockedOut], dict[int, list[bool]]]:
    locks = [e for e in emitted if isinstance(e, LockedOut)]
    late: dict[int, list[bool]] = {}
    for event in emitted:
        if isinstance(event, LateSensorChange):
            late.setdefault(event.seat, []).append(event.present)
    return locks, late


class Players(threading.Thread):
    """The other thread: runs the changes before the lock, waits while the dealer locks,
    then runs the rest. Barriers order it against the main thread, never sleeps."""

    def __init__(self, apply: Callable[[Change], None]) -> None:
        super().__init__(name="players", daemon=True)
        self.apply = apply
        self.plan: list[Change] = []
        self.lock_at = 0
        self.go = threading.Barrier(2, timeout=BARRIER_S)
        self.at_lock = threading.Barrier(2, timeout=BARRIER_S)
        self.locked = threading.Barrier(2, timeout=BARRIER_S)
        self.done = threading.Barrier(2, timeout=BARRIER_S)
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            while True:
                self.go.wait()
                if self.stop.is_set():
                    return
                for change in self.plan[:self.lock_at]:
                    self.apply(change)
                self.at_lock.wait()
                self.locked.wait()
                for change in self.plan[self.lock_at:]:
                    self.apply(change)
                self.done.wait()
        except BaseException as exc:  # surfaced by the main thread
            self.errors.append(exc)
            for barrier in (self.go, self.at_lock, self.locked, self.done):
                barrier.abort()


@pytest.mark.timeout(300)
async def test_631c_2_d_2_10000_lockouts_at_forced_points_among_sensor_changes(
        clock: FakeClock) -> None:
    # A bare list as emit (list.append is atomic): the awaitable Recorder's loop wake-ups
    # would cost more than the panel itself.
    emitted: list[object] = []
    panel = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory="mock", clock=clock,
                          background=False)
    await panel.start(emitted.append)
    rng = random.Random(SEED)
    factory = panel.pin_factory
    sensor = {seat: factory.pin(pins.sensor_pin) for seat, pins in TEN_SEATS.items()}
    button = factory.pin(LOCKOUT_PIN)
    everyone = frozenset(TEN_SEATS)

    def apply(change: Change) -> None:
        seat, chip = change  # active-low sensors: a chip pulls the line low
        sensor[seat].drive_low() if chip else sensor[seat].drive_high()

    players = Players(apply)
    players.start()
    interleaved = all_before = all_after = 0
    try:
        for _ in range(ROUNDS):
            for pin in sensor.values():
                if not pin.state:
                    pin.drive_high()  # lift last round's chips (late changes, ignored)
            clock.advance(10.0)  # fresh round: no chatter history, no button bounce window
            emitted.clear()
            panel.open_betting(everyone)
            plan = round_plan(rng, sorted(everyone))
            lock_at = rng.randint(0, len(plan))
            first_card = rng.random() < 0.3  # 627b.3(a)(2): the shoe's first card locks too
            players.plan, players.lock_at = plan, lock_at

            players.go.wait()
            players.at_lock.wait()  # the players' changes before the lock are all applied
            if first_card:
                panel.lock("first-card")
            else:
                button.drive_low()
                button.drive_high()
            players.locked.wait()
            players.done.wait()

            wagers, late_expected = expected_outcome(plan, lock_at)
            locks, late = observed(emitted)
            assert [(lock.cause, lock.wagers) for lock in locks] == [
                ("first-card" if first_card else "button", wagers)], (plan, lock_at)
            assert late == late_expected, (plan, lock_at)
            if lock_at == len(plan):
                all_before += 1
            elif lock_at == 0:
                all_after += 1
            else:
                interleaved += 1
    finally:
        players.stop.set()
        try:
            players.go.wait()
        except threading.BrokenBarrierError:
            pass
        players.join(timeout=BARRIER_S)
        await panel.stop()
    assert not players.errors, players.errors
    print("lock positions: all before", all_before, "all after", all_after,
          "interleaved", interleaved)
    # Fixed by the seed, not by the scheduler (1641 / 1674 / 6685 for SEED): the lock
    # landed inside a round's changes in most rounds, and at both ends in many.
    assert all_before + all_after + interleaved == ROUNDS
    assert interleaved >= ROUNDS // 2 and min(all_before, all_after) >= ROUNDS // 10


class ParkingClock(FakeClock):
    """A fake clock that can hold one thread inside the panel's critical section.

    The panel reads its clock under its mutex both for a sensor edge and for the lock,
    so parking the reader there holds the mutex while the other side arrives."""

    def __init__(self, panel_mutex: Callable[[], threading.Lock]) -> None:
        super().__init__()
        self._mutex = panel_mutex
        self.park_thread: threading.Thread | None = None
        self.parked = threading.Event()
        self.release = threading.Event()

    def __call__(self) -> float:
        if (threading.current_thread() is self.park_thread and self._mutex().locked()
                and not self.parked.is_set()):
            self.parked.set()
            assert self.release.wait(BARRIER_S), "never released"
        return self.now


async def parked_panel(emitted: list[object]) -> tuple[GpioSeatPanel, ParkingClock]:
    holder: list[GpioSeatPanel] = []
    clock = ParkingClock(lambda: holder[0]._mutex)
    panel = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory="mock", clock=clock,
                          background=False)
    holder.append(panel)
    await panel.start(emitted.append)
    panel.open_betting(frozenset(TEN_SEATS))
    return panel, clock


@pytest.mark.timeout(120)
@pytest.mark.parametrize("inside, wagers, late", [
    # The edge holds the mutex when the lock is pressed: the chip counts.
    ("chip", frozenset({3}), {}),
    # The lock holds the mutex when the chip lands: the chip is late, never a wager.
    ("lock", frozenset(), {3: [True]}),
])
async def test_631c_2_d_2_whoever_is_inside_the_critical_section_comes_first(
        inside: str, wagers: frozenset[int], late: dict[int, list[bool]]) -> None:
    emitted: list[object] = []
    panel, clock = await parked_panel(emitted)
    chip = panel.pin_factory.pin(TEN_SEATS[3].sensor_pin)
    placer = threading.Thread(target=chip.drive_low, name="chip")
    locker = threading.Thread(target=panel.lock, args=("first-card",), name="lock")
    first, second = (placer, locker) if inside == "chip" else (locker, placer)
    clock.park_thread = first
    try:
        first.start()
        assert clock.parked.wait(BARRIER_S)  # `first` holds the panel's mutex, parked
        second.start()  # arrives while `first` is inside
    finally:
        clock.release.set()
        for thread in (first, second):
            if thread.is_alive() or thread.ident is not None:
                thread.join(BARRIER_S)
        await panel.stop()
    locks, late_seen = observed(emitted)
    assert [(lock.cause, lock.wagers) for lock in locks] == [("first-card", wagers)]
    assert late_seen == late
