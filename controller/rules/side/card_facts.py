"""Card facts the side wagers share: a hand's initial two cards, a pair, a face card, a
Natural (the sections that define them are cited at each)."""

from __future__ import annotations

from collections.abc import Sequence

from cards import Card, Rank
from controller.rules.baccarat import Hand
from controller.rules.wager import RoundView



def initial_two(view: RoundView, hand: Hand) -> tuple[Card, ...]:
    """The initial two cards of a hand (631a.9(c)): the first two in dealing order."""
    cards = view.player if hand is Hand.PLAYER else view.banker
    if len(cards) < 2:
        raise ValueError(f"the {hand.value}'s hand has {len(cards)} card(s); two are needed")
    return cards[:2]


def is_pair(cards: Sequence[Card]) -> bool:
    """Two cards 'identical in either number or type' (631c.1(b)): same rank, suit ignored."""
    return cards[0].rank == cards[1].rank


# Named once: a member looked up on an enum class (`Rank.KING`) takes about 0.1 us in Python
# 3.11 (the enum's metaclass defines __getattr__), and par sheets ask is_face of ten thousand
# hands.
FACE_RANKS = (Rank.JACK, Rank.QUEEN, Rank.KING)


def is_face(card: Card) -> bool:
    """A face card is a king, queen or jack (627b.3(b)); a ten is not."""
    return card.rank in FACE_RANKS


def is_natural(cards: Sequence[Card], total: int) -> bool:
    """631a.1 Natural: a Point Count of 8 or 9 on the first two cards (so two cards in all)."""
    return len(cards) == 2 and total >= 8
