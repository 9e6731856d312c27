"""631a.12(b) settlement order, 631a.13(d) vigorish collection, 631a.15(e) void rounds."""

from __future__ import annotations

from controller.rules.settlement import (
    PlacedWager, VigorishLedger, add_ride, check_wager, settle_round, void_round,
)
from controller.rules.wager import Outcome, SettlementPoint

from tests.rules.helpers import game_of, view

GAME = game_of({"tie": {"min_cents": 500, "max_cents": 1000}, "house_money": {}})
BANKER_WINS = view("2S 3H", "4D 4C")


def test_631a_12_b_losers_first_then_winners_highest_seat_down() -> None:
    wagers = [PlacedWager(2, "banker", 1000), PlacedWager(9, "player", 1000),
              PlacedWager(5, "banker", 1000), PlacedWager(12, "tie", 500),
              PlacedWager(1, "player", 1000), PlacedWager(14, "banker", 1000)]
    out = settle_round(GAME, wagers, BANKER_WINS, SettlementPoint.END_OF_ROUND)
    assert [(s.seat, s.outcome) for s in out] == [
        (12, Outcome.LOSE), (9, Outcome.LOSE), (1, Outcome.LOSE),
        (14, Outcome.WIN), (5, Outcome.WIN), (2, Outcome.WIN)]



def test_631a_12_b_pushes_come_last_and_a_seats_wagers_go_in_the_submissions_order() -> None:
    """docs/rulings.md, "Settlement order": losers, winners, then pushes, each group from the
    highest seat down and, within a seat, in the order the submission lists the wagers
    (banker, player, tie, dragon_bonus_player here), whatever order they were placed in."""
    game = game_of({"tie": {}, "dragon_bonus_player": {"paytable": "A"}})
    assert list(game.wager_rules) == ["banker", "player", "tie", "dragon_bonus_player"]
    wagers = [PlacedWager(3, "tie", 500), PlacedWager(3, "player", 1000),
              PlacedWager(11, "dragon_bonus_player", 500), PlacedWager(3, "banker", 2000),
              PlacedWager(11, "tie", 500), PlacedWager(11, "player", 1000),
              PlacedWager(6, "dragon_bonus_player", 1000)]
    # Player 9 (natural) against Banker 9 (natural): a natural tie.
    out = settle_round(game, wagers, view("4S 5H", "KD 9C"), SettlementPoint.END_OF_ROUND)
    assert [(s.seat, s.wager, s.outcome, s.net_cents) for s in out] == [
        (11, "tie", Outcome.WIN, 4000), (3, "tie", Outcome.WIN, 4000),
        (11, "player", Outcome.PUSH, 0), (11, "dragon_bonus_player", Outcome.PUSH, 0),
        (6, "dragon_bonus_player", Outcome.PUSH, 0),
        (3, "banker", Outcome.PUSH, 0), (3, "player", Outcome.PUSH, 0)]
    # Banker 8 over Player 5: losers first (seat 11 down), then the winner.
    out = settle_round(game, wagers, BANKER_WINS, SettlementPoint.END_OF_ROUND)
    assert [(s.seat, s.wager, s.outcome, s.net_cents) for s in out] == [
        (11, "player", Outcome.LOSE, -1000), (11, "tie", Outcome.LOSE, -500),
        (11, "dragon_bonus_player", Outcome.LOSE, -500),
        (6, "dragon_bonus_player", Outcome.LOSE, -1000),
        (3, "player", Outcome.LOSE, -1000), (3, "tie", Outcome.LOSE, -500),
        (3, "banker", Outcome.WIN, 1900)]

def test_631a_12_b_each_winner_carries_its_vigorish() -> None:
    out = settle_round(GAME, [PlacedWager(4, "banker", 2000)], BANKER_WINS,
                       SettlementPoint.END_OF_ROUND)
    assert out[0].vigorish_cents == 100 and out[0].net_cents == 1900


