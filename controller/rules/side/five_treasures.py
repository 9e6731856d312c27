"""5 Treasures (631c.3): five end-of-round bonus wagers on particular three-card outcomes.

Fortune 7 (Banker wins with a 3-card 7), Golden 8 (Player wins with a 3-card
8), Heavenly 9 (a 3-card 9 in either hand; more if both), Blazing 7s (both
hands total 7) and Cover All (any of the other four wins), each paid from the
Rules Submission's paytable A or B (631c.3(h)). They settle with the Baccarat
wagers after the result (631c.3(e)).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cards import Card
from controller.rules.money import Rounding
from controller.rules.registry import WagerFactory, wager_rule
from controller.rules.side.common import (
    BACCARAT, FixedOdds, LineWager, PayLine, Paytable, choose, odds_table,
)
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, SettlementPoint, WagerRule

FORTUNE_7, GOLDEN_8 = "Fortune 7", "Golden 8"
HEAVENLY_9_BOTH, HEAVENLY_9_EITHER = "Heavenly 9, player and banker", "Heavenly 9, player or banker"
BLAZING_7S_3, BLAZING_7S_2 = "3-card Blazing 7s", "2-card Blazing 7s"
COVER_ALL = "Cover All"

# 631c.3(h); None is the regulation's "N/A": paytable A has no 2-card Blazing 7s line.
FIVE_TREASURES_PAYTABLES = odds_table("631c.3(h)", [
    (FORTUNE_7, "631c.3(f)(1)", {"A": FixedOdds.to(40), "B": FixedOdds.to(40)}),
    (GOLDEN_8, "631c.3(f)(2)", {"A": FixedOdds.to(25), "B": FixedOdds.to(25)}),
    (HEAVENLY_9_BOTH, "631c.3(f)(3)", {"A": FixedOdds.to(75), "B": FixedOdds.to(75)}),
    (HEAVENLY_9_EITHER, "631c.3(f)(3)", {"A": FixedOdds.to(10), "B": FixedOdds.to(10)}),
    (BLAZING_7S_3, "631c.3(f)(4)", {"A": FixedOdds.to(400), "B": FixedOdds.to(200)}),
    (BLAZING_7S_2, "631c.3(f)(4)", {"A": None, "B": FixedOdds.to(50)}),
    (COVER_ALL, "631c.3(f)(5)", {"A": FixedOdds.to(6), "B": FixedOdds.to(6)}),
])


class Treasure(enum.Enum):
    """The five wagers of 631c.3(b), with their configuration keys and paytable rows."""

    FORTUNE_7 = ("five_treasures_fortune_7", "631c.3(f)(1)", (FORTUNE_7,))
    GOLDEN_8 = ("five_treasures_golden_8", "631c.3(f)(2)", (GOLDEN_8,))
    HEAVENLY_9 = ("five_treasures_heavenly_9", "631c.3(f)(3)", (HEAVENLY_9_BOTH, HEAVENLY_9_EITHER))
    BLAZING_7S = ("five_treasures_blazing_7s", "631c.3(f)(4)", (BLAZING_7S_3, BLAZING_7S_2))
    COVER_ALL = ("five_treasures_cover_all", "631c.3(f)(5)", (COVER_ALL,))

    def __init__(self, key: str, clause: str, labels: tuple[str, ...]) -> None:
        self.key = key
        self.clause = clause
        self.labels = labels


def _three_card(cards: tuple[Card, ...], total: int, wanted: int) -> bool:
    return len(cards) == 3 and total == wanted


def treasure_label(treasure: Treasure, view: RoundView, table: Paytable) -> str | None:
    """The line of `table` that `treasure` wins on this round, if any (631c.3(f))."""
    p, b = view.player_total, view.banker_total
    if treasure is Treasure.FORTUNE_7:
        return FORTUNE_7 if b > p and _three_card(view.banker, b, 7) else None
    if treasure is Treasure.GOLDEN_8:
        return GOLDEN_8 if p > b and _three_card(view.player, p, 8) else None
    if treasure is Treasure.HEAVENLY_9:
        # Winning is not required: a 3-card 9 in a hand is enough (631c.3(f)(3)).
        nines = _three_card(view.player, p, 9) + _three_card(view.banker, b, 9)
        return HEAVENLY_9_BOTH if nines == 2 else HEAVENLY_9_EITHER if nines == 1 else None
    if treasure is Treasure.BLAZING_7S:
        if p != 7 or b != 7 or len(view.player) != len(view.banker):
            return None  # a 2-card 7 against a 3-card 7 is neither line (docs/rulings.md)
        label = BLAZING_7S_3 if len(view.player) == 3 else BLAZING_7S_2
        return label if label in table.labels else None  # paytable A: 2-card is "N/A"
    others = (Treasure.FORTUNE_7, Treasure.GOLDEN_8, Treasure.HEAVENLY_9, Treasure.BLAZING_7S)
    return COVER_ALL if any(treasure_label(t, view, table) for t in others) else None


@dataclass(frozen=True)
class FiveTreasuresWager(LineWager):
    key: str
    treasure: Treasure
    full_table: Paytable  # the whole lettered table; Cover All reads the other rows
    rounding: Rounding = Rounding.DOWN
    section: str = "631c.3"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        return Paytable(self.full_table.name, self.full_table.section, tuple(
            line for line in self.full_table.lines if line.label in self.treasure.labels))

    @property
    def lose_section(self) -> str:  # type: ignore[override]
        return "631c.3(g)"

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        label = treasure_label(self.treasure, view, self.full_table)
        return self.full_table.line(label) if label else None


def make_five_treasures(treasure: Treasure, paytable: object,
                        rounding: Rounding = Rounding.DOWN) -> FiveTreasuresWager:
    letter = choose(treasure.key, "paytable", paytable, FIVE_TREASURES_PAYTABLES)
    return FiveTreasuresWager(treasure.key, treasure, FIVE_TREASURES_PAYTABLES[letter], rounding)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

def _factory(treasure: Treasure) -> WagerFactory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return make_five_treasures(treasure, config.paytable, game.payout_rounding)
    return make


for _treasure in Treasure:
    wager_rule(_treasure.key, section=_treasure.clause, families=BACCARAT, paytables=("A", "B"),
               description=f"5 Treasures {_treasure.name.replace('_', ' ').title()}"
               )(_factory(_treasure))
