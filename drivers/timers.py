"""Driver timers that die with their work: an explicit, synchronously cancellable deadline.

A watchdog written as a task around ``asyncio.wait_for`` can outlive the work it
watches on Python 3.11 (the Raspberry Pi OS Bookworm interpreter): when the
awaited event completes in the same loop iteration as the cancellation,
3.11's ``wait_for`` returns the result and swallows the ``CancelledError``
(fixed in 3.12), so the task goes on waiting and later fires on whatever job
is current then. That is how a stall timer from one shuffle faulted the next
one exactly one timeout after the first finished (issue 13).

``Deadline`` is not a task. It holds one ``loop.call_later`` handle; ``cancel()``
removes it before returning, so nothing of it can run afterwards, and each
arming carries the job it watches, so even a callback already taken off the
loop's queue in the same iteration cannot fire for a later job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

J = TypeVar("J")


class Cancellable(Protocol):
    def cancel(self) -> None: ...


Schedule = Callable[[float, Callable[[], None]], Cancellable]
"""``schedule(delay_s, callback)``: the loop's ``call_later`` (tests pass a fake clock's)."""


def loop_schedule(delay_s: float, callback: Callable[[], None]) -> Cancellable:
    """The running loop's ``call_later``: the default ``Schedule``."""
    return asyncio.get_running_loop().call_later(delay_s, callback)


class Deadline(Generic[J]):
    """Fires ``on_expiry(job)`` once, ``timeout_s`` after the last ``arm``/``extend``,
    unless ``cancel`` came first. One job at a time: arming again replaces the job."""

    def __init__(self, timeout_s: float, on_expiry: Callable[[J], None], *,
                 schedule: Schedule = loop_schedule) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout {timeout_s!r} s: must be more than 0")
        self.timeout_s = timeout_s
        self._on_expiry = on_expiry
        self._schedule = schedule
        self._job: J | None = None
        self._handle: Cancellable | None = None

    @property
    def job(self) -> J | None:
        """The job being watched, or None when disarmed."""
        return self._job

    def arm(self, job: J) -> None:
        """Start watching ``job``; any earlier job's deadline is dropped."""
        self.cancel()
        self._job = job
        self._restart()

    def extend(self) -> None:
        """The job showed life: its deadline starts again from now. No-op when disarmed."""
        if self._job is not None:
            self._restart()

    def cancel(self) -> None:
        """Stop watching; the callback will not run for the job that was watched."""
        handle, self._handle, self._job = self._handle, None, None
        if handle is not None:
            handle.cancel()

    def _restart(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        job = self._job
        self._handle = self._schedule(self.timeout_s, lambda: self._expire(job))

    def _expire(self, job: J | None) -> None:
        if job is None or job is not self._job:
            return  # a callback for a job no longer watched: it ended or was replaced
        self._handle, self._job = None, None
        self._on_expiry(job)
