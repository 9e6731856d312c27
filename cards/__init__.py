"""Playing cards: rank, suit, and the back colour of a batch of decks.

The vocabulary the devices and the rules share, and nothing more: no game's
values (a card's baccarat Point Count lives in `controller.rules.card_values`),
no I/O. `drivers/` and `controller/rules/` both import it; it imports neither.
The wire protocol (firmware_bridge) carries rank as 1..13, suit as 0..3 and the
back colour as 0..3 in exactly the enum values below, so a card crosses from
the shoe to the rules without a translation table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Rank(enum.IntEnum):
    ACE = 1
    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13

    @property
    def label(self) -> str:
        return _RANK_LABELS[self]


_RANK_LABELS = {
    Rank.ACE: "A", Rank.TWO: "2", Rank.THREE: "3", Rank.FOUR: "4", Rank.FIVE: "5",
    Rank.SIX: "6", Rank.SEVEN: "7", Rank.EIGHT: "8", Rank.NINE: "9", Rank.TEN: "10",
    Rank.JACK: "J", Rank.QUEEN: "Q", Rank.KING: "K",
}


class Suit(enum.IntEnum):
    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3

    @property
    def symbol(self) -> str:
        return "♣♦♥♠"[self]

    @property
    def is_red(self) -> bool:
        return self in (Suit.DIAMONDS, Suit.HEARTS)


class BackColour(enum.IntEnum):
    """Back colour of a batch of decks; 681a.3(b) alternates two batches of different colours."""

    RED = 0
    BLUE = 1
    GREEN = 2
    BLACK = 3


@dataclass(frozen=True, slots=True)
class Card:
    """One card's face: rank and suit (the back colour is the batch's, `BackColour`)."""

    rank: Rank
    suit: Suit

    def __str__(self) -> str:
        return _CARD_TEXTS[self.rank * 4 + self.suit]  # a card is written at every deal

    @classmethod
    def parse(cls, text: str) -> Card:
        """Parse 'K♠', 'KS', '10h', 'Th' into a card; raises ValueError naming what is allowed."""
        raw = text.strip()
        if len(raw) < 2:
            raise ValueError(f"card {_quoted(text)}: expected rank then suit, e.g. 'K♠', 'KS' "
                             "or '10h'")
        rank_text, suit_text = raw[:-1].upper(), raw[-1]
        rank_text = "10" if rank_text == "T" else rank_text
        ranks = {label: rank for rank, label in _RANK_LABELS.items()}
        suits = {"♣": Suit.CLUBS, "C": Suit.CLUBS, "♦": Suit.DIAMONDS, "D": Suit.DIAMONDS,
                 "♥": Suit.HEARTS, "H": Suit.HEARTS, "♠": Suit.SPADES, "S": Suit.SPADES}
        if rank_text not in ranks:
            raise ValueError(f"card {_quoted(text)}: rank {_quoted(rank_text)} is not one of "
                             "A,2-10,J,Q,K")
        suit = suits.get(suit_text.upper()) or suits.get(suit_text)
        if suit is None:
            raise ValueError(f"card {_quoted(text)}: suit {suit_text!r} is not one of ♣♦♥♠ or "
                             "C,D,H,S")
        return cls(ranks[rank_text], suit)


def _quoted(text: str) -> str:
    """repr(text), or its start and end if it is long: a card is a few characters, and a
    line of a card list pasted wrong (a megabyte on one line) was quoted whole, twice."""
    return repr(text) if len(text) <= 40 else f"{text[:24]!r}...{text[-8:]!r} ({len(text)} characters)"


# Each card's text, rank then suit symbol ("10♥", "A♠"), by rank * 4 + suit.
_CARD_TEXTS = ("",) * 4 + tuple(f"{rank.label}{suit.symbol}" for rank in Rank for suit in Suit)


def standard_deck() -> list[Card]:
    return [Card(rank, suit) for suit in Suit for rank in Rank]


def shoe_of(decks: int) -> list[Card]:
    """An unshuffled stack of `decks` standard 52-card decks."""
    return [card for _ in range(decks) for card in standard_deck()]


def cards_text(cards: tuple[Card, ...] | list[Card]) -> str:
    return " ".join(str(card) for card in cards)
