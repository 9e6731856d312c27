"""Commission-free Baccarat (631c.5) and Minibaccarat (627b.2).

No vigorish; instead a Banker win with a Point Count of 6 pays 1 to 2
(631c.5(i), 627b.2(i)). The optional Player Pair and Banker Pair (11 to 1) settle
before any third card (631c.5(d), 627b.2(d)); Lucky Six pays when the Banker
wins with 6 (631c.5(c)(3) and (k), 627b.2(c)(3) and (k)). `section` is the
chapter's section ("631c.5" or "627b.2"); the two are clause-for-clause alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from controller.rules.baccarat import Hand
from controller.rules.money import Rounding
from controller.rules.registry import WagerFactory, wager_rule
from controller.rules.side.card_facts import initial_two, is_pair
from controller.rules.side.common import (
    HANDS, FixedOdds, LineWager, ParSpace, PayLine, Paytable, Push, SideWagerConfigError,
)
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, SettlementPoint, WagerRule

BANKER_WINS_WITH_6, BANKER_WINS, PLAYER_WINS, TIE = (
    "Banker wins with 6", "Banker wins", "Player wins", "Tie")
PAIR = "Pair"
LUCKY_SIX_TWO_CARDS, LUCKY_SIX_THREE_CARDS = "Lucky Six, two cards", "Lucky Six, three cards"
LUCKY_SIX_TIE = "Six-six tie: wager returned"
SIX_SIX_TIE_RULES = ("loses", "returned")  # docs/rulings.md: Lucky Six on a 6-6 tie

# Where the base game says a Banker/Player wager ties and is returned.
_BASE_TIE = {"631c.5": "631a.8(a)(1)(iii)", "627b.2": "627a.7(a)"}


def banker_paytable(section: str) -> Paytable:
    return Paytable(f"{section}(i)", f"{section}(i)", (
        PayLine(BANKER_WINS_WITH_6, FixedOdds.to(1, 2), f"{section}(i)"),
        PayLine(BANKER_WINS, FixedOdds.to(1), f"{section}(i)"),
        PayLine(TIE, Push(), _BASE_TIE[section]),
    ))


@dataclass(frozen=True)
class CommissionFreeBanker(LineWager):
    """The Banker wager without vigorish: 1 to 1, but 1 to 2 on a winning 6."""

    key: str
    section: str
    rounding: Rounding = Rounding.DOWN
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        return banker_paytable(self.section)

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        if view.banker_total == view.player_total:
            return self.paytable.line(TIE)
        if view.banker_total > view.player_total:
            return self.paytable.line(BANKER_WINS_WITH_6 if view.banker_total == 6 else BANKER_WINS)
        return None


@dataclass(frozen=True)
class CommissionFreePlayer(LineWager):
    """The Player wager, 1 to 1 (631c.5(h), 627b.2(h)); a tie returns it."""

    key: str
    section: str
    rounding: Rounding = Rounding.DOWN
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        return Paytable(f"{self.section}(h)", f"{self.section}(h)", (
            PayLine(PLAYER_WINS, FixedOdds.to(1), f"{self.section}(h)"),
            PayLine(TIE, Push(), _BASE_TIE[self.section]),
        ))

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        if view.banker_total == view.player_total:
            return self.paytable.line(TIE)
        return self.paytable.line(PLAYER_WINS) if view.player_total > view.banker_total else None


@dataclass(frozen=True)
class CommissionFreeTie(LineWager):
    """The Tie wager at exactly 8 to 1 (631c.5(j), 627b.2(j))."""

    key: str
    section: str
    rounding: Rounding = Rounding.DOWN
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        return Paytable(f"{self.section}(j)", f"{self.section}(j)", (
            PayLine(TIE, FixedOdds.to(8), f"{self.section}(j)"),))

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        return self.paytable.line(TIE) if view.banker_total == view.player_total else None


@dataclass(frozen=True)
class PairWager(LineWager):
    """Player Pair / Banker Pair: the hand's initial two cards share a rank, 11 to 1.

    Used by commission-free play (631c.5(c)(1)-(2) and (g), 627b.2(c)(1)-(2) and
    (g)) and by Rising Phoenix (627b.4(g)(4)(xix)-(xx), (h)(2)). `clause` is the
    clause defining the win, `odds_clause` the one fixing the odds.
    """

    key: str
    hand: Hand
    clause: str
    odds_clause: str
    rounding: Rounding = Rounding.DOWN
    section: str = ""
    settles_at: SettlementPoint = SettlementPoint.FIRST_FOUR_CARDS
    par_space: ClassVar[str] = ParSpace.HAND

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        return Paytable(self.odds_clause, self.odds_clause, (
            PayLine(PAIR, FixedOdds.to(11), self.clause),))

    @property
    def lose_section(self) -> str:  # type: ignore[override]
        return self.clause

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        return self.paytable.line(PAIR) if is_pair(initial_two(view, self.hand)) else None


def commission_free_pair(key: str, section: str, hand: Hand,
                         rounding: Rounding = Rounding.DOWN) -> PairWager:
    clause = f"{section}(c)(1)" if hand is Hand.PLAYER else f"{section}(c)(2)"
    return PairWager(key, hand, clause, f"{section}(g)", rounding, section)


@dataclass(frozen=True)
class LuckySix(LineWager):
    """Lucky Six: the Banker wins with a Point Count of 6; 12 to 1 on two cards, 20 to 1 on three.

    A 6-6 tie loses by default (docs/rulings.md): (c)(3) wins only on a six that is
    *higher* than the Player's, and (k) pays only when the Banker's hand *wins*.
    `six_six_tie = "returned"` returns the wager instead (the text says neither).
    """

    key: str
    section: str
    rounding: Rounding = Rounding.DOWN
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND
    six_six_tie: str = "loses"

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        lines: tuple[PayLine, ...] = (
            PayLine(LUCKY_SIX_TWO_CARDS, FixedOdds.to(12), f"{self.section}(k)(1)"),
            PayLine(LUCKY_SIX_THREE_CARDS, FixedOdds.to(20), f"{self.section}(k)(2)"),
        )
        if self.six_six_tie == "returned":
            lines += (PayLine(LUCKY_SIX_TIE, Push(), f"{self.section}(c)(3)"),)
        return Paytable(f"{self.section}(k)", f"{self.section}(k)", lines)

    @property
    def lose_section(self) -> str:  # type: ignore[override]
        return f"{self.section}(c)(3)"

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        if view.banker_total == 6 == view.player_total and self.six_six_tie == "returned":
            return self.paytable.line(LUCKY_SIX_TIE)
        if view.banker_total != 6 or view.banker_total <= view.player_total:
            return None
        return self.paytable.line(
            LUCKY_SIX_TWO_CARDS if len(view.banker) == 2 else LUCKY_SIX_THREE_CARDS)


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

SECTION_BY_FAMILY = {"baccarat": "631c.5", "minibaccarat": "627b.2"}


def _tie(config: WagerConfig, game: GameConfig) -> WagerRule:
    if game.tie_odds != 8:
        raise SideWagerConfigError(config.key, "game.tie.odds", f"{game.tie_odds} to 1",
                                   "commission-free play pays a Tie at exactly 8 to 1 "
                                   "(631c.5(j), 627b.2(j))")
    return CommissionFreeTie(config.key, SECTION_BY_FAMILY[game.family], game.payout_rounding)


def _pair(hand: Hand) -> WagerFactory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return commission_free_pair(config.key, SECTION_BY_FAMILY[game.family], hand,
                                    game.payout_rounding)
    return make


def _lucky_six(config: WagerConfig, game: GameConfig) -> WagerRule:
    six_six = config.options.get("six_six_tie", "loses")
    if six_six not in SIX_SIX_TIE_RULES:
        raise SideWagerConfigError(config.key, "six_six_tie", six_six,
                                   f"one of {', '.join(map(repr, SIX_SIX_TIE_RULES))} "
                                   "(docs/rulings.md: Lucky Six on a 6-6 tie)")
    return LuckySix(config.key, SECTION_BY_FAMILY[game.family], game.payout_rounding,
                    six_six_tie=six_six)


# The commission-free Banker is registered by controller.rules.side.rising_phoenix: its
# `rising_phoenix` option chooses Rising Phoenix's Banker, which builds on this module.
for _family, _section in SECTION_BY_FAMILY.items():
    wager_rule("tie", section=f"{_section}(j)", families={_family}, variants={"commission-free"},
               description="Tie, commission-free (8 to 1)")(_tie)
    for _side, _hand in HANDS.items():
        wager_rule(f"{_side}_pair", section=f"{_section}(c)", families={_family},
                   variants={"commission-free"},
                   description=f"{_side.title()} Pair, 11 to 1")(_pair(_hand))
    wager_rule("lucky_six", section=f"{_section}(c)(3)", families={_family},
               variants={"commission-free"}, description="Lucky Six",
               options={"six_six_tie": "'loses' (default) or 'returned': a 6-6 tie "
                                       "(docs/rulings.md)"})(_lucky_six)
