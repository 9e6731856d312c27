"""Reconnect state of one device link, as a sans-I/O state object.

The driver's connection task does the I/O (open the port, wait for the
handshake, read until the link fails, sleep the delay this object returns); this
object only decides the state and the next delay, from the events it is told
and the ``now`` it is handed. A device missing at start-up is RETRYING, never a
crash; an incompatible device is REFUSED and is re-probed slowly, because only a
technician can fix it but the table should recover by itself once they have.

Modelled on aioesphomeapi's reconnect logic: an explicit state enum, capped
exponential backoff with jitter, and the attempt counter reset only once a
connection has proved stable.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from drivers.protocols import LinkState

# Timing constants. Values are this project's operational choices, not a spec:
RECONNECT_INITIAL_DELAY_S = 0.5
"""First retry: a USB-serial adapter re-enumerates in well under a second after a replug."""
RECONNECT_MAX_DELAY_S = 10.0
"""Cap: a technician who replugs a device expects the table to notice within seconds."""
RECONNECT_MULTIPLIER = 2.0
"""Doubling, as in aioesphomeapi and pymodbus."""
RECONNECT_JITTER = 0.1
"""+-10 % so the devices of one table do not all retry in the same instant."""
RECONNECT_STABLE_S = 10.0
"""A link must stay up this long before the backoff resets, so a flapping device backs off."""
REFUSED_REPROBE_S = 30.0
"""An incompatible device is re-probed this often: slow, because it needs a technician first."""


@dataclass(frozen=True)
class ReconnectPolicy:
    """Backoff parameters; tests pass small values so a replug is noticed quickly."""

    initial_delay_s: float = RECONNECT_INITIAL_DELAY_S
    max_delay_s: float = RECONNECT_MAX_DELAY_S
    multiplier: float = RECONNECT_MULTIPLIER
    jitter: float = RECONNECT_JITTER
    stable_s: float = RECONNECT_STABLE_S
    refused_reprobe_s: float = REFUSED_REPROBE_S

    def __post_init__(self) -> None:
        if self.initial_delay_s <= 0 or self.max_delay_s < self.initial_delay_s:
            raise ValueError(
                f"reconnect delays: initial {self.initial_delay_s} s and max {self.max_delay_s} s; "
                "need 0 < initial <= max")
        if self.multiplier < 1 or not 0 <= self.jitter < 1:
            raise ValueError(
                f"reconnect multiplier {self.multiplier} (need >= 1) / jitter {self.jitter} "
                "(need 0 <= jitter < 1)")


@dataclass
class Reconnector:
    """The link state of one device and the delay before its next attempt.

    Call ``connecting()`` before opening, ``handshaking()`` once the port is
    open, ``up(now)`` once the peer's Hello was accepted, and ``failed(now, reason)``
    or ``refused(reason)`` when it goes wrong; the latter two return the delay to
    wait before the next ``connecting()``. ``stopped()`` ends it.
    """

    policy: ReconnectPolicy = field(default_factory=ReconnectPolicy)
    rng: random.Random = field(default_factory=random.Random)
    state: LinkState = LinkState.STOPPED
    attempts: int = 0
    """Consecutive failed attempts since the last stable connection."""
    up_since: float | None = None
    last_reason: str = ""
    reconnects: int = 0
    """Times the link went down after having been up (a health counter)."""

    def connecting(self) -> LinkState:
        """An attempt to open the port begins."""
        self.state = LinkState.CONNECTING if self.state is not LinkState.REFUSED else self.state
        return self.state

    def handshaking(self) -> LinkState:
        """The port is open; the handshake (Hello exchange) is under way."""
        if self.state is not LinkState.REFUSED:
            self.state = LinkState.HANDSHAKING
        return self.state

    def up(self, now: float) -> LinkState:
        """The peer was accepted: the link is usable."""
        self.state = LinkState.UP
        self.up_since = now
        self.last_reason = ""
        return self.state

    def failed(self, now: float, reason: str) -> float:
        """The attempt failed or the link went down; returns the delay before the next attempt."""
        if self.state is LinkState.UP:
            self.reconnects += 1
            if self.up_since is not None and now - self.up_since >= self.policy.stable_s:
                self.attempts = 0
        self.up_since = None
        self.last_reason = reason
        if self.state is LinkState.REFUSED:
            # Still the incompatible device (or none at all): keep the technician's state.
            return self.policy.refused_reprobe_s
        self.state = LinkState.RETRYING
        delay = min(self.policy.max_delay_s,
                    self.policy.initial_delay_s * self.policy.multiplier ** self.attempts)
        self.attempts += 1
        spread = delay * self.policy.jitter
        return max(0.0, min(self.policy.max_delay_s, delay + self.rng.uniform(-spread, spread)))

    def refused(self, reason: str) -> float:
        """The peer is incompatible: REFUSED until a compatible peer answers; returns the re-probe delay."""
        self.state = LinkState.REFUSED
        self.up_since = None
        self.last_reason = reason
        return self.policy.refused_reprobe_s

    def stopped(self) -> LinkState:
        """The driver was stopped; no more attempts."""
        self.state = LinkState.STOPPED
        self.up_since = None
        return self.state