def test_631a_9_e_first_four_point_settles_house_money_only() -> None:
    wagers = [PlacedWager(4, "banker", 2000), PlacedWager(4, "house_money", 1000)]
    first = settle_round(GAME, wagers, view("QS QH", "4D 5C"), SettlementPoint.FIRST_FOUR_CARDS)
    assert [s.wager for s in first] == ["house_money"] and first[0].win_cents == 3000
    end = settle_round(GAME, wagers, view("QS QH", "4D 5C"), SettlementPoint.END_OF_ROUND)
    assert [s.wager for s in end] == ["banker"]


def test_631a_9_e_1_i_ride_adds_to_main_wager() -> None:
    """631a.9(e)(1)(i) and 631a.9(e)(1)(ii): all or the configured portion of the payout is placed on the wager."""
    wagers = [PlacedWager(4, "banker", 2000), PlacedWager(4, "house_money", 1000)]
    rode = add_ride(wagers, 4, "banker", 3000)
    assert rode[0] == PlacedWager(4, "banker", 5000)


def test_631a_13_d_2_marked_vigorish_ledger() -> None:
    """631a.13(d)(2)(ii) and 631a.13(d)(2)(iii): the marked amount stays on the seat until it is collected."""
    ledger = VigorishLedger().mark(3, 50).mark(3, 25).mark(7, 100)
    assert ledger.total_cents == 175
    collected, ledger = ledger.seat_leaves(3)  # 631a.13(d)(2)(i) player leaves
    assert collected == 75 and ledger.owed == {7: 100}
    everything, ledger = ledger.new_shoe()  # 631a.13(d)(2)(i) before a new shoe
    assert everything == {7: 100} and ledger.total_cents == 0


def test_631a_13_d_2_ii_ledger_records_settlements() -> None:
    out = settle_round(GAME, [PlacedWager(4, "banker", 2000), PlacedWager(6, "banker", 1000)],
                       BANKER_WINS, SettlementPoint.END_OF_ROUND)
    assert VigorishLedger().record(out).owed == {4: 100, 6: 50}


def test_631a_15_e_void_round_returns_every_wager() -> None:
    out = void_round([PlacedWager(1, "banker", 1000), PlacedWager(9, "tie", 500)])
    assert all(s.outcome is Outcome.PUSH and s.net_cents == 0 for s in out)
    assert all(s.section == "631a.15(e)" for s in out)


def test_631a_15_e_void_round_returns_only_what_was_not_yet_settled_631a_9_e() -> None:
    """House Money at seat 3 was settled at the first four cards (631a.9(e)): the void
    returns the other wagers, highest seat first, and leaves that one to its settlement."""
    wagers = [PlacedWager(3, "player", 2500), PlacedWager(3, "house_money", 1000),
              PlacedWager(7, "banker", 500)]
    out = void_round(wagers, settled={(3, "house_money")})
    assert [(s.seat, s.wager, s.amount_cents, s.outcome, s.net_cents) for s in out] == [
        (7, "banker", 500, Outcome.PUSH, 0), (3, "player", 2500, Outcome.PUSH, 0)]


def test_check_wager_limits_and_seats() -> None:
    assert check_wager(GAME, PlacedWager(1, "tie", 500)) is None
    assert "minimum" in (check_wager(GAME, PlacedWager(1, "tie", 100)) or "")
    assert "maximum" in (check_wager(GAME, PlacedWager(1, "tie", 5000)) or "")
    assert "seat" in (check_wager(GAME, PlacedWager(15, "tie", 500)) or "")  # 631a.2(a)
    assert "not offered" in (check_wager(GAME, PlacedWager(1, "dragon_7", 500)) or "")


def test_631a_9_e_2_dealing_resumes_after_house_money_settlement() -> None:
    """631a.9(e)(2): after the first-four-cards settlement the coup still calls for third cards."""
    from controller.rules.baccarat import BaccaratCoup, NextCard

    from tests.rules.helpers import cards

    coup = BaccaratCoup()
    for c in cards("QS 2H QH 2D"):
        coup.place(c)
    assert coup.initial_cards_complete
    settle_round(GAME, [PlacedWager(1, "house_money", 500)], coup.round_view(),
                 SettlementPoint.FIRST_FOUR_CARDS)
    assert coup.next_card() is NextCard.PLAYER_THIRD
