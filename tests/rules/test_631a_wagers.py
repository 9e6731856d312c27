"""631a.8 wagers and 631a.13 payout odds, settled in exact cents."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.rules.baccarat_wagers import DRAGON_BONUS_PAYTABLES, HouseMoneyWager
from controller.rules.game import Game
from controller.rules.wager import Outcome, Settlement, SettlementPoint

from tests.rules.helpers import game_of, view

WIN, LOSE, PUSH = Outcome.WIN, Outcome.LOSE, Outcome.PUSH


def settle(game: Game, key: str, player: str, banker: str, amount: int = 10000) -> Settlement:
    return game.wager_rules[key].settle(3, amount, view(player, banker))


STD = game_of({"tie": {}, "dragon_bonus_player": {"paytable": "A"},
               "dragon_bonus_banker": {"paytable": "A"}, "house_money": {}})


def test_631a_8_a_1_i_banker_wins_higher_point_count() -> None:
    s = settle(STD, "banker", "2S 3H", "4D 4C")
    assert s.outcome is WIN and s.win_cents == 10000


def test_631a_8_a_1_ii_banker_loses_lower_point_count() -> None:
    s = settle(STD, "banker", "9S KH", "4D 4C")
    assert s.outcome is LOSE and s.net_cents == -10000


def test_631a_8_a_1_iii_banker_tie_returned() -> None:
    assert settle(STD, "banker", "7S KH", "3D 4C").outcome is PUSH


def test_631a_8_a_2_player_win_lose_tie() -> None:
    assert settle(STD, "player", "9S KH", "4D 4C").outcome is WIN  # 631a.8(a)(2)(i)
    assert settle(STD, "player", "2S KH", "4D 4C").outcome is LOSE  # 631a.8(a)(2)(ii)
    assert settle(STD, "player", "4S 4H", "4D 4C").outcome is PUSH  # 631a.8(a)(2)(iii)


def test_631a_13_a_player_paid_1_to_1() -> None:
    s = settle(STD, "player", "9S KH", "4D 4C", 2500)
    assert (s.win_cents, s.vigorish_cents, s.net_cents) == (2500, 0, 2500)


def test_631a_8_a_3_tie_wins_on_equal_loses_otherwise() -> None:
    assert settle(STD, "tie", "4S 4H", "4D 4C").outcome is WIN  # 631a.8(a)(3)(i)
    assert settle(STD, "tie", "5S 4H", "4D 4C").outcome is LOSE  # 631a.8(a)(3)(ii)


@pytest.mark.parametrize("odds,expected", [("8 to 1", 80000), ("9 to 1", 90000)],
                         ids=["631a.13(b)-8to1", "631a.13(b)-9to1"])
def test_631a_13_b_tie_paid_at_configured_odds(odds: str, expected: int) -> None:
    g = game_of({"tie": {}}, tie={"odds": odds})
    assert settle(g, "tie", "4S 4H", "4D 4C").win_cents == expected


@pytest.mark.parametrize("amount,vig", [(10000, 500), (2500, 125), (1000, 50), (1010, 51),
                                        (1, 1)])
def test_631a_13_c_banker_vigorish_5_percent(amount: int, vig: int) -> None:
    s = settle(STD, "banker", "2S 3H", "4D 4C", amount)
    assert s.vigorish_cents == vig and s.net_cents == amount - vig


@pytest.mark.parametrize("amount,vig", [(10000, 500), (2500, 125), (1000, 50), (500, 25),
                                        (100, 25), (2600, 150)])
def test_631a_13_c_vigorish_round_up_to_25c(amount: int, vig: int) -> None:
    g = game_of({}, vigorish={"collection": "at-payout", "round_up_to_25c": True})
    assert settle(g, "banker", "2S 3H", "4D 4C", amount).vigorish_cents == vig


def test_631a_13_c_no_vigorish_on_player_or_tie_or_loss() -> None:
    assert settle(STD, "player", "9S KH", "4D 4C").vigorish_cents == 0
    assert settle(STD, "banker", "9S KH", "4D 4C").vigorish_cents == 0


# ---- EZ Baccarat ---------------------------------------------------------------------------

EZ = game_of({"dragon_7": {}, "panda_8": {}}, variant="ez")


def test_631a_8_a_1_iii_ez_dragon_7_pushes_banker() -> None:
    s = settle(EZ, "banker", "KS 6D", "3H 2C 2D")
    assert s.outcome is PUSH and s.label.startswith("Dragon 7")


def test_631a_1_ez_banker_wins_without_vigorish() -> None:
    s = settle(EZ, "banker", "2S 3H", "4D 4C")
    assert s.outcome is WIN and s.vigorish_cents == 0 and s.net_cents == 10000


def test_631a_8_a_2_ii_ez_dragon_7_player_loses() -> None:
    assert settle(EZ, "player", "KS 6D", "3H 2C 2D").outcome is LOSE


def test_631a_13_f_dragon_7_insurance_40_to_1() -> None:
    s = settle(EZ, "dragon_7", "KS 6D", "3H 2C 2D", 500)
    assert s.outcome is WIN and s.win_cents == 20000  # 631a.8(a)(5)(i)
    assert settle(EZ, "dragon_7", "KS 6D", "3H 4C").outcome is LOSE  # 631a.8(a)(5)(ii)


def test_631a_13_g_panda_8_insurance_25_to_1() -> None:
    s = settle(EZ, "panda_8", "2S 3D 3C", "KH 5C", 500)
    assert s.outcome is WIN and s.win_cents == 12500  # 631a.8(a)(6)(i)
    assert settle(EZ, "panda_8", "2S 6D", "KH 5C").outcome is LOSE  # 631a.8(a)(6)(ii)


def test_631a_8_a_2_i_ez_panda_8_player_wins() -> None:
    assert settle(EZ, "player", "2S 3D 3C", "KH 5C").outcome is WIN


# ---- Dragon Bonus -----------------------------------------------------------------------

# (player cards, banker cards, margin or "natural") for a Player-side Dragon Bonus win.
MARGIN_HANDS = {
    9: ("AS 5D 3C", "KH QC KD"),  # 9 vs 0, both three cards
    8: ("AS 4D 3C", "KH QC KD"),
    7: ("AS 3D 3C", "KH QC KD"),
    6: ("AS 2D 3C", "KH QC KD"),
    5: ("AS AD 3C", "KH QC KD"),
    4: ("AS AD 2C", "KH QC KD"),
}
PAYLINES = [(t, m) for t in "ABC" for m in (9, 8, 7, 6, 5, 4)]


@pytest.mark.parametrize("table,margin", PAYLINES,
                         ids=[f"631a.13(e)-{t}-win-by-{m}" for t, m in PAYLINES])
def test_631a_13_e_dragon_bonus_margin_paylines(table: str, margin: int) -> None:
    g = game_of({"dragon_bonus_player": {"paytable": table}})
    s = settle(g, "dragon_bonus_player", *MARGIN_HANDS[margin], amount=1000)
    assert s.outcome is WIN and s.section == "631a.8(a)(4)(i)(C)"
    assert s.win_cents == 1000 * DRAGON_BONUS_PAYTABLES[table][margin]
    assert s.vigorish_cents == 0  # 631a.13(e): no vigorish


def test_631a_13_e_paytables_as_published() -> None:
    assert [DRAGON_BONUS_PAYTABLES["A"][m] for m in (9, 8, 7, 6, 5, 4, 0)] == [30, 10, 6, 4, 2, 1, 1]
    assert [DRAGON_BONUS_PAYTABLES["B"][m] for m in (9, 8, 7, 6, 5, 4, 0)] == [20, 8, 7, 4, 3, 1, 1]
    assert [DRAGON_BONUS_PAYTABLES["C"][m] for m in (9, 8, 7, 6, 5, 4, 0)] == [30, 10, 4, 4, 2, 2, 1]


@pytest.mark.parametrize("table", "ABC", ids=lambda t: f"631a.13(e)-{t}-natural-winner")
def test_631a_8_a_4_i_A_natural_winner_1_to_1(table: str) -> None:
    g = game_of({"dragon_bonus_banker": {"paytable": table}})
    s = settle(g, "dragon_bonus_banker", "2S 3H", "4D 4C", 1000)
    assert s.outcome is WIN and s.win_cents == 1000 and s.section == "631a.8(a)(4)(i)(A)"


def test_631a_8_a_4_i_B_natural_9_over_natural_8() -> None:
    s = settle(STD, "dragon_bonus_player", "9S KH", "4D 4C", 1000)
    assert s.outcome is WIN and s.win_cents == 1000


def test_631a_8_a_4_ii_A_natural_8_under_natural_9_loses() -> None:
    assert settle(STD, "dragon_bonus_banker", "9S KH", "4D 4C").outcome is LOSE


def test_631a_8_a_4_ii_B_not_natural_not_ahead_loses() -> None:
    assert settle(STD, "dragon_bonus_player", "2S 2H 2D", "3C 3H").outcome is LOSE


def test_631a_8_a_4_ii_C_win_by_fewer_than_4_loses() -> None:
    s = settle(STD, "dragon_bonus_player", "AS 2D 4C", "KH QC 4D")
    assert s.outcome is LOSE and s.section == "631a.8(a)(4)(ii)(C)"


def test_631a_8_a_4_iii_natural_tie_pushes() -> None:
    assert settle(STD, "dragon_bonus_player", "8S KH", "4D 4C").outcome is PUSH


# ---- House Money -------------------------------------------------------------------------

def test_631a_13_h_player_and_banker_pair_15_to_1() -> None:
    s = settle(STD, "house_money", "QS QH", "4D 4C", 1000)
    assert s.outcome is WIN and s.win_cents == 15000  # 631a.8(a)(7)(i)


@pytest.mark.parametrize("player,banker", [("QS QH", "4D 5C"), ("QS KH", "4D 4C")])
def test_631a_13_h_player_or_banker_pair_3_to_1(player: str, banker: str) -> None:
    assert settle(STD, "house_money", player, banker, 1000).win_cents == 3000


def test_631a_8_a_7_i_pair_is_same_rank_not_same_value() -> None:
    assert settle(STD, "house_money", "QS KH", "10D JC").outcome is LOSE  # 631a.8(a)(7)(ii)


def test_631a_9_e_house_money_settles_after_first_four_cards() -> None:
    rule = STD.wager_rules["house_money"]
    assert rule.settles_at is SettlementPoint.FIRST_FOUR_CARDS


@pytest.mark.parametrize("percent,ride", [(100, 3000), (50, 1500), (33, 990)],
                         ids=["631a.9(e)(1)(i)-all", "631a.9(e)(1)(i)-half", "631a.9(e)(1)(i)-33"])
def test_631a_9_e_1_i_ride_all_or_configured_portion(percent: int, ride: int) -> None:
    g = game_of({"house_money": {"ride_percent": percent}})
    rule = g.wager_rules["house_money"]
    assert isinstance(rule, HouseMoneyWager)
    s = settle(g, "house_money", "QS QH", "4D 5C", 1000)
    assert rule.ride_cents(s) == ride


def test_631a_13_odds_are_fractions() -> None:
    s = settle(STD, "tie", "4S 4H", "4D 4C")
    assert s.odds == Fraction(8)
