"""631c.3 5 Treasures: Fortune 7, Golden 8, Heavenly 9, Blazing 7s, Cover All."""

from __future__ import annotations

import pytest

from controller.rules.side.five_treasures import Treasure, make_five_treasures
from controller.rules.wager import Outcome, SettlementPoint

from .helpers import dealt, view

# Rounds dealt by the coup (shoe order P B P B [P] [B]).
FORTUNE_7 = dealt("KC", "AH", "KD", "2S", "5C", "4D")       # P 5, B 3+4 = 7 (3 cards)
GOLDEN_8 = dealt("KC", "3H", "KD", "4S", "8C")               # P 0+8 = 8 (3 cards), B 7 stands
H9_PLAYER = dealt("AC", "7H", "AD", "KS", "7C")              # P 2+7 = 9, B 7 stands
H9_BANKER = dealt("KC", "AH", "KD", "2S", "3C", "6D")        # P 3, B 3+6 = 9
H9_BOTH = dealt("AC", "AH", "AD", "2S", "7C", "6D")          # P 2+7 = 9, B 3+6 = 9
B7_THREE = dealt("AC", "AH", "AD", "2S", "5C", "4D")         # P 2+5 = 7, B 3+4 = 7
B7_TWO = dealt("3C", "3H", "4D", "4S")                       # 7 v 7, two cards each
B7_MIXED = dealt("3C", "AH", "4D", "2S", "4C")               # P 7 (2), B 3+4 = 7 (3)


@pytest.mark.parametrize("letter", "AB")
def test_fortune_7_banker_wins_with_3_card_7_631c_3_f_1(letter: str) -> None:
    rule = make_five_treasures(Treasure.FORTUNE_7, letter)
    assert rule.settle(1, 500, FORTUNE_7).win_cents == 20000  # 40 to 1
    assert rule.settle(1, 500, B7_THREE).outcome is Outcome.LOSE  # a 7-7 tie is no win


@pytest.mark.parametrize("letter", "AB")
def test_golden_8_player_wins_with_3_card_8_631c_3_f_2(letter: str) -> None:
    rule = make_five_treasures(Treasure.GOLDEN_8, letter)
    assert rule.settle(1, 500, GOLDEN_8).win_cents == 12500  # 25 to 1
    assert rule.settle(1, 500, view("8C 10D", "2C 3D")).outcome is Outcome.LOSE  # natural 8


@pytest.mark.parametrize("letter", "AB")
@pytest.mark.parametrize("round_view,line,win", [
    (H9_PLAYER, "Heavenly 9, player or banker", 5000),
    (H9_BANKER, "Heavenly 9, player or banker", 5000),
    (H9_BOTH, "Heavenly 9, player and banker", 37500),
])
def test_heavenly_9_either_or_both_631c_3_f_3(letter: str, round_view, line: str, win: int) -> None:
    s = make_five_treasures(Treasure.HEAVENLY_9, letter).settle(1, 500, round_view)
    assert (s.label, s.win_cents) == (line, win)


def test_heavenly_9_natural_9_is_not_a_3_card_9() -> None:
    rule = make_five_treasures(Treasure.HEAVENLY_9, "A")
    assert rule.settle(1, 500, view("9C 10D", "2C 3D")).outcome is Outcome.LOSE


@pytest.mark.parametrize("letter,three,two", [("A", 200000, None), ("B", 100000, 25000)])
def test_blazing_7s_paytables_631c_3_f_4_h(letter: str, three: int, two: int | None) -> None:
    """631c.3(f)(4) and 631c.3(h): paytable A has no 2-card line."""
    rule = make_five_treasures(Treasure.BLAZING_7S, letter)
    assert rule.settle(1, 500, B7_THREE).win_cents == three  # 400 / 200 to 1
    s = rule.settle(1, 500, B7_TWO)
    if two is None:
        assert s.outcome is Outcome.LOSE  # paytable A: 2-card Blazing 7s is "N/A"
    else:
        assert (s.label, s.win_cents) == ("2-card Blazing 7s", two)


@pytest.mark.parametrize("letter", "AB")
def test_blazing_7s_two_card_against_three_card_loses(letter: str) -> None:
    """Ruling: a Blazing 7s is a 2-card or a 3-card 7 in both hands, not one of each."""
    assert make_five_treasures(Treasure.BLAZING_7S, letter).settle(1, 500, B7_MIXED).outcome \
        is Outcome.LOSE


@pytest.mark.parametrize("letter", "AB")
@pytest.mark.parametrize("round_view", [FORTUNE_7, GOLDEN_8, H9_PLAYER, H9_BOTH, B7_THREE])
def test_cover_all_wins_when_any_other_treasure_wins_631c_3_f_5(letter: str, round_view) -> None:
    s = make_five_treasures(Treasure.COVER_ALL, letter).settle(1, 500, round_view)
    assert (s.outcome, s.win_cents) == (Outcome.WIN, 3000)


def test_cover_all_follows_the_paytable_for_2_card_blazing_7s() -> None:
    assert make_five_treasures(Treasure.COVER_ALL, "A").settle(1, 500, B7_TWO).outcome is Outcome.LOSE
    assert make_five_treasures(Treasure.COVER_ALL, "B").settle(1, 500, B7_TWO).win_cents == 3000


@pytest.mark.parametrize("treasure", list(Treasure))
def test_all_settle_at_the_end_of_the_round_631c_3_e(treasure: Treasure) -> None:
    """631c.3(d)-(e): the round is completed under 631a, then each wager settles; 631c.3(g)."""
    rule = make_five_treasures(treasure, "A")
    assert rule.settles_at is SettlementPoint.END_OF_ROUND
    assert rule.settle(1, 500, view("2C 4D", "KH 7S")).section == "631c.3(g)"


def test_cover_all_probability_is_the_union_of_the_others() -> None:
    for letter in "AB":
        cover = make_five_treasures(Treasure.COVER_ALL, letter).exact_distribution(8)["Cover All"]
        parts = sum(sum(make_five_treasures(t, letter).exact_distribution(8).values())
                    for t in list(Treasure)[:4])
        assert cover <= parts  # overlaps (a Fortune 7 with a Player 3-card 9) counted once
        assert cover > max(sum(make_five_treasures(t, letter).exact_distribution(8).values())
                           for t in list(Treasure)[:4])


def test_five_separate_wagers_631c_3_a_b() -> None:
    """631c.3(a): one or more of five wagers; 631c.3(b)(1) Fortune 7, 631c.3(b)(2) Golden 8,
    631c.3(b)(3) Heavenly 9, 631c.3(b)(4) Blazing 7s, 631c.3(b)(5) Cover All, each its own key."""
    from controller.rules.registry import load_rules

    keys = set(load_rules().keys_for("baccarat", "standard"))
    assert {t.key for t in Treasure} <= keys and len(Treasure) == 5
