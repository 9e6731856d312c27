"""The exact enumerations behind the side-wager par sheets, checked independently."""

from __future__ import annotations

import time
from fractions import Fraction
from itertools import permutations
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules.baccarat import BaccaratCoup
from cards import Card, shoe_of
from controller.rules.card_values import baccarat_value
from controller.rules.par import ParContext
from controller.rules.side import combinatorics as comb
from controller.rules.submission import GameConfig

from .helpers import view


@pytest.mark.parametrize("decks", [1, 6, 8])
def test_value_coup_space_equals_the_core_engine(decks: int) -> None:
    """Two independent enumerations (sequential here, moment sums in controller.rules.par)."""
    mine, total = comb.coup_space(decks, False)
    ctx = ParContext(GameConfig(family="baccarat", decks=decks))
    theirs: dict[tuple[int, int, int, int], int] = {}
    for f, w in ctx.round_facts.items():
        key = (f.player_total, f.banker_total, f.player_cards, f.banker_cards)
        theirs[key] = theirs.get(key, 0) + w
    assert total == ctx.six_card_denominator
    assert mine == theirs


def test_banker_player_tie_8_decks() -> None:
    space, total = comb.coup_space(8, False)
    banker = sum(w for (p, b, _, _), w in space.items() if b > p)
    player = sum(w for (p, b, _, _), w in space.items() if p > b)
    assert round(banker / total, 6) == 0.458597 and round(player / total, 6) == 0.446247


@pytest.mark.parametrize("decks", [1, 2, 8])
def test_suit_split_refines_the_value_space(decks: int) -> None:
    suited, total = comb.coup_space(decks, True)
    folded: dict[tuple[int, int, int, int], int] = {}
    for sig, w in suited.items():
        assert w > 0
        folded[sig[:4]] = folded.get(sig[:4], 0) + w
    assert folded == comb.coup_space(decks, False)[0]
    assert sum(suited.values()) == total


def test_suit_uniformity_by_brute_force_one_deck() -> None:
    """Rounds that end on four cards (naturals, or both hands 6-7): list the cards.

    By symmetry it is enough to list the ordered four-card deals from the 26
    black cards of one deck: those all of one suit are the all-clubs or
    all-spades deals, and red deals mirror black ones (x2). Compared per
    (Player total, Banker total) with the factorised counts of the enumerator.
    """
    black = [c for c in shoe_of(1) if not c.suit.is_red]
    one_colour: dict[tuple[int, int], int] = {}
    one_suit: dict[tuple[int, int], int] = {}
    for a, b, c, d in permutations(range(len(black)), 4):
        p = (baccarat_value(black[a]) + baccarat_value(black[c])) % 10
        bk = (baccarat_value(black[b]) + baccarat_value(black[d])) % 10
        if not (p >= 8 or bk >= 8 or (p >= 6 and bk >= 6)):
            continue
        one_colour[(p, bk)] = one_colour.get((p, bk), 0) + 2
        if len({black[i].suit for i in (a, b, c, d)}) == 1:
            one_suit[(p, bk)] = one_suit.get((p, bk), 0) + 2
    space, _ = comb.coup_space(1, True)
    scale = 48 * 47  # four-card rounds are weighted up to six cards
    got: dict[tuple[int, int, int], int] = {}
    for (pt, bt, pn, bn, _, _, cls), w in space.items():
        if pn == bn == 2:
            got[(pt, bt, cls)] = got.get((pt, bt, cls), 0) + w // scale
    for key, n in one_colour.items():
        assert got.get((*key, comb.ALL_ONE_SUIT), 0) == one_suit.get(key, 0)
        assert got.get((*key, comb.ONE_COLOUR), 0) == n - one_suit.get(key, 0)


