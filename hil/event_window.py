"""The events a harness has seen, indexed from the run's first, keeping only the newest.

A short test reads every event of its run back (`for e in result.events`); a 500-shoe soak
sees about 2 million and needs only the last few hundred (where a prompt is, what came
since a mark). Kept whole, they were the soak process's memory: 1.1 GiB by shoe 300.

`EventWindow` keeps at most `keep` events (all of them when `keep` is None) and still
numbers them from the run's first, so a caller's mark (`len(events)` before an action)
stays valid. Reading an event that was dropped raises instead of answering from a shorter
list: a check that needs more history than the window holds must say so, not pass.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any, overload

Event = dict[str, Any]


class EventWindow:
    def __init__(self, keep: int | None = None) -> None:
        if keep is not None and keep < 1:
            raise ValueError(f"keep = {keep}: must be 1 or more, or None to keep every event")
        self.keep = keep
        self._kept: collections.deque[Event] = collections.deque(maxlen=keep)
        self._seen = 0

    def append(self, event: Event) -> None:
        self._kept.append(event)
        self._seen += 1

    @property
    def dropped(self) -> int:
        """How many of the run's first events are no longer kept."""
        return self._seen - len(self._kept)

    def __len__(self) -> int:
        """Every event seen in the run, kept or not (a mark for `events[mark:]`)."""
        return self._seen

    def __bool__(self) -> bool:
        return self._seen > 0

    def __iter__(self) -> Iterator[Event]:
        self._require(0)
        return iter(self._kept)

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._seen)
            if start < stop:
                self._require(start)
            return [self._kept[i - self.dropped] for i in range(start, stop, step)]
        at = index + self._seen if index < 0 else index
        if not 0 <= at < self._seen:
            raise IndexError(f"event {index} of {self._seen}")
        self._require(at)
        return self._kept[at - self.dropped]

    def _require(self, first: int) -> None:
        if first < self.dropped:
            raise LookupError(
                f"event {first} is no longer kept: the window keeps the last {self.keep} of "
                f"{self._seen}; read from {self.dropped} on, or keep more (keep=None: every one)")
