"""21 Baccarat (681a): blackjack-style totals, naturals, draw to 16, settlement, Bonus wagers.

`TwentyOneCoup` is the sans-I/O coup, driven exactly like `BaccaratCoup`
through `next_card()` / `place(card)` / `complete` / `result()`.
Rulings on what 681a leaves open are in docs/rulings.md:

* 681a.7(g) says "one additional card"; 681a.2(b)(7)(i) says hands "draw to
  16 and stand on all 17s". Default `draw_rule = "one-card"`: a hand under 17
  takes exactly one more card (the Player's first) and then stands, which
  reads both texts literally, matches 681a.3(e)'s three-card Bonus hands, and
  is the only reading under which the 10 to 1 Tie keeps a house edge
  (docs/rulings.md). `"to-17"` (draw until 17 or more) is configurable.
* 681a.3(e) Bonus hands are judged on a hand's first three cards (the Bonus-
  only card of 681a.7(f)(2) included); a pair on the first two cards only.
* A three-card straight treats the ace as low (A-2-3) or high (Q-K-A); no wrap.
* How a natural compares with other hands, and whether two aces count as 21,
  is `hand21`'s (`[game.naturals] rule`, default "natural-wins").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from cards import Card
from controller.rules.baccarat import Hand, NextCard, Winner
from controller.rules.hand21 import (
    NATURAL_WINS,
    STAND,
    hand_total,
    hand_value,
    is_natural,
    main_total,
    winner_21,
    wins_with_17,
)
from controller.rules.money import Rounding
from controller.rules.par import (
    ParContext,
    ParUnavailable,
    Resolution,
    WagerPar,
    lines_from_resolutions,
    settlement_of,
)
from controller.rules.par21 import TwentyOneEnumeration
from controller.rules.registry import FAMILY_681A, wager_rule
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import Outcome, RoundView, Settlement, SettlementPoint

@dataclass(frozen=True, slots=True)
class TwentyOneResult:
    """A complete 681a round: each hand's cards (Bonus-only cards apart), totals, winner."""

    player: tuple[Card, ...]
    banker: tuple[Card, ...]
    player_extra: tuple[Card, ...]
    banker_extra: tuple[Card, ...]
    player_total: int
    banker_total: int
    winner: Winner
    player_natural: bool
    banker_natural: bool


