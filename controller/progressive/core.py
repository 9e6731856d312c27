"""The pure decisions of the progressive system: no store, no sockets, no clock.

- which seats' progressive wagers are accepted at the lock-out and why others are not;
- what each accepted wager contributes to each meter (exact Fractions of a cent);
- which seats hit a meter line of the paytable, in the documented payment order;
- the Must-Hit-By Mystery trigger: its draw from an injected random source and
  the commitment that keeps it secret until the hit.

The adapters (`ledger`, `linked`, `mqtt`, `system`) do the I/O around these.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.progressive.config import ProgressiveSpec
from controller.rules.side.common import PaysMeter
from drivers.protocols import LedState, LockedOut

COMMITMENT_SCHEME = "tabled-mystery-v1"  # bump if the committed material ever changes
NONCE_BYTES = 32  # 256 bits: the trigger range is tiny, so the nonce alone must resist guessing

# Reasons a sensor-detected wager is refused; stable strings the log and CLI show.
REFUSED_NO_BASE_WAGER = "no Baccarat wager at the seat"
REFUSED_BELOW_MINIMUM = "below the minimum progressive wager"
REFUSED_NOT_DENOMINATION = "not the wager's denomination"
REFUSED_NOT_ON_SENSOR = "not on the seat's sensor at the lock-out"
REFUSED_UNAVAILABLE = "progressive unavailable"


@dataclass(frozen=True, slots=True)
class AcceptedWager:
    seat: int
    amount_cents: int


@dataclass(frozen=True, slots=True)
class RefusedWager:
    seat: int
    reason: str


@dataclass(frozen=True)
class Acceptance:
    """The progressive wagers of one round as the lock-out fixed them.

    `leds` gives every seat's LED; `awards` holds mystery hits decided when the
    contributions were booked (filled by the facade, empty from the pure function).
    """

    progressive: str
    accepted: tuple[AcceptedWager, ...]
    refused: tuple[RefusedWager, ...]
    leds: Mapping[int, LedState]
    awards: tuple[Any, ...] = ()

    @property
    def accepted_seats(self) -> frozenset[int]:
        return frozenset(w.seat for w in self.accepted)

    @property
    def total_cents(self) -> int:
        return sum(w.amount_cents for w in self.accepted)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for the control socket and the event log."""
        return {"progressive": self.progressive,
                "accepted": [{"seat": w.seat, "amount_cents": w.amount_cents}
                             for w in self.accepted],
                "refused": [{"seat": r.seat, "reason": r.reason} for r in self.refused],
                "leds": {str(seat): led.value for seat, led in self.leds.items()},
                "awards": [a.as_dict() for a in self.awards]}


def accept_progressive_wagers(
    locked: LockedOut, base_wagers: Sequence[Mapping[str, Any]], spec: ProgressiveSpec,
    seats: int, *, unavailable_reason: str | None = None,
) -> Acceptance:
    """Decide the round's progressive wagers from the lock-out snapshot.

    A wager exists only if the seat's sensor held it at the lock instant
    (631c.2(d)(2), 627b.3(a)(2), 627b.6(d)(2)) and the seat holds one of the
    base wagers (631c.2(a), 627b.3(b), 627b.6(a)). Its amount is the one entered
    with the progressive's wager key, else the amount the spot recognises: at least the
    minimum, and for Royal 9 exactly its denomination (627b.3(f)-(g)).
    """
    denomination = getattr(spec.rule, "denomination_cents", None)
    base_by_seat: dict[int, int] = {}
    entered: dict[int, int] = {}
    for wager in base_wagers:
        seat, key, cents = int(wager["seat"]), str(wager["wager"]), int(wager["amount_cents"])
        if key in spec.base_wagers and cents > 0:
            base_by_seat[seat] = base_by_seat.get(seat, 0) + cents
        elif key == spec.wager_key:
            entered[seat] = entered.get(seat, 0) + cents
    accepted: list[AcceptedWager] = []
    refused: list[RefusedWager] = []
    leds: dict[int, LedState] = {}
    for seat in range(1, seats + 1):
        on_sensor = seat in locked.wagers
        if unavailable_reason is not None:
            leds[seat] = LedState.UNAVAILABLE
            if on_sensor or seat in entered:
                refused.append(RefusedWager(seat, f"{REFUSED_UNAVAILABLE}: {unavailable_reason}"))
            continue
        if not on_sensor:
            leds[seat] = LedState.OFF
            if seat in entered:
                refused.append(RefusedWager(seat, REFUSED_NOT_ON_SENSOR))
            continue
        amount = entered.get(seat, spec.wager_cents)
        if seat not in base_by_seat:
            refused.append(RefusedWager(seat, REFUSED_NO_BASE_WAGER))
            leds[seat] = LedState.OFF
        elif amount < spec.minimum_cents:
            refused.append(RefusedWager(seat, f"{REFUSED_BELOW_MINIMUM} "
                                              f"({amount} < {spec.minimum_cents} cents)"))
            leds[seat] = LedState.OFF
        elif denomination is not None and amount != denomination:
            # 627b.3(f)-(g): the paytable is the denomination's; more on the spot would feed
            # the meters at more than the wager the paytable pays.
            refused.append(RefusedWager(seat, f"{REFUSED_NOT_DENOMINATION} ({amount} cents, "
                                              f"not {denomination}; 627b.3(f)-(g))"))
            leds[seat] = LedState.OFF
        else:
            accepted.append(AcceptedWager(seat, amount))
            leds[seat] = LedState.LOCKED
    return Acceptance(spec.name, tuple(accepted), tuple(refused), leds)


