"""The table state machine driven by device events, with the real rules engine and store.

No devices and no event loop: each test feeds the events a shoe, a shuffler and
the lock-out button would produce, and checks the prompts, states and cents.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from controller.config import load_config
from cards import BackColour, Card
from controller.rules.card_values import burn_value
from controller.rules.game import build_game
from controller.rules.settlement import PlacedWager
from controller.rules.submission import SubmissionError, parse_submission
from controller.memory.store import OPEN_ROUND_CARDS, Store
from controller.table.errors import CommandRefused
from controller.table.machine import TableState
from controller.table.rules_seam import RulesAdapter
from controller.table.table import Table
from drivers.protocols import (
    CardDrawn, CoverCardDrawn, DeviceFault, DeviceFaultCleared, LockedOut, ShoeLoaded,
    ShuffleComplete,
)

CONFIG = Path(__file__).parents[2] / "config" / "simulated-table.toml"


class Dealer:
    """Feeds cards to the table as the shoe would, numbering them."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.index = 0

    def draw(self, *cards: str, face_up: bool = False) -> None:
        for text in cards:
            self.table.handle(CardDrawn("shoe", self.index, Card.parse(text), BackColour.RED,
                                        face_up))
            self.index += 1

    def cover(self) -> None:
        self.table.handle(CoverCardDrawn("shoe", self.index))


def make_table(store: Store) -> Table:
    config = load_config(CONFIG)
    locks: list[str] = []

    def lock(cause: str) -> LockedOut:
        locks.append(cause)
        return LockedOut(cause, 0.0, frozenset())

    table = Table(table_id="T1", seats=14, rules=RulesAdapter(build_game(config.submission)),
                  store=store, lock_seats=lock)
    table.locks = locks  # type: ignore[attr-defined]
    return table


def submission_rules(**sections) -> dict:
    """The simulated table's Rules Submission sections, with some replaced or updated."""
    data = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    rules = {k: v for k, v in data.items() if k in ("table", "game", "wagers")}
    for name, value in sections.items():
        if callable(value):
            value(rules[name])
        else:
            rules[name] = value
    return rules


def table_for(store: Store, rules: dict, **kwargs) -> Table:
    submission = parse_submission(rules, "variant.toml")
    return Table(table_id="T", seats=submission.table.seats, store=store,
                 rules=RulesAdapter(build_game(submission)), **kwargs)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "table.sqlite")
    yield s
    s.close()


def prompts(store: Store) -> list[str]:
    return [e.payload["action"] for e in store.events(kind="prompt")]


def betting(store: Store) -> tuple[Table, Dealer]:
    """The simulated table, opened, shuffled, loaded and burned: betting is open."""
    table = make_table(store)
    dealer = Dealer(table)
    open_to_betting(table, dealer)
    return table, dealer


def open_to_betting(table: Table, dealer: Dealer, first: str = "3♠") -> None:
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    assert table.state is TableState.CUT
    table.on_shoe_loaded()
    assert table.state is TableState.BURN
    dealer.draw(first)  # 631a.5(f): exposed; its value says how many more to burn
    burn = burn_value(Card.parse(first))
    dealer.draw(*["2♣"] * burn)
    assert table.state is TableState.BETTING_OPEN


def test_burn_follows_the_exposed_card_631a_5_f(store):
    table, = (make_table(store),)
    dealer = Dealer(table)
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    table.on_shoe_loaded()
    dealer.draw("K♦")  # a king counts ten for the burn
    dealer.draw(*["5♣"] * 9)
    assert table.state is TableState.BURN
    dealer.draw("5♣")
    assert table.state is TableState.BETTING_OPEN
    assert table.shoe.burned == ["K♦"] + ["5♣"] * 10
    assert prompts(store)[-1] == "place_bets"


def test_a_shuffle_that_does_not_verify_does_not_open_the_cut(store):
    """681a.9(c)-style failure to count the batch: the table stays in shuffling."""
    table = make_table(store)
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 415, 1, 0, 0))
    assert table.state is TableState.SHUFFLING


