"""Pure-rule checks for 631c/627b clauses the compliance matrix listed without a test.

Each test names the clause it checks; the wagers are built the way a table builds
them (from a Rules Submission through `build_game`) where the clause is about what
a table offers, or directly from the rule class where it is about one outcome.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from controller.rules.baccarat import Hand
from controller.rules.game import build_game
from controller.rules.side.commission_free import LuckySix
from controller.rules.side.golden_talons import make_golden_talons
from controller.rules.submission import parse_submission
from controller.rules.wager import Outcome, RoundView

from .helpers import dealt, view

CONFIG = Path(__file__).parents[2] / "config"


def _game(data: dict[str, Any]) -> Any:
    submission = parse_submission({k: v for k, v in data.items()
                                   if k in ("table", "game", "wagers")}, "test.toml")
    return build_game(submission)


def _rising_phoenix(form: str) -> Any:
    """The Rising Phoenix table of config/, commission-free, or its standard-commission form
    (627b.4(b))."""
    data = tomllib.loads((CONFIG / "minibaccarat-rising-phoenix.toml").read_text(encoding="utf-8"))
    if form == "standard":
        data["game"]["variant"] = "standard"
        data["game"]["vigorish"] = {"rate_percent": 5, "collection": "at-payout"}
        del data["wagers"]["banker"]["rising_phoenix"]
    return _game(data)


# --- Lucky Six: 631c.5(c)(3)(ii), 627b.2(c)(3)(ii) ---------------------------------------------


@pytest.mark.parametrize("section", ["631c.5", "627b.2"])
@pytest.mark.parametrize("player,banker", [
    ("5C 10D 10S", "7H KS"),  # Banker wins with a two-card 7
    ("KC QD AS", "2H 2S"),    # Banker stands on 4 after a Player third card 1
    ("2C 10D 10S", "AH 2S 2C"),  # Banker wins with a three-card 5 over 2
    ("KC QD", "8H 10S"),      # Banker natural 8
    ("9C 10D", "5H 10S"),     # Banker 5 loses to the Player
    ("5C 10D 10S", "5H 10S"),  # a 5-5 tie
])
def test_lucky_six_loses_when_the_banker_is_not_six_631c_5_c_3_ii_627b_2_c_3_ii(
        section: str, player: str, banker: str) -> None:
    """631c.5(c)(3)(ii), 627b.2(c)(3)(ii): a Banker Point Count other than six loses the
    Lucky Six whoever wins; the whole wager is collected."""
    v = view(player, banker)
    assert v.banker_total != 6
    s = LuckySix("lucky_six", section).settle(3, 1000, v)
    assert (s.outcome, s.win_cents, s.net_cents, s.section) == \
        (Outcome.LOSE, 0, -1000, f"{section}(c)(3)")


def test_lucky_six_needs_the_six_only_a_three_card_five_is_not_enough_627b_2_c_3_ii() -> None:
    """627b.2(c)(3)(ii) against (k)(2): the same rounds one card apart, dealt by the 631a coup."""
    # Player K K = 0 draws a 5; Banker A 2 = 3 draws on a 5; the third card decides.
    six = dealt("KC", "AH", "KD", "2S", "5C", "3D")
    five = dealt("KC", "AH", "KD", "2S", "4C", "2D")
    assert (six.banker_total, six.player_total, five.banker_total, five.player_total) == \
        (6, 5, 5, 4)
    rule = LuckySix("lucky_six", "627b.2")
    assert rule.settle(1, 500, six).win_cents == 10_000  # 20 to 1, (k)(2)
    s = rule.settle(1, 500, five)
    assert (s.outcome, s.win_cents, s.section) == (Outcome.LOSE, 0, "627b.2(c)(3)")


# --- Rising Phoenix Player and Tie wagers: 627b.4(g)(2)-(3) --------------------------------------

PLAYER_WINS = view("7C 10D", "6H KS")
BANKER_WINS = view("6C 10D", "7H KS")
TIE_AT_6 = view("6C 10D", "6H KS")


@pytest.mark.parametrize("form", ["commission-free", "standard"])
def test_rising_phoenix_player_wins_on_the_higher_count_627b_4_g_2_i(form: str) -> None:
    """627b.4(g)(2)(i) with (h)(1): a Player win pays 1 to 1 in either form."""
    s = _rising_phoenix(form).wager_rules["player"].settle(2, 1000, PLAYER_WINS)
    assert (s.outcome, s.win_cents, s.vigorish_cents, s.net_cents) == (Outcome.WIN, 1000, 0, 1000)


@pytest.mark.parametrize("form", ["commission-free", "standard"])
def test_rising_phoenix_player_loses_on_the_lower_count_627b_4_g_2_ii(form: str) -> None:
    s = _rising_phoenix(form).wager_rules["player"].settle(2, 1000, BANKER_WINS)
    assert (s.outcome, s.win_cents, s.net_cents) == (Outcome.LOSE, 0, -1000)


@pytest.mark.parametrize("form", ["commission-free", "standard"])
def test_rising_phoenix_player_is_returned_on_a_tie_627b_4_g_2_iii(form: str) -> None:
    s = _rising_phoenix(form).wager_rules["player"].settle(2, 1000, TIE_AT_6)
    assert (s.outcome, s.win_cents, s.net_cents) == (Outcome.PUSH, 0, 0)


@pytest.mark.parametrize("form", ["commission-free", "standard"])
@pytest.mark.parametrize("tie", [TIE_AT_6, view("KC QD 10S", "JH 10S 10C"), view("9C 10D", "4H 5S")])
def test_rising_phoenix_tie_wins_on_equal_counts_627b_4_g_3_i(form: str, tie: RoundView) -> None:
    """627b.4(g)(3)(i) with (h)(1): the Tie wager wins at 8 to 1 (627a.12 via 627b.2(j))."""
    s = _rising_phoenix(form).wager_rules["tie"].settle(4, 500, tie)
    assert (s.outcome, s.win_cents, s.net_cents) == (Outcome.WIN, 4000, 4000)


@pytest.mark.parametrize("form", ["commission-free", "standard"])
@pytest.mark.parametrize("round_view", [PLAYER_WINS, BANKER_WINS])
def test_rising_phoenix_tie_loses_on_unequal_counts_627b_4_g_3_ii(form: str,
                                                                   round_view: RoundView) -> None:
    s = _rising_phoenix(form).wager_rules["tie"].settle(4, 500, round_view)
    assert (s.outcome, s.win_cents, s.net_cents) == (Outcome.LOSE, 0, -500)


# --- Golden Talons pays only what the approved paytable lists: 627b.5(e)(3) -----------------------

NATURAL_TIE = view("9C KD", "4H 5S")
TIE_NOT_NATURAL = view("KC QD 7S", "3H 4S")
WIN_BY_3 = view("KC QD 7S", "KH 4S 10C")     # Player 7 over 4, three cards: no line
NATURAL_WIN_BY_2 = view("9C KD", "7H KS")     # natural 9 over 7: the natural-win line


@pytest.mark.parametrize("letter,natural_tie", [
    ("A", (Outcome.PUSH, 0)), ("B", (Outcome.WIN, 1000)), ("C", (Outcome.PUSH, 0)),
    ("D", (Outcome.PUSH, 0)), ("E", (Outcome.PUSH, 0))])
def test_golden_talons_wins_or_ties_only_as_the_approved_paytable_lists_627b_5_e_3(
        letter: str, natural_tie: tuple[Outcome, int]) -> None:
    """627b.5(e)(3): the selected paytable decides: a natural tie pays 2 to 1 under B and is
    returned under A, C, D and E; a tie without a natural and a win by 3 are on no paytable
    and lose; a natural win by 2 pays the 1 to 1 natural-win line."""
    rule = make_golden_talons("golden_talons_player", Hand.PLAYER, letter)
    s = rule.settle(1, 500, NATURAL_TIE)
    assert (s.outcome, s.win_cents) == natural_tie
    for lose in (TIE_NOT_NATURAL, WIN_BY_3):
        s = rule.settle(1, 500, lose)
        assert (s.outcome, s.win_cents, s.net_cents) == (Outcome.LOSE, 0, -500)
    s = rule.settle(1, 500, NATURAL_WIN_BY_2)
    assert (s.outcome, s.label, s.win_cents) == (Outcome.WIN, "Natural win", 500)
