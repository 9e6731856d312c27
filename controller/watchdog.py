"""Health-gated systemd watchdog pinger.

systemd restarts the daemon when WATCHDOG=1 pings stop for ``WatchdogSec``
(systemd/tabled.service). A ping that a timer sends regardless of the
daemon's state only proves the event loop is not frozen solid; this pinger
sends one only while the daemon's health check passes, so a daemon that is
alive but wedged (a device task stuck, the table state machine not
answering) is restarted too.

The health check says "this process can still do its job". It must NOT fail
because a device is disconnected: that is a table fault the daemon reports
and recovers from by itself (devices retry with capped backoff); restarting
the process would not bring the shoe back.

Once the health check fails (or raises, or, if it is a coroutine, does not
answer within one ping period, or the event loop itself stalled for longer
than ``max_loop_lag``) the pinger sets a STATUS= line that says why, stops
pinging for good and returns. It does not resume if health comes back: a
daemon that lost its footing is restarted from a clean state.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from controller.sdnotify import SdNotifier

__all__ = ["Health", "HealthCheck", "PingerState", "WatchdogPinger", "DEFAULT_PINGS_PER_INTERVAL"]

logger = logging.getLogger(__name__)

# sd_watchdog_enabled(3) recommends pinging at half the interval; a third
# leaves room for one late or lost ping before systemd gives up.
DEFAULT_PINGS_PER_INTERVAL = 3


@dataclass(frozen=True, slots=True)
class Health:
    """One health verdict: `ok`, and a one-line `summary` for STATUS= (kept when empty)."""

    ok: bool
    summary: str = ""


#: A health check: plain or async callable returning a `Health` or a bool.
HealthCheck = Callable[[], Health | bool | Awaitable[Health | bool]]


class PingerState(enum.Enum):
    IDLE = "idle"            # not started
    DISABLED = "disabled"    # no watchdog requested (not under systemd, or no WatchdogSec=)
    PINGING = "pinging"
    UNHEALTHY = "unhealthy"  # stopped pinging on purpose; systemd will restart us
    CANCELLED = "cancelled"  # the daemon cancelled the task (orderly shutdown)


class WatchdogPinger:
    """Pings systemd's watchdog every ``interval / pings_per_interval`` while healthy.

    `interval` defaults to the notifier's `watchdog_interval()` (WATCHDOG_USEC).
    `clock` and `sleep` exist for fake-clock tests.
    """

    def __init__(
        self,
        notifier: SdNotifier,
        health: HealthCheck,
        *,
        interval: float | None = None,
        pings_per_interval: int = DEFAULT_PINGS_PER_INTERVAL,
        max_loop_lag: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if pings_per_interval < 2:
            raise ValueError(f"pings_per_interval must be >= 2, got {pings_per_interval}")
        if interval is not None and interval <= 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval}")
        self._notifier = notifier
        self._health = health
        self._interval = interval
        self._pings_per_interval = pings_per_interval
        self._max_loop_lag = max_loop_lag
        self._clock = clock
        self._sleep = sleep
        self._last_summary: str | None = None
        self.state = PingerState.IDLE
        #: WATCHDOG=1 datagrams sent
        self.pings = 0
        #: why pinging stopped (state UNHEALTHY), else None
        self.stop_reason: str | None = None
        #: how late the pinger's last wake-up was, in seconds: event-loop latency
        self.last_loop_lag = 0.0

    @property
    def period(self) -> float | None:
        """Seconds between pings, or None when no watchdog is requested."""
        interval = self._interval
        if interval is None:
            interval = self._notifier.watchdog_interval()
        return None if interval is None else interval / self._pings_per_interval

    def start(self) -> asyncio.Task[None]:
        """Run the pinger as a task of the running loop."""
        return asyncio.get_running_loop().create_task(self.run(), name="systemd-watchdog")

    async def run(self) -> None:
        """Ping until the health check fails (then return) or the task is cancelled."""
        period = self.period
        if period is None or not self._notifier.enabled:
            self.state = PingerState.DISABLED
            logger.info("watchdog: not requested by the service manager; pinger idle")
            return
        max_lag = self._max_loop_lag if self._max_loop_lag is not None else period
        self.state = PingerState.PINGING
        logger.info("watchdog: pinging every %.3f s while healthy", period)
        try:
            while True:
                # Half a period for an async check keeps the worst gap between
                # pings (check + sleep + tolerated lag) under WatchdogSec.
                health = await self._check(period / 2)
                if not health.ok:
                    self._stop(health.summary or "health check failed")
                    return
                self._ping(health.summary)
                due = self._clock() + period
                await self._sleep(period)
                self.last_loop_lag = max(0.0, self._clock() - due)
                if self.last_loop_lag > max_lag:
                    self._stop(f"event loop stalled {self.last_loop_lag:.3f} s "
                               f"(limit {max_lag:.3f} s)")
                    return
        except asyncio.CancelledError:
            self.state = PingerState.CANCELLED
            raise

    async def _check(self, timeout: float) -> Health:
        try:
            verdict = self._health()
            if inspect.isawaitable(verdict):
                async with asyncio.timeout(timeout):  # not wait_for (3.11): drivers/timers.py
                    verdict = await verdict
        except asyncio.TimeoutError:
            return Health(False, f"health check did not answer within {timeout:.3f} s")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # any failure of the check is a failed check
            logger.exception("watchdog: health check raised")
            return Health(False, f"health check raised {type(exc).__name__}: {exc}")
        if isinstance(verdict, Health):
            return verdict
        if isinstance(verdict, bool):
            return Health(verdict)
        return Health(False, f"health check returned {type(verdict).__name__}, not Health/bool")

    def _ping(self, summary: str) -> None:
        if summary and summary != self._last_summary:
            # One datagram: the status line and the ping that vouches for it.
            self._notifier.watchdog(status=summary)
            self._last_summary = summary
        else:
            self._notifier.watchdog()
        self.pings += 1

    def _stop(self, reason: str) -> None:
        self.state = PingerState.UNHEALTHY
        self.stop_reason = reason
        logger.error("watchdog: stopping pings, systemd will restart the daemon: %s", reason)
        self._notifier.status(f"unhealthy, watchdog pings stopped: {reason}")

