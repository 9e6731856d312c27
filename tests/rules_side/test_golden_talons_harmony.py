"""627b.5 Golden Talons (paytables A-E) and 627b.6 Harmony progressive (paytables A-I)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.rules.baccarat import Hand
from controller.rules.registry import WagerConfigError
from controller.rules.side.golden_talons import make_golden_talons
from controller.rules.side.harmony import HARMONY_PAYTABLES, make_harmony
from controller.rules.side.common import FixedOdds, PaysMeter
from controller.rules.wager import Outcome, RoundView

from .helpers import dealt, view

# 627b.5(f): line -> odds per paytable A..E ("push" returns the wager).
TALONS = {
    "Win by 9": (30, 20, 30, 20, 30), "Win by 8": (10, 10, 12, 8, 10),
    "Win by 7": (6, 5, 5, 7, 4), "Win by 6": (4, 4, 3, 4, 4), "Win by 5": (2, 2, 3, 3, 2),
    "Win by 4": (1, 1, 1, 1, 2), "Natural win": (1, 1, 1, 1, 1),
}
MARGIN_ROUNDS = {  # the Player's hand wins by n (three-card hands, no naturals)
    9: view("KC KD 9S", "KH QS JD"), 8: view("KC KD 8S", "KH QS JD"),
    7: view("KC KD 7S", "KH QS JD"), 6: view("KC KD 7S", "KH QS AD"),
    5: view("KC KD 7S", "KH QS 2D"), 4: view("KC KD 7S", "KH QS 3D"),
}


def swap(v: RoundView) -> RoundView:
    return RoundView(v.banker, v.player, v.banker_total, v.player_total)


@pytest.mark.parametrize("index,letter", list(enumerate("ABCDE")))
@pytest.mark.parametrize("margin", [9, 8, 7, 6, 5, 4])
@pytest.mark.parametrize("hand", [Hand.PLAYER, Hand.BANKER])
def test_win_by_margin_627b_5_e_1(index: int, letter: str, margin: int, hand: Hand) -> None:
    v = MARGIN_ROUNDS[margin] if hand is Hand.PLAYER else swap(MARGIN_ROUNDS[margin])
    s = make_golden_talons("gt", hand, letter).settle(1, 100, v)
    assert (s.label, s.win_cents) == (f"Win by {margin}", 100 * TALONS[f"Win by {margin}"][index])


@pytest.mark.parametrize("letter", "ABCDE")
def test_natural_win_pays_only_natural_odds_627b_5_g(letter: str) -> None:
    """A natural 9 over a 0 is a 9-point margin but pays the natural's 1 to 1."""
    s = make_golden_talons("gt", Hand.PLAYER, letter).settle(1, 100, view("9C KD", "KH QS"))
    assert (s.label, s.win_cents) == ("Natural win", 100)


@pytest.mark.parametrize("letter,outcome,win", [("A", Outcome.PUSH, 0), ("B", Outcome.WIN, 200),
                                                ("C", Outcome.PUSH, 0), ("D", Outcome.PUSH, 0),
                                                ("E", Outcome.PUSH, 0)])
def test_natural_tie_627b_5_e_2_f(letter: str, outcome: Outcome, win: int) -> None:
    """627b.5(e)(2)-(3): a natural tie wins or pushes as the approved paytable says."""
    s = make_golden_talons("gt", Hand.BANKER, letter).settle(1, 100, view("8C KD", "4H 4S"))
    assert (s.label, s.outcome, s.win_cents) == ("Natural tie", outcome, win)


@pytest.mark.parametrize("player,banker", [
    ("KC KD 7S", "KH QS 4D"),   # wins by 3
    ("KC KD 7S", "KH QS 7D"),   # non-natural tie
    ("8C KD", "9H KS"),         # natural 8 beaten by natural 9
    ("KC KD 2S", "KH QS 7D"),   # loses
])
def test_golden_talons_losses(player: str, banker: str) -> None:
    """627b.5(e): none of (1)-(3); settled after the round (627b.5(c)-(d))."""
    assert make_golden_talons("gt", Hand.PLAYER, "A").settle(1, 100, view(player, banker)).outcome \
        is Outcome.LOSE


def test_golden_talons_wrong_letter() -> None:
    with pytest.raises(WagerConfigError, match="'F'"):
        make_golden_talons("golden_talons_player", Hand.PLAYER, "F")


# --- Harmony ------------------------------------------------------------------------------------

SIX_SEVENS = dealt("7C", "7D", "7H", "7S", "7C", "7D")       # 4 v 4, both draw 7: 1 v 1
FOUR_EIGHTS = dealt("8C", "8D", "8H", "8S")                  # 6 v 6, no draws
FOUR_THREES = dealt("3C", "3D", "3H", "3S")                  # 6 v 6
SIX_ZEROES = dealt("KC", "QD", "JH", "10S", "KC", "KD")      # 0 v 0, three cards each
TIE_SIX_CARDS = dealt("KC", "QD", "5H", "5S", "4C", "4D")    # 5 v 5, both draw a 4: 9 v 9
TIE_FIVE_CARDS = dealt("AC", "3D", "AH", "3S", "4C")          # P 2+4 = 6, B 6 stands: 5 cards
TIE_FOUR_RED = view("7H 10D", "7D KH")                        # 7 v 7 all red, 4 cards
TIE_FOUR_MIXED = view("7S 10D", "7D KH")