def betting_leds(seats: int, unavailable_reason: str | None) -> dict[int, LedState]:
    """Every seat's LED when betting opens: awaiting, or unavailable with the link down."""
    state = LedState.AWAITING if unavailable_reason is None else LedState.UNAVAILABLE
    return {seat: state for seat in range(1, seats + 1)}


# --- contributions --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Contribution:
    seat: int
    level: str
    amount: Fraction  # exact cents


def contributions(spec: ProgressiveSpec, accepted: Iterable[AcceptedWager]
                  ) -> dict[str, list[Contribution]]:
    """Each level's contributions, in seat order (lowest seat first: the documented order in
    which a mystery meter meets its trigger, since a lock-out has no order of its own)."""
    ordered = sorted(accepted, key=lambda w: w.seat)
    result: dict[str, list[Contribution]] = {}
    for level in spec.levels:
        result[level.level] = [
            Contribution(w.seat, level.level, level.increment_rate * w.amount_cents)
            for w in ordered
            # 631c.6(c)(1)-(2): only a qualifying wager feeds the mystery meter.
            if w.amount_cents >= level.qualifying_cents
        ]
    return result


def split(value: Fraction) -> tuple[int, int, int]:
    """(whole cents, remainder numerator, remainder denominator): floor plus an exact sub-cent."""
    whole = value.numerator // value.denominator
    rest = value - whole
    return whole, rest.numerator, rest.denominator


# --- hits on meter lines ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MeterHit:
    seat: int
    level: str
    fraction: Fraction
    label: str
    section: str


def meter_hits(spec: ProgressiveSpec, accepted_seats: Iterable[int], round_view: Any,
               standing_cents: Mapping[str, int] | None = None) -> list[MeterHit]:
    """The seats whose paytable line pays a meter, in payment order. `standing_cents`: the
    meters as they stand before the round's awards (whole cents by level), for a rule whose
    choice of line reads them (Royal 9's suited tie, docs/rulings.md).

    Payment order (docs/progressive.md): by paytable rank of the line, then
    highest seat first as 631a.12 pays winners; each later winner on the same
    meter is paid from the meter as reset by the earlier award.
    """
    hits: list[tuple[int, MeterHit]] = []
    rule = spec.rule if standing_cents is None else spec.rule.at_meters(standing_cents)
    ranks = {line.label: i for i, line in enumerate(spec.rule.paytable.lines)}
    for seat in accepted_seats:
        line = rule.classify(round_view, seat)
        if line is not None and isinstance(line.pay, PaysMeter):
            hits.append((ranks[line.label], MeterHit(seat, line.pay.level, line.pay.fraction,
                                                     line.label, line.section)))
    hits.sort(key=lambda item: (item[0], -item[1].seat))
    return [hit for _, hit in hits]


# --- the mystery trigger ---------------------------------------------------------------------


def draw_trigger(bounds: tuple[int, int], randbelow: Callable[[int], int]) -> int:
    """A trigger uniform over the inclusive cents range (631c.6(c)(3)); `randbelow` is
    `secrets.randbelow` in production, injectable for deterministic tests."""
    low, high = bounds
    if high < low:
        raise ValueError(f"trigger range {low}..{high} is empty")
    return low + randbelow(high - low + 1)


def commitment(progressive: str, level: str, epoch: int, trigger_cents: int, nonce: bytes) -> str:
    """SHA-256 over the documented material; recorded at the reset, verifiable at the reveal."""
    material = f"{COMMITMENT_SCHEME}|{progressive}|{level}|{epoch}|{trigger_cents}|{nonce.hex()}"
    return hashlib.sha256(material.encode("ascii")).hexdigest()
