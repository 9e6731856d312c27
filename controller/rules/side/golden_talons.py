"""Golden Talons (627b.5): the hand wagered upon wins by 4 or more, or wins/ties with a natural.

Placed on the Player's hand, the Banker's hand or both, each its own wager
(627b.5(e)); settled with the Minibaccarat wagers at the end (627b.5(d)). A
natural win pays only the natural-win odds, never the margin lines (627b.5(g)).
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.rules.baccarat import Hand
from controller.rules.money import Rounding
from controller.rules.registry import WagerFactory, wager_rule
from controller.rules.side.card_facts import is_natural
from controller.rules.side.common import (
    HANDS, MINIBACCARAT, FixedOdds, LineWager, Pay, PayLine, Paytable, Push, choose, odds_table,
)
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, SettlementPoint, WagerRule

NATURAL_WIN, NATURAL_TIE = "Natural win", "Natural tie"


def win_by(points: int) -> str:
    return f"Win by {points}"


def _row(label: str, clause: str, cells: str) -> tuple[str, str, dict[str, Pay | None]]:
    pays: dict[str, Pay | None] = {}
    for letter, cell in zip("ABCDE", cells.split("|")):
        pays[letter] = Push() if cell == "push" else FixedOdds.to(int(cell))
    return label, clause, pays


# 627b.5(f), "x to 1" odds; "push" returns the wager.
GOLDEN_TALONS_PAYTABLES = odds_table("627b.5(f)", [
    _row(win_by(9), "627b.5(e)(1)", "30|20|30|20|30"),
    _row(win_by(8), "627b.5(e)(1)", "10|10|12|8|10"),
    _row(win_by(7), "627b.5(e)(1)", "6|5|5|7|4"),
    _row(win_by(6), "627b.5(e)(1)", "4|4|3|4|4"),
    _row(win_by(5), "627b.5(e)(1)", "2|2|3|3|2"),
    _row(win_by(4), "627b.5(e)(1)", "1|1|1|1|2"),
    _row(NATURAL_WIN, "627b.5(e)(2), (g)", "1|1|1|1|1"),
    _row(NATURAL_TIE, "627b.5(e)(2)", "push|2|push|push|push"),
])


@dataclass(frozen=True)
class GoldenTalons(LineWager):
    key: str
    hand: Hand
    paytable: Paytable
    rounding: Rounding = Rounding.DOWN
    section: str = "627b.5"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        if self.hand is Hand.PLAYER:
            mine, my_total, other_total = view.player, view.player_total, view.banker_total
        else:
            mine, my_total, other_total = view.banker, view.banker_total, view.player_total
        if is_natural(mine, my_total):
            if my_total > other_total:
                return self.paytable.line(NATURAL_WIN)  # 627b.5(g): never the margin lines
            if my_total == other_total:
                return self.paytable.line(NATURAL_TIE)
            return None  # a natural 8 beaten by a natural 9
        margin = my_total - other_total
        return self.paytable.line(win_by(margin)) if margin >= 4 else None


def make_golden_talons(key: str, hand: Hand, paytable: object,
                       rounding: Rounding = Rounding.DOWN) -> GoldenTalons:
    letter = choose(key, "paytable", paytable, GOLDEN_TALONS_PAYTABLES)
    return GoldenTalons(key, hand, GOLDEN_TALONS_PAYTABLES[letter], rounding)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

def _factory(hand: Hand) -> WagerFactory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return make_golden_talons(config.key, hand, config.paytable, game.payout_rounding)
    return make


for _side, _hand in HANDS.items():
    wager_rule(f"golden_talons_{_side}", section="627b.5", families=MINIBACCARAT,
               paytables=tuple("ABCDE"),
               description=f"Golden Talons on the {_side}'s hand")(_factory(_hand))
