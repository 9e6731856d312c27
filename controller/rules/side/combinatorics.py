"""Exact combinatorics of a full shoe for the side wagers' par sheets.

Three spaces, each exact (integer weights, Fractions at the end):

* **initial cards** - ordered draws of the first two or four cards over a
  partition of the 52 card identities into classes the wager cannot tell
  apart (e.g. "a nine of hearts", "any non-nine"), weighted by falling
  factorials of the class counts;
* **coup** - the 631a coup enumerated over card *values* (ten values, value 0
  holding 10/J/Q/K) in dealing order with the 631a.11 drawing rules, folded
  into signatures (Player total, Banker total, Player cards, Banker cards);
* **coup with suits** - the same enumeration, each leaf further split by
  whether all its cards share one rank, and whether they share one suit, one
  colour or neither. Those splits depend only on the multiset of values, and
  for "all cards share suit s" the count factorises by value group, so each
  split is a product of falling factorials and is cached per multiset.

A wager's distribution is obtained by running its own `classify` on one
representative round per class or signature, so the par sheet exercises the
same code that settles real rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction
from functools import lru_cache

from controller.rules.baccarat import banker_draws, player_draws
from cards import Card, Rank, Suit
from controller.rules.card_values import baccarat_value
from controller.rules.par import full_shoe_facts
from controller.rules.wager import RoundView

CARDS_PER_DECK = 52
VALUES = range(10)


def falling(n: int, k: int) -> int:
    """n (n-1) ... (n-k+1): ordered draws of k distinct cards from n."""
    out = 1
    for i in range(k):
        out *= n - i
    return out


def value_counts(decks: int) -> list[int]:
    """Cards of each baccarat value in the shoe: value 0 holds 10, J, Q, K (631a.6(a))."""
    return [16 * decks] + [4 * decks] * 9


# A rank of each baccarat value, by value: looked up for hundreds of representative rounds
# per par sheet, where calling the enum (`Rank(value)`) was a good share of the time.
_RANK_OF_VALUE = (Rank.TEN, *(Rank(value) for value in range(1, 10)))


def value_card(value: int, suit: Suit = Suit.CLUBS) -> Card:
    return Card(_RANK_OF_VALUE[value], suit)


# --- initial cards over classes -----------------------------------------------------------------

CardClass = tuple[Card, int]  # (representative card, how many such cards per deck)


def all_identities() -> list[CardClass]:
    """The finest partition: each of the 52 (rank, suit) identities."""
    return [(Card(rank, suit), 1) for suit in Suit for rank in Rank]


def ordered_draws(
    classes: Sequence[CardClass], n: int, decks: int
) -> Iterator[tuple[tuple[Card, ...], int]]:
    """Every ordered sequence of `n` classes with its number of card sequences."""
    if sum(per_deck for _, per_deck in classes) != CARDS_PER_DECK:
        raise ValueError("card classes must partition the 52 cards of a deck")
    left = [per_deck * decks for _, per_deck in classes]
    reps = [card for card, _ in classes]
    drawn: list[Card] = []

    def walk(depth: int, weight: int) -> Iterator[tuple[tuple[Card, ...], int]]:
        if depth == n:
            yield tuple(drawn), weight
            return
        for i, count in enumerate(left):
            if count == 0:
                continue
            left[i] -= 1
            drawn.append(reps[i])
            yield from walk(depth + 1, weight * count)
            drawn.pop()
            left[i] += 1

    yield from walk(0, 1)


def initial_four_distribution(
    classes: Sequence[CardClass], decks: int, classify: Callable[[RoundView], str | None]
) -> dict[str | None, Fraction]:
    """Distribution of `classify` over the first four cards, dealt P, B, P, B (631a.9(c)).

    A wager on the initial cards reads each hand's two cards as a set, so each
    hand is enumerated as an unordered pair of classes (x2 orders when the
    classes differ); the number of card sequences depends only on how many
    cards of each class are drawn, not on the positions they take.
    """
    if sum(per_deck for _, per_deck in classes) != CARDS_PER_DECK:
        raise ValueError("card classes must partition the 52 cards of a deck")
    sizes = [per_deck * decks for _, per_deck in classes]
    reps = [card for card, _ in classes]
    ff = [[falling(size, k) for k in range(5)] for size in sizes]
    # Each hand once: (cards, total, orders, weight alone, its classes, their bit mask). Two
    # hands of different classes weigh the product of their weights alone; only hands that
    # share a class need the falling factorial of the cards they take from it together.
    values = [baccarat_value(card) for card in reps]
    hands = []
    for i in range(len(classes)):
        for j in range(i, len(classes)):
            orders = 2 if i != j else 1
            alone = orders * (ff[i][2] if i == j else ff[i][1] * ff[j][1])
            hands.append(((reps[i], reps[j]), (values[i] + values[j]) % 10, orders, alone,
                          (i, j), (1 << i) | (1 << j)))
    tally: dict[str | None, int] = {}
    for hand_p, total_p, orders_p, alone_p, (i, j), mask_p in hands:
        for hand_b, total_b, orders_b, alone_b, (k, m), mask_b in hands:
            if mask_p & mask_b:
                used: dict[int, int] = {}
                for c in (i, j, k, m):
                    used[c] = used.get(c, 0) + 1
                weight = orders_p * orders_b
                for c, n in used.items():
                    weight *= ff[c][n]
            else:
                weight = alone_p * alone_b
            if not weight:
                continue
            label = classify(RoundView(hand_p, hand_b, total_p, total_b))
            tally[label] = tally.get(label, 0) + weight
    total = falling(CARDS_PER_DECK * decks, 4)
    return {label: Fraction(w, total) for label, w in tally.items()}


_FILLER = (Card(Rank.TWO, Suit.CLUBS), Card(Rank.THREE, Suit.DIAMONDS))


@lru_cache(maxsize=16)
def _hand_views(decks: int, player_hand: bool) -> tuple[tuple[RoundView, int], ...]:
    """One view per unordered pair of card identities in the wagered hand, with its weight.

    The Player's cards (1st and 3rd) and the Banker's (2nd and 4th) are each
    distributed as any two cards drawn from the full shoe; the other hand
    holds fixed filler cards a one-hand wager does not read.
    """
    cards = [card for card, _ in all_identities()]
    values = [baccarat_value(card) for card in cards]
    out = []
    for i, c1 in enumerate(cards):
        for j in range(i, len(cards)):
            c2 = cards[j]
            weight = decks * (decks - 1) if i == j else 2 * decks * decks
            if not weight:
                continue
            total = (values[i] + values[j]) % 10
            view = (RoundView((c1, c2), _FILLER, total, 5) if player_hand
                    else RoundView(_FILLER, (c1, c2), 5, total))
            out.append((view, weight))
    return tuple(out)


def initial_hand_distribution(
    decks: int, player_hand: bool, classify: Callable[[RoundView], str | None]
) -> dict[str | None, Fraction]:
    """Distribution of a one-hand wager over that hand's initial two cards (read as a set)."""
    tally: dict[str | None, int] = {}
    for view, weight in _hand_views(decks, player_hand):
        label = classify(view)
        tally[label] = tally.get(label, 0) + weight
    denominator = falling(CARDS_PER_DECK * decks, 2)
    return {label: Fraction(w, denominator) for label, w in tally.items()}