def test_banker_win_pays_even_money_less_5_percent_631a_13_c(store):
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_place_wager(2, "player", 2000)
    table.cmd_place_wager(3, "tie", 500)
    table.cmd_no_more_bets()
    assert table.state is TableState.NO_MORE_BETS
    # 631a.9(c): P, B, P, B. Player 2+4 = 6 stands; Banker 3+4 = 7 stands (631a.11(c)(1)).
    dealer.draw("2♣", "3♦", "4♥", "4♠")
    assert table.state is TableState.BETTING_OPEN
    settled = store.events(kind="round_settled")[-1].payload
    assert settled["result"] == {"player": ["2♣", "4♥"], "banker": ["3♦", "4♠"],
                                 "player_total": 6, "banker_total": 7, "winner": "banker",
                                 "player_natural": False, "banker_natural": False,
                                 "dragon_7": False, "panda_8": False}
    by_seat = {s["seat"]: (s["outcome"], s["win_cents"], s["vigorish_cents"], s["net_cents"])
               for s in settled["settlements"]}
    assert by_seat == {1: ("win", 1000, 50, 950), 2: ("lose", 0, 0, -2000),
                       3: ("lose", 0, 0, -500)}
    assert settled["table_net_cents"] == 1550
    # 631a.12(b): losers collected first, then winners from the highest seat down.
    assert [s["seat"] for s in settled["settlements"]] == [3, 2, 1]


def test_table_1_decides_the_banker_third_card_631a_11_c_2_iii(store):
    table, dealer = betting(store)
    table.cmd_place_wager(5, "tie", 1000)
    table.cmd_no_more_bets()
    # Player 2+3 = 5 draws (631a.11(b)(1)); Banker 3+K = 3; Player's third is an 8:
    # Table 1 row 3, column 8 is S, so the Banker stays.
    dealer.draw("2♣", "3♦", "3♥", "K♠")
    assert table.state is TableState.THIRD_CARDS
    assert store.events(kind="prompt")[-1].payload == {"action": "deal", "next": "player_third"}
    dealer.draw("8♣")
    assert table.state is TableState.BETTING_OPEN
    settled = store.events(kind="round_settled")[-1].payload
    assert settled["result"]["player"] == ["2♣", "3♥", "8♣"]
    assert settled["result"]["banker"] == ["3♦", "K♠"]
    assert settled["result"]["winner"] == "tie"
    # 631a.13(b): the configured 8 to 1.
    assert settled["settlements"] == [{
        "seat": 5, "wager": "tie", "amount_cents": 1000, "outcome": "win", "odds": "8",
        "win_cents": 8000, "vigorish_cents": 0, "vig_marked_cents": 0, "net_cents": 8000,
        "label": settled["settlements"][0]["label"], "section": settled["settlements"][0]["section"]}]


def test_the_first_card_locks_the_table_627b_3_a_2(store):
    table, dealer = betting(store)
    table.cmd_place_wager(1, "player", 1000)
    dealer.draw("9♣")
    assert table.locks == ["first-card"]
    assert table.state is TableState.DEALING
    with pytest.raises(CommandRefused, match="only while betting is open"):
        table.cmd_place_wager(2, "player", 1000)


def test_wager_refusals_name_what_is_allowed(store):
    table, dealer = betting(store)
    with pytest.raises(CommandRefused, match="seat 15 does not exist; allowed: 1 to 14"):
        table.cmd_place_wager(15, "banker", 1000)
    with pytest.raises(CommandRefused, match="allowed: banker, player, tie"):
        table.cmd_place_wager(1, "dragon_bonus", 1000)
    with pytest.raises(CommandRefused, match="below the table minimum of 500 cents"):
        table.cmd_place_wager(1, "banker", 499)


