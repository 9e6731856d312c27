"""Majestic Match (631c.7): a suited initial two cards in the hand wagered upon.

Like Perfect Pairs, each hand is its own spot, paid independently
(631c.7(c)(1)), settled after the first four cards (631c.7(c)). No Baccarat
wager is needed (631c.7(b)). The one paytable of 631c.7(d) has a 2.5 to 1
line, so an odd number of cents is rounded by `controller.rules.money`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from controller.rules.baccarat import Hand
from cards import Rank
from controller.rules.money import Rounding
from controller.rules.registry import WagerFactory, wager_rule
from controller.rules.side.card_facts import initial_two
from controller.rules.side.common import (
    BACCARAT, HANDS, FixedOdds, LineWager, ParSpace, PayLine, Paytable,
)
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, SettlementPoint, WagerRule

ROYAL_MATCH, SUITED_MATCH = "Royal Match", "Suited Match"

MAJESTIC_MATCH_PAYTABLE = Paytable("631c.7(d)", "631c.7(d)", (
    PayLine(ROYAL_MATCH, FixedOdds.to(25), "631c.7(e)"),  # suited king and queen
    PayLine(SUITED_MATCH, FixedOdds(Fraction(5, 2)), "631c.7(e)"),  # any other suited two
))


@dataclass(frozen=True)
class MajesticMatch(LineWager):
    key: str
    hand: Hand
    rounding: Rounding = Rounding.DOWN
    paytable: Paytable = MAJESTIC_MATCH_PAYTABLE
    section: str = "631c.7"
    settles_at: SettlementPoint = SettlementPoint.FIRST_FOUR_CARDS
    par_space: ClassVar[str] = ParSpace.HAND
    lose_section: ClassVar[str] = "631c.7(c)(2)"

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        first, second = initial_two(view, self.hand)
        if first.suit != second.suit:
            return None
        if {first.rank, second.rank} == {Rank.KING, Rank.QUEEN}:
            return self.paytable.line(ROYAL_MATCH)
        # 631c.7(e): two suited kings (possible with several decks) are a Suited Match.
        return self.paytable.line(SUITED_MATCH)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

def _factory(hand: Hand) -> WagerFactory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return MajesticMatch(config.key, hand, game.payout_rounding)
    return make


for _side, _hand in HANDS.items():
    wager_rule(f"majestic_match_{_side}", section="631c.7", families=BACCARAT,
               description=f"Majestic Match on the {_side}'s hand")(_factory(_hand))