# --- the coup over values ------------------------------------------------------------------------

Signature = tuple[int, int, int, int]  # player total, banker total, player cards, banker cards
# ... plus: the one value all cards share (-1 if none), all one rank, and
# suit class 0 = all one suit, 1 = one colour but not one suit, 2 = both colours.
SuitSignature = tuple[int, int, int, int, int, bool, int]

ALL_ONE_SUIT, ONE_COLOUR, BOTH_COLOURS = 0, 1, 2


@lru_cache(maxsize=None)
def _banker_draw_table() -> dict[tuple[int, int, int], bool]:
    """(banker 2-card count, player 2-card count, player third value or -1) -> Banker draws."""
    table = {}
    for b in VALUES:
        for p in VALUES:
            table[(b, p, -1)] = banker_draws(b, p, None)
            for third in VALUES:
                table[(b, p, third)] = banker_draws(b, p, value_card(third))
    return table


def _uniform_split(value: int, k: int, decks: int) -> list[tuple[bool, int, int]]:
    """Split the sequences of `k` cards all of `value` into (all one rank, suit class, count)."""
    if value == 0:
        rank = 4 * falling(4 * decks, k)  # one of 10, J, Q, K
        rank_suit = 16 * falling(decks, k)
        rank_colour = 8 * falling(2 * decks, k)
        every = falling(16 * decks, k)
        one_suit = 4 * falling(4 * decks, k)
        one_colour = 2 * falling(8 * decks, k)
    else:  # one value is one rank
        rank = every = falling(4 * decks, k)
        rank_suit = one_suit = 4 * falling(decks, k)
        rank_colour = one_colour = 2 * falling(2 * decks, k)
    split = [
        (True, ALL_ONE_SUIT, rank_suit),
        (True, ONE_COLOUR, rank_colour - rank_suit),
        (True, BOTH_COLOURS, rank - rank_colour),
        (False, ALL_ONE_SUIT, one_suit - rank_suit),
        (False, ONE_COLOUR, (one_colour - one_suit) - (rank_colour - rank_suit)),
        (False, BOTH_COLOURS, (every - one_colour) - (rank - rank_colour)),
    ]
    return [entry for entry in split if entry[2]]