def test_cover_card_then_last_hand_then_one_more_631a_10_d(store):
    table, dealer = betting(store)
    table.cmd_no_more_bets()
    dealer.draw("9♣", "8♦")
    dealer.cover()  # during the hand: it is completed
    dealer.draw("K♥", "K♠")  # Player natural 9 wins
    assert table.state is TableState.BETTING_OPEN
    assert prompts(store)[-2:] == ["last_hand", "place_bets"]
    table.cmd_no_more_bets()
    dealer.draw("9♣", "8♦", "K♥", "K♠")
    assert table.state is TableState.END_OF_SHOE
    assert prompts(store)[-1] == "shoe_complete"
    assert table.shoe.rounds_in_shoe == 2


def test_a_shoe_fault_stops_play_and_recovery_resumes_the_round(store):
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦")
    table.handle(DeviceFault("shoe", "SHOE_LID_OPEN", "lid open", "close the lid"))
    assert table.state is TableState.DEVICE_FAULT
    assert table.fault == {"device": "shoe", "code": "SHOE_LID_OPEN", "detail": "lid open",
                           "action": "close the lid"}
    assert store.events(kind="round_settled") == []  # nothing settled from incomplete data
    table.handle(DeviceFaultCleared("shoe", "SHOE_LID_OPEN"))
    assert table.state is TableState.DEALING
    dealer.draw("4♥", "4♠")
    assert store.events(kind="round_settled")[-1].payload["settlements"][0]["net_cents"] == 950


def test_restart_mid_round_completes_from_the_recorded_cards_and_settles_once(store, tmp_path):
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦", "4♥")
    # Power cut: a new process opens the same file.
    store.close()
    reopened = Store(tmp_path / "table.sqlite")
    revived = make_table(reopened)
    revived.restore()
    assert revived.state is TableState.DEALING
    assert revived.coup.next_card().name == "BANKER_SECOND"
    dealer.table = revived
    dealer.draw("4♠")
    rounds = reopened.rounds()
    assert [(r["state"], r["settlements"][0]["net_cents"]) for r in rounds] == [("settled", 950)]
    reopened.verify_chain()
    reopened.close()


def test_the_settled_round_holds_its_cards_and_an_open_one_shows_them_from_the_state(store):
    """A card's step saves the table's state (the open round's cards with it) and no
    longer rewrites the round's row; the row gets the cards, in order, when it closes."""
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦", "4♥")
    (open_round,) = store.open_rounds()
    assert [(c["card"], c["slot"]) for c in open_round["cards"]] == [
        ("2♣", "player_first"), ("3♦", "banker_first"), ("4♥", "player_second")]
    dealer.draw("4♠")
    (settled,) = store.rounds()
    assert [(c["index"], c["card"], c["hand"], c["slot"]) for c in settled["cards"]] == [
        (4, "2♣", "player", "player_first"), (5, "3♦", "banker", "banker_first"),
        (6, "4♥", "player", "player_second"), (7, "4♠", "banker", "banker_second")]


def test_a_round_left_open_by_the_version_that_wrote_cards_to_its_row_is_completed(
        store, tmp_path):
    """A store saved mid-round by the version before (the round's row held its cards, the
    saved state did not): the restored table takes the cards from the row and settles."""
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦", "4♥")
    # That version saved the state at every card, without the round's cards.
    state, data = table.state.value, table.saved.to_json()
    cards = data.pop(OPEN_ROUND_CARDS)
    with store.transaction() as db:  # as that version left it
        db.execute("UPDATE rounds SET cards = ? WHERE round_id = ?",
                   (json.dumps(cards), table.round_id))
        store.save_table_state(state, data)
    store.close()
    reopened = Store(tmp_path / "table.sqlite")
    revived = make_table(reopened)
    revived.restore()
    assert revived.coup.next_card().name == "BANKER_SECOND"
    dealer.table = revived
    dealer.draw("4♠")
    (settled,) = reopened.rounds()
    assert [c["card"] for c in settled["cards"]] == ["2♣", "3♦", "4♥", "4♠"]
    assert settled["settlements"][0]["net_cents"] == 950
    reopened.close()


