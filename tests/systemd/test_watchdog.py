"""controller.watchdog: pings only while healthy, then stops and says why.

Most tests drive the pinger with a fake clock (its sleep advances the clock
and yields once), so they are exact and take no wall time; one test runs on
the real loop with a 60 ms WatchdogSec. Datagrams go through a real socket.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

from controller.sdnotify import SdNotifier
from controller.watchdog import Health, PingerState, WatchdogPinger
from tests.systemd.conftest import NotifySocket

STOPPED = b"STATUS=unhealthy, watchdog pings stopped: "


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.oversleep = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds + self.oversleep
        await asyncio.sleep(0)


class Verdicts:
    """A health check that returns the given verdicts in turn, then fails."""

    def __init__(self, *verdicts: Health | bool) -> None:
        self._verdicts: Iterator[Health | bool] = iter(verdicts)
        self.calls = 0

    def __call__(self) -> Health | bool:
        self.calls += 1
        return next(self._verdicts, Health(False, "test script exhausted"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def pinger_for(sock: NotifySocket, health: Any, clock: FakeClock,
               usec: int = 3_000_000, **kwargs: Any) -> WatchdogPinger:
    notifier = SdNotifier({**sock.env, "WATCHDOG_USEC": str(usec)})
    return WatchdogPinger(notifier, health, clock=clock, sleep=clock.sleep, **kwargs)


async def test_pings_while_healthy_then_stops_and_says_why(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    health = Verdicts(True, True, True, Health(False, "shoe reader task wedged"))
    pinger = pinger_for(notify_socket, health, clock)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain() == [
        b"WATCHDOG=1", b"WATCHDOG=1", b"WATCHDOG=1",
        STOPPED + b"shoe reader task wedged",
    ]
    assert pinger.state is PingerState.UNHEALTHY
    assert pinger.stop_reason == "shoe reader task wedged"
    assert pinger.pings == 3
    # WatchdogSec 3 s -> a ping every second
    assert clock.sleeps == [1.0, 1.0, 1.0]


async def test_status_line_goes_with_the_ping_and_only_when_it_changes(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    health = Verdicts(Health(True, "shoe 1, round 1: betting"),
                      Health(True, "shoe 1, round 1: betting"),
                      Health(True, "shoe 1, round 1: dealing"),
                      Health(True),
                      False)
    pinger = pinger_for(notify_socket, health, clock)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain() == [
        b"WATCHDOG=1\nSTATUS=shoe 1, round 1: betting",
        b"WATCHDOG=1",
        b"WATCHDOG=1\nSTATUS=shoe 1, round 1: dealing",
        b"WATCHDOG=1",
        STOPPED + b"health check failed",
    ]


async def test_unhealthy_from_the_start_never_pings(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    pinger = pinger_for(notify_socket, lambda: False, clock)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain() == [STOPPED + b"health check failed"]
    assert pinger.pings == 0


async def test_does_not_resume_when_health_comes_back(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    health = Verdicts(True, False, True, True)
    pinger = pinger_for(notify_socket, health, clock)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert health.calls == 2
    assert notify_socket.drain() == [b"WATCHDOG=1", STOPPED + b"health check failed"]


async def test_health_check_that_raises_is_a_failed_check(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    def broken() -> bool:
        raise RuntimeError("store connection closed")

    pinger = pinger_for(notify_socket, broken, clock)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain() == [
        STOPPED + b"health check raised RuntimeError: store connection closed"]


async def test_health_check_returning_garbage_is_a_failed_check(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    pinger = pinger_for(notify_socket, lambda: "yes", clock)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain() == [STOPPED + b"health check returned str, not Health/bool"]


async def test_async_health_check(notify_socket: NotifySocket, clock: FakeClock) -> None:
    answers = iter([Health(True, "ok"), True, Health(False, "table state machine stuck")])

    async def ask_the_table() -> Health | bool:
        await asyncio.sleep(0)
        return next(answers)

    pinger = pinger_for(notify_socket, ask_the_table, clock)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain() == [
        b"WATCHDOG=1\nSTATUS=ok", b"WATCHDOG=1", STOPPED + b"table state machine stuck"]


async def test_async_health_check_that_hangs_fails_after_half_a_period(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    hang = asyncio.Event()

    async def never_answers() -> bool:
        await hang.wait()
        return True

    # WatchdogSec 60 ms: ping period 20 ms, the check gets 10 ms (real time).
    pinger = pinger_for(notify_socket, never_answers, clock, usec=60_000)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain() == [STOPPED + b"health check did not answer within 0.010 s"]


async def test_a_stalled_event_loop_stops_the_pings(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    pinger = pinger_for(notify_socket, lambda: True, clock)
    clock.oversleep = 1.5  # every wake-up 1.5 s late; limit = one period (1 s)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain() == [
        b"WATCHDOG=1", STOPPED + b"event loop stalled 1.500 s (limit 1.000 s)"]
    assert pinger.last_loop_lag == pytest.approx(1.5)


async def test_loop_lag_within_the_limit_is_tolerated(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    health = Verdicts(True, True, True)
    pinger = pinger_for(notify_socket, health, clock, max_loop_lag=2.0)
    clock.oversleep = 1.5
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert notify_socket.drain()[:3] == [b"WATCHDOG=1"] * 3


async def test_explicit_interval_and_ping_rate(notify_socket: NotifySocket,
                                               clock: FakeClock) -> None:
    pinger = pinger_for(notify_socket, Verdicts(True, True), clock,
                        interval=10.0, pings_per_interval=2)
    assert pinger.period == 5.0
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert clock.sleeps == [5.0, 5.0]


@pytest.mark.parametrize("env", [
    {},                                         # not under systemd at all
    {"NOTIFY_SOCKET": "@unused"},              # Type=notify without WatchdogSec=
])
async def test_disabled_without_a_watchdog(env: dict[str, str], clock: FakeClock) -> None:
    health = Verdicts()
    pinger = WatchdogPinger(SdNotifier(env), health, clock=clock, sleep=clock.sleep)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert pinger.state is PingerState.DISABLED
    assert pinger.period is None
    assert health.calls == 0


async def test_watchdog_meant_for_another_pid_is_disabled(
        notify_socket: NotifySocket, clock: FakeClock) -> None:
    env = {**notify_socket.env, "WATCHDOG_USEC": "3000000", "WATCHDOG_PID": str(os.getpid() + 1)}
    pinger = WatchdogPinger(SdNotifier(env), lambda: True, clock=clock, sleep=clock.sleep)
    await asyncio.wait_for(pinger.run(), timeout=2)
    assert pinger.state is PingerState.DISABLED
    assert notify_socket.drain() == []


@pytest.mark.parametrize("kwargs", [{"pings_per_interval": 1}, {"interval": 0.0}])
def test_bad_parameters_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        WatchdogPinger(SdNotifier({}), lambda: True, **kwargs)  # type: ignore[arg-type]


async def test_cancelling_the_task_is_an_orderly_stop(notify_socket: NotifySocket) -> None:
    notifier = SdNotifier({**notify_socket.env, "WATCHDOG_USEC": "3000000"})
    pinger = WatchdogPinger(notifier, lambda: True)
    task = pinger.start()
    assert await notify_socket.recv() == b"WATCHDOG=1"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=2)
    assert pinger.state is PingerState.CANCELLED
    assert notify_socket.drain() == []


async def test_real_loop_short_interval(notify_socket: NotifySocket) -> None:
    """WatchdogSec=60ms on the real clock: pings arrive while healthy, stop when not."""
    healthy = True
    notifier = SdNotifier({**notify_socket.env, "WATCHDOG_USEC": "60000"})
    pinger = WatchdogPinger(notifier, lambda: Health(healthy, "" if healthy else "test says no"),
                            max_loop_lag=1.0)  # a busy CI box must not trip the lag limit
    task = pinger.start()
    for _ in range(3):
        assert await notify_socket.recv() == b"WATCHDOG=1"
    healthy = False
    await asyncio.wait_for(task, timeout=2)  # returns by itself: no more pings
    datagrams = notify_socket.drain()
    assert datagrams[-1] == STOPPED + b"test says no"
    assert set(datagrams[:-1]) <= {b"WATCHDOG=1"}
    assert pinger.state is PingerState.UNHEALTHY