@dataclass
class TwentyOneCoup:
    """One 21 Baccarat round; cards placed in the order of 681a.7(e)-(g)."""

    draw_rule: str = "one-card"
    bonus_wagered: bool = False
    natural_rule: str = NATURAL_WINS  # hand21: how naturals compare, two aces' total
    player: list[Card] = field(default_factory=list)
    banker: list[Card] = field(default_factory=list)
    player_extra: list[Card] = field(default_factory=list)
    banker_extra: list[Card] = field(default_factory=list)
    _player_drawn: int = 0
    _banker_drawn: int = 0

    @property
    def cards_dealt(self) -> int:
        return len(self.player) + len(self.banker) + len(self.player_extra) + len(self.banker_extra)

    @property
    def initial_cards_complete(self) -> bool:
        return len(self.player) + len(self.banker) >= 4

    def _total(self, cards: list[Card]) -> int:
        return main_total([c.rank for c in cards], self.natural_rule)

    def next_card(self) -> NextCard:
        dealt = len(self.player) + len(self.banker)
        if dealt < 4:  # 681a.7(e)(1)-(4)
            return (NextCard.PLAYER_FIRST, NextCard.BANKER_FIRST,
                    NextCard.PLAYER_SECOND, NextCard.BANKER_SECOND)[dealt]
        p_nat = is_natural([c.rank for c in self.player[:2]])
        b_nat = is_natural([c.rank for c in self.banker[:2]])
        if p_nat or b_nat:
            if not self.bonus_wagered:
                return NextCard.NONE  # 681a.7(f)(1)
            # 681a.7(f)(2): one Bonus-only card to a hand under 17, Player's first.
            if not self.player_extra and self._total(self.player) < STAND:
                return NextCard.PLAYER_BONUS_EXTRA
            if not self.banker_extra and self._total(self.banker) < STAND:
                return NextCard.BANKER_BONUS_EXTRA
            return NextCard.NONE
        one_card = self.draw_rule == "one-card"
        if self._total(self.player) < STAND and not (one_card and len(self.player) > 2):
            return NextCard.PLAYER_DRAW  # 681a.7(g)
        if self._total(self.banker) < STAND and not (one_card and len(self.banker) > 2):
            return NextCard.BANKER_DRAW
        return NextCard.NONE

    @property
    def complete(self) -> bool:
        return self.next_card() is NextCard.NONE

    def place(self, card: Card) -> NextCard:
        slot = self.next_card()
        if slot is NextCard.NONE:
            raise ValueError("the coup is complete: no further card (681a.9(b))")
        if slot is NextCard.PLAYER_BONUS_EXTRA:
            self.player_extra.append(card)
        elif slot is NextCard.BANKER_BONUS_EXTRA:
            self.banker_extra.append(card)
        elif slot.hand is Hand.PLAYER:
            self.player.append(card)
        else:
            self.banker.append(card)
        return slot

    def round_view(self) -> RoundView:
        return RoundView(
            player=tuple(self.player), banker=tuple(self.banker),
            player_total=self._total(self.player), banker_total=self._total(self.banker),
            extra=tuple(self.player_extra) + tuple(self.banker_extra),
            player_extra=tuple(self.player_extra), banker_extra=tuple(self.banker_extra),
        )

    def result(self) -> TwentyOneResult:
        if not self.complete:
            raise ValueError(f"the coup is not complete: next is {self.next_card().value}")
        p_value = hand_value([c.rank for c in self.player], self.natural_rule)
        b_value = hand_value([c.rank for c in self.banker], self.natural_rule)
        return TwentyOneResult(
            player=tuple(self.player), banker=tuple(self.banker),
            player_extra=tuple(self.player_extra), banker_extra=tuple(self.banker_extra),
            player_total=self._total(self.player), banker_total=self._total(self.banker),
            winner=winner_21(p_value, b_value),
            player_natural=is_natural([c.rank for c in self.player[:2]]),
            banker_natural=is_natural([c.rank for c in self.banker[:2]]),
        )


# 681a.8(c): Bonus paytables by deck count; lines in the order of 681a.3(e).
BONUS_LINES = ("Three 7s", "Three-of-a-kind", "Three-card straight", "Three-card 21", "One pair")
BONUS_PAYTABLES: dict[str, tuple[int, int, int, int, int]] = {
    "A": (100, 40, 11, 5, 3), "B": (80, 40, 12, 5, 3), "C": (80, 40, 10, 6, 3),  # four decks
    "D": (100, 40, 10, 5, 3), "E": (80, 40, 11, 5, 3), "F": (80, 35, 12, 5, 3),  # eight decks
}
BONUS_SECTIONS = ("681a.3(e)(1)", "681a.3(e)(2)", "681a.3(e)(3)", "681a.3(e)(4)", "681a.3(e)(5)")


def is_straight(ranks: Sequence[int]) -> bool:
    """681a.3(e)(3): three consecutive ranks; ace low (A-2-3) or high (Q-K-A), ruling."""
    s = sorted(ranks)
    if len(s) != 3 or len(set(s)) != 3:
        return False
    if s[2] - s[0] == 2:
        return True
    return s == [1, 12, 13]


def bonus_hands(ranks: Sequence[int]) -> list[int]:
    """Indices into BONUS_LINES of every 681a.3(e) hand the Bonus cards make."""
    found: list[int] = []
    three = list(ranks[:3])
    if len(three) == 3:
        if three == [7, 7, 7]:
            found.append(0)
        if three[0] == three[1] == three[2]:
            found.append(1)
        if is_straight(three):
            found.append(2)
        if hand_total(three)[0] == 21:
            found.append(3)
    if len(ranks) >= 2 and ranks[0] == ranks[1]:
        found.append(4)  # 681a.3(e)(5): first two cards only
    return found


