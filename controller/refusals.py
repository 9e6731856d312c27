"""Repeated refusals, counted one by one and written to the log at a bounded rate.

Every refusal of the control socket (a command a role does not allow, a PIN check
refused or delayed) is an entry in the event log, and each such entry is a flushed
write on the storage the money path uses. A client looping on a refusal must not
make the daemon write on its behalf faster than a set rate, so for the kinds in
`AGGREGATED_KINDS` each caller has a window of `WINDOW_S` seconds per command:

- a refusal when the caller had none of that kind in the window before is written
  at once, with `count: 1`;
- the ones after it are counted, and when the window ends one entry is written for
  them all: the last one's record with `count` (how many) and `window_s`;
- a window that ends with nothing counted closes, and the next refusal is written
  at once again.

So each caller costs at most one entry per kind and command per window (the commands are
a fixed set; what else a refusal says, a supervisor's name, is not a key), and the `count` of the
entries of a kind add up to every refusal of that kind. `totals` counts them too,
from the daemon's start (its metrics). Wrong PINs (`pin_failed`) and lockouts are
not aggregated: each is bounded by the PIN guard's own delays and lockouts, and
`PinGuard.resume` replays them one by one.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.events.codec import EventRecord

Record = Callable[[EventRecord], None]  # into the event log (controller/events)

WINDOW_S = 10.0
AGGREGATED_KINDS = frozenset({"command_refused", "pin_refused", "pin_delay"})
MAX_WINDOWS = 1024  # (caller, command) pairs tracked at once; more share one window


@dataclass
class _Window:
    ends: float
    count: int = 0
    record: EventRecord | None = None  # the last one counted


class RefusalLog:
    """Stands between whoever records a refusal and the log (`write`)."""

    def __init__(self, write: Record, *, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic,
                 kinds: frozenset[str] = AGGREGATED_KINDS) -> None:
        self._write = write
        self.window_s = window_s
        self._clock = clock
        self._kinds = kinds
        self._windows: dict[tuple[str, str, str], _Window] = {}
        self.totals: Counter[str] = Counter()  # every refusal by kind, however it was written

    def record(self, record: EventRecord) -> None:
        kind = record.KIND
        self.totals[kind] += 1
        self.flush_due()
        if kind not in self._kinds:
            self._write(record)
            return
        key = (kind, _caller(getattr(record, "caller", "")), str(getattr(record, "command", "")))
        if key not in self._windows and len(self._windows) >= MAX_WINDOWS:
            key = (kind, "other callers", "")
        window = self._windows.get(key)
        if window is None:
            self._windows[key] = _Window(self._clock() + self.window_s)
            self._write(dataclasses.replace(record, count=1))  # type: ignore[type-var]
            return
        window.count += 1
        window.record = record

    def flush_due(self) -> None:
        """Write the aggregate of every window that has ended."""
        now = self._clock()
        for key, window in list(self._windows.items()):
            if window.ends <= now:
                self._close(key, window, now)

    def flush(self) -> None:
        """Write what every window has counted so far (the daemon stops)."""
        now = self._clock()
        for key, window in list(self._windows.items()):
            self._close(key, window, now)
            self._windows.pop(key, None)

    def _close(self, key: tuple[str, str, str], window: _Window, now: float) -> None:
        if not window.count or window.record is None:
            del self._windows[key]
            return
        self._write(dataclasses.replace(window.record, count=window.count,  # type: ignore[type-var]
                                        window_s=self.window_s))
        self._windows[key] = _Window(now + self.window_s)


def _caller(caller: Any) -> str:
    """Who a refusal is counted for: the user on the other end of the socket."""
    if isinstance(caller, dict):
        return f"uid {caller.get('uid')}"
    return str(caller)
