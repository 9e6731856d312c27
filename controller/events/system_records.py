"""Event records of the daemon, the control socket's access checks, critical memory and
the witness: one frozen dataclass per catalogue kind (see records.py for the table's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from controller.events.codec import ABSENT, Absent, EventRecord

# --- the daemon -------------------------------------------------------------------------


@dataclass(frozen=True)
class DaemonStarted(EventRecord):
    """`release` and `software_verified` are ABSENT from entries written before the
    software check existed (a store written by 9d72e55)."""

    KIND: ClassVar[str] = "daemon_started"
    version: str
    state: str
    release: str | None | Absent = ABSENT
    software_verified: bool | Absent = ABSENT


@dataclass(frozen=True)
class SoftwareStaged(EventRecord):
    KIND: ClassVar[str] = "software_staged"
    release: str


@dataclass(frozen=True)
class SoftwareActivated(EventRecord):
    KIND: ClassVar[str] = "software_activated"
    release: str
    from_release: str | None
    supervisor: str


@dataclass(frozen=True)
class SoftwareRolledBack(EventRecord):
    KIND: ClassVar[str] = "software_rolled_back"
    release: str
    from_release: str | None
    supervisor: str
    automatic: bool


@dataclass(frozen=True)
class DaemonStopping(EventRecord):
    KIND: ClassVar[str] = "daemon_stopping"
    state: str


@dataclass(frozen=True)
class Restored(EventRecord):
    KIND: ClassVar[str] = "restored"
    state: str
    round_id: int | None


@dataclass(frozen=True)
class InternalError(EventRecord):
    KIND: ClassVar[str] = "internal_error"
    event: str  # the device event's repr


@dataclass(frozen=True)
class EventIgnoredOutOfOrder(EventRecord):
    KIND: ClassVar[str] = "event_ignored_out_of_order"
    device_event: str  # its type's name


@dataclass(frozen=True)
class SupervisorCommand(EventRecord):
    KIND: ClassVar[str] = "supervisor_command"
    supervisor: str
    command: str
    args: dict[str, Any]


@dataclass(frozen=True)
class LightTest(EventRecord):
    KIND: ClassVar[str] = "light_test"
    seats: tuple[int, ...]
    display: bool


@dataclass(frozen=True)
class PinHashesExposed(EventRecord):
    KIND: ClassVar[str] = "pin_hashes_exposed"
    config: str
    reason: str


@dataclass(frozen=True)
class OutOfOrder(EventRecord):
    KIND: ClassVar[str] = "out_of_order"
    reason: str


# --- access (who may do what) -----------------------------------------------------------


@dataclass(frozen=True)
class CommandRefused(EventRecord):
    """`caller`: the peer's credentials (controller.access.Caller.describe)."""

    KIND: ClassVar[str] = "command_refused"
    command: str
    role_needed: str
    reason: str
    caller: dict[str, Any]
    supervisor: str | None = None
    count: int | None = None
    window_s: float | None = None


@dataclass(frozen=True)
class PinFailed(EventRecord):
    KIND: ClassVar[str] = "pin_failed"
    supervisor: str
    caller: str
    command: str
    failures: int


@dataclass(frozen=True)
class PinLockout(EventRecord):
    KIND: ClassVar[str] = "pin_lockout"
    supervisor: str
    caller: str
    command: str
    after_failures: int
    lockout_s: float


@dataclass(frozen=True)
class PinDelay(EventRecord):
    KIND: ClassVar[str] = "pin_delay"
    supervisor: str
    caller: str
    command: str
    caller_failures: int
    delay_s: float
    count: int | None = None
    window_s: float | None = None


@dataclass(frozen=True)
class PinGuardResumed(EventRecord):
    KIND: ClassVar[str] = "pin_guard_resumed"
    supervisors: dict[str, dict[str, int]]


@dataclass(frozen=True)
class PinRefused(EventRecord):
    KIND: ClassVar[str] = "pin_refused"
    supervisor: str
    caller: str
    command: str
    reason: str
    locked_for_s: int | None = None
    count: int | None = None
    window_s: float | None = None


@dataclass(frozen=True)
class SubscriberDropped(EventRecord):
    KIND: ClassVar[str] = "subscriber_dropped"
    caller: dict[str, Any]
    reason: str
    sent_up_to_seq: int


# --- the critical store -----------------------------------------------------------------


@dataclass(frozen=True)
class CriticalMemoryInitialised(EventRecord):
    KIND: ClassVar[str] = "critical_memory_initialised"
    table_id: str
    operator: str
    host: str
    key_id: str
    store: str
    anchor: str
    witness: dict[str, Any] | None = None


@dataclass(frozen=True)
class CriticalMemoryCleared(EventRecord):
    KIND: ClassVar[str] = "critical_memory_cleared"
    table_id: str
    supervisor: str
    reason: str
    failure: str
    evidence: str
    moved: tuple[str, ...]
    last_values: dict[str, Any]
    witness: dict[str, Any] | None = None


@dataclass(frozen=True)
class CriticalMemoryVerified(EventRecord):
    """The check at open (controller.memory.critical.Verified's counts)."""

    KIND: ClassVar[str] = "critical_memory_verified"
    entries: int
    log_seq: int
    from_seq: int
    state_rows: int
    commit_no: int
    anchor_behind: int
    # Entries after the sealed one that a kill or a power cut left (cards and prompts that
    # wait for the next flush), sealed as the store opened (docs/rulings.md C29).
    unsealed: int = 0
    # This start's `[store] seal_every_step` (C29's option), recorded so that the log says
    # from which start a card's step was sealed by itself; left out while false.
    seal_every_step: bool = False


@dataclass(frozen=True)
class HistoryVerified(EventRecord):
    KIND: ClassVar[str] = "history_verified"
    state: str
    entries: int
    seconds: float


@dataclass(frozen=True)
class CriticalMemoryRechecked(EventRecord):
    KIND: ClassVar[str] = "critical_memory_rechecked"
    first: str  # why the first check failed
    recheck: dict[str, Any]


# --- the witness (controller/witness/) --------------------------------------------------


@dataclass(frozen=True)
class WitnessDown(EventRecord):
    KIND: ClassVar[str] = "witness_down"
    reason: str


@dataclass(frozen=True)
class WitnessUp(EventRecord):
    KIND: ClassVar[str] = "witness_up"
    pending_heads: int
