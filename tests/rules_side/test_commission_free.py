"""631c.5 / 627b.2 commission-free play: Banker 1 to 2 on a winning 6, pairs, Lucky Six."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.rules.baccarat import Hand
from controller.rules.money import Rounding
from controller.rules.side.commission_free import (
    CommissionFreeBanker, CommissionFreePlayer, CommissionFreeTie, LuckySix, commission_free_pair,
)
from controller.rules.wager import Outcome, SettlementPoint

from tests.rules.test_submission import errors

from .helpers import dealt, view

SECTIONS = ["631c.5", "627b.2"]


@pytest.mark.parametrize("section", SECTIONS)
def test_banker_wins_with_6_pays_1_to_2_631c_5_i(section: str) -> None:
    s = CommissionFreeBanker("banker", section).settle(2, 1000, view("5C 10D", "6H KS"))
    assert (s.outcome, s.label, s.odds, s.win_cents, s.vigorish_cents) == \
        (Outcome.WIN, "Banker wins with 6", Fraction(1, 2), 500, 0)
    assert s.section == f"{section}(i)"


def test_banker_1_to_2_on_odd_cents_rounds_through_money_module() -> None:
    """2.5 cents is not payable: the configured rounding decides (default down)."""
    v = view("5C 10D", "6H KS")
    assert CommissionFreeBanker("banker", "631c.5").settle(1, 1005, v).win_cents == 502
    assert CommissionFreeBanker("banker", "631c.5", Rounding.HALF_UP).settle(1, 1005, v).win_cents == 503


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize("banker", ["7H KS", "9C 10C", "3H 3S 2C"])
def test_other_banker_wins_pay_1_to_1_without_vigorish_631c_5_a_i(section: str, banker: str) -> None:
    s = CommissionFreeBanker("banker", section).settle(1, 1000, view("5C 10D", banker))
    assert (s.outcome, s.win_cents, s.vigorish_cents, s.net_cents) == (Outcome.WIN, 1000, 0, 1000)


@pytest.mark.parametrize("section,tie_clause", [("631c.5", "631a.8(a)(1)(iii)"),
                                               ("627b.2", "627a.7(a)")])
def test_banker_tie_is_returned_and_player_win_loses(section: str, tie_clause: str) -> None:
    """631c.5(a), 627b.2(a): no commission; a tie returns the Banker wager."""
    rule = CommissionFreeBanker("banker", section)
    s = rule.settle(1, 1000, view("6C 10D", "6H KS"))
    assert (s.outcome, s.section) == (Outcome.PUSH, tie_clause)
    assert rule.settle(1, 1000, view("7C 10D", "6H KS")).outcome is Outcome.LOSE


@pytest.mark.parametrize("section,tie_clause", [("631c.5", "631c.5(j)"), ("627b.2", "627b.2(j)")])
def test_player_and_tie_631c_5_h_j_627b_2_h_j(section: str, tie_clause: str) -> None:
    """631c.5(h), 627b.2(h): Player 1 to 1; 631c.5(j), 627b.2(j): Tie 8 to 1."""
    win = view("7C 10D", "6H KS")
    tie = view("6C 10D", "6H KS")
    assert CommissionFreePlayer("player", section).settle(1, 700, win).win_cents == 700
    assert CommissionFreePlayer("player", section).settle(1, 700, tie).outcome is Outcome.PUSH
    s = CommissionFreeTie("tie", section).settle(1, 700, tie)
    assert (s.win_cents, s.section) == (5600, tie_clause)
    assert CommissionFreeTie("tie", section).settle(1, 700, win).outcome is Outcome.LOSE


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize("hand,player,banker,wins", [
    (Hand.PLAYER, "9S 9H", "2C 3C", True),      # (c)(1): two nines
    (Hand.PLAYER, "QS QD", "2C 3C", True),      # two queens
    (Hand.PLAYER, "QS KS", "2C 3C", False),     # same value, different rank
    (Hand.BANKER, "2C 3C", "AH AS", True),      # (c)(2)
    (Hand.BANKER, "5C 5C", "AH 2S", False),     # the Player's pair is not the Banker's
])
def test_pair_wagers_pay_11_to_1_631c_5_c_1_c_2_g(section: str, hand: Hand, player: str,
                                                   banker: str, wins: bool) -> None:
    rule = commission_free_pair("pair", section, hand)
    s = rule.settle(4, 500, view(player, banker))
    assert s.outcome is (Outcome.WIN if wins else Outcome.LOSE)
    # (c)(1) Player Pair, (c)(2) Banker Pair: 631c.5(c)(1), 631c.5(c)(2), 627b.2(c)(1), 627b.2(c)(2)
    assert s.section == f"{section}(c)({1 if hand is Hand.PLAYER else 2})"
    assert s.win_cents == (5500 if wins else 0)
    # 631c.5(d), 627b.2(d): settled before any third card is dealt.
    assert rule.settles_at is SettlementPoint.FIRST_FOUR_CARDS


@pytest.mark.parametrize("section", SECTIONS)
def test_lucky_six_two_cards_12_to_1_631c_5_k_1(section: str) -> None:
    s = LuckySix("lucky_six", section).settle(1, 1000, view("5C 10D", "6H KS"))
    assert (s.label, s.win_cents) == ("Lucky Six, two cards", 12000)
    assert s.section == {"631c.5": "631c.5(k)(1)", "627b.2": "627b.2(k)(1)"}[section]


@pytest.mark.parametrize("section", SECTIONS)
def test_lucky_six_three_cards_20_to_1_631c_5_k_2(section: str) -> None:
    # Player K K = 0 draws a 5; Banker A 2 = 3 draws on a 5 (631a.11 Table 1) and makes 6.
    v = dealt("KC", "AH", "KD", "2S", "5C", "3D")
    assert len(v.banker) == 3 and v.banker_total == 6 and v.player_total == 5
    s = LuckySix("lucky_six", section).settle(1, 1000, v)
    assert (s.label, s.win_cents) == ("Lucky Six, three cards", 20000)
    assert s.section == {"631c.5": "631c.5(k)(2)", "627b.2": "627b.2(k)(2)"}[section]


@pytest.mark.parametrize("player,banker", [
    ("6C 10D", "6H KS"),   # 6-6 tie: not *higher* (c)(3), not a win (k); ruling: loses
    ("7C 10D", "6H KS"),   # (c)(3)(i): a six lower than the Player's
    ("5C 10D", "7H KS"),   # (c)(3)(ii): not a six
])
@pytest.mark.parametrize("section,clause", [("631c.5", "631c.5(c)(3)"), ("627b.2", "627b.2(c)(3)")])
def test_lucky_six_loses_631c_5_c_3(player: str, banker: str, section: str, clause: str) -> None:
    """631c.5(c)(3)(i)-(ii), 627b.2(c)(3)(i)-(ii): a six below the Player's, or no six; a 6-6 tie
    is neither a win nor returned (docs/rulings.md)."""
    s = LuckySix("lucky_six", section).settle(1, 1000, view(player, banker))
    assert (s.outcome, s.section) == (Outcome.LOSE, clause)


@pytest.mark.parametrize("section,clause", [("631c.5", "631c.5(c)(3)"), ("627b.2", "627b.2(c)(3)")])
def test_lucky_six_six_six_tie_returned_option(section: str, clause: str) -> None:
    """631c.5(c)(3)/(k), 627b.2(c)(3)/(k) say nothing of a 6-6 tie; the other reading
    (`six_six_tie = "returned"`) returns the wager, and a won six still pays 12 to 1."""
    rule = LuckySix("lucky_six", section, six_six_tie="returned")
    s = rule.settle(1, 1000, view("6C 10D", "6H KS"))
    assert (s.outcome, s.win_cents, s.net_cents, s.section) == (Outcome.PUSH, 0, 0, clause)
    assert rule.settle(1, 1000, view("5C 10D", "6H KS")).win_cents == 12000
    assert rule.settle(1, 1000, view("7C 10D", "6H KS")).outcome is Outcome.LOSE


@pytest.mark.parametrize("decks,loses,returned", [(8, "16.683572", "14.759556"),
                                                  (6, "16.716333", "14.795574")])
def test_lucky_six_par_of_each_six_six_reading(decks: int, loses: str, returned: str) -> None:
    """House edges of both readings; they differ by exactly the chance of a 6-6 tie, taken
    from the main game's round classes (the Tie's enumeration, not the Lucky Six's)."""
    from controller.rules.par import ParContext
    from controller.rules.submission_types import GameConfig

    lose_rule = LuckySix("lucky_six", "631c.5")
    push_rule = LuckySix("lucky_six", "631c.5", six_six_tie="returned")
    assert f"{float(lose_rule.house_edge(decks)) * 100:.6f}" == loses
    assert f"{float(push_rule.house_edge(decks)) * 100:.6f}" == returned
    ctx = ParContext(GameConfig(family="baccarat", decks=decks))
    six_six = Fraction(sum(w for f, w in ctx.round_facts.items()
                           if f.player_total == f.banker_total == 6), ctx.six_card_denominator)
    assert lose_rule.house_edge(decks) - push_rule.house_edge(decks) == six_six


