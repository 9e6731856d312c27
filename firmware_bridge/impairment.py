"""Impairment tools for tests and HIL: a lossy byte channel and a fake-clock simulation.

``ImpairedChannel`` carries bytes one way the way a bad cable would: whole writes
lost, duplicated or corrupted, delivery delayed (but never reordered: a UART is
FIFO), and handed over in random splits or one byte at a time.  ``LinkSimulation``
runs two LinkEndpoints against each other over a pair of channels on a fake
clock, jumping straight to the next deadline, so minutes of link time take
milliseconds and no test sleeps.  Deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from firmware_bridge.link import LinkEndpoint, LinkEvent


@dataclass
class Impairments:
    """Probabilities are per write (one write = what ``outgoing()`` returned)."""

    loss: float = 0.0
    duplicate: float = 0.0
    corrupt: float = 0.0  # flip one random bit of the write
    garbage: float = 0.0  # insert 1..40 random bytes before the write
    delay: float = 0.0  # fixed latency, seconds
    jitter: float = 0.0  # extra random latency, seconds (order still preserved)
    byte_at_a_time: bool = False
    random_splits: bool = False


@dataclass
class ImpairedChannel:
    """One direction of a link with impairments; FIFO, deterministic per ``rng``."""

    impairments: Impairments
    rng: random.Random
    _queue: deque[tuple[float, bytes]] = field(default_factory=deque)
    _last_due: float = 0.0
    bytes_lost: int = 0

    def write(self, data: bytes, now: float) -> None:
        if not data:
            return
        imp = self.impairments
        if self.rng.random() < imp.loss:
            self.bytes_lost += len(data)
            return
        copies = 2 if self.rng.random() < imp.duplicate else 1
        for _ in range(copies):
            chunk = bytearray(data)
            if self.rng.random() < imp.corrupt:
                bit = self.rng.randrange(len(chunk) * 8)
                chunk[bit // 8] ^= 1 << (bit % 8)
            if self.rng.random() < imp.garbage:
                chunk[0:0] = self.rng.randbytes(self.rng.randint(1, 40))
            for piece in self._split(bytes(chunk)):
                due = max(self._last_due, now + imp.delay + self.rng.random() * imp.jitter)
                self._last_due = due
                self._queue.append((due, piece))

    def _split(self, data: bytes) -> list[bytes]:
        if self.impairments.byte_at_a_time:
            return [data[i : i + 1] for i in range(len(data))]
        if self.impairments.random_splits and len(data) > 1:
            cuts = sorted(self.rng.sample(range(1, len(data)), k=min(len(data) - 1, 3)))
            bounds = [0, *cuts, len(data)]
            return [data[a:b] for a, b in zip(bounds, bounds[1:])]
        return [data]

    def next_due(self) -> float | None:
        return self._queue[0][0] if self._queue else None

    def read(self, now: float) -> bytes:
        out = bytearray()
        while self._queue and self._queue[0][0] <= now:
            out += self._queue.popleft()[1]
        return bytes(out)


@dataclass
class LinkSimulation:
    """Two endpoints, two channels, one fake clock; events collected per side."""

    a: LinkEndpoint
    b: LinkEndpoint
    a_to_b: ImpairedChannel
    b_to_a: ImpairedChannel
    now: float = 0.0
    max_step: float = 0.05  # bound each clock jump so byte delivery interleaves with timers
    events_a: list[LinkEvent] = field(default_factory=list)
    events_b: list[LinkEvent] = field(default_factory=list)
    on_event: Callable[[str, LinkEvent, float], None] | None = None

    def _collect(self) -> None:
        for name, endpoint, sink in (("a", self.a, self.events_a), ("b", self.b, self.events_b)):
            for event in endpoint.events():
                sink.append(event)
                if self.on_event is not None:
                    self.on_event(name, event, self.now)

    def flush(self) -> None:
        """Move bytes each endpoint wrote into its channel; collect events."""
        self.a_to_b.write(self.a.outgoing(), self.now)
        self.b_to_a.write(self.b.outgoing(), self.now)
        self._collect()

    def step(self) -> None:
        """Advance the clock to the next thing that happens and make it happen."""
        self.flush()
        candidates = [
            t for t in (
                self.a.next_deadline(), self.b.next_deadline(),
                self.a_to_b.next_due(), self.b_to_a.next_due(),
            ) if t is not None
        ]
        target = min(candidates, default=self.now + self.max_step)
        self.now = min(max(target, self.now), self.now + self.max_step)
        data = self.a_to_b.read(self.now)
        if data:
            self.b.receive(data, self.now)
        data = self.b_to_a.read(self.now)
        if data:
            self.a.receive(data, self.now)
        self.a.poll(self.now)
        self.b.poll(self.now)
        self.flush()

    def run_until(self, done: Callable[[], bool], *, timeout: float) -> bool:
        """Step until ``done()`` or ``timeout`` seconds of simulated time; return done()."""
        end = self.now + timeout
        stalled = 0
        while not done() and self.now < end:
            before = self.now
            self.step()
            stalled = stalled + 1 if self.now == before else 0
            if stalled > 1000:  # a deadline that poll() does not move: a bug, not a hang
                raise RuntimeError(f"simulation stuck at t={self.now}")
        return done()
