"""The wagers of 631a: Banker, Player, Tie, Dragon Bonus, EZ Baccarat insurance, House Money.

Each rule decides a round from a few facts (totals, card counts, naturals)
through one `resolve` function used both by `settle` at the table and by
`par` in the par sheet, so the two cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from controller.rules.baccarat import point_count
from controller.rules.money import Rounding, payout_cents
from controller.rules.par import (
    ParContext, ParLine, Resolution, WagerPar, lines_from_resolutions, par_by_rounds, settlement_of,
)
from controller.rules.registry import FAMILIES_631A, WagerConfigError, wager_rule
from controller.rules.submission_types import GameConfig, VigorishConfig, WagerConfig
from controller.rules.wager import Outcome, RoundView, Settlement, SettlementPoint

WIN, LOSE, PUSH = Outcome.WIN, Outcome.LOSE, Outcome.PUSH


class BaccaratFacts(Protocol):
    """What 631a wagers look at; satisfied by `HandFacts` and by `par.RoundClass`."""

    @property
    def player_total(self) -> int: ...
    @property
    def banker_total(self) -> int: ...
    @property
    def player_cards(self) -> int: ...
    @property
    def banker_cards(self) -> int: ...
    @property
    def player_natural(self) -> bool: ...
    @property
    def banker_natural(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class HandFacts:
    """The facts of a dealt round that the 631a wagers read (`BaccaratFacts`)."""

    player_total: int
    banker_total: int
    player_cards: int
    banker_cards: int
    player_natural: bool
    banker_natural: bool

    @classmethod
    def of(cls, view: RoundView) -> HandFacts:
        # A round's wagers are settled from the same view, one after another: its facts are
        # read once. The view is frozen and the slot holds it (its identity stays its own);
        # hands given as tuples cannot change under it (a list could, so it is not kept).
        last = _LAST_FACTS
        if last[0] is view:
            return last[1]
        facts = cls(
            player_total=point_count(view.player), banker_total=point_count(view.banker),
            player_cards=len(view.player), banker_cards=len(view.banker),
            player_natural=point_count(view.player[:2]) >= 8,  # 631a.1 Natural
            banker_natural=point_count(view.banker[:2]) >= 8,
        )
        if type(view.player) is tuple and type(view.banker) is tuple:
            _remember_facts(view, facts)
        return facts


_LAST_FACTS: tuple[RoundView | None, HandFacts] = (None, HandFacts(0, 0, 0, 0, False, False))


def _remember_facts(view: RoundView, facts: HandFacts) -> None:
    global _LAST_FACTS
    _LAST_FACTS = (view, facts)  # one tuple, swapped whole: a reader sees a matching pair


def is_dragon_7(f: BaccaratFacts) -> bool:
    """631a.1: Banker's three-card 7 against a Player Point Count under 7."""
    return f.banker_cards == 3 and f.banker_total == 7 and f.player_total < 7


def is_panda_8(f: BaccaratFacts) -> bool:
    """631a.1: Player's three-card 8 against a Banker Point Count under 8."""
    return f.player_cards == 3 and f.player_total == 8 and f.banker_total < 8


