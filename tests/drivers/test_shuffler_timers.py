"""The shuffler's stall timer dies with its shuffle (issue 13: the wedge at shoe ~34).

681a.9(c): a shuffle that makes no progress for the stall timeout did not complete
its cycle. The old timer was a task around ``asyncio.wait_for``; on Python 3.11 a
progress report and the shuffle's result arriving in the same loop iteration made
``wait_for`` swallow the cancellation, and the orphaned timer faulted the *next*
shuffle exactly one timeout after the first had finished. These tests force that
ordering and drive the timer from a fake clock: no sleeps, no timing luck.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from cards import BackColour
from drivers.protocols import DeviceFault, ShuffleComplete
from drivers.shuffler import UsbShuffler
from drivers.timers import Deadline
from firmware_bridge import messages as wire

CARDS = 8 * 52
STALL_S = 30.0


class FakeTimers:
    """A ``Schedule`` on a clock the test moves: callbacks run in due order on ``advance``."""

    def __init__(self) -> None:
        self.now = 0.0
        self._queue: list[tuple[float, int, _Handle]] = []
        self._seq = itertools.count()

    def __call__(self, delay_s: float, callback: Callable[[], None]) -> _Handle:
        handle = _Handle(callback)
        heapq.heappush(self._queue, (self.now + delay_s, next(self._seq), handle))
        return handle

    def advance(self, seconds: float) -> None:
        until = self.now + seconds
        while self._queue and self._queue[0][0] <= until:
            due, _, handle = heapq.heappop(self._queue)
            self.now = due
            if not handle.cancelled:
                handle.callback()
        self.now = until

    @property
    def pending(self) -> int:
        return sum(1 for _, _, h in self._queue if not h.cancelled)


class _Handle:
    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def offline_shuffler(**kwargs: Any) -> tuple[UsbShuffler, list[object]]:
    """The driver without a USB link: requests are accepted, messages are fed by the test."""
    shuffler = UsbShuffler("shuffler", 0x1209, 0x0001, **kwargs)
    emitted: list[object] = []
    shuffler._emit = emitted.append

    async def accepted(message: wire.Message, error: type) -> None:
        return None

    shuffler._send = accepted  # type: ignore[method-assign]
    return shuffler, emitted


def complete(back: BackColour) -> wire.ShuffleComplete:
    return wire.ShuffleComplete(int(back), CARDS, 0, 0, 0)


async def progress_then_result_in_one_iteration(shuffler: UsbShuffler, back: BackColour) -> None:
    # The two frames arrive in one USB read: the driver handles both without yielding.
    await shuffler._dispatch(wire.ShuffleProgress(CARDS, CARDS))
    await shuffler._dispatch(complete(back))


async def test_681a_9_c_no_timer_of_a_finished_shuffle_is_left_running() -> None:
    """Forced ordering on the real loop: what orphaned the 3.11 ``wait_for`` timer."""
    shuffler, emitted = offline_shuffler(stall_timeout_s=STALL_S)
    before = asyncio.all_tasks()
    await shuffler.shuffle(BackColour.RED, CARDS)
    for _ in range(5):  # the shuffle runs a while: whatever times it is waiting by now
        await asyncio.sleep(0)
    await progress_then_result_in_one_iteration(shuffler, BackColour.RED)
    for _ in range(5):  # let anything the driver scheduled run its course
        await asyncio.sleep(0)
    left = [t.get_name() for t in asyncio.all_tasks() - before if not t.done()]
    assert left == []
    assert shuffler.shuffling is None and shuffler._stall.job is None
    assert [type(e) for e in emitted] == [type(emitted[0]), ShuffleComplete]
    assert not any(isinstance(e, DeviceFault) for e in emitted)


async def test_681a_9_c_the_stale_stall_timer_never_faults_the_next_shuffle() -> None:
    """The wedge's exact timeline on a fake clock: shuffle 1 ends with progress and result
    together; shuffle 2 starts 29.976 s later; nothing may fire 30.000 s after shuffle 1."""
    timers = FakeTimers()
    shuffler, emitted = offline_shuffler(stall_timeout_s=STALL_S, schedule=timers)
    await shuffler.shuffle(BackColour.RED, CARDS)
    timers.advance(12.0)
    await progress_then_result_in_one_iteration(shuffler, BackColour.RED)
    assert timers.pending == 0

    timers.advance(29.976)
    await shuffler.shuffle(BackColour.BLUE, CARDS)
    started = timers.now
    timers.advance(0.024 + 0.5)  # past the instant the stale timer fired in the field
    assert shuffler.shuffling is BackColour.BLUE
    assert not any(isinstance(e, DeviceFault) for e in emitted)

    # Shuffle 2's own deadline is measured from its own start, and it does fire.
    timers.advance(started + STALL_S - 0.001 - timers.now)
    assert not any(isinstance(e, DeviceFault) for e in emitted)
    timers.advance(0.002)
    faults = [e for e in emitted if isinstance(e, DeviceFault)]
    assert [(f.code, f.detail) for f in faults] == [
        ("shuffler_cycle_incomplete", "no progress for 30 s while shuffling the BLUE batch")]
    assert shuffler.shuffling is None
    assert timers.pending == 0


async def test_681a_9_c_progress_restarts_the_stall_deadline() -> None:
    timers = FakeTimers()
    shuffler, emitted = offline_shuffler(stall_timeout_s=STALL_S, schedule=timers)
    await shuffler.shuffle(BackColour.RED, CARDS)
    for counted in (52, 104, 156):
        timers.advance(STALL_S - 1)
        await shuffler._dispatch(wire.ShuffleProgress(counted, CARDS))
    assert not any(isinstance(e, DeviceFault) for e in emitted)
    assert timers.pending == 1
    timers.advance(STALL_S)
    assert [e.code for e in emitted if isinstance(e, DeviceFault)] == ["shuffler_cycle_incomplete"]


@pytest.mark.parametrize("ending", ["jam", "link_down", "stop"])
async def test_681a_9_c_every_end_of_a_shuffle_cancels_its_timer(ending: str) -> None:
    timers = FakeTimers()
    shuffler, emitted = offline_shuffler(stall_timeout_s=STALL_S, schedule=timers)
    await shuffler.shuffle(BackColour.RED, CARDS)
    if ending == "jam":
        await shuffler._dispatch(wire.Fault(wire.FaultCode.SHUFFLER_JAM, "jammed at card 100"))
    elif ending == "link_down":
        await shuffler._on_down("LinkDownError: cable pulled")
    else:
        await shuffler.stop()
    assert timers.pending == 0 and shuffler.shuffling is None
    timers.advance(10 * STALL_S)
    stalls = [e for e in emitted if isinstance(e, DeviceFault) and "no progress" in e.detail]
    assert stalls == []


def test_deadline_refuses_a_timeout_that_is_not_positive() -> None:
    with pytest.raises(ValueError, match=r"timeout 0 s: must be more than 0"):
        Deadline(0, lambda job: None, schedule=FakeTimers())


def test_a_deadline_callback_already_due_does_not_fire_for_the_job_that_replaced_it() -> None:
    """Even a callback the loop had already taken off its queue drops a replaced job."""
    timers = FakeTimers()
    fired: list[str] = []
    deadline = Deadline[str](1.0, fired.append, schedule=timers)
    deadline.arm("first")
    stale = timers._queue[0][2].callback
    deadline.arm("second")
    stale()  # the first arming's callback runs late, after the second arming
    assert fired == []
    timers.advance(1.0)
    assert fired == ["second"]