def test_a_card_index_gap_voids_the_round_631a_15_681a_9(store):
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦")
    dealer.index += 1  # a card left the shoe that the controller never saw
    dealer.draw("4♥")
    assert table.state is TableState.END_OF_SHOE
    record = store.rounds()[-1]
    assert record["state"] == "void"
    assert record["cards"] == [{"index": 4, "card": "2♣", "hand": "player", "slot": "player_first"},
                               {"index": 5, "card": "3♦", "hand": "banker", "slot": "banker_first"}]
    assert [(s["wager"], s["outcome"], s["net_cents"], s["section"])
            for s in record["settlements"]] == [
        ("banker", "push", 0, "631a.15, 681a.9, docs/rulings.md")]
    assert table.shoe.lost_indexes == [6]


def test_a_face_up_card_opens_a_simulated_round_and_the_wagers_wait_631a_15_d(store):
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    dealer.draw("7♣", face_up=True)
    assert table.simulated and table.state is TableState.DEALING
    dealer.draw("9♦", "K♥", "K♠")  # P 7, B 9: Banker natural, no more cards
    assert table.state is TableState.BETTING_OPEN
    simulated = store.rounds()[-1]
    assert (simulated["simulated"], simulated["wagers"], simulated["settlements"]) == (True, [], [])
    assert table.wagers == [PlacedWager(1, "banker", 1000)]
    assert table.shoe.rounds_in_shoe == 0  # a simulated round is not a round of play
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦", "4♥", "4♠")
    assert store.rounds()[-1]["settlements"][0]["net_cents"] == 950


def test_a_face_up_card_mid_round_is_set_aside_then_simulated_631a_15_d(store):
    table, dealer = betting(store)
    table.cmd_place_wager(1, "banker", 1000)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦")
    dealer.draw("8♠", face_up=True)
    assert table.coup.cards_dealt == 2  # not used for the live round
    dealer.draw("4♥", "4♠")
    live, simulated = store.rounds()[-2:]
    assert live["settlements"][0]["net_cents"] == 950
    assert simulated["simulated"] and simulated["cards"][0]["card"] == "8♠"
    assert table.state is TableState.DEALING and table.wagers == []


def test_a_card_during_a_shoe_fault_voids_the_round_on_recovery(store):
    table, dealer = betting(store)
    table.cmd_place_wager(2, "player", 2500)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦")
    table.handle(DeviceFault("shoe", "SHOE_SENSOR_FAULT", "sensor", "clean the sensor"))
    dealer.draw("4♥")
    table.handle(DeviceFaultCleared("shoe", "SHOE_SENSOR_FAULT"))
    record = store.rounds()[-1]
    assert record["state"] == "void"
    assert [(s["seat"], s["amount_cents"], s["net_cents"]) for s in record["settlements"]] == [
        (2, 2500, 0)]
    assert table.state is TableState.END_OF_SHOE


def test_a_card_set_aside_in_the_last_hand_goes_with_the_decks_631a_10_d_631a_15_d(store):
    table, dealer = betting(store)
    table.cmd_no_more_bets()
    dealer.cover()
    dealer.draw("9♣", "8♦", "K♥", "K♠")  # the cover card's round; "last hand" next
    table.cmd_no_more_bets()
    dealer.draw("9♣", "8♦")
    dealer.draw("6♥", face_up=True)  # set aside for a simulated round (631a.15(d))
    dealer.draw("K♥", "K♠")
    assert table.state is TableState.END_OF_SHOE
    assert table.pending_simulated_card is None
    (discarded,) = store.events(kind="card_discarded")
    assert (discarded.payload["card"], discarded.payload["ruling"]) == (
        "6♥", "set aside in the last hand; no round follows, so it is discarded "
              "(631a.3(b), 631a.10(d), 631a.15(d))")
    assert not any(r["simulated"] for r in store.rounds())