def test_lucky_six_option_is_validated() -> None:
    from controller.rules.submission import parse_submission

    data = {"table": {"id": "T", "seats": 14},
            "game": {"family": "baccarat", "decks": 8, "variant": "commission-free"},
            "wagers": {"banker": {}, "player": {}, "lucky_six": {"six_six_tie": "push"}}}
    assert errors(data) == [
        "t.toml: wagers.lucky_six.six_six_tie = 'push': one of 'loses', 'returned' "
        "(docs/rulings.md: Lucky Six on a 6-6 tie)"]
    data["wagers"]["lucky_six"] = {"six_six_tie": "returned"}
    assert parse_submission(data, "t.toml").wagers[-1].options == {"six_six_tie": "returned"}


@pytest.mark.parametrize("family,section", [("baccarat", "631c.5(j)"),
                                            ("minibaccarat", "627b.2(j)")])
def test_a_commission_free_tie_other_than_8_to_1_is_refused_631c_5_j_627b_2_j(
        family: str, section: str) -> None:
    """docs/rulings.md, "Commission-free Tie is exactly 8 to 1": the game's Tie odds are
    refused under the Tie wager's key; at 8 to 1 a $5 Tie wins $40."""
    from controller.rules.game import build_game
    from controller.rules.submission import parse_submission

    data = {"table": {"id": "T", "seats": 14},
            "game": {"family": family, "decks": 8, "variant": "commission-free",
                     "tie": {"odds": "9 to 1"}},
            "wagers": {"banker": {}, "player": {}, "tie": {}}}
    assert errors(data) == [
        "t.toml: wagers.tie.game.tie.odds = '9 to 1': commission-free play pays a Tie at "
        "exactly 8 to 1 (631c.5(j), 627b.2(j))"]
    data["game"]["tie"] = {"odds": "8 to 1"}
    tie = build_game(parse_submission(data, "t.toml")).wager_rules["tie"]
    s = tie.settle(4, 500, view("4S 3H", "2D 5C"))
    assert (s.outcome, s.win_cents, s.section) == (Outcome.WIN, 4000, section)
