"""The coup of Baccarat (631a): dealing order, Point Count and third-card rules.

A coup is sans-I/O: the table feeds it the cards the shoe reports, one at a
time, and asks it what the rules require next. It never draws cards itself.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from cards import Card
from controller.rules.card_values import BACCARAT_VALUES, baccarat_value, burn_value
from controller.rules.wager import RoundView


def point_count(cards: Iterable[Card]) -> int:
    """631a.6(b): the total of the card values, keeping only the right-hand digit."""
    total = 0
    for card in cards:  # baccarat_value, inline: the coup counts points at every card
        total += BACCARAT_VALUES[card.rank]
    return total % 10


# 631a.11(c)(2)(iii), Table 1: rows are the Banker's two-card Point Count 3..6,
# columns the value (not the Point Count) of the Player's third card 0..9
# (631a.11(d)-(e)); True means the Banker draws (631a.11(f)).
_TABLE_1_ROWS = {
    3: "DDDDDDDDSD",
    4: "SSDDDDDDSS",
    5: "SSSSDDDDSS",
    6: "SSSSSSDDSS",
}
TABLE_1: dict[tuple[int, int], bool] = {
    (banker, third): row[third] == "D"
    for banker, row in _TABLE_1_ROWS.items()
    for third in range(10)
}


def player_draws(player_two_card_count: int, banker_two_card_count: int) -> bool:
    """631a.11(a)-(b): no draw on any Natural; otherwise the Player draws on 0-5."""
    if player_two_card_count >= 8 or banker_two_card_count >= 8:
        return False
    return player_two_card_count < 6


def banker_draws(
    banker_two_card_count: int, player_two_card_count: int, player_third: Card | None
) -> bool:
    """631a.11(a) and (c): whether the Banker's Hand takes a third card."""
    if player_two_card_count >= 8 or banker_two_card_count >= 8:
        return False  # 631a.11(a)
    if player_third is None:
        return banker_two_card_count <= 5  # 631a.11(c)(1)
    if banker_two_card_count < 3:
        return True  # 631a.11(c)(2)(i)
    if banker_two_card_count == 7:
        return False  # 631a.11(c)(2)(ii)
    return TABLE_1[(banker_two_card_count, baccarat_value(player_third))]  # 631a.11(c)(2)(iii)


class Hand(enum.Enum):
    PLAYER = "player"
    BANKER = "banker"


class NextCard(enum.Enum):
    """What the dealer must do next, in the order 631a.9(c) and 631a.10(b) give."""

    PLAYER_FIRST = "deal the Player's first card"
    BANKER_FIRST = "deal the Banker's first card"
    PLAYER_SECOND = "deal the Player's second card"
    BANKER_SECOND = "deal the Banker's second card"
    PLAYER_THIRD = "draw a third card for the Player"
    BANKER_THIRD = "draw a third card for the Banker"
    # 21 Baccarat (681a.7(f)-(g)); `TwentyOneCoup` uses these as well as the four above.
    PLAYER_DRAW = "draw another card for the Player (681a.7(g))"
    BANKER_DRAW = "draw another card for the Banker (681a.7(g))"
    PLAYER_BONUS_EXTRA = "draw the Player's Bonus-only card (681a.7(f)(2))"
    BANKER_BONUS_EXTRA = "draw the Banker's Bonus-only card (681a.7(f)(2))"
    NONE = "no more cards: announce the result"

    @property
    def hand(self) -> Hand | None:
        return _HANDS[self._name_]  # by name: an enum member's own hash is a Python call


_HANDS = {slot.name: None if slot is NextCard.NONE else Hand.PLAYER
          if slot.name.startswith("PLAYER") else Hand.BANKER for slot in NextCard}
# Members the coup compares with at every card, as module names: in Python 3.11 an
# attribute of an Enum class goes through its metaclass's __getattr__ hook (several hundred
# instructions), a module name is a dictionary read.
_NONE, _PLAYER, _PLAYER_THIRD, _BANKER_THIRD = (NextCard.NONE, Hand.PLAYER, NextCard.PLAYER_THIRD,
                                                NextCard.BANKER_THIRD)
