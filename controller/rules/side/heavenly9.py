"""Heavenly 9 progressive (631c.2): a 3-card 9 in either hand, the progressive on a suited tie.

Paid from one table (631c.2(i)) whose fixed lines are "for 1": the amount
handed back *includes* the wager, so "299 for 1" wins 298 times the wager on
top of the returned wager (docs/rulings.md, "'for 1' odds"). Only the highest
line a round hits is paid. The all-suited 3-card-9 tie pays 100% of the meter;
the progressive system supplies that amount (`meter_win_cents`). Settled with
the Baccarat wagers at the end of the round (631c.2(f)).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from collections.abc import Mapping

from controller.rules.money import Rounding
from controller.rules.par import MysteryPar, ProgressivePar
from controller.rules.registry import wager_rule
from controller.rules.side.common import (
    BACCARAT, FixedOdds, LineWager, MeterSpec, ParSpace, PayLine, Paytable, PaysMeter,
    SideWagerConfigError, meter_par,
)
from controller.rules.side.mystery import MysteryConfiguration
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, Settlement, SettlementPoint, WagerRule

SUITED_TIE = "Player and banker 3-card tie, all cards same suit"
COLOURED_TIE = "Player and banker 3-card tie, all cards same color"
THREE_CARD_TIE = "Player and banker 3-card tie"
BANKER_NINE = "Banker 3-card 9"
PLAYER_NINE = "Player 3-card 9"

HEAVENLY_9_PAYTABLE = Paytable("631c.2(i)", "631c.2(i)", (
    PayLine(SUITED_TIE, PaysMeter("progressive", Fraction(1)), "631c.2(g)(1)"),
    PayLine(COLOURED_TIE, FixedOdds.for_one(299), "631c.2(g)(2)"),
    PayLine(THREE_CARD_TIE, FixedOdds.for_one(60), "631c.2(g)(3)"),
    PayLine(BANKER_NINE, FixedOdds.for_one(9), "631c.2(g)(4)"),
    PayLine(PLAYER_NINE, FixedOdds.for_one(8), "631c.2(g)(5)"),
))

# 631c.2(i): seed/reseed $10,000, increment rate 10% of each wager.
HEAVENLY_9_METER = MeterSpec("progressive", 1_000_000, Fraction(10, 100), "631c.2(i)",
                             minimum_reset_cents=1_000_000)
MINIMUM_WAGER_CENTS = 500  # 631c.2(c): no less than $5


@dataclass(frozen=True)
class Heavenly9Progressive(LineWager):
    key: str = "heavenly_9_progressive"
    mystery: MysteryConfiguration | None = None  # 631c.6, if the submission offers it
    rounding: Rounding = Rounding.DOWN
    paytable: Paytable = HEAVENLY_9_PAYTABLE
    meter: MeterSpec = HEAVENLY_9_METER
    section: str = "631c.2"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND
    par_space: ClassVar[str] = ParSpace.COUP_WITH_SUITS
    lose_section: ClassVar[str] = "631c.2(h)"

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        player_nine = len(view.player) == 3 and view.player_total == 9
        banker_nine = len(view.banker) == 3 and view.banker_total == 9
        if player_nine and banker_nine:
            cards = view.player + view.banker
            if len({c.suit for c in cards}) == 1:
                return self.paytable.line(SUITED_TIE)
            if len({c.suit.is_red for c in cards}) == 1:
                return self.paytable.line(COLOURED_TIE)
            return self.paytable.line(THREE_CARD_TIE)
        if banker_nine:
            return self.paytable.line(BANKER_NINE)
        if player_nine:
            return self.paytable.line(PLAYER_NINE)
        return None

    @property
    def name(self) -> str:
        return "Heavenly 9 Progressive"

    def progressive_par(self, distribution: Mapping[str, Fraction]) -> ProgressivePar:
        return meter_par(self.paytable, distribution, {"progressive": self.meter.reset_cents or 0},
                         MINIMUM_WAGER_CENTS,
                         f"a ${MINIMUM_WAGER_CENTS // 100} wager; the {self.meter.increment_text} "
                         "increment (631c.2(i)) returns to players over the meter's cycle "
                         "and is not in the figure at reset")

    def mystery_par(self) -> MysteryPar | None:
        if self.mystery is None:
            return None
        return MysteryPar(self.mystery.contribution_rate,
                          f"Must-Hit-By configuration {self.mystery.name} (631c.6(c)(4)): in the "
                          "long run the bonus pays out every contribution; the reset value is "
                          "funded by the operator and not included")

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        if amount_cents < MINIMUM_WAGER_CENTS:
            raise ValueError(f"{self.key}: a wager of {amount_cents} cents is below the "
                             f"{MINIMUM_WAGER_CENTS}-cent minimum of 631c.2(c)")
        return super().settle(seat, amount_cents, round_view)


def make_heavenly_9(key: str, mystery: object = None, mystery_wager_dollars: object = None,
                    rounding: Rounding = Rounding.DOWN) -> Heavenly9Progressive:
    from controller.rules.side.mystery import mystery_configuration

    config = None
    if mystery is not None:
        config = mystery_configuration(key, mystery, mystery_wager_dollars)
    elif mystery_wager_dollars is not None:
        raise SideWagerConfigError(key, "mystery_wager_dollars", mystery_wager_dollars,
                                   "only with mystery = 'A'..'D' (631c.6(c)(4))")
    return Heavenly9Progressive(key, config, rounding)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

@wager_rule("heavenly_9_progressive", section="631c.2", families=BACCARAT, progressive=True,
            options={"mystery": "Must-Hit-By Mystery configuration 'A'..'D' (631c.6(c)(4))",
                     "mystery_wager_dollars": "1, 2 or 5: the configuration's minimum "
                                              "progressive wager (631c.6(c)(4))"},
            description="Heavenly 9 progressive")
def _heavenly_9(config: WagerConfig, game: GameConfig) -> WagerRule:
    # 631c.2(c): a Heavenly 9 wager is no less than $5; refused here, not at settlement.
    if config.min_cents is None or config.min_cents < MINIMUM_WAGER_CENTS:
        raise SideWagerConfigError(
            config.key, "min_cents", config.min_cents,
            f"required, at least {MINIMUM_WAGER_CENTS} (631c.2(c): no less than $5)")
    return make_heavenly_9(config.key, config.options.get("mystery"),
                           config.options.get("mystery_wager_dollars"), game.payout_rounding)