def test_six_of_a_kind_is_a_six_card_tie_of_one_rank_627b_6_g_1() -> None:
    assert (SIX_SEVENS.player_total, len(SIX_SEVENS.player + SIX_SEVENS.banker)) == (1, 6)
    for letter in "ABCDEFGHI":
        line = make_harmony("harmony_progressive", letter).classify(SIX_SEVENS)
        assert line is not None and line.pay == PaysMeter("progressive", Fraction(1))


# letter -> expected label for rounds (in for-1 units of win+wager)
@pytest.mark.parametrize("letter,round_view,label,for_one,clause", [
    ("A", FOUR_EIGHTS, "Four 8's (4 cards dealt)", 1000, "627b.6(g)(2)"),
    ("C", FOUR_EIGHTS, "Four 8's (4 cards dealt)", 600, "627b.6(g)(2)"),
    ("F", FOUR_EIGHTS, "Four 8's (4 cards dealt)", 300, "627b.6(g)(2)"),
    ("B", FOUR_THREES, "Four-of-a-kind (4 cards dealt)", 200, "627b.6(g)(3)"),
    ("I", FOUR_THREES, "Four-of-a-kind (4 cards dealt)", 300, "627b.6(g)(3)"),
    ("D", SIX_ZEROES, "Six 0-value cards", 200, "627b.6(g)(4)"),
    ("H", SIX_ZEROES, "Six 0-value cards", 50, "627b.6(g)(4)"),
    ("A", TIE_FOUR_MIXED, "Tie with 6-9", 3, "627b.6(g)(7)"),
    ("C", TIE_FOUR_MIXED, "Tie with 6-9", 5, "627b.6(g)(7)"),
    ("A", TIE_FIVE_CARDS, "Tie with 6-9", 3, "627b.6(g)(7)"),
    ("D", TIE_FOUR_RED, "Tie (all cards same color)", 20, "627b.6(g)(8)"),
    ("E", TIE_FOUR_MIXED, "Any tie", 3, "627b.6(g)(9)"),
    ("G", TIE_FIVE_CARDS, "5 card tie", 10, "627b.6(g)(10)"),
    ("H", TIE_FIVE_CARDS, "5 card tie", 8, "627b.6(g)(10)"),
    ("I", TIE_FOUR_MIXED, "4 card tie", 4, "627b.6(g)(12)"),
    ("G", TIE_SIX_CARDS, "6 card tie", 3, "627b.6(g)(11)"),
])
def test_harmony_lines_for_1_627b_6_g_i(letter: str, round_view: RoundView, label: str,
                                         for_one: int, clause: str) -> None:
    s = make_harmony("harmony_progressive", letter).settle(1, 500, round_view)
    assert (s.label, s.win_cents + s.amount_cents, s.section) == (label, 500 * for_one, clause)


def test_tie_with_0_and_1_to_5_627b_6_g_5_6() -> None:
    v0 = view("KC QD 10H", "AS 9S KD")    # 0 v 0, mixed values
    v3 = view("AC 2D", "2H AS")          # 3 v 3 (as dealt: both would draw; values only matter)
    assert make_harmony("h", "A").settle(1, 100, v0).section == "627b.6(g)(5)"
    s = make_harmony("h", "A").settle(1, 100, v3)
    assert (s.win_cents, s.section) == (500, "627b.6(g)(6)")   # 6 for 1
    assert make_harmony("h", "B").settle(1, 100, v3).win_cents == 400   # 5 for 1


def test_any_win_loses_627b_6_h() -> None:
    """627b.6(h); the round is completed (627b.6(e)) and then settled (627b.6(f))."""
    s = make_harmony("h", "E").settle(1, 100, view("8C 8D", "8H 9S"))
    assert (s.outcome, s.section) == (Outcome.LOSE, "627b.6(h)")


@pytest.mark.parametrize("letter,increment,reserve", [
    ("A", 15, 3), ("B", 19, 5), ("C", 15, 3), ("D", 15, 3), ("E", 19, 5), ("F", 15, 3),
    ("G", 15, 3), ("H", 19, 5), ("I", 15, 3)])
def test_incrementation_and_reserve_rates_627b_6_j(letter: str, increment: int, reserve: int) -> None:
    meter = make_harmony("h", letter).meter
    assert (meter.increment_rate, meter.reserve_rate) == (Fraction(increment, 100),
                                                          Fraction(reserve, 100))


def test_every_harmony_paytable_has_the_progressive_on_top_and_for_1_lines() -> None:
    """627b.6(i): paytables A-I."""
    for table in HARMONY_PAYTABLES.values():
        assert isinstance(table.lines[0].pay, PaysMeter)
        assert all(isinstance(line.pay, FixedOdds) for line in table.lines[1:])


def test_harmony_exact_special_lines_8_decks() -> None:
    dist = make_harmony("h", "A").exact_distribution(8)
    deal = 416 * 415 * 414 * 413
    assert dist["Four 8's (4 cards dealt)"] == Fraction(32 * 31 * 30 * 29, deal)
    # Four of a kind with four cards only stands for 3s (6 v 6), 4s and 9s (naturals);
    # the 8s go to the higher line.
    assert dist["Four-of-a-kind (4 cards dealt)"] == 3 * Fraction(32 * 31 * 30 * 29, deal)
    # Six of a kind ties on 3+3 cards for A, 2, 5, 6, 7 and the four zero ranks.
    assert dist["Six-of-a-kind"] == 9 * Fraction(32 * 31 * 30 * 29 * 28 * 27, deal * 412 * 411)


def test_harmony_errors() -> None:
    with pytest.raises(WagerConfigError, match="'J'"):
        make_harmony("harmony_progressive", "J")
    with pytest.raises(WagerConfigError, match="reseed_cents"):
        make_harmony("harmony_progressive", "A", reseed_cents=-5)
