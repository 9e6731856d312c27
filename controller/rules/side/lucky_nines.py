"""Lucky Nines (631c.4): nines among the first four cards, on a fully automated table only.

631c.4(a) allows the wager only "on a fully automated electronic gaming
table", so a configuration that offers it elsewhere is rejected. It settles
after the initial four cards and before any third card (631c.4(d)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from cards import Card, Rank, Suit
from controller.rules.money import Rounding
from controller.rules.side.combinatorics import CardClass
from controller.rules.registry import wager_rule
from controller.rules.side.common import (
    BACCARAT, FixedOdds, LineWager, ParSpace, PayLine, Paytable, SideWagerConfigError, choose,
    odds_table,
)
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, SettlementPoint, WagerRule

FOUR, THREE_SUITED, THREE, TWO_SUITED, TWO, ONE_DIAMOND, ONE = (
    "Four nines", "Three nines same suit", "Three nines", "Two nines same suit", "Two nines",
    "One nine diamonds", "One nine")


def _row(label: str, a: int, b: int, c: int, d: int) -> tuple[str, str, dict[str, FixedOdds | None]]:
    return (label, "631c.4(d)(2)", {"A": FixedOdds.to(a), "B": FixedOdds.to(b),
                                     "C": FixedOdds.to(c), "D": FixedOdds.to(d)})


LUCKY_NINES_PAYTABLES = odds_table("631c.4(e)", [
    _row(FOUR, 500, 500, 1000, 2000),
    _row(THREE_SUITED, 250, 250, 500, 500),
    _row(THREE, 20, 30, 35, 15),
    _row(TWO_SUITED, 8, 12, 16, 10),
    _row(TWO, 5, 5, 5, 4),
    _row(ONE_DIAMOND, 2, 2, 2, 2),
    _row(ONE, 1, 1, 1, 1),
])


@dataclass(frozen=True)
class LuckyNines(LineWager):
    key: str
    paytable: Paytable
    rounding: Rounding = Rounding.DOWN
    section: str = "631c.4"
    settles_at: SettlementPoint = SettlementPoint.FIRST_FOUR_CARDS
    par_space: ClassVar[str] = ParSpace.FIRST_FOUR
    lose_section: ClassVar[str] = "631c.4(d)(1)"

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        nines = [c for c in view.player[:2] + view.banker[:2] if c.rank == Rank.NINE]
        one_suit = len({c.suit for c in nines}) == 1
        if len(nines) == 4:
            return self.paytable.line(FOUR)
        if len(nines) == 3:
            return self.paytable.line(THREE_SUITED if one_suit else THREE)
        if len(nines) == 2:
            return self.paytable.line(TWO_SUITED if one_suit else TWO)
        if len(nines) == 1:
            return self.paytable.line(ONE_DIAMOND if nines[0].suit is Suit.DIAMONDS else ONE)
        return None

    def card_classes(self) -> Sequence[CardClass]:
        # Only a nine's suit matters; every other card is alike.
        return [(Card(Rank.NINE, s), 1) for s in Suit] + [(Card(Rank.TWO, Suit.CLUBS), 48)]


def make_lucky_nines(key: str, paytable: object, fully_automated: object,
                     rounding: Rounding = Rounding.DOWN) -> LuckyNines:
    letter = choose(key, "paytable", paytable, LUCKY_NINES_PAYTABLES)
    if fully_automated is not True:
        raise SideWagerConfigError(
            key, "fully_automated", fully_automated,
            "631c.4(a) offers Lucky Nines only on a fully automated electronic gaming table; "
            "set [game] fully_automated = true or remove the wager")
    return LuckyNines(key, LUCKY_NINES_PAYTABLES[letter], rounding)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

@wager_rule("lucky_nines", section="631c.4", families=BACCARAT, paytables=("A", "B", "C", "D"),
            description="Lucky Nines (fully automated tables only)")
def _lucky_nines(config: WagerConfig, game: GameConfig) -> WagerRule:
    return make_lucky_nines(config.key, config.paytable, game.fully_automated,
                            game.payout_rounding)