@dataclass(frozen=True)
class _Rule631a:
    """Shared settle/par plumbing: subclasses implement `resolve(facts)`."""

    key: str
    name: str
    section: str
    rounding: Rounding
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    def resolve(self, f: BaccaratFacts) -> Resolution:
        raise NotImplementedError

    def vigorish(self) -> VigorishConfig | None:
        return None

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        r = self.resolve(HandFacts.of(round_view))
        return settlement_of(self.key, seat, amount_cents, r, self.rounding, self.vigorish())

    @property
    def paytable(self) -> str | None:
        return None

    def par(self, ctx: ParContext) -> WagerPar:
        return WagerPar(key=self.key, name=self.name, section=self.section,
                        lines=par_by_rounds(ctx, self.resolve), paytable=self.paytable,
                        notes=self.par_notes())

    def par_notes(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class BankerWager(_Rule631a):
    """631a.8(a)(1): Banker wins on the higher Point Count; 631a.13(c) vigorish; EZ pushes Dragon 7."""

    ez: bool = False
    vig: VigorishConfig | None = None

    def vigorish(self) -> VigorishConfig | None:
        return self.vig

    def resolve(self, f: BaccaratFacts) -> Resolution:
        if self.ez and is_dragon_7(f):
            return Resolution(PUSH, "Dragon 7: Banker pushes", "631a.8(a)(1)(iii)")
        if f.banker_total > f.player_total:
            rate = self.vig.rate if self.vig is not None else Fraction(0)
            section = "631a.13(c)" if self.vig is not None else "631a.8(a)(1)(i)"
            return Resolution(WIN, "Banker wins", section, Fraction(1), rate)
        if f.banker_total < f.player_total:
            return Resolution(LOSE, "Player wins", "631a.8(a)(1)(ii)")
        return Resolution(PUSH, "Tie: Banker wager returned", "631a.8(a)(1)(iii)")

    def par_notes(self) -> tuple[str, ...]:
        if self.vig is None:
            return ("EZ Baccarat: no vigorish (631a.13(c)); Dragon 7 pushes",) if self.ez else ()
        notes = [f"vigorish {float(self.vig.rate) * 100:g}% of the win (631a.13(c)), "
                 f"collected {self.vig.collection}"]
        if self.vig.round_up_to_25c:
            notes.append("figures assume exact 5%; the round-up to 25 cents adds to the edge "
                         "by an amount that depends on the wager size")
        return tuple(notes)


@dataclass(frozen=True)
class PlayerWager(_Rule631a):
    """631a.8(a)(2), 631a.13(a): Player wins 1 to 1 on the higher Point Count."""

    def resolve(self, f: BaccaratFacts) -> Resolution:
        if f.player_total > f.banker_total:
            return Resolution(WIN, "Player wins", "631a.13(a)", Fraction(1))
        if f.player_total < f.banker_total:
            return Resolution(LOSE, "Banker wins", "631a.8(a)(2)(ii)")
        return Resolution(PUSH, "Tie: Player wager returned", "631a.8(a)(2)(iii)")


@dataclass(frozen=True)
class TieWager(_Rule631a):
    """631a.8(a)(3), 631a.13(b): Tie pays the configured odds (at least 8 to 1)."""

    odds: Fraction = Fraction(8)

    def resolve(self, f: BaccaratFacts) -> Resolution:
        if f.player_total == f.banker_total:
            return Resolution(WIN, "Tie", "631a.13(b)", self.odds)
        return Resolution(LOSE, "No tie", "631a.8(a)(3)(ii)")


# 631a.13(e): Dragon Bonus paytables, keyed by winning margin; 0 is "Natural winner".
DRAGON_BONUS_PAYTABLES: dict[str, dict[int, int]] = {
    "A": {9: 30, 8: 10, 7: 6, 6: 4, 5: 2, 4: 1, 0: 1},
    "B": {9: 20, 8: 8, 7: 7, 6: 4, 5: 3, 4: 1, 0: 1},
    "C": {9: 30, 8: 10, 7: 4, 6: 4, 5: 2, 4: 2, 0: 1},
}


@dataclass(frozen=True)
class DragonBonusWager(_Rule631a):
    """631a.8(a)(4), 631a.13(e): Dragon Bonus on one hand; no vigorish."""

    side: str = "player"  # "player" or "banker"
    table: str = "A"

    @property
    def paytable(self) -> str | None:
        return self.table

    def resolve(self, f: BaccaratFacts) -> Resolution:
        if self.side == "player":
            mine, other = f.player_total, f.banker_total
            my_nat, other_nat = f.player_natural, f.banker_natural
        else:
            mine, other = f.banker_total, f.player_total
            my_nat, other_nat = f.banker_natural, f.player_natural
        pays = DRAGON_BONUS_PAYTABLES[self.table]
        if my_nat:
            if not other_nat:
                return Resolution(WIN, "Natural winner", "631a.8(a)(4)(i)(A)", Fraction(pays[0]))
            if mine > other:
                return Resolution(WIN, "Natural 9 over Natural 8", "631a.8(a)(4)(i)(B)",
                                  Fraction(pays[0]))
            if mine < other:
                return Resolution(LOSE, "Natural 8 against Natural 9", "631a.8(a)(4)(ii)(A)")
            return Resolution(PUSH, "Natural tie", "631a.8(a)(4)(iii)")
        margin = mine - other
        if margin >= 4:
            return Resolution(WIN, f"Win by {margin} points", "631a.8(a)(4)(i)(C)",
                              Fraction(pays[margin]))
        if margin <= 0:
            return Resolution(LOSE, "Not a Natural, not ahead", "631a.8(a)(4)(ii)(B)")
        return Resolution(LOSE, "Win by fewer than 4 points", "631a.8(a)(4)(ii)(C)")


@dataclass(frozen=True)
class Dragon7Wager(_Rule631a):
    """631a.8(a)(5), 631a.13(f): Dragon 7 Insurance, 40 to 1 (EZ Baccarat only)."""

    def resolve(self, f: BaccaratFacts) -> Resolution:
        if is_dragon_7(f):
            return Resolution(WIN, "Dragon 7", "631a.13(f)", Fraction(40))
        return Resolution(LOSE, "No Dragon 7", "631a.8(a)(5)(ii)")


@dataclass(frozen=True)
class Panda8Wager(_Rule631a):
    """631a.8(a)(6), 631a.13(g): Panda 8 Insurance, 25 to 1 (EZ Baccarat only)."""

    def resolve(self, f: BaccaratFacts) -> Resolution:
        if is_panda_8(f):
            return Resolution(WIN, "Panda 8", "631a.13(g)", Fraction(25))
        return Resolution(LOSE, "No Panda 8", "631a.8(a)(6)(ii)")


@dataclass(frozen=True)
class HouseMoneyWager:
    """631a.8(a)(7), 631a.13(h): a pair in the first two cards of either hand; first-four settlement.

    `ride_percent` is the part of a winning payout (631a.9(e)(1)(i)) the
    player may add to the original Player or Banker wager: 100 means all.
    """

    key: str
    rounding: Rounding
    ride_percent: int = 100
    name: str = "House Money"
    section: str = "631a.8(a)(7)"
    settles_at: SettlementPoint = SettlementPoint.FIRST_FOUR_CARDS

    @staticmethod
    def resolve_ranks(player_pair: bool, banker_pair: bool) -> Resolution:
        if player_pair and banker_pair:
            return Resolution(WIN, "Player and Banker Pair", "631a.13(h)", Fraction(15))
        if player_pair or banker_pair:
            return Resolution(WIN, "Player or Banker Pair", "631a.13(h)", Fraction(3))
        return Resolution(LOSE, "No pair", "631a.8(a)(7)(ii)")

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        if len(round_view.player) < 2 or len(round_view.banker) < 2:
            raise ValueError("House Money settles after the first four cards (631a.9(e))")
        p, b = round_view.player, round_view.banker
        r = self.resolve_ranks(p[0].rank == p[1].rank, b[0].rank == b[1].rank)
        return settlement_of(self.key, seat, amount_cents, r, self.rounding)

    def ride_cents(self, settlement: Settlement) -> int:
        """631a.9(e)(1)(i): the most of a winning payout that may ride on the main wager."""
        if settlement.outcome is not WIN:
            return 0
        return payout_cents(settlement.win_cents, Fraction(self.ride_percent, 100), Rounding.DOWN)

    def par(self, ctx: ParContext) -> WagerPar:
        weights: dict[Resolution, int] = {}
        for (p_pair, b_pair), w in ctx.first_two_pairs.items():
            r = self.resolve_ranks(p_pair, b_pair)
            weights[r] = weights.get(r, 0) + w
        lines: tuple[ParLine, ...] = lines_from_resolutions(weights, ctx.four_card_denominator)
        return WagerPar(key=self.key, name=self.name, section=self.section, lines=lines,
                        notes=("the ride option (631a.9(e)(1)) moves a won payout onto the main "
                               "wager; it does not change this wager's return",))


def _no_options(config: WagerConfig) -> None:
    return None


@wager_rule("banker", section="631a.8(a)(1)", families=FAMILIES_631A, variants={"standard", "ez"},
            description="Banker's Hand")
def _make_banker(config: WagerConfig, game: GameConfig) -> BankerWager:
    return BankerWager(key=config.key, name="Banker", section="631a.8(a)(1)",
                       rounding=game.payout_rounding, ez=game.variant == "ez",
                       vig=None if game.variant == "ez" else game.vigorish)


@wager_rule("player", section="631a.8(a)(2)", families=FAMILIES_631A, description="Player's Hand")
def _make_player(config: WagerConfig, game: GameConfig) -> PlayerWager:
    return PlayerWager(key=config.key, name="Player", section="631a.8(a)(2)",
                       rounding=game.payout_rounding)


@wager_rule("tie", section="631a.8(a)(3)", families=FAMILIES_631A, description="Tie")
def _make_tie(config: WagerConfig, game: GameConfig) -> TieWager:
    return TieWager(key=config.key, name=f"Tie ({game.tie_odds} to 1)", section="631a.8(a)(3)",
                    rounding=game.payout_rounding, odds=game.tie_odds)


def _dragon_bonus(side: str):  # type: ignore[no-untyped-def]
    def make(config: WagerConfig, game: GameConfig) -> DragonBonusWager:
        assert config.paytable is not None
        return DragonBonusWager(key=config.key, name=f"Dragon Bonus ({side})",
                                section="631a.8(a)(4)", rounding=game.payout_rounding,
                                side=side, table=config.paytable)
    return make


for _side in ("player", "banker"):
    wager_rule(f"dragon_bonus_{_side}", section="631a.8(a)(4)", families=FAMILIES_631A,
               paytables=("A", "B", "C"),
               description=f"Dragon Bonus on the {_side.title()}'s Hand")(_dragon_bonus(_side))


@wager_rule("dragon_7", section="631a.8(a)(5)", families=FAMILIES_631A, variants={"ez"},
            description="Dragon 7 Insurance (EZ Baccarat)")
def _make_dragon_7(config: WagerConfig, game: GameConfig) -> Dragon7Wager:
    return Dragon7Wager(key=config.key, name="Dragon 7 Insurance", section="631a.8(a)(5)",
                        rounding=game.payout_rounding)


@wager_rule("panda_8", section="631a.8(a)(6)", families=FAMILIES_631A, variants={"ez"},
            description="Panda 8 Insurance (EZ Baccarat)")
def _make_panda_8(config: WagerConfig, game: GameConfig) -> Panda8Wager:
    return Panda8Wager(key=config.key, name="Panda 8 Insurance", section="631a.8(a)(6)",
                       rounding=game.payout_rounding)


@wager_rule("house_money", section="631a.8(a)(7)", families=FAMILIES_631A,
            options={"ride_percent": "percent of a winning payout the player may ride "
                                     "(631a.9(e)(1)(i)); 100 = all"},
            description="House Money (pair in either hand's first two cards)")
def _make_house_money(config: WagerConfig, game: GameConfig) -> HouseMoneyWager:
    ride = config.options.get("ride_percent", 100)
    if isinstance(ride, bool) or not isinstance(ride, int) or not 1 <= ride <= 100:
        raise WagerConfigError("ride_percent", ride,
                               "must be an integer 1..100 (631a.9(e)(1)(i); 100 = all)")
    return HouseMoneyWager(key=config.key, rounding=game.payout_rounding, ride_percent=ride)
