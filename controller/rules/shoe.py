"""Pure shoe procedures: cut and cover cards, the burn, the cover card's last hand, void rounds.

Nothing here shuffles or reads a device: callers hand in the shuffled stack
(or the cards the shoe reports) and get decisions back.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from cards import Card
from controller.errors import RulesError
from controller.rules.card_values import burn_value

MAX_CARDS_631A_ROUND = 6  # 631a.9(c) four cards plus at most one more each (631a.10(c))


class CutError(RulesError):
    """A cut or cover-card position the rules do not allow."""


@dataclass(frozen=True)
class PreparedShoe:
    """The stack in dealing order, and where the second cover card sits in it.

    `cover_index` is the number of cards dealt before the cover card appears.
    """

    cards: tuple[Card, ...]
    cover_index: int


def cut_and_cover(stack: Sequence[Card], cut_at: int, cover_from_bottom: int,
                  *, min_cut_cards: int = 10, min_cover_from_bottom: int = 14) -> PreparedShoe:
    """631a.5(c)-(d), 681a.5(c)-(d): cut the stack and place the second cover card.

    The first cover card goes `cut_at` cards from the top (at least
    `min_cut_cards` from either end); the cards above it and the cover card
    go to the bottom. The second cover card goes `cover_from_bottom` cards
    above the bottom (631a: at least 14; 681a: at least 10).
    """
    n = len(stack)
    if not min_cut_cards <= cut_at <= n - min_cut_cards:
        raise CutError(f"cut at {cut_at}: must be {min_cut_cards}..{n - min_cut_cards} "
                       "cards from the top (631a.5(c), 681a.5(c))")
    if not min_cover_from_bottom <= cover_from_bottom < n:
        raise CutError(f"cover card {cover_from_bottom} from the bottom: must be at least "
                       f"{min_cover_from_bottom} (631a.5(d), 681a.5(d))")
    cut = tuple(stack[cut_at:]) + tuple(stack[:cut_at])
    return PreparedShoe(cards=cut, cover_index=n - cover_from_bottom)


def misplaced_cover_card(index: int, shoe_cards: int, min_from_bottom: int, section: str
                         ) -> str:
    """Why the second cover card that came out after `index` cards of a `shoe_cards`-card shoe
    was not where 631a.5(d) / 681a.5(d) (`section`) put it, at least `min_from_bottom` cards
    above the bottom; "" when it was. The shoe reports where it came out: a cover card too
    near the bottom leaves too few cards for the last hands, which then end void
    (631a.15(e)), and nothing else would show why."""
    below = shoe_cards - index
    if below >= min_from_bottom:
        return ""
    return (f"the cover card came out with {below} card(s) below it; {section} places it at "
            f"least {min_from_bottom} cards above the bottom: check the cover card at the "
            "next shoe's cut")


class ShoePhase(enum.Enum):
    """Where the shoe stands after a round (631a.10(d), 681a.7(d))."""

    PLAYING = "playing"
    LAST_HAND = "last hand"  # 631a.10(d): announced; one more round, then new decks
    FINISHED = "finished"  # replace (631a.3(b)) or reshuffle (681a.5(f)) before the next round


def phase_after_round(phase: ShoePhase, cover_card_appeared: bool, *,
                      reshuffle_at_cover: bool) -> ShoePhase:
    """The shoe's phase once a round is complete.

    631a.10(d): the round in which the cover card appears is completed, "last
    hand" is announced, and one more round is played. 681a.7(d): 21 Baccarat
    completes that round and then reshuffles.
    """
    if phase is ShoePhase.LAST_HAND:
        return ShoePhase.FINISHED
    if phase is ShoePhase.FINISHED:
        return phase
    if cover_card_appeared:
        return ShoePhase.FINISHED if reshuffle_at_cover else ShoePhase.LAST_HAND
    return ShoePhase.PLAYING


def burn_plan(first_card: Card, *, twenty_one: bool = False) -> int:
    """How many more cards go to the discard after the exposed first card.

    631a.5(f): as many as the first card's face value (10/J/Q/K ten, ace one).
    681a.7(c): only the first card itself.
    """
    return 0 if twenty_one else burn_value(first_card)


def can_complete_631a_round(cards_remaining: int) -> bool:
    """631a.15(e): whether the shoe surely holds enough cards for a whole 631a round."""
    return cards_remaining >= MAX_CARDS_631A_ROUND
