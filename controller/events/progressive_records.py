"""Event records of the progressives (605a, 631c): one frozen dataclass per catalogue
kind. Meters and awards change shape with the step that wrote them: a key a step does
not write is `ABSENT` (see codec.py), never confused with a written null."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from controller.events.codec import ABSENT, Absent, EventRecord


@dataclass(frozen=True)
class ProgressiveAccepted(EventRecord):
    """The lock's acceptance (controller.progressive.core.Acceptance.as_dict)."""

    KIND: ClassVar[str] = "progressive_accepted"
    progressive: str
    accepted: tuple[dict[str, int], ...]
    refused: tuple[dict[str, Any], ...]
    leds: dict[str, str]
    awards: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class ProgressiveWagers(EventRecord):
    KIND: ClassVar[str] = "progressive_wagers"
    progressive: str
    cause: str
    sensor_seats: tuple[int, ...]
    accepted: tuple[tuple[int, int], ...]  # (seat, cents)
    refused: tuple[tuple[int, str], ...]  # (seat, reason)


@dataclass(frozen=True)
class ProgressiveWagersReturned(EventRecord):
    KIND: ClassVar[str] = "progressive_wagers_returned"
    seats: tuple[dict[str, int], ...]  # {seat, cents}


@dataclass(frozen=True)
class ProgressiveRoundVoid(EventRecord):
    KIND: ClassVar[str] = "progressive_round_void"
    progressive: str
    reason: str
    returned: tuple[tuple[int, int], ...]  # (seat, cents)


@dataclass(frozen=True)
class ProgressiveMeter(EventRecord):
    """A meter's change (605a.7): an adjustment is a warning."""

    KIND: ClassVar[str] = "progressive_meter"
    progressive: str
    level: str
    change: str
    delta_num: int
    delta_den: int
    amount_cents: int
    frac_num: int
    frac_den: int
    version: int
    seats: tuple[int, ...] = ()
    wagers_cents: int = 0
    award_id: int | None = None
    supervisor: str | None = None
    reason: str | None = None

    @property
    def severity(self) -> str | None:
        return "warning" if self.change == "adjustment" else None


@dataclass(frozen=True)
class ProgressiveAward(EventRecord):
    """An award created (label ... claimed), claimed from a linked ledger, or moved on
    (supervisor, paid_via)."""

    KIND: ClassVar[str] = "progressive_award"
    award_id: int
    progressive: str
    level: str
    seat: int
    amount_cents: int
    state: str
    label: str | Absent = ABSENT
    section: str | Absent = ABSENT
    pay_order: int | Absent = ABSENT
    linked_claim: str | None | Absent = ABSENT
    claimed: bool | Absent = ABSENT
    supervisor: str | None | Absent = ABSENT
    paid_via: str | None | Absent = ABSENT


@dataclass(frozen=True)
class ProgressiveMysteryArmed(EventRecord):
    KIND: ClassVar[str] = "progressive_mystery_armed"
    progressive: str
    level: str
    epoch: int
    commitment: str
    scheme: str


@dataclass(frozen=True)
class ProgressiveMysteryReveal(EventRecord):
    KIND: ClassVar[str] = "progressive_mystery_reveal"
    progressive: str
    level: str
    epoch: int
    trigger_cents: int
    nonce_hex: str
    commitment: str
    award_id: int


@dataclass(frozen=True)
class ProgressiveLinkedContribution(EventRecord):
    KIND: ClassVar[str] = "progressive_linked_contribution"
    progressive: str
    level: str
    seq: int
    delta_num: int
    delta_den: int
    wagers_count: int
    wagers_cents: int


@dataclass(frozen=True)
class JackpotValidated(EventRecord):
    KIND: ClassVar[str] = "jackpot_validated"
    award_id: int
    supervisor: str
    amount_cents: int
    seat: int