def test_representative_views_have_their_signature() -> None:
    space, _ = comb.coup_space(2, True)
    for sig in space:
        v = comb.representative_view(sig)
        cards = v.player + v.banker
        assert (v.player_total, v.banker_total, len(v.player), len(v.banker)) == sig[:4]
        shared, one_rank, suit_class = sig[4:]
        assert (len({baccarat_value(c) for c in cards}) == 1) == (shared >= 0)
        assert (len({c.rank for c in cards}) == 1) == one_rank
        one_suit, one_colour = len({c.suit for c in cards}) == 1, len({c.suit.is_red for c in cards}) == 1
        assert suit_class == (comb.ALL_ONE_SUIT if one_suit else comb.ONE_COLOUR if one_colour
                              else comb.BOTH_COLOURS)


def test_initial_four_classes_must_partition_the_deck() -> None:
    with pytest.raises(ValueError, match="partition"):
        comb.initial_four_distribution([(Card.parse("9S"), 1)], 8, lambda v: None)


@settings(max_examples=60, deadline=None)
@given(st.permutations(shoe_of(1)))
def test_signatures_of_dealt_coups_are_in_the_space(shoe: list[Card]) -> None:
    """Any coup the 631a rules deal lands on a signature the enumeration gives weight to."""
    coup = BaccaratCoup()
    cards = iter(shoe)
    while not coup.complete:
        coup.place(next(cards))
    r = coup.result()
    space, _ = comb.coup_space(1, False)
    assert (r.player_total, r.banker_total, len(r.player), len(r.banker)) in space


def test_richest_configuration_par_sheet_under_one_second(tmp_path: Path) -> None:
    """Every 627b wager at once (fresh caches), as `tablectl par-sheet` computes it."""
    from controller.rules.game import load_game
    from controller.rules.par import compute_par_sheet

    comb.coup_space.cache_clear()
    comb._coup_space_with_suits.cache_clear()
    comb._hand_views.cache_clear()
    comb.representative_view.cache_clear()
    config = Path(__file__).parent / "richest-minibaccarat.toml"
    game = load_game(config)
    started = time.process_time()  # CPU time: other jobs on a shared runner do not count
    sheet = compute_par_sheet(game)
    elapsed = time.process_time() - started
    assert not sheet.missing
    assert len(sheet.wagers) >= 30
    for wp in sheet.wagers:
        assert wp.total_probability == 1
    assert elapsed < 1.5  # budget 1 s on the Pi-class target; slack for a loaded CI runner


def test_view_helper_totals() -> None:
    v = view("KS 9H", "4C 4D 4H")
    assert (v.player_total, v.banker_total) == (9, 2)
    assert Fraction(1) == 1