def _index(pt: int, bt: int, pn: int, bn: int) -> int:
    return ((pt * 10 + bt) * 2 + pn - 2) * 2 + bn - 2


@lru_cache(maxsize=8)
def coup_space(decks: int, with_suits: bool
               ) -> tuple[Mapping[Signature, int] | Mapping[SuitSignature, int], int]:
    """Signature (or SuitSignature) -> weight, and the common denominator (52N)_6."""
    if with_suits:
        return _coup_space_with_suits(decks)
    tally: dict[Signature, int] = {}
    space, total = _coup_space_with_suits(decks)
    for signature, weight in space.items():
        tally[signature[:4]] = tally.get(signature[:4], 0) + weight
    return tally, total


@lru_cache(maxsize=8)
def _coup_space_with_suits(decks: int) -> tuple[dict[SuitSignature, int], int]:
    """SuitSignature -> number of six-card-equivalent sequences, and the total (52N)_6.

    Rounds that end after four or five cards are weighted by the number of
    ways to complete six cards, so every leaf shares one denominator. Three
    counts by signature: all sequences, those whose cards are all clubs (x4
    suits: all one suit), all black (x2 colours: all one colour). Each is the
    core engine's value-level enumeration of a full shoe over the cards it
    counts (`par.full_shoe_facts`: clubs or black cards hold 4 or 8 per deck
    of value 0 and 1 or 2 of each other value), because suits are independent
    of values. Rounds whose cards all share one value (rare) are then moved to
    their own signatures with their one-rank split.
    """
    size = CARDS_PER_DECK * decks
    scale = {k: falling(size - k, 6 - k) for k in (4, 5, 6)}
    every = [0] * 400
    suited = [0] * 400
    coloured = [0] * 400
    for row, part in ((every, "every card"), (suited, "one suit"), (coloured, "one colour")):
        for (pt, bt, pn, bn, _p_natural, _b_natural), w in full_shoe_facts(decks, part).items():
            row[_index(pt, bt, pn, bn)] += w

    # The loop followed one suit (clubs) and one colour (black); every suit and
    # colour is alike, so the counts for "some one suit" / "some one colour" are x4 / x2.
    suited = [4 * w for w in suited]
    coloured = [2 * w for w in coloured]
    tally: dict[SuitSignature, int] = {}
    signatures = [(pt, bt, pn, bn) for pt in VALUES for bt in VALUES
                  for pn in (2, 3) for bn in (2, 3)]
    for value in VALUES:
        sig = _uniform_round(value)
        i, k = _index(*sig), sig[2] + sig[3]
        for one_rank, suit_class, w in _uniform_split(value, k, decks):
            tally[sig + (value, one_rank, suit_class)] = w * scale[k]
        every[i] -= falling(value_counts(decks)[value], k) * scale[k]
        suited[i] -= 4 * falling((4 if value == 0 else 1) * decks, k) * scale[k]
        coloured[i] -= 2 * falling((8 if value == 0 else 2) * decks, k) * scale[k]
    for sig in signatures:
        i = _index(*sig)
        for suit_class, w in ((ALL_ONE_SUIT, suited[i]), (ONE_COLOUR, coloured[i] - suited[i]),
                              (BOTH_COLOURS, every[i] - coloured[i])):
            if w:
                tally[sig + (-1, False, suit_class)] = w
    return tally, falling(size, 6)


