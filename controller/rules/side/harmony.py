"""Harmony Progressive (627b.6): a tie, paid by the cards that make it.

Every line needs the Banker and the Player to tie (627b.6(h)); which lines a
paytable holds depends on its letter A-I (627b.6(i)). Fixed lines are "for 1"
(the wager is included: docs/rulings.md); six-of-a-kind pays 100% of the
progressive meter. Only the highest line hit is paid. Incrementation and
reserve rates follow the letter (627b.6(j)). Settled at the end of the round
(627b.6(f)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from cards import Card, Rank
from controller.rules.card_values import baccarat_value
from collections.abc import Mapping

from controller.rules.money import Rounding
from controller.rules.par import ProgressivePar
from controller.rules.registry import wager_rule
from controller.rules.side.common import (
    MAX_RESET_CENTS, MINIBACCARAT, FixedOdds, LineWager, MeterSpec, ParSpace, Pay, PayLine,
    Paytable, PaysMeter, SideWagerConfigError, choose, meter_par, odds_table,
)
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, SettlementPoint, WagerRule

SIX_OF_A_KIND = "Six-of-a-kind"
FOUR_EIGHTS = "Four 8's (4 cards dealt)"
FOUR_OF_A_KIND = "Four-of-a-kind (4 cards dealt)"
SIX_ZERO_VALUE = "Six 0-value cards"
TIE_0, TIE_1_5, TIE_6_9 = "Tie with 0", "Tie with 1-5", "Tie with 6-9"
TIE_SAME_COLOUR, ANY_TIE = "Tie (all cards same color)", "Any tie"
TIE_5_CARDS, TIE_6_CARDS, TIE_4_CARDS = "5 card tie", "6 card tie", "4 card tie"


def _tie_cards(v: RoundView) -> tuple[Card, ...]:
    return v.player + v.banker


# Outcome tests of 627b.6(g); each presumes a tie, checked once in classify.
OUTCOMES: dict[str, tuple[str, Callable[[RoundView], bool]]] = {
    SIX_OF_A_KIND: ("627b.6(g)(1)", lambda v: len(_tie_cards(v)) == 6
                    and len({c.rank for c in _tie_cards(v)}) == 1),
    FOUR_EIGHTS: ("627b.6(g)(2)", lambda v: len(_tie_cards(v)) == 4
                  and all(c.rank == Rank.EIGHT for c in _tie_cards(v))),
    FOUR_OF_A_KIND: ("627b.6(g)(3)", lambda v: len(_tie_cards(v)) == 4
                     and len({c.rank for c in _tie_cards(v)}) == 1),
    SIX_ZERO_VALUE: ("627b.6(g)(4)", lambda v: len(_tie_cards(v)) == 6
                     and all(baccarat_value(c) == 0 for c in _tie_cards(v))),
    TIE_0: ("627b.6(g)(5)", lambda v: v.player_total == 0),
    TIE_1_5: ("627b.6(g)(6)", lambda v: 1 <= v.player_total <= 5),
    TIE_6_9: ("627b.6(g)(7)", lambda v: v.player_total >= 6),
    TIE_SAME_COLOUR: ("627b.6(g)(8)", lambda v: len({c.suit.is_red for c in _tie_cards(v)}) == 1),
    ANY_TIE: ("627b.6(g)(9)", lambda v: True),
    TIE_5_CARDS: ("627b.6(g)(10)", lambda v: len(_tie_cards(v)) == 5),
    TIE_6_CARDS: ("627b.6(g)(11)", lambda v: len(_tie_cards(v)) == 6),
    TIE_4_CARDS: ("627b.6(g)(12)", lambda v: len(_tie_cards(v)) == 4),
}

_METER = PaysMeter("progressive", Fraction(1))


def _rows(spec: dict[str, str]) -> list[tuple[str, str, dict[str, Pay | None]]]:
    """Rows from 'n|n|n' cells over the letters of one sub-table; 'P' is 100% of the meter."""
    rows = []
    for label, cells in spec.items():
        letters = cells.split(":")[0]
        values = cells.split(":")[1].split("|")
        pays: dict[str, Pay | None] = {
            letter: _METER if value == "P" else FixedOdds.for_one(int(value))
            for letter, value in zip(letters, values)}
        rows.append((label, OUTCOMES[label][0], pays))
    return rows


# 627b.6(i), three sub-tables of three letters, each best line first.
HARMONY_PAYTABLES: dict[str, Paytable] = {}
for _spec in (
    {SIX_OF_A_KIND: "ABC:P|P|P", FOUR_EIGHTS: "ABC:1000|1000|600",
     FOUR_OF_A_KIND: "ABC:300|200|300", SIX_ZERO_VALUE: "ABC:100|100|100",
     TIE_0: "ABC:20|20|20", TIE_1_5: "ABC:6|5|5", TIE_6_9: "ABC:3|3|5"},
    {SIX_OF_A_KIND: "DEF:P|P|P", FOUR_EIGHTS: "DEF:600|1000|300",
     FOUR_OF_A_KIND: "DEF:300|300|300", SIX_ZERO_VALUE: "DEF:200|100|100",
     TIE_SAME_COLOUR: "DEF:20|20|20", ANY_TIE: "DEF:3|3|5"},
    {SIX_OF_A_KIND: "GHI:P|P|P", FOUR_EIGHTS: "GHI:600|1000|300",
     FOUR_OF_A_KIND: "GHI:200|200|300", SIX_ZERO_VALUE: "GHI:100|50|50",
     TIE_5_CARDS: "GHI:10|8|10", TIE_6_CARDS: "GHI:3|4|6", TIE_4_CARDS: "GHI:3|3|4"},
):
    HARMONY_PAYTABLES.update(odds_table("627b.6(i)", _rows(_spec)))

# 627b.6(j): (incrementation rate, reserve incrementation rate) per letter, in percent.
HARMONY_RATES: dict[str, tuple[Fraction, Fraction]] = {
    letter: (Fraction(15 if letter in "ACDFGI" else 19, 100),
             Fraction(3 if letter in "ACDFGI" else 5, 100))
    for letter in "ABCDEFGHI"
}


@dataclass(frozen=True)
class HarmonyProgressive(LineWager):
    key: str
    paytable: Paytable
    meter: MeterSpec
    rounding: Rounding = Rounding.DOWN
    section: str = "627b.6"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND
    par_space: ClassVar[str] = ParSpace.COUP_WITH_SUITS
    lose_section: ClassVar[str] = "627b.6(h)"

    par_wager_cents: int = 500  # the wager the meter figures of the par sheet assume

    @property
    def name(self) -> str:
        return "Harmony Progressive"

    def progressive_par(self, distribution: Mapping[str, Fraction]) -> ProgressivePar:
        reset = self.meter.reset_cents or 0
        note = (f"a {self.par_wager_cents}-cent wager; incrementation "
                f"{self.meter.increment_text} and reserve {self.meter.reserve_rate * 100}% "
                "(627b.6(j)) return to players over the meter's cycle")
        if not reset:
            note += "; no reseed_cents configured, so the return at reset counts a $0 meter"
        return meter_par(self.paytable, distribution, {"progressive": reset},
                         self.par_wager_cents, note)

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        if view.player_total != view.banker_total:
            return None  # 627b.6(h): a Banker or Player win loses
        for line in self.paytable.lines:
            if OUTCOMES[line.label][1](view):
                return line
        return None


def make_harmony(key: str, paytable: object, reseed_cents: object = None,
                 rounding: Rounding = Rounding.DOWN, par_wager_cents: int = 500
                 ) -> HarmonyProgressive:
    letter = choose(key, "paytable", paytable, HARMONY_PAYTABLES)
    if reseed_cents is not None and (
            isinstance(reseed_cents, bool) or not isinstance(reseed_cents, int)
            or not 0 < reseed_cents <= MAX_RESET_CENTS):
        raise SideWagerConfigError(key, "reseed_cents", reseed_cents, "a positive integer of "
                                   f"cents, at most {MAX_RESET_CENTS:,}")
    increment, reserve = HARMONY_RATES[letter]
    meter = MeterSpec("progressive", reseed_cents, increment, "627b.6(j)", reserve_rate=reserve)
    return HarmonyProgressive(key, HARMONY_PAYTABLES[letter], meter, rounding, par_wager_cents=par_wager_cents)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

@wager_rule("harmony_progressive", section="627b.6", families=MINIBACCARAT, progressive=True,
            paytables=tuple("ABCDEFGHI"),
            options={"reseed_cents": "the meter's seed and reseed amount in cents"},
            description="Harmony progressive")
def _harmony(config: WagerConfig, game: GameConfig) -> WagerRule:
    return make_harmony(config.key, config.paytable, config.options.get("reseed_cents"),
                        game.payout_rounding, config.min_cents or 500)
