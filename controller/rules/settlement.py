"""Settling a round in the order the rules give, and tracking marked vigorish.

631a.12(b): losing wagers are collected first; then winning wagers are paid
from the highest-numbered seat down, each seat's vigorish marked or collected
right after its payout. Pushes (returned wagers) come last. The same order is
used at the first-four-cards settlement point (House Money 631a.9(e), pair
wagers) and for 21 Baccarat (681a.7(h): from the dealer's far right, which
is the highest-numbered seat); see docs/rulings.md.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from controller.rules.wager import Outcome, RoundView, Settlement, SettlementPoint

if TYPE_CHECKING:
    from controller.rules.game import Game

_OUTCOME_ORDER = {Outcome.LOSE: 0, Outcome.WIN: 1, Outcome.PUSH: 2}


@dataclass(frozen=True, slots=True)
class PlacedWager:
    """A wager on the layout: seat, configuration key, amount in cents."""

    seat: int
    wager: str
    amount_cents: int


def check_wager(game: Game, placed: PlacedWager) -> str | None:
    """Why `placed` may not be accepted at this table, or None if it may."""
    rules = game.wager_rules
    submission = game.submission
    if placed.wager not in rules:
        return f"wager {placed.wager!r} is not offered at this table"
    if not 1 <= placed.seat <= submission.table.seats:
        return f"seat {placed.seat} is not 1..{submission.table.seats}"
    wc = submission.wager(placed.wager)
    if placed.amount_cents <= 0:
        return "amount must be a positive number of cents"
    if wc is not None and wc.min_cents is not None and placed.amount_cents < wc.min_cents:
        return f"below the table minimum of {wc.min_cents} cents"
    if wc is not None and wc.max_cents is not None and placed.amount_cents > wc.max_cents:
        return f"above the table maximum of {wc.max_cents} cents"
    return None


def settlement_order(settlements: Iterable[Settlement], wager_order: Sequence[str] = ()
                     ) -> list[Settlement]:
    """631a.12(b): losers first, then winners from the highest seat down, then pushes."""
    rank = {key: i for i, key in enumerate(wager_order)}
    return sorted(settlements, key=lambda s: (_OUTCOME_ORDER[s.outcome], -s.seat,
                                              rank.get(s.wager, len(rank)), s.wager))


def settle_round(game: Game, wagers: Iterable[PlacedWager], round_view: RoundView,
                 point: SettlementPoint) -> list[Settlement]:
    """Settle every placed wager whose rule settles at `point`, in 631a.12(b) order.

    Wagers settling at the other point are skipped (the caller settles them
    there). Raises ValueError for a wager the table does not offer.
    """
    rules = game.wager_rules
    out: list[Settlement] = []
    for placed in wagers:
        rule = rules.get(placed.wager)
        if rule is None:
            raise ValueError(f"wager {placed.wager!r} is not offered at this table")
        if rule.settles_at is point:
            out.append(rule.settle(placed.seat, placed.amount_cents, round_view))
    # Nothing to order (most first-four-card points: no wager settles there).
    return settlement_order(out, list(rules)) if out else out


def void_round(wagers: Iterable[PlacedWager], section: str = "631a.15(e)", *,
               settled: Collection[tuple[int, str]] = ()) -> list[Settlement]:
    """What a void round adds to the settlements already made: every wager not yet settled
    is returned, 631a.15(e) (the shoe cannot complete the round) or the section of the
    irregularity that voided it.

    `settled` names, by (seat, wager key), the wagers the round already settled: a wager
    settled at the first four cards (House Money 631a.9(e), Royal 9 627b.3(d), the pair
    wagers and Lucky Nines: docs/rulings.md, "Settlement points") was decided by cards the
    table saw and was paid or collected then; its settlement stands, and the void returns
    only the rest (docs/rulings.md C7). A seat's wagers of one key all settle at
    the same point, so the key names them all. The round's record is the settlements
    already made followed by these. The live table and `tablectl simulate` both record a
    void round so."""
    from fractions import Fraction

    return [Settlement(wager=p.wager, seat=p.seat, amount_cents=p.amount_cents,
                       outcome=Outcome.PUSH, odds=Fraction(0), win_cents=0, vigorish_cents=0,
                       label="void round: wager returned", section=section)
            for p in sorted(wagers, key=lambda p: -p.seat)
            if (p.seat, p.wager) not in settled]


def add_ride(wagers: Sequence[PlacedWager], seat: int, main_wager: str, ride_cents: int
             ) -> list[PlacedWager]:
    """631a.9(e)(1)(i): add a ridden House Money payout to the seat's Player or Banker wager."""
    if main_wager not in ("player", "banker"):
        raise ValueError("a House Money payout may ride only on the Player or Banker wager")
    out = list(wagers)
    for i, p in enumerate(out):
        if p.seat == seat and p.wager == main_wager:
            out[i] = PlacedWager(seat, main_wager, p.amount_cents + ride_cents)
            return out
    raise ValueError(f"seat {seat} has no {main_wager} wager to ride on")


@dataclass(frozen=True)
class VigorishLedger:
    """631a.13(d)(2): vigorish marked per seat, collected before a new shoe or when the player leaves.

    Immutable: every operation returns the new ledger (and what was collected).
    """

    owed: Mapping[int, int] = field(default_factory=dict)

    def mark(self, seat: int, cents: int) -> VigorishLedger:
        if cents < 0:
            raise ValueError("vigorish marked must not be negative")
        if cents == 0:
            return self
        owed = dict(self.owed)
        owed[seat] = owed.get(seat, 0) + cents
        return VigorishLedger(owed)

    def record(self, settlements: Iterable[Settlement]) -> VigorishLedger:
        """Mark the vigorish of every settlement that carries some (631a.12(b))."""
        ledger = self
        for s in settlements:
            ledger = ledger.mark(s.seat, s.vigorish_cents)
        return ledger

    def seat_leaves(self, seat: int) -> tuple[int, VigorishLedger]:
        """631a.13(d)(2)(i): collect the seat's vigorish when the player leaves."""
        owed = dict(self.owed)
        return owed.pop(seat, 0), VigorishLedger(owed)

    def new_shoe(self) -> tuple[dict[int, int], VigorishLedger]:
        """631a.13(d)(2)(i): collect everything owed before play with a new shoe."""
        return dict(self.owed), VigorishLedger({})

    @property
    def total_cents(self) -> int:
        return sum(self.owed.values())
