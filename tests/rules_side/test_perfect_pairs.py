"""631c.1 and 627b.1 Perfect Pairs: definitions, paytables A-C, one spot per hand."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.rules.baccarat import Hand
from controller.rules.registry import WagerConfigError
from controller.rules.side.perfect_pairs import make_perfect_pairs
from controller.rules.wager import Outcome, SettlementPoint

from .helpers import view

# (hand text, line) per the definitions of 631c.1(e) / 627b.1(a).
PAIRS = [
    ("JS JS", "Perfect pair"),    # same rank, same suit (two decks)
    ("4C 4S", "Colored pair"),    # same rank, same colour, different suits
    ("QH QD", "Colored pair"),
    ("4H 4S", "Mixed pair"),      # same rank, different colours
    ("KC KD", "Mixed pair"),
]
# 631c.1(d) / 627b.1(e): paytable -> line -> odds to 1.
ODDS = {
    "A": {"Perfect pair": 25, "Colored pair": 12, "Mixed pair": 6},
    "B": {"Perfect pair": 30, "Colored pair": 10, "Mixed pair": 5},
    "C": {"Perfect pair": 25, "Colored pair": 15, "Mixed pair": 5},
}


DEFINED_IN = {
    "631c.1": {"Perfect pair": "631c.1(e)", "Colored pair": "631c.1(e)", "Mixed pair": "631c.1(e)"},
    "627b.1": {"Perfect pair": "627b.1(a)(3)", "Colored pair": "627b.1(a)(1)",
               "Mixed pair": "627b.1(a)(2)"},
}


@pytest.mark.parametrize("section", ["631c.1", "627b.1"])
@pytest.mark.parametrize("letter", "ABC")
@pytest.mark.parametrize("hand_text,line", PAIRS)
@pytest.mark.parametrize("hand", [Hand.PLAYER, Hand.BANKER])
def test_pair_lines_pay_paytable_odds_631c_1_d_627b_1_e(
    section: str, letter: str, hand_text: str, line: str, hand: Hand
) -> None:
    rule = make_perfect_pairs("pp", section, hand, letter)
    v = view(hand_text, "2C 5D") if hand is Hand.PLAYER else view("2C 5D", hand_text)
    s = rule.settle(3, 1000, v)
    assert (s.outcome, s.label, s.win_cents) == (Outcome.WIN, line, 1000 * ODDS[letter][line])
    assert s.section == DEFINED_IN[section][line]
    assert s.odds == Fraction(ODDS[letter][line])


@pytest.mark.parametrize("section,lose", [("631c.1", "631c.1(c)(2)"), ("627b.1", "627b.1(d)(2)")])
@pytest.mark.parametrize("hand_text", ["JS QS", "10H KH", "AS 2S", "9D 8C"])
def test_no_pair_loses_631c_1_c_2(section: str, lose: str, hand_text: str) -> None:
    """631c.1(b): only identical number or type is a pair; a ten and a king are not."""
    s = make_perfect_pairs("pp", section, Hand.PLAYER, "A").settle(1, 500, view(hand_text, "KS KS"))
    assert (s.outcome, s.section, s.net_cents) == (Outcome.LOSE, lose, -500)


def test_each_hand_is_its_own_wager_and_both_can_win_631c_1_c_1() -> None:
    """631c.1(c)(1), 627b.1(d)(1): a wager on each hand, both paid; 627b.1(c) offers either or both."""
    v = view("4C 4S 2D", "QH QH")
    player = make_perfect_pairs("perfect_pairs_player", "631c.1", Hand.PLAYER, "A")
    banker = make_perfect_pairs("perfect_pairs_banker", "631c.1", Hand.BANKER, "A")
    assert player.settle(1, 100, v).win_cents == 1200  # colored pair, 12 to 1
    assert banker.settle(1, 100, v).win_cents == 2500  # perfect pair, 25 to 1


def test_only_the_initial_two_cards_count_631c_1_b() -> None:
    """A third card of the same rank does not make a pair."""
    rule = make_perfect_pairs("pp", "631c.1", Hand.PLAYER, "A")
    assert rule.settle(1, 100, view("4C 5S 4S", "KS QS")).outcome is Outcome.LOSE


def test_settles_on_the_first_four_cards_631c_1_c() -> None:
    assert make_perfect_pairs("pp", "631c.1", Hand.PLAYER, "A").settles_at is \
        SettlementPoint.FIRST_FOUR_CARDS


def test_wrong_paytable_letter_names_key_value_and_letters() -> None:
    with pytest.raises(WagerConfigError) as err:
        make_perfect_pairs("perfect_pairs_player", "631c.1", Hand.PLAYER, "D")
    text = str(err.value)
    assert "perfect_pairs_player" in text and "'D'" in text and "'A', 'B', 'C'" in text


def test_exact_distribution_8_decks() -> None:
    """Two cards from 416: perfect 7/415, colored 8/415, mixed 16/415 (pair 31/415)."""
    dist = make_perfect_pairs("pp", "631c.1", Hand.BANKER, "A").exact_distribution(8)
    assert dist == {"Perfect pair": Fraction(7, 415), "Colored pair": Fraction(8, 415),
                    "Mixed pair": Fraction(16, 415)}


def test_one_deck_has_no_perfect_pair() -> None:
    dist = make_perfect_pairs("pp", "627b.1", Hand.PLAYER, "B").exact_distribution(1)
    assert dist["Perfect pair"] == 0 and dist["Colored pair"] == Fraction(1, 51)


@pytest.mark.parametrize("letter,edge", [("A", Fraction(17, 415)), ("B", Fraction(14, 415)),
                                         ("C", Fraction(9, 415))])
def test_house_edges_8_decks(letter: str, edge: Fraction) -> None:
    """E.g. A: 25*7 + 12*8 + 6*16 - 384 = -17 over 415."""
    assert make_perfect_pairs("pp", "631c.1", Hand.PLAYER, letter).house_edge(8) == edge
