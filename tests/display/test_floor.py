"""What the scoreboard tells the floor beyond the roads (controller/display/floor.py):
the banner each state calls for, "last hand" only while the last round is on, the
shoe's percentages and streaks, and the running totals on the dealer's screen."""

from __future__ import annotations

import pytest

from controller.display.floor import (
    banner, last_hand_shown, percent, running_totals, shoe_stats)
from controller.display.roads import RoadRound, Winner

B, P, T = Winner.BANKER, Winner.PLAYER, Winner.TIE


@pytest.mark.parametrize("state, fault, expected", [
    ("betting_open", False, "open"),
    # 631a.8(c): from the lock-out to the settlement no wager is taken.
    ("no_more_bets", False, "closed"), ("dealing", False, "closed"),
    ("first_four_settled", False, "closed"), ("third_cards", False, "closed"),
    ("result", False, "closed"), ("settlement", False, "closed"),
    # The end of the shoe and the cut: no round, so no "no more bets".
    ("end_of_shoe", False, "shuffle"), ("shuffling", False, "shuffle"), ("cut", False, "shuffle"),
    ("burn", False, "shuffle"), ("opening", False, "shuffle"),
    ("closed", False, "table_closed"),
    ("device_fault", False, "paused"), ("out_of_order", False, "paused"),
    ("dealing", True, "paused"), ("unknown", False, "none"),
])
def test_the_banner_follows_the_tables_state(state: str, fault: bool, expected: str) -> None:
    assert banner(state, connected=True, fault=fault) == expected
    assert banner(state, connected=False, fault=fault) == "offline"


@pytest.mark.parametrize("state, shown", [
    ("betting_open", True), ("no_more_bets", True), ("dealing", True), ("third_cards", True),
    ("settlement", True), ("end_of_shoe", False), ("shuffling", False), ("cut", False),
    ("burn", False), ("closed", False), ("device_fault", False),
])
def test_last_hand_is_shown_only_while_the_last_round_is_on(state: str, shown: bool) -> None:
    assert last_hand_shown(state, True) is shown
    assert last_hand_shown(state, False) is False


def test_percent_rounds_halves_up_and_is_zero_with_no_hand() -> None:
    assert [percent(1, 8), percent(1, 3), percent(2, 3), percent(0, 0), percent(5, 5)] == \
        [13, 33, 67, 0, 100]


def test_percentages_and_streaks_of_a_shoe() -> None:
    rounds = [RoadRound(w, banker_pair=bp) for w, bp in (
        (B, True), (B, False), (T, False), (B, False), (P, False), (P, True), (B, False),
        (B, False), (T, False), (T, False))]
    stats = shoe_stats(rounds)
    # 5 Banker, 2 Player, 3 Tie of 10; Banker pairs 2 of 10.
    assert stats["percent"] == {"banker": 50, "player": 20, "tie": 30, "banker_pair": 20,
                                "player_pair": 0}
    # A tie neither extends nor breaks a streak: B B (T) B is three Banker wins.
    assert stats["streak"] == {"winner": "banker", "length": 2, "longest_banker": 3,
                               "longest_player": 2, "ties_since": 2}
    empty = shoe_stats([])
    assert empty["streak"] == {"winner": None, "length": 0, "longest_banker": 0,
                               "longest_player": 0, "ties_since": 0}
    assert set(empty["percent"].values()) == {0}


def test_running_totals_baccarat_and_21_baccarat() -> None:
    cards = [{"card": "K♠", "hand": "player"}, {"card": "7♥", "hand": "banker"},
             {"card": "9♦", "hand": "player"}, {"card": "8♣", "hand": "banker"},
             {"card": "Q♣", "hand": "burn"}]
    # 631a.6(b): K 9 is 9; 7 8 is 15, its right-hand digit 5.
    assert running_totals("baccarat", cards) == {"player": 9, "banker": 5}
    # 681a.3(d): K 9 is 19; 7 8 is 15.
    assert running_totals("21-baccarat", cards) == {"player": 19, "banker": 15}
    assert running_totals("21-baccarat", [{"card": "A♠", "hand": "player"},
                                           {"card": "K♦", "hand": "player"}]) == \
        {"player": 21, "banker": None}
    assert running_totals("baccarat", []) == {"player": None, "banker": None}
    # Never from the daemon, but a card the page cannot read does not break the view.
    assert running_totals("baccarat", [{"card": "??", "hand": "player"}]) == \
        {"player": None, "banker": None}
