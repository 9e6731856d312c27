"""What a card is worth in the games of this table: the one place a rank becomes a number.

The card itself (`cards.Card`) is the vocabulary the devices share and knows no game.
"""

from __future__ import annotations

from cards import Card, Rank


def baccarat_value(card: Card) -> int:
    """631a.6(a): 2-9 count face value, 10/J/Q/K count zero, an ace counts one."""
    return BACCARAT_VALUES[card.rank]


# `baccarat_value` by rank number (a rank is an int: it indexes the tuple directly); the
# table's settlement reads a hand's Point Count a few times a wager.
BACCARAT_VALUES: tuple[int, ...] = (0, *(0 if rank >= Rank.TEN else int(rank) for rank in Rank))


def burn_value(card: Card) -> int:
    """631a.5(f): the exposed burn card counts 10/J/Q/K as ten and an ace as one."""
    return 10 if card.rank >= Rank.TEN else int(card.rank)
