"""Perfect Pairs (631c.1 Baccarat, 627b.1 Minibaccarat): a pair in one hand's initial two cards.

The wager is placed on the Player's hand, the Banker's hand, or both; each
hand's wager is its own spot on the layout (631c.1(a), 627b.1(b)) and is
settled on its own hand only, so a player with both spots and a pair in both
hands is paid twice (631c.1(c)(1), 627b.1(d)(1)). They settle once the first
four cards are face up (631c.1(c), 627b.1(d)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from controller.rules.baccarat import Hand
from controller.rules.money import Rounding
from controller.rules.registry import WagerFactory, wager_rule
from controller.rules.side.card_facts import initial_two, is_pair
from controller.rules.side.common import (
    HANDS, FixedOdds, LineWager, ParSpace, PayLine, Paytable, choose, odds_table,
)
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, SettlementPoint, WagerRule

PERFECT, COLOURED, MIXED = "Perfect pair", "Colored pair", "Mixed pair"

# The two chapters carry the same table; only the clause numbers differ.
_CLAUSES = {
    "631c.1": {"table": "631c.1(d)", PERFECT: "631c.1(e)", COLOURED: "631c.1(e)",
               MIXED: "631c.1(e)", "lose": "631c.1(c)(2)"},
    "627b.1": {"table": "627b.1(e)", PERFECT: "627b.1(a)(3)", COLOURED: "627b.1(a)(1)",
               MIXED: "627b.1(a)(2)", "lose": "627b.1(d)(2)"},
}


def perfect_pairs_paytables(section: str) -> dict[str, Paytable]:
    """Paytables A-C of 631c.1(d) / 627b.1(e), best line first."""
    c = _CLAUSES[section]
    return odds_table(c["table"], [
        (PERFECT, c[PERFECT], {"A": FixedOdds.to(25), "B": FixedOdds.to(30), "C": FixedOdds.to(25)}),
        (COLOURED, c[COLOURED], {"A": FixedOdds.to(12), "B": FixedOdds.to(10), "C": FixedOdds.to(15)}),
        (MIXED, c[MIXED], {"A": FixedOdds.to(6), "B": FixedOdds.to(5), "C": FixedOdds.to(5)}),
    ])


@dataclass(frozen=True)
class PerfectPairs(LineWager):
    """One hand's Perfect Pairs spot."""

    key: str
    section: str  # "631c.1" or "627b.1"
    hand: Hand
    paytable: Paytable
    rounding: Rounding = Rounding.DOWN
    settles_at: SettlementPoint = SettlementPoint.FIRST_FOUR_CARDS
    par_space: ClassVar[str] = ParSpace.HAND

    @property
    def lose_section(self) -> str:  # type: ignore[override]
        return _CLAUSES[self.section]["lose"]

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        first, second = initial_two(view, self.hand)
        if not is_pair((first, second)):  # same rank only: two jacks, never a jack and a king
            return None
        if first.suit == second.suit:
            return self.paytable.line(PERFECT)
        if first.suit.is_red == second.suit.is_red:
            return self.paytable.line(COLOURED)
        return self.paytable.line(MIXED)


def make_perfect_pairs(key: str, section: str, hand: Hand, paytable: object,
                       rounding: Rounding = Rounding.DOWN) -> PerfectPairs:
    tables = perfect_pairs_paytables(section)
    letter = choose(key, "paytable", paytable, tables)
    return PerfectPairs(key, section, hand, tables[letter], rounding)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

SECTION_BY_FAMILY = {"baccarat": "631c.1", "minibaccarat": "627b.1"}


def _factory(hand: Hand) -> WagerFactory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return make_perfect_pairs(config.key, SECTION_BY_FAMILY[game.family], hand,
                                  config.paytable, game.payout_rounding)
    return make


for _side, _hand in HANDS.items():
    for _family, _section in SECTION_BY_FAMILY.items():
        wager_rule(f"perfect_pairs_{_side}", section=_section, families={_family},
                   paytables=("A", "B", "C"),
                   description=f"Perfect Pairs on the {_side}'s hand")(_factory(_hand))
