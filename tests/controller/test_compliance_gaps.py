"""The table with the real rules engine, for 631c/627b clauses the compliance matrix listed
without a test: when optional wagers may be placed, and when and in what order they settle.

Each table is built from a Rules Submission in config/ (its [table], [game] and [wagers]),
driven as in tests/controller/test_table.py: cards in shoe order, P B P B then third cards.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.rules.game import build_game
from controller.rules.submission import parse_submission
from controller.memory.store import Store
from controller.table.errors import CommandRefused
from controller.table.machine import TableState
from controller.table.rules_seam import RulesAdapter
from controller.table.table import Table
from tests.controller.test_table import Dealer, open_to_betting

CONFIG = Path(__file__).parents[2] / "config"
BASE_FIRST = "must first place a Banker, Player or Tie wager before the optional wager"
BETTING_CLOSED = r"wagers are accepted only while betting is open \(631a\.8\(c\)\)"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "table.sqlite")
    yield s
    s.close()


def _table(store: Store, name: str) -> tuple[Table, Dealer]:
    """A table open for betting under the Rules Submission config/<name>.toml."""
    data = tomllib.loads((CONFIG / f"{name}.toml").read_text(encoding="utf-8"))
    submission = parse_submission({k: v for k, v in data.items()
                                   if k in ("table", "game", "wagers")}, f"{name}.toml")
    table = Table(table_id=submission.table.id, seats=submission.table.seats,
                  rules=RulesAdapter(build_game(submission)), store=store)
    dealer = Dealer(table)
    open_to_betting(table, dealer)
    return table, dealer


def _settled(store: Store) -> dict[str, Any]:
    return store.events(kind="round_settled")[-1].payload


def _rows(settlements: list[dict[str, Any]]) -> list[tuple[int, str, str, int, int]]:
    return [(s["seat"], s["wager"], s["outcome"], s["win_cents"], s["net_cents"])
            for s in settlements]


# --- when an optional wager may be placed -------------------------------------------------------


def test_lucky_nines_only_after_a_baccarat_wager_at_the_seat_631c_4_c(store: Store) -> None:
    """631c.4(c): a Lucky Nines wager is placed after the seat's initial Baccarat wager, and
    like every wager only while betting is open."""
    table, _ = _table(store, "baccarat-lucky-nines-automated")
    with pytest.raises(CommandRefused, match=f"seat 4 {BASE_FIRST} 'lucky_nines'"):
        table.cmd_place_wager(4, "lucky_nines", 500)
    table.cmd_place_wager(5, "banker", 1000)  # another seat's wager does not qualify seat 4
    with pytest.raises(CommandRefused, match=f"seat 4 {BASE_FIRST}"):
        table.cmd_place_wager(4, "lucky_nines", 500)
    table.cmd_place_wager(4, "tie", 500)
    table.cmd_place_wager(4, "lucky_nines", 500)
    table.cmd_no_more_bets()
    with pytest.raises(CommandRefused, match=BETTING_CLOSED):
        table.cmd_place_wager(4, "lucky_nines", 500)
    assert [(w.seat, w.wager, w.amount_cents) for w in table.wagers] == [
        (5, "banker", 1000), (4, "tie", 500), (4, "lucky_nines", 500)]


@pytest.mark.parametrize("golden", ["golden_talons_player", "golden_talons_banker"])
def test_golden_talons_after_a_minibaccarat_wager_before_no_more_bets_627b_5_a_627b_5_b(
        store: Store, golden: str) -> None:
    """627b.5(a): offered to a player who has placed a Minibaccarat wager; 627b.5(b): placed
    after it and before "No more bets"."""
    table, _ = _table(store, "minibaccarat-rising-phoenix")
    with pytest.raises(CommandRefused, match=f"seat 2 {BASE_FIRST} '{golden}'"):
        table.cmd_place_wager(2, golden, 500)
    table.cmd_place_wager(2, "player", 1000)
    table.cmd_place_wager(2, golden, 500)
    table.cmd_no_more_bets()
    assert table.state is TableState.NO_MORE_BETS
    with pytest.raises(CommandRefused, match=BETTING_CLOSED):
        table.cmd_place_wager(2, golden, 500)
    assert [(w.seat, w.wager) for w in table.wagers] == [(2, "player"), (2, golden)]


def test_harmony_after_a_minibaccarat_wager_before_no_more_bets_627b_6_c(store: Store) -> None:
    """627b.6(c): after the Minibaccarat wager (and any other optional wager) a Harmony
    Progressive wager may be placed at any time before "No more bets", not after."""
    table, _ = _table(store, "minibaccarat-harmony")
    with pytest.raises(CommandRefused, match=f"seat 7 {BASE_FIRST} 'harmony_progressive'"):
        table.cmd_place_wager(7, "harmony_progressive", 500)
    table.cmd_place_wager(7, "banker", 1000)
    table.cmd_place_wager(7, "banker_pair", 500)
    table.cmd_place_wager(7, "harmony_progressive", 500)
    table.cmd_place_wager(3, "player", 1000)
    table.cmd_no_more_bets()
    with pytest.raises(CommandRefused, match=BETTING_CLOSED):
        table.cmd_place_wager(3, "harmony_progressive", 500)
    assert [(w.seat, w.wager) for w in table.wagers] == [
        (7, "banker"), (7, "banker_pair"), (7, "harmony_progressive"), (3, "player")]


# --- when and in what order they settle --------------------------------------------------------


@pytest.mark.parametrize("name,section", [("baccarat-commission-free", "631c.5"),
                                          ("minibaccarat-harmony", "627b.2")])
def test_commission_free_result_then_losers_then_winners_from_the_highest_seat_631c_5_e_f_627b_2_e_f(
        store: Store, name: str, section: str) -> None:
    """631c.5(e), 627b.2(e): the round's record holds the final Point Counts and the winner the
    dealer announces (here a Lucky Six: Banker 6 over 4). 631c.5(f), 627b.2(f): every losing
    wager is collected first, then winners are paid from the highest-numbered seat down, the
    Banker at 1 to 2 on the 6 (i) and the two-card Lucky Six at 12 to 1 (k)(1)."""
    table, dealer = _table(store, name)
    for seat, wager, cents in [(1, "banker", 2500), (2, "player", 2500), (3, "banker", 2500),
                               (3, "lucky_six", 500), (4, "tie", 500), (5, "player", 2500),
                               (5, "player_pair", 500)]:
        table.cmd_place_wager(seat, wager, cents)
    table.cmd_no_more_bets()
    # Player K Q = 0 draws a 4; Banker 2 4 = 6 stands on a Player third card of 4 (631a.11).
    dealer.draw("K♣", "2♥", "Q♦", "4♠", "4♣")
    assert table.state is TableState.BETTING_OPEN
    settled = _settled(store)
    assert settled["result"] == {"player": ["K♣", "Q♦", "4♣"], "banker": ["2♥", "4♠"],
                                 "player_total": 4, "banker_total": 6, "winner": "banker",
                                 "player_natural": False, "banker_natural": False,
                                 "dragon_7": False, "panda_8": False}
    end_of_round = store.events(kind="settled_end_of_round")[-1].payload["settlements"]
    assert _rows(end_of_round) == [
        (5, "player", "lose", 0, -2500), (4, "tie", "lose", 0, -500),
        (2, "player", "lose", 0, -2500),
        (3, "banker", "win", 1250, 1250), (3, "lucky_six", "win", 6000, 6000),
        (1, "banker", "win", 1250, 1250)]
    assert [s["section"] for s in end_of_round if s["outcome"] == "win"] == [
        f"{section}(i)", f"{section}(k)(1)", f"{section}(i)"]
    # The Player Pair was settled before the third card (631c.5(d), 627b.2(d)).
    assert _rows(settled["settlements"])[0] == (5, "player_pair", "lose", 0, -500)
    assert settled["table_net_cents"] == 500 + 2500 + 500 + 2500 - 1250 - 6000 - 1250


def test_golden_talons_settled_with_the_minibaccarat_wagers_627b_5_d(store: Store) -> None:
    """627b.5(d): after the result, Golden Talons is settled together with the Minibaccarat
    wagers, in the one end-of-round settlement (losers first, then the highest seat down).
    Paytable A: the Player wins 7 to 2, by 5, at 2 to 1 (627b.5(f))."""
    table, dealer = _table(store, "minibaccarat-rising-phoenix")
    for seat, wager, cents in [(1, "banker", 1000), (2, "player", 1000),
                               (2, "golden_talons_player", 500), (6, "banker", 1000),
                               (6, "golden_talons_banker", 500)]:
        table.cmd_place_wager(seat, wager, cents)
    table.cmd_no_more_bets()
    # Player 2 5 = 7 stands; Banker K 2 = 2 draws and takes a K: 2.
    dealer.draw("2♣", "K♦", "5♥", "2♠")
    assert table.state is TableState.THIRD_CARDS
    assert store.events(kind="settled_first_four_cards") == []  # nothing settles early
    dealer.draw("K♣")
    settled = _settled(store)
    assert (settled["result"]["player_total"], settled["result"]["banker_total"]) == (7, 2)
    assert _rows(settled["settlements"]) == [
        (6, "banker", "lose", 0, -1000), (6, "golden_talons_banker", "lose", 0, -500),
        (1, "banker", "lose", 0, -1000),
        (2, "player", "win", 1000, 1000), (2, "golden_talons_player", "win", 1000, 1000)]
    assert len(store.events(kind="settled_end_of_round")) == 1


def test_heavenly_9_settled_while_settling_the_baccarat_wagers_631c_2_f(store: Store) -> None:
    """631c.2(f): after the result the Heavenly 9 wager is settled with the Baccarat wagers.
    A Banker 3-card 9 pays 9 for 1 (8 to 1, 631c.2(g)(4) and (i)) at every seat that placed it,
    whichever hand the seat backed; the Banker wager wins 1 to 1 less the 5% vigorish
    (631a.13(c)). One settlement, losers first, then the highest seat down."""
    table, dealer = _table(store, "baccarat-progressive-heavenly9")
    for seat, wager, cents in [(4, "banker", 2500), (4, "heavenly_9_progressive", 500),
                               (9, "player", 2500), (9, "heavenly_9_progressive", 500)]:
        table.cmd_place_wager(seat, wager, cents)
    table.cmd_no_more_bets()
    # Player K Q = 0 draws a 5; Banker A 2 = 3 draws (the Player's third is not an 8): a 6, 9.
    dealer.draw("K♣", "A♥", "Q♦", "2♠", "5♣", "6♦")
    settled = _settled(store)
    assert (settled["result"]["player_total"], settled["result"]["banker_total"],
            settled["result"]["winner"]) == (5, 9, "banker")
    assert store.events(kind="settled_first_four_cards") == []
    assert [(s["seat"], s["wager"], s["outcome"], s["win_cents"], s["vigorish_cents"],
             s["net_cents"]) for s in settled["settlements"]] == [
        (9, "player", "lose", 0, 0, -2500),
        (9, "heavenly_9_progressive", "win", 4000, 0, 4000),
        (4, "banker", "win", 2500, 125, 2375),
        (4, "heavenly_9_progressive", "win", 4000, 0, 4000)]