def test_a_card_after_the_shoe_is_finished_is_discarded(store):
    table, dealer = betting(store)
    table.cmd_no_more_bets()
    dealer.cover()
    dealer.draw("9♣", "8♦", "K♥", "K♠")
    table.cmd_no_more_bets()
    dealer.draw("9♣", "8♦", "K♥", "K♠")
    assert table.state is TableState.END_OF_SHOE
    dealer.draw("5♥")
    assert store.events()[-2].kind == "card_discarded"
    assert table.state is TableState.END_OF_SHOE


def test_betting_open_arms_the_seat_panel_every_round(store):
    table = make_table(store)
    opened: list[frozenset[int]] = []
    table.ports.open_seats = opened.append
    dealer = Dealer(table)
    open_to_betting(table, dealer)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦", "4♥", "4♠")
    assert opened == [frozenset(), frozenset()]


def test_a_misread_mid_round_voids_it_after_the_supervisor_rules(store):
    """The table never guesses a card it did not read; nothing is settled from it."""
    table, dealer = betting(store)
    table.cmd_place_wager(3, "banker", 2000)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦")
    table.handle(DeviceFault("shoe", "shoe_misread", "card 16 left the shoe unread", "stop"))
    dealer.index += 1  # the unread card used up an index
    assert table.state is TableState.DEVICE_FAULT
    with pytest.raises(CommandRefused):
        table.cmd_no_more_bets()
    table.cmd_acknowledge_fault("floor")
    record = store.rounds()[-1]
    assert (record["state"], record["settlements"][0]["net_cents"]) == ("void", 0)
    assert store.events(kind="fault_acknowledged")[-1].payload["supervisor"] == "floor"
    assert table.state is TableState.END_OF_SHOE


def test_a_fault_a_device_clears_is_not_cleared_by_acknowledging_it(store):
    table, dealer = betting(store)
    table.handle(DeviceFault("shoe", "shoe_lid_open", "lid open", "close the lid"))
    table.cmd_acknowledge_fault("floor")
    assert table.state is TableState.DEVICE_FAULT
    table.handle(DeviceFaultCleared("shoe", "shoe_lid_open"))
    assert table.state is TableState.BETTING_OPEN




def test_21_baccarat_ends_the_shoe_with_the_cover_cards_round_681a(store):
    """681a: no 'one more hand' after the cover card; the batch is reshuffled."""
    table = table_for(store, submission_rules(
        table=lambda t: t.update(seats=8), game={"family": "21-baccarat", "decks": 8},
        wagers={"player": {}, "banker": {}}))
    dealer = Dealer(table)
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    table.on_shoe_loaded()
    dealer.draw("9♠")  # 681a.7(c): the first card is burned, and no more
    assert table.state is TableState.BETTING_OPEN
    table.cmd_place_wager(1, "player", 1000)
    table.cmd_no_more_bets()
    dealer.cover()
    # 681a: Player 10+7 = 17 stands; Banker 10+8 = 18 stands; Banker wins.
    dealer.draw("10♣", "10♦", "7♥", "8♠")
    assert table.state is TableState.END_OF_SHOE
    settled = store.events(kind="round_settled")[-1].payload
    assert (settled["result"]["player_total"], settled["result"]["banker_total"]) == (17, 18)
    assert settled["settlements"][0]["net_cents"] == -1000


