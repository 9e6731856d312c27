"""627b.4 Rising Phoenix: the Banker in both forms and all twenty Bonus wagers."""

from __future__ import annotations

import pytest

from controller.rules.side.rising_phoenix import (
    RISING_PHOENIX_BONUSES, RisingPhoenixBanker, RisingPhoenixBonus, rising_phoenix_pair,
)
from controller.rules.wager import Outcome, RoundView, SettlementPoint

from .helpers import view

BONUS = {b.key: b for b in RISING_PHOENIX_BONUSES}

# key -> (clause, odds, a winning round, a losing round that comes close)
CASES: dict[str, tuple[str, int, RoundView, RoundView]] = {
    "sun_7": ("627b.4(g)(4)(i)", 40, view("KC 5D", "AH 2S 4D"), view("KC 5D", "3H 4S")),
    "moon_8": ("627b.4(g)(4)(ii)", 25, view("KC KD 8S", "7H KS"), view("8C KD", "7H KS")),
    "nine_over_seven": ("627b.4(g)(4)(iii)", 25, view("KC 7D", "9H KS"), view("KC 7D", "8H KS")),
    "two_card_8_over_two_card_1": ("627b.4(g)(4)(iv)", 50, view("AC KD", "8H KS"), view("AC KD 10C", "8H KS")),
    "player_wins_three_card_6": ("627b.4(g)(4)(v)", 40, view("KC KD 6S", "5H KS"), view("6C KD", "5H KS")),
    "banker_wins_1_or_2": ("627b.4(g)(4)(vi)", 60, view("KC KD 10S", "AH KS"), view("KC KD 10S", "3H KS")),
    "both_8_or_9": ("627b.4(g)(4)(vii)", 20, view("8C KD", "8H KS"), view("8C KD", "7H KS")),
    "one_over_zero": ("627b.4(g)(4)(viii)", 90, view("AC KD", "KH KS JC"), view("2C KD", "KH KS JC")),
    "three_card_6_over_three_card_3": ("627b.4(g)(4)(ix)", 150, view("KC KD 6S", "KH KS 3C"),
                                        view("6C KD", "KH KS 3C")),
    "three_card_8_over_three_card_0": ("627b.4(g)(4)(x)", 130, view("KC KD KS", "KH KS 8C"),
                                        view("KC KD", "KH KS 8C")),
    "banker_over_two_card_7": ("627b.4(g)(4)(xi)", 30, view("7C KD", "8H KS"), view("7C KD 10S", "8H KS")),
    "three_card_9_over_three_card_6": ("627b.4(g)(4)(xii)", 200, view("KC KD 9S", "KH KS 6C"),
                                        view("KC KD 9S", "KH 6C")),
    "three_card_9_over_three_card_8": ("627b.4(g)(4)(xiii)", 200, view("KC KD 8S", "KH KS 9C"),
                                        view("KC KD 8S", "KH KS 7C")),
    "player_three_card_8_over_three_card_0": ("627b.4(g)(4)(xiv)", 250, view("KC KD 8S", "KH KS QC"),
                                               view("KC KD QS", "KH KS 8C")),
    "tie_0": ("627b.4(g)(4)(xv)", 150, view("KC KD KS", "KH QS"), view("AC KD", "KH QS")),
    "tie_1_2_3": ("627b.4(g)(4)(xvi)", 70, view("2C KD", "AH AS"), view("4C KD", "2H 2S")),
    "tie_4_5_6_7": ("627b.4(g)(4)(xvii)", 15, view("7C KD", "4H 3S"), view("8C KD", "4H 4S")),
    "tie_8_or_9": ("627b.4(g)(4)(xviii)", 40, view("9C KD", "4H 5S"), view("7C KD", "4H 3S")),
}


def test_there_are_twenty_bonus_wagers_627b_4_g_4() -> None:
    assert len(RISING_PHOENIX_BONUSES) + 2 == 20
    assert set(CASES) == set(BONUS)


@pytest.mark.parametrize("key", sorted(CASES))
def test_bonus_wins_at_its_odds_627b_4_g_4_h_2(key: str) -> None:
    """627b.4(h)(2): each Bonus wager's odds."""
    clause, odds, win, _ = CASES[key]
    rule = RisingPhoenixBonus(f"rising_phoenix_{key}", BONUS[key])
    s = rule.settle(1, 500, win)
    assert (s.outcome, s.win_cents, s.section) == (Outcome.WIN, 500 * odds, clause)
    assert rule.settles_at is SettlementPoint.END_OF_ROUND


