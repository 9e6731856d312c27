"""631c.7 Majestic Match and 631c.4 Lucky Nines: first-four-card wagers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.rules.baccarat import Hand
from controller.rules.registry import WagerConfigError
from controller.rules.side.lucky_nines import make_lucky_nines
from controller.rules.side.majestic_match import MajesticMatch
from controller.rules.wager import Outcome, SettlementPoint

from .helpers import view


@pytest.mark.parametrize("hand_text,line,win", [
    ("KS QS", "Royal Match", 25000),     # 631c.7(e): king and queen of one suit, 25 to 1
    ("QH KH", "Royal Match", 25000),
    ("KS KS", "Suited Match", 2500),     # 631c.7(e): suited, not a king and queen, 2.5 to 1
    ("2D 9D", "Suited Match", 2500),
    ("QC JC", "Suited Match", 2500),
])
@pytest.mark.parametrize("hand", [Hand.PLAYER, Hand.BANKER])
def test_majestic_match_lines_631c_7_d_e(hand_text: str, line: str, win: int, hand: Hand) -> None:
    v = view(hand_text, "2C 3D") if hand is Hand.PLAYER else view("2C 3D", hand_text)
    s = MajesticMatch("mm", hand).settle(1, 1000, v)
    assert (s.outcome, s.label, s.win_cents) == (Outcome.WIN, line, win)


@pytest.mark.parametrize("hand_text", ["KS QH", "KS KH", "2C 2D"])
def test_majestic_match_unsuited_loses_631c_7_c_2(hand_text: str) -> None:
    s = MajesticMatch("mm", Hand.PLAYER).settle(1, 1000, view(hand_text, "KS QS"))
    assert (s.outcome, s.section) == (Outcome.LOSE, "631c.7(c)(2)")


def test_majestic_match_2_5_to_1_on_odd_cents_rounds_down() -> None:
    s = MajesticMatch("mm", Hand.BANKER).settle(1, 101, view("2C 3D", "4H 8H"))
    assert (s.odds, s.win_cents) == (Fraction(5, 2), 252)  # 252.5 cents


def test_majestic_match_both_hands_paid_631c_7_c_1() -> None:
    v = view("KS QS", "2H 8H")
    assert MajesticMatch("p", Hand.PLAYER).settle(1, 200, v).win_cents == 5000
    assert MajesticMatch("b", Hand.BANKER).settle(1, 200, v).win_cents == 500
    assert MajesticMatch("p", Hand.PLAYER).settles_at is SettlementPoint.FIRST_FOUR_CARDS


ODDS = {  # 631c.4(e)
    "Four nines": (500, 500, 1000, 2000),
    "Three nines same suit": (250, 250, 500, 500),
    "Three nines": (20, 30, 35, 15),
    "Two nines same suit": (8, 12, 16, 10),
    "Two nines": (5, 5, 5, 4),
    "One nine diamonds": (2, 2, 2, 2),
    "One nine": (1, 1, 1, 1),
}
ROUNDS = [
    ("9S 9H", "9C 9D", "Four nines"),
    ("9S 9S", "2C 9S", "Three nines same suit"),
    ("9S 9H", "2C 9S", "Three nines"),
    ("9H 3C", "9H 2D", "Two nines same suit"),     # one in each hand counts (631c.4(a))
    ("9H 9C", "4C 2D", "Two nines"),
    ("4C 2D", "9D KC", "One nine diamonds"),
    ("4C 9C", "3D KC", "One nine"),
]


@pytest.mark.parametrize("index,letter", list(enumerate("ABCD")))
@pytest.mark.parametrize("player,banker,line", ROUNDS)
def test_lucky_nines_lines_631c_4_d_2_e(index: int, letter: str, player: str, banker: str,
                                         line: str) -> None:
    s = make_lucky_nines("lucky_nines", letter, True).settle(1, 100, view(player, banker))
    assert (s.outcome, s.label, s.win_cents) == (Outcome.WIN, line, 100 * ODDS[line][index])


def test_lucky_nines_no_nine_loses_and_third_card_nines_do_not_count_631c_4_d_1() -> None:
    """631c.4(d)(1); 631c.4(f): the third cards are dealt only after settlement."""
    rule = make_lucky_nines("lucky_nines", "A", True)
    s = rule.settle(1, 100, view("4C 2D 9S", "3D KC 9H"))
    assert (s.outcome, s.section) == (Outcome.LOSE, "631c.4(d)(1)")
    assert rule.settles_at is SettlementPoint.FIRST_FOUR_CARDS  # 631c.4(d): before a third card


@pytest.mark.parametrize("automated", [False, None, "yes"])
def test_lucky_nines_only_on_a_fully_automated_table_631c_4_a(automated: object) -> None:
    with pytest.raises(WagerConfigError) as err:
        make_lucky_nines("lucky_nines", "A", automated)
    assert err.value.option == "fully_automated" and "631c.4(a)" in str(err.value)


def test_lucky_nines_wrong_letter() -> None:
    with pytest.raises(WagerConfigError, match="'E'.*'A', 'B', 'C', 'D'"):
        make_lucky_nines("lucky_nines", "E", True)


def test_lucky_nines_distribution_sums_and_four_nines_exact() -> None:
    dist = make_lucky_nines("ln", "C", True).exact_distribution(8)
    assert dist["Four nines"] == Fraction(32 * 31 * 30 * 29, 416 * 415 * 414 * 413)
    # One nine: exactly one of the four cards is a nine.
    one = dist["One nine"] + dist["One nine diamonds"]
    assert one == Fraction(4 * 32 * 384 * 383 * 382, 416 * 415 * 414 * 413)
    assert dist["One nine diamonds"] * 3 == dist["One nine"]