def resolve_bonus(ranks: Sequence[int], table: str) -> Resolution:
    pays = BONUS_PAYTABLES[table]
    found = bonus_hands(ranks)
    if not found:
        return Resolution(Outcome.LOSE, "No pair or better", "681a.7(k)(2)(ii)")
    best = max(found, key=lambda i: pays[i])
    return Resolution(Outcome.WIN, BONUS_LINES[best], BONUS_SECTIONS[best], Fraction(pays[best]))


def resolve_main(side: str, player_value: int, banker_value: int) -> Resolution:
    """681a.7(i)-(j), 681a.8(a) on `hand21` comparison values: 1 to 1, or 1 to 2 with 17."""
    w = winner_21(player_value, banker_value)
    if w is Winner.TIE:
        return Resolution(Outcome.PUSH, "Equal totals: wager returned",
                          "681a.7(i)(4)" if side == "player" else "681a.7(j)(4)")
    sub = "681a.7(i)" if side == "player" else "681a.7(j)"
    if w.value != side:
        return Resolution(Outcome.LOSE, f"{w.value.title()} wins", sub)
    mine = player_value if side == "player" else banker_value
    if wins_with_17(mine):
        return Resolution(Outcome.WIN, "Wins with 17", "681a.8(a)", Fraction(1, 2))
    return Resolution(Outcome.WIN, f"{side.title()} wins", "681a.8(a)", Fraction(1))


@dataclass(frozen=True)
class TwentyOneMainWager:
    """The Player or Banker wager of 681a.6(c), on `side`."""

    key: str
    side: str
    rounding: Rounding
    name: str = ""
    section: str = "681a.6(c)"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND
    natural_rule: str = NATURAL_WINS

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        p = hand_value([c.rank for c in round_view.player], self.natural_rule)
        b = hand_value([c.rank for c in round_view.banker], self.natural_rule)
        return settlement_of(self.key, seat, amount_cents, resolve_main(self.side, p, b),
                             self.rounding)

    def par(self, ctx: ParContext) -> WagerPar:
        t = main_enumeration(ctx)
        weights: dict[Resolution, int] = {}
        for (p, b), w in t.totals.items():
            r = resolve_main(self.side, p, b)
            weights[r] = weights.get(r, 0) + w
        return WagerPar(self.key, self.name, self.section,
                        lines_from_resolutions(weights, t.denominator))


@dataclass(frozen=True)
class TwentyOneTieWager:
    """The Tie wager of 681a.6(d)(1), 10 to 1."""

    key: str
    rounding: Rounding
    name: str = "Tie (10 to 1)"
    section: str = "681a.6(d)(1)"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND
    natural_rule: str = NATURAL_WINS

    @staticmethod
    def resolve(p: int, b: int) -> Resolution:
        if p == b:
            return Resolution(Outcome.WIN, "Tie", "681a.8(b)", Fraction(10))
        return Resolution(Outcome.LOSE, "No tie", "681a.7(k)(1)(ii)")

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        p = hand_value([c.rank for c in round_view.player], self.natural_rule)
        b = hand_value([c.rank for c in round_view.banker], self.natural_rule)
        return settlement_of(self.key, seat, amount_cents, self.resolve(p, b), self.rounding)

    def par(self, ctx: ParContext) -> WagerPar:
        t = main_enumeration(ctx)
        weights: dict[Resolution, int] = {}
        for (p, b), w in t.totals.items():
            r = self.resolve(p, b)
            weights[r] = weights.get(r, 0) + w
        return WagerPar(self.key, self.name, self.section,
                        lines_from_resolutions(weights, t.denominator))