def test_marked_vigorish_is_collected_before_the_next_shoe_631a_13_d_2(store):
    rules = submission_rules(game=lambda g: g["vigorish"].update(collection="marked"))
    table = table_for(store, rules, vig_collection="marked")
    dealer = Dealer(table)
    open_to_betting(table, dealer)
    table.cmd_place_wager(2, "banker", 1000)
    table.cmd_place_wager(7, "banker", 2000)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦", "4♥", "4♠")  # Banker 7 beats Player 6
    settled = store.events(kind="round_settled")[-1].payload["settlements"]
    # 631a.13(d)(2)(ii): marked, not taken: the seat keeps the whole win for now.
    assert {s["seat"]: (s["net_cents"], s["vig_marked_cents"]) for s in settled} == {
        2: (1000, 50), 7: (2000, 100)}
    assert table.cmd_seat_leaves(7) == 100
    assert store.seat_totals()[7] == {"net_cents": 1900, "wagered_cents": 2000,
                                      "vig_owed_cents": 0}
    table.cmd_no_more_bets()
    dealer.cover()
    dealer.draw("9♣", "8♦", "K♥", "K♠")
    table.cmd_no_more_bets()
    dealer.draw("9♣", "8♦", "K♥", "K♠")
    assert table.state is TableState.END_OF_SHOE
    table.cmd_shuffle(8)  # before the new shoe: everything marked is collected
    assert store.seat_totals()[2]["vig_owed_cents"] == 0
    assert store.seat_totals()[2]["net_cents"] == 950
    assert store.events(kind="prompt")[-1].payload == {
        "action": "collect_vigorish", "reason": "new shoe", "seats": [{"seat": 2, "cents": 50}]}


def test_an_optional_wager_needs_a_baccarat_wager_first_631c_3_c_631c_4_c_627b_5_b(store):
    table = table_for(store, submission_rules(
        wagers=lambda w: w.update(dragon_bonus_player={"paytable": "A"})))
    open_to_betting(table, Dealer(table))
    with pytest.raises(CommandRefused, match="seat 3 must first place a Banker, Player or Tie "
                                             "wager before the optional wager"):
        table.cmd_place_wager(3, "dragon_bonus_player", 500)
    table.cmd_place_wager(3, "player", 500)
    table.cmd_place_wager(3, "dragon_bonus_player", 500)
    assert [w.wager for w in table.wagers] == ["player", "dragon_bonus_player"]


def test_majestic_match_without_a_baccarat_wager_when_the_submission_says_so_631c_7_b(store):
    rules = submission_rules(wagers=lambda w: w.update(
        majestic_match_player={"without_base_wager": True}, majestic_match_banker={}))
    table = table_for(store, rules)
    open_to_betting(table, Dealer(table))
    table.cmd_place_wager(5, "majestic_match_player", 1000)  # alone at the seat: allowed
    with pytest.raises(CommandRefused, match="must first place a Banker, Player or Tie"):
        table.cmd_place_wager(5, "majestic_match_banker", 1000)  # not offered alone
    rules["wagers"]["tie"]["without_base_wager"] = True
    with pytest.raises(SubmissionError, match="wagers.tie.without_base_wager = True: only "
                                              "majestic_match_player"):
        parse_submission(rules, "mm.toml")


def test_a_red_batch_is_named_red_not_lost_as_zero_681a_3_b(store):
    """BackColour.RED is 0: the table must never treat it as 'no colour'."""
    table = make_table(store)
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    table.handle(ShoeLoaded("shoe", 416, BackColour.RED))
    assert store.events(kind="shoe_loaded")[-1].payload == {"shoe_no": 1, "back": "red"}
    Dealer(table).draw("3♠")
    table.handle(CardDrawn("shoe", 1, Card.parse("2♣"), BackColour.BLUE, False))
    assert table.state is TableState.DEVICE_FAULT
    assert table.fault["detail"] == "card 1 has a BLUE back; the batch in play is RED"