def _sequential_coup_space_with_suits(decks: int) -> tuple[dict[comb.SuitSignature, int], int]:
    """The suit-aware coup space the plain way, card by card in dealing order (it was the
    engine's own until the engine took its three counts from `par.full_shoe_facts`).

    SuitSignature -> number of six-card-equivalent sequences, and the total (52N)_6.

    Rounds that end after four or five cards are weighted by the number of
    ways to complete six cards, so every leaf shares one denominator. Three
    products run side by side: all sequences, those whose cards are all
    clubs (x4 suits: all one suit), all black (x2 colours: all one colour);
    the all-one-suit count factorises by value because suits are independent
    of values. Rounds whose cards all share one value (rare) are then moved to
    their own signatures with their one-rank split.
    """
    counts = comb.value_counts(decks)
    suit_left = [4 * decks] + [decks] * 9  # of each value, in one suit
    colour_left = [8 * decks] + [2 * decks] * 9  # of each value, in one colour
    size = comb.CARDS_PER_DECK * decks
    scale = {k: comb.falling(size - k, 6 - k) for k in (4, 5, 6)}
    draw_b = comb._banker_draw_table()
    every = [0] * 400
    suited = [0] * 400
    coloured = [0] * 400

    # The four initial cards as two unordered two-card hands: the weight of a deal is the
    # product of comb.falling factorials over the values it uses, whatever their order, so each
    # (Player pair, Banker pair) stands for its orderings (2 for a pair of two values).
    pairs = [(x, y, 1 if x == y else 2) for x in comb.VALUES for y in comb.VALUES if x <= y]
    for px, py, p_orders in pairs:
        p = (px + py) % 10
        for bx, by, b_orders in pairs:
            a4 = s4 = c4 = p_orders * b_orders
            for v in (px, py, bx, by):
                a4 *= counts[v]; s4 *= suit_left[v]; c4 *= colour_left[v]  # noqa: E702
                counts[v] -= 1; suit_left[v] -= 1; colour_left[v] -= 1  # noqa: E702
            b = (bx + by) % 10
            if not a4:
                pass
            elif comb.player_draws(p, b):
                for p3 in comb.VALUES:
                    a5 = a4 * counts[p3]
                    if not a5:
                        continue
                    s5, c5 = s4 * suit_left[p3], c4 * colour_left[p3]
                    pt = (p + p3) % 10
                    if draw_b[(b, p, p3)]:
                        counts[p3] -= 1; suit_left[p3] -= 1; colour_left[p3] -= 1  # noqa: E702
                        base = comb._index(pt, 0, 3, 3)
                        for b3 in comb.VALUES:
                            i = base + ((b + b3) % 10) * 4
                            every[i] += a5 * counts[b3]
                            suited[i] += s5 * suit_left[b3]
                            coloured[i] += c5 * colour_left[b3]
                        counts[p3] += 1; suit_left[p3] += 1; colour_left[p3] += 1  # noqa: E702
                    else:
                        i = comb._index(pt, b, 3, 2)
                        f = scale[5]
                        every[i] += a5 * f
                        suited[i] += s5 * f
                        coloured[i] += c5 * f
            elif draw_b[(b, p, -1)]:
                base = comb._index(p, 0, 2, 3)
                f = scale[5]
                for b3 in comb.VALUES:
                    i = base + ((b + b3) % 10) * 4
                    every[i] += a4 * counts[b3] * f
                    suited[i] += s4 * suit_left[b3] * f
                    coloured[i] += c4 * colour_left[b3] * f
            else:
                i = comb._index(p, b, 2, 2)
                f = scale[4]
                every[i] += a4 * f
                suited[i] += s4 * f
                coloured[i] += c4 * f
            for v in (px, py, bx, by):
                counts[v] += 1; suit_left[v] += 1; colour_left[v] += 1  # noqa: E702

    # The loop followed one suit (clubs) and one colour (black); every suit and
    # colour is alike, so the counts for "some one suit" / "some one colour" are x4 / x2.
    suited = [4 * w for w in suited]
    coloured = [2 * w for w in coloured]
    tally: dict[comb.SuitSignature, int] = {}
    signatures = [(pt, bt, pn, bn) for pt in comb.VALUES for bt in comb.VALUES
                  for pn in (2, 3) for bn in (2, 3)]
    for value in comb.VALUES:
        sig = comb._uniform_round(value)
        i, k = comb._index(*sig), sig[2] + sig[3]
        for one_rank, suit_class, w in comb._uniform_split(value, k, decks):
            tally[sig + (value, one_rank, suit_class)] = w * scale[k]
        every[i] -= comb.falling(comb.value_counts(decks)[value], k) * scale[k]
        suited[i] -= 4 * comb.falling((4 if value == 0 else 1) * decks, k) * scale[k]
        coloured[i] -= 2 * comb.falling((8 if value == 0 else 2) * decks, k) * scale[k]
    for sig in signatures:
        i = comb._index(*sig)
        for suit_class, w in ((comb.ALL_ONE_SUIT, suited[i]), (comb.ONE_COLOUR, coloured[i] - suited[i]),
                              (comb.BOTH_COLOURS, every[i] - coloured[i])):
            if w:
                tally[sig + (-1, False, suit_class)] = w
    return tally, comb.falling(size, 6)



@pytest.mark.parametrize("decks", [1, 8])
def test_suit_coup_space_equals_the_sequential_enumeration(decks: int) -> None:
    """The three counts taken from the core engine's table agree with dealing card by card."""
    assert comb.coup_space(decks, True) == _sequential_coup_space_with_suits(decks)