@dataclass(frozen=True)
class TwentyOneBonusWager:
    """A Bonus wager of 681a.6(d)(2) on `side`'s hand, paid from paytable `table`."""

    key: str
    side: str
    table: str
    rounding: Rounding
    name: str = ""
    section: str = "681a.6(d)(2)"
    settles_at: SettlementPoint = SettlementPoint.END_OF_ROUND

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        if self.side == "player":
            cards = round_view.player + round_view.player_extra
        else:
            cards = round_view.banker + round_view.banker_extra
        r = resolve_bonus([c.rank for c in cards], self.table)
        return settlement_of(self.key, seat, amount_cents, r, self.rounding)

    def par(self, ctx: ParContext) -> WagerPar:
        t = enumeration(ctx)
        dist = t.bonus_three_cards
        weights: dict[Resolution, int] = {}
        for ranks, w in dist.items():
            r = resolve_bonus(list(ranks), self.table)
            weights[r] = weights.get(r, 0) + w
        return WagerPar(self.key, self.name, self.section,
                        lines_from_resolutions(weights, t.bonus_denominator),
                        paytable=self.table,
                        notes=("assumes a Bonus wager is on the layout every round, so the "
                               "681a.7(f)(2) card is always drawn",))


def enumeration(ctx: ParContext) -> TwentyOneEnumeration:
    """The 681a enumeration of this sheet's shoe and rules, shared by every 681a wager."""
    g = ctx.game
    return ctx.shared(("681a", g.decks, g.draw_rule, g.natural_rule),
                      lambda: TwentyOneEnumeration(g.decks, g.draw_rule, g.natural_rule))


def main_enumeration(ctx: ParContext) -> TwentyOneEnumeration:
    """`enumeration`, refused for the draw rule whose exact main-wager analysis takes minutes."""
    if ctx.game.draw_rule != "one-card":
        raise ParUnavailable(
            "exact enumeration with draw rule 'to-17' takes minutes (hands of any length "
            "with card removal); run controller.rules.par21 offline")
    return enumeration(ctx)


@wager_rule("player", section="681a.6(c)(1)", families=FAMILY_681A, description="Player's Hand")
def _make_player(config: WagerConfig, game: GameConfig) -> TwentyOneMainWager:
    return TwentyOneMainWager(config.key, "player", game.payout_rounding, "Player", "681a.6(c)(1)",
                              natural_rule=game.natural_rule)


@wager_rule("banker", section="681a.6(c)(2)", families=FAMILY_681A, description="Banker's Hand")
def _make_banker(config: WagerConfig, game: GameConfig) -> TwentyOneMainWager:
    return TwentyOneMainWager(config.key, "banker", game.payout_rounding, "Banker", "681a.6(c)(2)",
                              natural_rule=game.natural_rule)


@wager_rule("tie", section="681a.6(d)(1)", families=FAMILY_681A, description="Tie (10 to 1)")
def _make_tie(config: WagerConfig, game: GameConfig) -> TwentyOneTieWager:
    return TwentyOneTieWager(config.key, game.payout_rounding, natural_rule=game.natural_rule)


_BONUS_BY_DECKS = {4: ("A", "B", "C"), 8: ("D", "E", "F")}  # 681a.8(c)


def _bonus(side: str) -> Callable[[WagerConfig, GameConfig], TwentyOneBonusWager]:
    def make(config: WagerConfig, game: GameConfig) -> TwentyOneBonusWager:
        assert config.paytable is not None
        sec = "681a.6(d)(2)" if side == "player" else "681a.6(d)(3)"
        return TwentyOneBonusWager(config.key, side, config.paytable, game.payout_rounding,
                                   f"Bonus ({side})", sec)
    return make


wager_rule("bonus_player", section="681a.6(d)(2)", families=FAMILY_681A,
           paytables_by_decks=_BONUS_BY_DECKS, description="Bonus on the Player's Hand")(_bonus("player"))
wager_rule("bonus_banker", section="681a.6(d)(3)", families=FAMILY_681A,
           paytables_by_decks=_BONUS_BY_DECKS, description="Bonus on the Banker's Hand")(_bonus("banker"))

