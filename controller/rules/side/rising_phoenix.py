"""Rising Phoenix Baccarat (627b.4): a Minibaccarat variation with twenty Bonus wagers.

Offered as a standard commission or a commission-free game (627b.4(b)). In
its commission-free form a Banker win with a three-card 7 ties and is returned
(627b.4(g)(1)(iv)); otherwise Banker, Player and Tie are paid as in 627a.12
(627b.4(h)(1)). Each Bonus wager of 627b.4(g)(4) is its own spot with fixed
odds (627b.4(h)(2)); all settle at the end of the round except the two pair
wagers, settled on the initial cards as in 627b.2(d) (docs/rulings.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from controller.rules.baccarat import Hand
from controller.rules.money import Rounding, vigorish_cents
from controller.rules.registry import WagerFactory, wager_rule
from controller.rules.side.commission_free import SECTION_BY_FAMILY as COMMISSION_FREE_SECTIONS
from controller.rules.side.commission_free import (
    BANKER_WINS, TIE, CommissionFreeBanker, PairWager,
)
from controller.rules.side.common import (
    MINIBACCARAT, FixedOdds, LineWager, PayLine, Paytable, Push, SideWagerConfigError,
    settle_line,
)
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, Settlement, SettlementPoint, WagerRule

Predicate = Callable[[RoundView], bool]


def _winner(v: RoundView) -> tuple[int, int, int, int] | None:
    """(winner's total, winner's cards, loser's total, loser's cards), or None on a tie."""
    if v.player_total > v.banker_total:
        return v.player_total, len(v.player), v.banker_total, len(v.banker)
    if v.banker_total > v.player_total:
        return v.banker_total, len(v.banker), v.player_total, len(v.player)
    return None


def _over(win_total: int, lose_total: int, cards: int | None = None) -> Predicate:
    """Either hand wins with `win_total` over `lose_total`; `cards`: both hands hold that many."""

    def test(v: RoundView) -> bool:
        w = _winner(v)
        if w is None or (w[0], w[2]) != (win_total, lose_total):
            return False
        return cards is None or (w[1] == cards and w[3] == cards)

    return test


def _tie_in(totals: tuple[int, ...]) -> Predicate:
    return lambda v: v.player_total == v.banker_total and v.player_total in totals


@dataclass(frozen=True, slots=True)
class PhoenixBonus:
    key: str
    label: str
    clause: str  # 627b.4(g)(4)(...)
    odds: int  # "to 1", 627b.4(h)(2)
    wins: Predicate


_G, _H = "627b.4(g)(4)", "627b.4(h)(2)"

RISING_PHOENIX_BONUSES: tuple[PhoenixBonus, ...] = (
    PhoenixBonus("sun_7", "Sun 7", f"{_G}(i)", 40,
                 lambda v: v.banker_total > v.player_total and len(v.banker) == 3
                 and v.banker_total == 7),
    PhoenixBonus("moon_8", "Moon 8", f"{_G}(ii)", 25,
                 lambda v: v.player_total > v.banker_total and len(v.player) == 3
                 and v.player_total == 8),
    PhoenixBonus("nine_over_seven", "9 over 7", f"{_G}(iii)", 25, _over(9, 7)),
    PhoenixBonus("two_card_8_over_two_card_1", "2-card 8 over 2-card 1", f"{_G}(iv)", 50,
                 _over(8, 1, cards=2)),
    PhoenixBonus("player_wins_three_card_6", "Player win with a 3-card 6", f"{_G}(v)", 40,
                 lambda v: v.player_total > v.banker_total and len(v.player) == 3
                 and v.player_total == 6),
    PhoenixBonus("banker_wins_1_or_2", "Banker win with 1 or 2", f"{_G}(vi)", 60,
                 lambda v: v.banker_total > v.player_total and v.banker_total in (1, 2)),
    PhoenixBonus("both_8_or_9", "Player and Banker have an 8 or 9", f"{_G}(vii)", 20,
                 lambda v: v.player_total >= 8 and v.banker_total >= 8),
    PhoenixBonus("one_over_zero", "1 over 0", f"{_G}(viii)", 90, _over(1, 0)),
    PhoenixBonus("three_card_6_over_three_card_3", "3-card 6 over 3-card 3", f"{_G}(ix)", 150,
                 _over(6, 3, cards=3)),
    PhoenixBonus("three_card_8_over_three_card_0", "3-card 8 over 3-card 0", f"{_G}(x)", 130,
                 _over(8, 0, cards=3)),
    PhoenixBonus("banker_over_two_card_7", "Banker win over a 2-card 7", f"{_G}(xi)", 30,
                 lambda v: v.banker_total > v.player_total and len(v.player) == 2
                 and v.player_total == 7),
    PhoenixBonus("three_card_9_over_three_card_6", "3-card 9 over 3-card 6", f"{_G}(xii)", 200,
                 _over(9, 6, cards=3)),
    PhoenixBonus("three_card_9_over_three_card_8", "3-card 9 over 3-card 8", f"{_G}(xiii)", 200,
                 _over(9, 8, cards=3)),
    PhoenixBonus("player_three_card_8_over_three_card_0", "Player win with a 3-card 8 over 3-card 0",
                 f"{_G}(xiv)", 250,
                 lambda v: v.player_total == 8 and v.banker_total == 0
                 and len(v.player) == 3 and len(v.banker) == 3),
    PhoenixBonus("tie_0", "Tie with 0", f"{_G}(xv)", 150, _tie_in((0,))),
    PhoenixBonus("tie_1_2_3", "Tie with 1, 2 or 3", f"{_G}(xvi)", 70, _tie_in((1, 2, 3))),
    PhoenixBonus("tie_4_5_6_7", "Tie with 4, 5, 6 or 7", f"{_G}(xvii)", 15, _tie_in((4, 5, 6, 7))),
    PhoenixBonus("tie_8_or_9", "Tie with 8 or 9", f"{_G}(xviii)", 40, _tie_in((8, 9))),
)
RISING_PHOENIX_PAIRS = {
    "player_pair": (Hand.PLAYER, f"{_G}(xix)"),  # 11 to 1, (h)(2)
    "banker_pair": (Hand.BANKER, f"{_G}(xx)"),
}


@dataclass(frozen=True)
class RisingPhoenixBonus(LineWager):
    key: str
    bonus: PhoenixBonus
    rounding: Rounding = Rounding.DOWN
    section: str = "627b.4"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        return Paytable(_H, _H, (PayLine(self.bonus.label, FixedOdds.to(self.bonus.odds),
                                         self.bonus.clause),))

    @property
    def lose_section(self) -> str:  # type: ignore[override]
        return self.bonus.clause

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        return self.paytable.lines[0] if self.bonus.wins(view) else None


def rising_phoenix_pair(which: str, key: str | None = None,
                        rounding: Rounding = Rounding.DOWN) -> PairWager:
    """`which` is "player_pair" or "banker_pair"; `key` the configuration key (default `which`)."""
    hand, clause = RISING_PHOENIX_PAIRS[which]
    return PairWager(key or which, hand, clause, _H, rounding, "627b.4")


BANKER_THREE_CARD_7 = "Banker wins with a 3-card 7"
VIGORISH_RATE = Fraction(5, 100)  # 627a.12, as 631a.13(c)


@dataclass(frozen=True)
class RisingPhoenixBanker(LineWager):
    """The Banker wager of Rising Phoenix (627b.4(g)(1)).

    Commission-free: 1 to 1, no vigorish, and a winning 3-card 7 ties and is
    returned ((g)(1)(iv)). Standard: 1 to 1 less the 5% vigorish of 627a.12.
    """

    key: str
    commission_free: bool
    rounding: Rounding = Rounding.DOWN
    vigorish_round_up_to_25c: bool = False
    section: str = "627b.4"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        lines = [PayLine(BANKER_WINS, FixedOdds.to(1), "627b.4(g)(1)(i)"),
                 PayLine(TIE, Push(), "627b.4(g)(1)(iii)")]
        if self.commission_free:
            lines.insert(0, PayLine(BANKER_THREE_CARD_7, Push(), "627b.4(g)(1)(iv)"))
        return Paytable("627b.4(g)(1)", "627b.4(h)(1)", tuple(lines))

    @property
    def lose_section(self) -> str:  # type: ignore[override]
        return "627b.4(g)(1)(ii)"

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        if view.banker_total == view.player_total:
            return self.paytable.line(TIE)
        if view.banker_total < view.player_total:
            return None
        if self.commission_free and len(view.banker) == 3 and view.banker_total == 7:
            return self.paytable.line(BANKER_THREE_CARD_7)
        return self.paytable.line(BANKER_WINS)

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        settlement = settle_line(self.key, seat, amount_cents, self.classify(round_view, seat),
                                 self.lose_section, self.rounding)
        if self.commission_free or settlement.win_cents == 0:
            return settlement
        vig = vigorish_cents(settlement.win_cents, VIGORISH_RATE,
                             round_up_to_25c=self.vigorish_round_up_to_25c)
        return Settlement(settlement.wager, seat, amount_cents, settlement.outcome, settlement.odds,
                          settlement.win_cents, vig, settlement.label, "627a.12")

    def par_odds(self, line: PayLine) -> Fraction:
        odds = super().par_odds(line)
        return odds if self.commission_free else odds * (1 - VIGORISH_RATE)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

def check_rising_phoenix_decks(config: WagerConfig, game: GameConfig) -> None:
    """627b.4(f): Rising Phoenix is dealt from six or eight decks (seven is not allowed)."""
    if game.decks not in (6, 8):
        raise SideWagerConfigError(config.key, "game.decks", game.decks,
                                   "Rising Phoenix is played with 6 or 8 decks (627b.4(f))")


# The commission-free Banker of 631c.5/627b.2 is registered here, not in commission_free:
# its `rising_phoenix` option makes it Rising Phoenix's Banker instead (627b.4(b)).
def _commission_free_banker(config: WagerConfig, game: GameConfig) -> WagerRule:
    rising_phoenix = config.options.get("rising_phoenix", False)
    if not isinstance(rising_phoenix, bool) or (rising_phoenix and game.family != "minibaccarat"):
        raise SideWagerConfigError(config.key, "rising_phoenix", rising_phoenix,
                                   "true or false; true only for a minibaccarat table "
                                   "(627b.4(b))")
    if rising_phoenix:
        check_rising_phoenix_decks(config, game)
        # 627b.4(g)(1)(iv) and (h)(1): a winning 3-card 7 pushes; no 1-to-2 on a 6.
        return RisingPhoenixBanker(config.key, True, game.payout_rounding)
    return CommissionFreeBanker(config.key, COMMISSION_FREE_SECTIONS[game.family],
                                game.payout_rounding)


for _family, _section in COMMISSION_FREE_SECTIONS.items():
    wager_rule("banker", section=f"{_section}(i)", families={_family},
               variants={"commission-free"},
               options={"rising_phoenix": "true: the commission-free Rising Phoenix Banker "
                                           "of 627b.4(g)(1)(iv) (minibaccarat only)"},
               description="Banker's Hand, commission-free")(_commission_free_banker)


def _bonus(bonus: PhoenixBonus) -> WagerFactory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        check_rising_phoenix_decks(config, game)
        return RisingPhoenixBonus(config.key, bonus, game.payout_rounding)
    return make


for _bonus_wager in RISING_PHOENIX_BONUSES:
    wager_rule(f"rising_phoenix_{_bonus_wager.key}", section=_bonus_wager.clause,
               families=MINIBACCARAT,
               description=f"Rising Phoenix {_bonus_wager.label}")(_bonus(_bonus_wager))


def _pair(name: str) -> WagerFactory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        check_rising_phoenix_decks(config, game)
        return rising_phoenix_pair(name, config.key, game.payout_rounding)
    return make


for _name in RISING_PHOENIX_PAIRS:
    wager_rule(f"rising_phoenix_{_name}", section="627b.4(g)(4)", families=MINIBACCARAT,
               description=f"Rising Phoenix {_name.replace('_', ' ')}")(_pair(_name))