# 631a.9(c): first and third cards to the Player, second and fourth to the Banker.
_FIRST_FOUR = (NextCard.PLAYER_FIRST, NextCard.BANKER_FIRST, NextCard.PLAYER_SECOND,
               NextCard.BANKER_SECOND)


class Winner(enum.Enum):
    PLAYER = "player"
    BANKER = "banker"
    TIE = "tie"


@dataclass(frozen=True, slots=True)
class CoupResult:
    """A complete 631a coup: each hand's cards and Point Count, the winner, the naturals."""

    player: tuple[Card, ...]
    banker: tuple[Card, ...]
    player_total: int
    banker_total: int
    winner: Winner
    player_natural: bool
    banker_natural: bool

    @property
    def dragon_7(self) -> bool:
        """631a.1: Banker wins with a three-card 7."""
        return len(self.banker) == 3 and self.banker_total == 7 and self.player_total < 7

    @property
    def panda_8(self) -> bool:
        """631a.1: Player wins with a three-card 8."""
        return len(self.player) == 3 and self.player_total == 8 and self.banker_total < 8


@dataclass
class BaccaratCoup:
    """One round's cards, placed in the order of 631a.9(c) and 631a.11."""

    player: list[Card] = field(default_factory=list)
    banker: list[Card] = field(default_factory=list)

    @property
    def cards_dealt(self) -> int:
        return len(self.player) + len(self.banker)

    def next_card(self) -> NextCard:
        """What the rules require next (631a.9(c), 631a.10, 631a.11)."""
        dealt = len(self.player) + len(self.banker)
        if dealt < 4:
            return _FIRST_FOUR[dealt]
        p2, b2 = point_count(self.player[:2]), point_count(self.banker[:2])
        if len(self.player) == 2 and len(self.banker) == 2 and player_draws(p2, b2):
            return _PLAYER_THIRD
        if len(self.banker) == 2:
            player_third = self.player[2] if len(self.player) == 3 else None
            if banker_draws(b2, p2, player_third):
                return _BANKER_THIRD
        return _NONE

    @property
    def initial_cards_complete(self) -> bool:
        """The settlement point after the first four cards (631a.9(e))."""
        return self.cards_dealt >= 4

    @property
    def complete(self) -> bool:
        return self.next_card() is _NONE

    def place(self, card: Card) -> NextCard:
        """Place the card the rules call for; returns which slot it filled."""
        slot = self.next_card()
        if slot is _NONE:
            raise ValueError("the coup is complete: 631a.10(c) allows no further card")
        (self.player if slot.hand is _PLAYER else self.banker).append(card)
        return slot

    def round_view(self) -> RoundView:
        """The cards so far as wager rules see them (valid after the first four cards)."""
        return RoundView(player=tuple(self.player), banker=tuple(self.banker),
                         player_total=point_count(self.player),
                         banker_total=point_count(self.banker))

    def result(self) -> CoupResult:
        if not self.complete:
            raise ValueError(f"the coup is not complete: next is {self.next_card().value}")
        p, b = point_count(self.player), point_count(self.banker)
        winner = Winner.PLAYER if p > b else Winner.BANKER if b > p else Winner.TIE
        return CoupResult(
            player=tuple(self.player), banker=tuple(self.banker),
            player_total=p, banker_total=b, winner=winner,
            player_natural=point_count(self.player[:2]) >= 8,
            banker_natural=point_count(self.banker[:2]) >= 8,
        )


def burn_count(first_card: Card) -> int:
    """631a.5(f): after exposing the first card, burn as many more as its face value."""
    return burn_value(first_card)


def banker_draws_value(
    banker_two_card_count: int, player_two_card_count: int, player_third_value: int | None
) -> bool:
    """`banker_draws` with the Player's third card given by its value (0..9), for enumeration."""
    if player_two_card_count >= 8 or banker_two_card_count >= 8:
        return False  # 631a.11(a)
    if player_third_value is None:
        return banker_two_card_count <= 5  # 631a.11(c)(1)
    if banker_two_card_count < 3:
        return True  # 631a.11(c)(2)(i)
    if banker_two_card_count == 7:
        return False  # 631a.11(c)(2)(ii)
    return TABLE_1[(banker_two_card_count, player_third_value)]  # 631a.11(c)(2)(iii)