def _uniform_round(value: int) -> Signature:
    """The signature of a round whose cards all have `value` (the drawing rules decide how many)."""
    p = b = (2 * value) % 10
    pn = bn = 2
    pt, bt = p, b
    if player_draws(p, b):
        pn, pt = 3, (p + value) % 10
        if _banker_draw_table()[(b, p, value)]:
            bn, bt = 3, (b + value) % 10
    elif _banker_draw_table()[(b, p, -1)]:
        bn, bt = 3, (b + value) % 10
    return (pt, bt, pn, bn)


def _hand_values(total: int, n: int) -> list[tuple[int, ...]]:
    """A few value tuples of `n` cards with Point Count `total`, for representative rounds."""
    if n == 2:
        return [(total, 0), (1, (total - 1) % 10), (2, (total - 2) % 10)]
    return [(total, 0, 0), (1, 0, (total - 1) % 10), (2, 1, (total - 3) % 10)]


@lru_cache(maxsize=4096)
def representative_view(signature: Signature | SuitSignature) -> RoundView:
    """A round with exactly the facts of `signature` (and no others a wager could read)."""
    pt, bt, pn, bn = signature[:4]
    if len(signature) == 4:
        shared, one_rank, suit_class = -1, False, BOTH_COLOURS
        pv, bv = _hand_values(pt, pn)[0], _hand_values(bt, bn)[0]
    else:
        shared, one_rank, suit_class = signature[4:]
        if shared >= 0:
            pv, bv = (shared,) * pn, (shared,) * bn
        else:
            pv, bv = next((a, b) for a in _hand_values(pt, pn) for b in _hand_values(bt, bn)
                          if len(set(a + b)) > 1)
    values = list(pv) + list(bv)
    ranks = [_RANK_OF_VALUE[v] for v in values]
    if shared == 0 and not one_rank:
        ranks[-1] = Rank.JACK  # value 0 but not all the same rank
    suits = [Suit.CLUBS] * len(values)
    if suit_class == ONE_COLOUR:
        suits[-1] = Suit.SPADES
    elif suit_class == BOTH_COLOURS:
        suits[-1] = Suit.HEARTS
    cards = [Card(r, s) for r, s in zip(ranks, suits)]
    return RoundView(tuple(cards[:pn]), tuple(cards[pn:]), pt, bt)


def coup_distribution(
    decks: int, with_suits: bool, classify: Callable[[RoundView], str | None],
    space: tuple[Mapping[Signature, int], int] | None = None,
) -> dict[str | None, Fraction]:
    """Distribution of `classify` over complete 631a coups from a full shoe.

    `space` may supply value-level signature weights computed elsewhere (the
    core par engine's round facts) so that one sheet enumerates the coup once.
    """
    weights, total = space if space is not None else coup_space(decks, with_suits)
    tally: dict[str | None, int] = {}
    for signature, weight in weights.items():
        label = classify(representative_view(signature))
        tally[label] = tally.get(label, 0) + weight
    return {label: Fraction(w, total) for label, w in tally.items()}