def test_two_batches_alternate_shoe_by_shoe_681a_3_b(store):
    """681a.3(b)(4): each batch is dealt every other shoe; a wrong one stops the table."""
    from controller.rules.batches import BatchTracker
    from drivers.protocols import BatchHeld

    table = table_for(store, submission_rules(
        table=lambda t: t.update(seats=8), game={"family": "21-baccarat", "decks": 8},
        wagers={"player": {}, "banker": {}}), batches=BatchTracker(BackColour.RED,
                                                                   BackColour.BLUE))
    dealer = Dealer(table)
    table.handle(BatchHeld("shuffler", BackColour.RED))  # the dealer put RED in the shuffler
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    table.handle(ShoeLoaded("shoe", 416, BackColour.RED))
    dealer.draw("9♠")  # 681a.7(c) burn
    table.cmd_no_more_bets()
    dealer.cover()
    dealer.draw("10♣", "10♦", "7♥", "8♠")  # the cover card's round ends the shoe (681a)
    assert table.state is TableState.END_OF_SHOE
    assert table.batches.discard_rack is None  # collected with the shoe (681a.3(b)(5))
    table.handle(BatchHeld("shuffler", BackColour.BLUE))
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.BLUE, 416, 0, 0, 0))
    table.handle(ShoeLoaded("shoe", 416, BackColour.RED))  # RED again: not alternated
    assert table.state is TableState.DEVICE_FAULT
    assert table.fault["code"] == "batch_mismatch"
    assert "batches alternate every shoe" in table.fault["detail"]
    table.cmd_acknowledge_fault("floor")
    assert table.state is TableState.CUT
    table.handle(ShoeLoaded("shoe", 416, BackColour.BLUE))
    assert table.state is TableState.BURN
    # The tracker survives a restart in the table's snapshot.
    revived = table_for(store, submission_rules(
        table=lambda t: t.update(seats=8), game={"family": "21-baccarat", "decks": 8},
        wagers={"player": {}, "banker": {}}), batches=BatchTracker(BackColour.RED,
                                                                   BackColour.BLUE))
    revived.restore()
    assert (revived.batches.in_play, revived.batches.next_to_play) == (BackColour.BLUE,
                                                                     BackColour.RED)


def test_the_shuffler_naming_its_batch_is_recorded_without_a_tracker(store):
    from drivers.protocols import BatchHeld

    table = make_table(store)
    table.handle(BatchHeld("shuffler", BackColour.BLUE))
    assert (store.events()[-1].kind, store.events()[-1].payload) == ("batch_held",
                                                                     {"back": "blue"})
    assert table.batch_in_shuffler is BackColour.BLUE


def test_device_events_are_recorded_not_acted_on_when_out_of_order(store):
    table = make_table(store)
    table.mark_out_of_order("event chain: entry 9 was altered")
    Dealer(table).draw("9♣")
    assert table.state is TableState.OUT_OF_ORDER
    assert store.events()[-1].payload == {"device_event": "CardDrawn"}


@pytest.mark.parametrize("level", ["info", "debug"])
def test_the_journal_gets_a_cards_lines_at_debug_only(store, level):
    """A card and its prompt are in the store's log; the journal gets them only at debug
    level (at info they are not even built), and a round's settlement at info either way."""
    import io
    import json

    from controller.logsetup import configure_logging

    import logging

    import structlog

    from controller import logsetup

    saved = (structlog.get_config(), logging.getLogger().handlers[:],
             logging.getLogger().level, logsetup.debug_enabled)
    journal = io.StringIO()
    configure_logging(level=level, stream=journal, journal_prefix=False)
    try:
        table, dealer = betting(store)
        table.cmd_place_wager(1, "banker", 1000)
        table.cmd_no_more_bets()
        dealer.draw("2♣", "3♦", "4♥", "4♠")
    finally:  # the other tests' logging as it was
        structlog.configure(**saved[0])
        logging.getLogger().handlers[:] = saved[1]
        logging.getLogger().setLevel(saved[2])
        logsetup.debug_enabled = saved[3]
    lines = [json.loads(line) for line in journal.getvalue().splitlines()]
    cards = [(x["card"], x["hand"]) for x in lines if x["event"] == "card"]
    assert cards == ([("2♣", "player"), ("3♦", "banker"), ("4♥", "player"), ("4♠", "banker")]
                     if level == "debug" else [])
    assert [x["level"] for x in lines if x["event"] == "round_settled"] == ["info"]
