"""A void round returns only what was not yet settled (631a.15(e), docs/rulings.md C7).

A wager settled at the first four cards (House Money 631a.9(e), Perfect Pairs 627b.1,
Royal 9 627b.3(d), Lucky Nines 631c.4) was decided by cards the table saw and paid or
collected then. When the round is later voided (a lost card, C7; the shoe's last card,
631a.15(e)) that settlement stands: the round's record, the `round_void` event, the
seat totals and `tablectl simulate` all hold it, and only the other wagers are returned.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from cards import Card
from controller.rules.dealing import Bet, Draw, Lock, ShoeDealing
from controller.rules.game import build_game
from controller.rules.settlement import PlacedWager
from controller.rules.submission import parse_submission
from controller.memory.store import Store
from controller.table.machine import TableState
from drivers.protocols import DeviceFault
from tests.controller.test_daemon import running
from tests.controller.test_daemon_discards import SUPERVISOR, Dealer, devices, table_config
from tests.controller.test_table import Dealer as TableDealer
from tests.controller.test_table import open_to_betting, table_for

ROOT = Path(__file__).parents[2]
LOST = "631a.15, 681a.9, docs/rulings.md"  # the section of a void for lost cards (C7)


def rules_of(name: str) -> dict[str, Any]:
    data = tomllib.loads((ROOT / "config" / name).read_text(encoding="utf-8"))
    return {k: data[k] for k in ("table", "game", "wagers")}


def money(settlements: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(s["seat"], s["wager"], s["amount_cents"], s["outcome"], s["win_cents"],
             s["net_cents"], s["section"]) for s in settlements]


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "table.sqlite")
    yield s
    s.close()


async def test_a_lost_card_after_the_first_four_keeps_the_house_money_win_631a_9_e_c7(tmp_path):
    """The repro: Player $25.00 and House Money $10.00; P 2♠, B 9♣, P 2♥, B 3♦ (a Player
    pair: House Money wins 3 to 1, 631a.13(h)); then a card index gap and the floor
    supervisor's acknowledgement void the round. The House Money +$30.00 stands, the
    Player $25.00 is returned."""
    table = devices()
    async with running(table_config(tmp_path, "baccarat-house-money.toml"), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("3♠", "2♣", "2♣", "2♣"))
        await c.call("place_wager", seat=1, wager="player", amount_cents=2500)
        await c.call("place_wager", seat=1, wager="house_money", amount_cents=1000)
        await c.call("no_more_bets")
        await dealer.draw("2♠", "9♣", "2♥", "3♦")  # cards 4-7; the Player draws next
        dealer.shoe.emit(DeviceFault("shoe", "shoe_index_gap", "card index 9 arrived where 8 "
                                     "was expected: 1 card(s) unaccounted for", "Stop dealing"))
        dealer.index = 9
        await dealer.draw("4♥")
        assert await dealer.state() == "device_fault"
        await c.call("acknowledge_fault", auth=SUPERVISOR)
        await dealer.reach("end_of_shoe")
        (record,) = await c.call("rounds", limit=1)
        (first_four,) = await dealer.events("settled_first_four_cards")
        (void,) = await dealer.events("round_void")
        totals = await c.call("seat_totals")
    house_money = (1, "house_money", 1000, "win", 3000, 3000, "631a.13(h)")
    assert money(first_four["settlements"]) == [house_money]
    assert record["state"] == "void"
    assert money(record["settlements"]) == [house_money, (1, "player", 2500, "push", 0, 0, LOST)]
    assert void["settlements"] == record["settlements"]
    assert totals == {"1": {"net_cents": 3000, "wagered_cents": 3500, "vig_owed_cents": 0}}
    logged = sum(s["net_cents"] for s in first_four["settlements"]) + sum(
        s["net_cents"] for s in void["settlements"] if s["outcome"] == "push")
    assert logged == sum(s["net_cents"] for s in record["settlements"]) == 3000


def test_the_shoes_last_card_after_the_first_four_keeps_the_house_money_win_631a_15_e(store):
    """The shoe runs out (the cover card never came out): the round's fifth card is the
    416th, and the Banker's third card can never be dealt. 631a.15(e) voids the round;
    the House Money already paid at the first four cards stands."""
    table = table_for(store, rules_of("baccarat-house-money.toml"))
    dealer = TableDealer(table)
    open_to_betting(table, dealer, first="2♠")  # 631a.5(f): cards 0-2 burned
    while dealer.index < 411:  # naturals: P 9, B 8, four cards a round
        dealer.draw("9♠", "8♣", "K♥", "K♦")
    table.cmd_place_wager(3, "player", 2500)
    table.cmd_place_wager(3, "house_money", 1000)
    table.cmd_place_wager(6, "banker", 5000)
    table.cmd_no_more_bets()
    dealer.draw("2♠", "9♣", "2♥", "3♦")  # cards 411-414: House Money wins on the pair
    assert table.state is TableState.THIRD_CARDS
    dealer.draw("4♥")  # card 415, the Player's third: the last card of the shoe
    assert table.state is TableState.END_OF_SHOE
    record = store.rounds(limit=1)[-1]
    assert (record["state"], record["result"]) == (
        "void", {"reason": "the shoe cannot complete the round"})
    assert money(record["settlements"]) == [
        (3, "house_money", 1000, "win", 3000, 3000, "631a.13(h)"),
        (6, "banker", 5000, "push", 0, 0, "631a.15(e)"),
        (3, "player", 2500, "push", 0, 0, "631a.15(e)")]
    (void,) = [e.payload for e in store.events(kind="round_void")]
    assert void["settlements"] == record["settlements"]
    assert {seat: t["net_cents"] for seat, t in store.seat_totals().items()} == {3: 3000, 6: 0}


def test_a_restart_after_the_first_four_then_a_lost_card_keeps_the_settlement_c8_c7(
        store, tmp_path):
    """C8: the House Money settled before a power cut is kept with the table's state; a
    card lost after the restart voids the round (C7) and the settlement still stands."""
    table = table_for(store, rules_of("baccarat-house-money.toml"))
    dealer = TableDealer(table)
    open_to_betting(table, dealer)
    table.cmd_place_wager(2, "banker", 2500)
    table.cmd_place_wager(2, "house_money", 500)
    table.cmd_no_more_bets()
    dealer.draw("2♠", "9♣", "2♥", "3♦")  # a Player pair: House Money 3 to 1 (631a.13(h))
    store.close()  # power cut; a new process opens the same file
    reopened = Store(tmp_path / "table.sqlite")
    try:
        revived = table_for(reopened, rules_of("baccarat-house-money.toml"))
        revived.restore()
        assert revived.state is TableState.THIRD_CARDS
        dealer.table = revived
        dealer.index += 1  # the Player's third card left the shoe while the daemon was down
        dealer.draw("4♥")
        record = reopened.rounds(limit=1)[-1]
        totals = reopened.seat_totals()
    finally:
        reopened.close()
    assert record["state"] == "void"
    assert money(record["settlements"]) == [
        (2, "house_money", 500, "win", 1500, 1500, "631a.13(h)"),
        (2, "banker", 2500, "push", 0, 0, LOST)]
    assert totals[2] == {"net_cents": 1500, "wagered_cents": 3000, "vig_owed_cents": 0}


def test_a_lost_card_keeps_the_perfect_pairs_win_and_the_royal_9_loss_627b_1_627b_3_d(store):
    """Minibaccarat: P 8♠ 8♥ is a mixed pair (Perfect Pairs paytable B, 5 to 1, 627b.1(e));
    no Royal 9 in either hand, so the $5 Royal 9 loses (627b.3(d)-(e)). Both are settled
    at the first four; a card lost before the Banker's third voids the round (C7) and
    returns only the Banker wager."""
    table = table_for(store, rules_of("minibaccarat-royal9.toml"))
    dealer = TableDealer(table)
    open_to_betting(table, dealer)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_place_wager(1, "perfect_pairs_player", 500)
    table.cmd_place_wager(1, "royal_9_progressive", 500)
    table.cmd_no_more_bets()
    dealer.draw("8♠", "3♦", "8♥", "2♣")  # P 6 stands, B 5 draws
    settled_first = [e.payload["settlements"] for e in store.events(
        kind="settled_first_four_cards")]
    dealer.index += 1  # the Banker's third card left the shoe unseen
    dealer.draw("K♣")
    assert table.state is TableState.END_OF_SHOE
    record = store.rounds(limit=1)[-1]
    first_four = [(1, "royal_9_progressive", 500, "lose", 0, -500, "627b.3(e)"),
                  (1, "perfect_pairs_player", 500, "win", 2500, 2500, "627b.1(a)(2)")]
    assert [money(s) for s in settled_first] == [first_four]
    assert record["state"] == "void"
    assert money(record["settlements"]) == first_four + [
        (1, "banker", 1000, "push", 0, 0, LOST)]
    assert store.seat_totals()[1] == {"net_cents": 2000, "wagered_cents": 2000,
                                      "vig_owed_cents": 0}


def test_simulate_keeps_a_lucky_nines_settlement_in_a_void_round_631c_4_c7():
    """`tablectl simulate`'s engine (the dealing procedure the live table applies): Lucky
    Nines on a Player nine of diamonds is settled at the first four cards (631c.4); a lost
    card then voids the round, and the record keeps the Lucky Nines settlement."""
    game = build_game(parse_submission(rules_of("baccarat-lucky-nines-automated.toml"),
                                       "lucky-nines.toml"))
    dealing = ShoeDealing(game, 1)
    for i, text in enumerate(["A♣", "2♣"]):  # 631a.5(f): the ace and one more
        dealing.apply(Draw(i, Card.parse(text)))
    dealing.apply(Bet((PlacedWager(1, "player", 2500), PlacedWager(1, "lucky_nines", 1000))))
    dealing.apply(Lock())
    for i, text in enumerate(["9♦", "K♣", "4♠", "3♥"], start=2):  # P 3 draws, B 3
        dealing.apply(Draw(i, Card.parse(text)))
    (record,) = dealing.apply(Draw(7, Card.parse("5♠")))  # card 6 was lost: C7
    assert record["void"] and record["outcome"] == "void"
    # One nine, a diamond: 2 to 1 in every paytable (631c.4(e)).
    assert [(s["wager"], s["amount_cents"], s["outcome"], s["win_cents"], s["net_cents"],
             s["label"]) for s in record["settlements"]] == [
        ("lucky_nines", 1000, "win", 2000, 2000, "One nine diamonds"),
        ("player", 2500, "push", 0, 0, "void round: wager returned")]
    assert record["seat_net_cents"] == 2000


def test_simulate_closes_a_locked_round_void_when_a_face_up_card_opens_a_simulated_one_c19():
    """631a.15(d), docs/rulings.md C19, as the live table records it
    (tests/controller/test_daemon_disclosed.py deals the same cards to the daemon): the
    round locked by "no more bets" is closed void with its wager returned and standing,
    then the simulated round, then the wager's live round."""
    game = build_game(parse_submission(rules_of("baccarat-8deck.toml"), "baccarat.toml"))
    dealing = ShoeDealing(game, 1)
    cards = iter(enumerate(["A♣", "2♣", "7♣", "K♠", "Q♥", "9♦", "9♠", "K♣", "K♦", "Q♥"]))

    def draw(n: int, face_up: bool = False) -> list[dict[str, Any]]:
        done = []
        for _ in range(n):
            index, text = next(cards)
            done += dealing.apply(Draw(index, Card.parse(text), face_up))
        return done

    draw(2)  # 631a.5(f): the ace and one more
    dealing.apply(Bet((PlacedWager(1, "banker", 2500),)))
    dealing.apply(Lock())
    locked, = draw(1, face_up=True)
    simulated, = draw(3)  # Player 7, Banker 9: natural
    dealing.apply(Lock())
    live, = draw(4)  # Player 9 natural, Banker 0
    assert (locked["round"], locked["void"], locked["wagers_stand"], locked["outcome"]) == (
        1, True, True, "void")
    assert [(s["wager"], s["amount_cents"], s["outcome"], s["net_cents"], s["section"])
            for s in locked["settlements"]] == [("banker", 2500, "push", 0, "631a.15(d)")]
    assert (simulated["round"], simulated["simulated"], simulated["settlements"]) == (0, True, [])
    assert (live["round"], live["outcome"], live["seat_net_cents"]) == (2, "player", -2500)
    assert "wagers_stand" not in live
