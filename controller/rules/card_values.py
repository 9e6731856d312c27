"""What a card is worth in the games of this table: the one place a rank becomes a number.

The card itself (`cards.Card`) is the vocabulary the devices share and knows no game.
"""

from __future__ import annotations

from cards import Card, Rank


BACCARAT_VALUES = (0, *(0 if rank >= Rank.TEN else int(rank) for rank in Rank))
"""`baccarat_value` by rank (a rank's number indexes it; index 0 is no rank): a Point Count
is summed at every card, and a tuple's item is a tenth of the comparisons' cost."""


def baccarat_value(card: Card) -> int:
    """631a.6(a): 2-9 count face value, 10/J/Q/K count zero, an ace counts one."""
    return BACCARAT_VALUES[card.rank]


def burn_value(card: Card) -> int:
    """631a.5(f): the exposed burn card counts 10/J/Q/K as ten and an ace as one."""
    return 10 if card.rank >= Rank.TEN else int(card.rank)