@pytest.mark.parametrize("key", sorted(CASES))
def test_bonus_loses_otherwise(key: str) -> None:
    clause, _, _, lose = CASES[key]
    s = RisingPhoenixBonus(key, BONUS[key]).settle(1, 500, lose)
    assert (s.outcome, s.section) == (Outcome.LOSE, clause)


def test_either_hand_may_win_the_over_wagers_627b_4_g_4_iii() -> None:
    rule = RisingPhoenixBonus("x", BONUS["nine_over_seven"])
    assert rule.settle(1, 100, view("9C KD", "7H KS")).outcome is Outcome.WIN
    assert rule.settle(1, 100, view("7C KD", "9H KS")).outcome is Outcome.WIN


@pytest.mark.parametrize("which,clause,player,banker", [
    ("player_pair", "627b.4(g)(4)(xix)", "4C 4D", "KH QS"),
    ("banker_pair", "627b.4(g)(4)(xx)", "4C 5D", "KH KS")])
def test_pair_wagers_11_to_1_627b_4_g_4_xix_xx(which: str, clause: str, player: str,
                                               banker: str) -> None:
    rule = rising_phoenix_pair(which, f"rising_phoenix_{which}")
    s = rule.settle(1, 500, view(player, banker))
    assert (s.win_cents, s.section, rule.key) == (5500, clause, f"rising_phoenix_{which}")
    assert rule.settles_at is SettlementPoint.FIRST_FOUR_CARDS  # as 627b.2(d), ruling
    assert rule.settle(1, 500, view(banker, player)).outcome is Outcome.LOSE


def test_commission_free_banker_three_card_7_win_is_returned_627b_4_g_1_iv() -> None:
    rule = RisingPhoenixBanker("banker", commission_free=True)
    s = rule.settle(1, 1000, view("KC 5D", "AH 2S 4D"))
    assert (s.outcome, s.section) == (Outcome.PUSH, "627b.4(g)(1)(iv)")
    s = rule.settle(1, 1000, view("KC 5D", "6H KS"))  # a winning 6 pays 1 to 1 here
    assert (s.outcome, s.win_cents, s.vigorish_cents) == (Outcome.WIN, 1000, 0)


def test_standard_banker_pays_with_vigorish_627b_4_h_1() -> None:
    """627b.4(g)(1)(i) win, 627b.4(g)(1)(ii) lose, 627b.4(g)(1)(iii) tie returned; 627b.4(b)
    standard commission form, 627b.4(c) otherwise as 627a."""
    rule = RisingPhoenixBanker("banker", commission_free=False)
    s = rule.settle(1, 1000, view("KC 5D", "AH 2S 4D"))  # a 3-card 7 win is a win here
    assert (s.outcome, s.win_cents, s.vigorish_cents, s.net_cents) == (Outcome.WIN, 1000, 50, 950)
    assert rule.settle(1, 1000, view("KC 5D", "5H KS")).outcome is Outcome.PUSH  # (g)(1)(iii)
    assert rule.settle(1, 1000, view("KC 6D", "5H KS")).outcome is Outcome.LOSE  # (g)(1)(ii)


def test_rising_phoenix_table_offers_player_tie_talons_and_harmony_627b_4_g_2_6() -> None:
    """627b.4(a) the variation at a minibaccarat table; 627b.4(g)(2) Player and 627b.4(g)(3) Tie
    as in 627a; 627b.4(g)(5) Golden Talons and 627b.4(g)(6) Harmony may be offered with it."""
    from controller.rules.registry import load_rules

    keys = set(load_rules().keys_for("minibaccarat", "commission-free"))
    assert {"player", "tie", "golden_talons_player", "golden_talons_banker",
            "harmony_progressive"} <= keys
    assert {f"rising_phoenix_{b.key}" for b in RISING_PHOENIX_BONUSES} <= keys


@pytest.mark.parametrize("decks,ok", [(6, True), (7, False), (8, True)])
def test_six_or_eight_decks_627b_4_f(decks: int, ok: bool) -> None:
    from controller.rules.submission import SubmissionError, parse_submission

    data = {"table": {"id": "T", "seats": 7},
            "game": {"family": "minibaccarat", "decks": decks, "variant": "commission-free"},
            "wagers": {"banker": {"rising_phoenix": True}, "player": {},
                       "rising_phoenix_sun_7": {}}}
    if ok:
        parse_submission(data, "t.toml")
    else:
        with pytest.raises(SubmissionError, match="627b.4\\(f\\)"):
            parse_submission(data, "t.toml")
