"""The contract every wager rule implements, and the settlement it produces.

A wager rule is pure: given the amount wagered (integer cents) and the cards of
the round, it says win / lose / push and the exact amounts. Odds are Fractions
so that 0.95 to 1, 2.5 to 1 and 1 to 2 stay exact until the single rounding
step in `controller.rules.money`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, runtime_checkable

from cards import Card


class SettlementPoint(enum.Enum):
    """When the rules settle a wager: after the first four cards, or when the round ends."""

    FIRST_FOUR_CARDS = "first-four-cards"  # e.g. House Money 631a.9(e), Perfect Pairs
    END_OF_ROUND = "end-of-round"


class Outcome(enum.Enum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"


@dataclass(frozen=True, slots=True)
class RoundView:
    """The cards of a round as a wager rule sees them: each hand in dealing order.

    For 631a/631c/627b games the totals are Point Counts; for 21 Baccarat
    (681a) they are the blackjack-style totals of that game. `extra` holds
    cards dealt only for Bonus wagers (681a.7(f)(2)).
    """

    player: tuple[Card, ...]
    banker: tuple[Card, ...]
    player_total: int
    banker_total: int
    extra: tuple[Card, ...] = ()
    # 681a.7(f)(2): the Bonus-only card of each hand (at most one); `extra` is both, Player's first.
    player_extra: tuple[Card, ...] = ()
    banker_extra: tuple[Card, ...] = ()


@dataclass(frozen=True, slots=True)
class Settlement:
    """One wager's settlement. `net_cents` is the seat's gain (+) or loss (-) after vigorish."""

    wager: str  # the wager's configuration key, e.g. "banker", "tie", "perfect_pairs_player"
    seat: int
    amount_cents: int
    outcome: Outcome
    odds: Fraction  # payout odds "to 1" actually applied (0 for a loss or push)
    win_cents: int  # amount paid on top of the returned wager; 0 if lost or pushed
    vigorish_cents: int  # vigorish owed on this win (631a.13(c)); 0 if none
    label: str  # the paytable line or reason, e.g. "Natural winner", "Banker wins with 6"
    section: str  # the rule that decided it, e.g. "631a.13(c)"

    @property
    def net_cents(self) -> int:
        if self.outcome is Outcome.WIN:
            return self.win_cents - self.vigorish_cents
        if self.outcome is Outcome.LOSE:
            return -self.amount_cents
        return 0

    def marked_vigorish_cents(self, *, vigorish_marked: bool) -> int:
        """631a.13(d)(2): the vigorish marked at the seat for later collection (0 when it is
        taken at payout, 631a.13(d)(1))."""
        return self.vigorish_cents if vigorish_marked else 0

    def seat_net_cents(self, *, vigorish_marked: bool) -> int:
        """The seat's gain (+) or loss (-) as its totals carry it now: with marked vigorish
        (631a.13(d)(2)) the seat keeps the whole win until the vigorish is collected."""
        if self.outcome is Outcome.WIN:
            return self.win_cents if vigorish_marked else self.net_cents
        return self.net_cents


@runtime_checkable
class WagerRule(Protocol):
    # Read-only members, so frozen dataclasses satisfy the protocol.
    @property
    def key(self) -> str:
        """The configuration key of the wager."""

    @property
    def section(self) -> str:
        """The section that authorises it, e.g. "631a.8(a)(1)"."""

    @property
    def settles_at(self) -> SettlementPoint: ...

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement: ...
