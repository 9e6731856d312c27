"""Randomised race: 10,000 lock-outs against sensor changes from another thread.

631c.2(d)(2), 627b.6(d)(2), 627b.3(a)(2): no wager may be recognised once the
lock-out button is pressed. Each sensor edge and the lock take the same lock,
so every edge is either before the lock (and ``LockedOut.wagers`` reflects it)
or after (and it is a ``LateSensorChange``). The check per seat: the late
changes are exactly the tail of the changes the other thread made, and the
seat is a wager exactly when the last change before that tail placed a chip.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator

import pytest

from drivers.protocols import LateSensorChange, LockedOut
from drivers.seats import GpioSeatPanel

from .conftest import LOCKOUT_PIN, TEN_SEATS, FakeClock

ROUNDS = 10_000
SEED = 20261121

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


@pytest.fixture
def fast_thread_switching() -> Iterator[None]:
    """Make the interpreter switch threads every few microseconds, so the races really happen."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(5e-6)
    yield
    sys.setswitchinterval(previous)


@pytest.mark.timeout(120)
async def test_631c_2_d_2_10000_lockouts_race_sensor_changes(
        clock: FakeClock, fast_thread_switching: None) -> None:
    # A bare list as emit (list.append is atomic): the awaitable Recorder's loop wake-ups
    # would cost more than the panel itself.
    emitted: list[object] = []
    panel = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory="mock", clock=clock,
                          tick_s=None)
    await panel.start(emitted.append)
    rng = random.Random(SEED)
    factory = panel.pin_factory
    sensor = {seat: factory.pin(pins.sensor_pin) for seat, pins in TEN_SEATS.items()}
    button = factory.pin(LOCKOUT_PIN)
    everyone = frozenset(TEN_SEATS)

    plan: list[tuple[int, bool, int]] = []  # seat, chip present, spin before
    start = threading.Barrier(2, timeout=10)
    done = threading.Barrier(2, timeout=10)
    stop = threading.Event()
    errors: list[BaseException] = []

    def players() -> None:
        # The other thread: places and lifts chips (active-low sensors) as the round's plan says.
        try:
            while True:
                start.wait()
                if stop.is_set():
                    return
                for seat, present, pause in plan:
                    for _ in range(pause):
                        pass
                    if present:
                        sensor[seat].drive_low()
                    else:
                        sensor[seat].drive_high()
                done.wait()
        except BaseException as exc:  # surfaced by the main thread
            errors.append(exc)

    worker = threading.Thread(target=players, name="players", daemon=True)
    # Switch threads every microsecond instead of every 5 ms, so the player thread's changes
    # really interleave with the lock instead of running as one GIL slice.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    worker.start()
    interleaved = all_before = all_after = 0
    try:
        for _ in range(ROUNDS):
            for pin in sensor.values():
                if not pin.state:
                    pin.drive_high()  # lift last round's chips (late changes, ignored)
            clock.advance(10.0)  # fresh round: no chatter history, no button bounce window
            emitted.clear()
            panel.open_betting(everyone)

            per_seat: dict[int, list[bool]] = {}
            slots: list[int] = []
            for seat in rng.sample(sorted(everyone), rng.randint(1, 6)):
                changes = [i % 2 == 0 for i in range(rng.randint(1, 3))]  # place, lift, place
                per_seat[seat] = changes
                slots.extend([seat] * len(changes))
            rng.shuffle(slots)  # seats interleave; each seat's own changes stay in order
            order = {seat: iter(changes) for seat, changes in per_seat.items()}
            plan[:] = [(seat, next(order[seat]), rng.randint(0, 20)) for seat in slots]
            spin = rng.randint(0, 4000)  # spans a plan of up to 18 changes at ~20 µs each

            # 627b.3(a)(2): the first card out of the shoe locks too, from the controller's thread.
            first_card = rng.random() < 0.3
            start.wait()
            for _ in range(spin):
                pass
            if first_card:
                panel.lock("first-card")
            else:
                button.drive_low()
                button.drive_high()
            done.wait()

            locks = [e for e in emitted if isinstance(e, LockedOut)]
            assert len(locks) == 1, locks
            assert locks[0].cause == ("first-card" if first_card else "button")
            wagers = locks[0].wagers
            late: dict[int, list[bool]] = {}
            for event in emitted:
                if not isinstance(event, LateSensorChange):
                    continue
                late.setdefault(event.seat, []).append(event.present)
            pre_lock_total = 0
            for seat in everyone:
                changes = per_seat.get(seat, [])
                tail = late.get(seat, [])
                before = len(changes) - len(tail)
                assert before >= 0 and changes[before:] == tail, (seat, changes, tail)
                expected = changes[before - 1] if before > 0 else False
                assert (seat in wagers) == expected, (seat, changes, tail, wagers)
                pre_lock_total += before
            total = sum(len(c) for c in per_seat.values())
            if pre_lock_total == total:
                all_before += 1
            elif pre_lock_total == 0:
                all_after += 1
            else:
                interleaved += 1
    finally:
        stop.set()
        try:
            start.wait()
        except threading.BrokenBarrierError:
            pass
        worker.join(timeout=5)
        sys.setswitchinterval(switch_interval)
        await panel.stop()
    assert not errors, errors
    assert all_before + all_after + interleaved == ROUNDS
    # The test is only worth something if the lock really landed inside sequences of changes.
    print("race outcome:", all_before, all_after, interleaved)
    assert interleaved >= 500, (all_before, all_after, interleaved)
