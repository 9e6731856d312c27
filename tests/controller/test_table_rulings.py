"""docs/rulings.md, the table controller's rulings C5, C6, C7, C9 and C16, on the table with
the real rules engine and store (as test_table.py): the cases no other test takes."""

from __future__ import annotations

import pytest

from cards import BackColour, Card
from controller.memory.store import Store
from controller.table.machine import TableState
from drivers.protocols import CardDrawn, DeviceFault, DeviceFaultCleared, ShuffleComplete

from .test_table import Dealer, make_table, open_to_betting, prompts


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "table.sqlite")
    yield s
    s.close()


def to_burn(table, dealer: Dealer, first: str) -> None:
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    table.on_shoe_loaded()
    dealer.draw(first)  # 631a.5(f): the exposed first card sets the burn
    assert table.state is TableState.BURN


def test_a_misread_burn_card_after_the_first_still_counts_as_burned_631a_5_f_c6(store):
    """C6: the shoe's first card is a 3, so three more are burned; the second of them goes
    by unread. Once the supervisor acknowledges the misread, two more burn cards end the
    burn, not three, and betting opens."""
    table = make_table(store)
    dealer = Dealer(table)
    to_burn(table, dealer, "3♠")
    dealer.draw("2♣")  # index 1
    table.handle(DeviceFault("shoe", "shoe_misread", "card 2 left the shoe unread", "stop"))
    dealer.index += 1  # the unread card used index 2
    table.cmd_acknowledge_fault("floor")
    assert (table.state, table.saved.shoe.burn_expected) == (TableState.BURN, 1)
    dealer.draw("4♦")  # index 3, the last burn card
    assert table.state is TableState.BETTING_OPEN
    assert table.shoe.burned == ["3♠", "2♣", "4♦"]
    assert prompts(store)[-1] == "place_bets"


def test_the_last_burn_card_misread_opens_betting_at_the_acknowledgement_631a_5_f_c6(store):
    table = make_table(store)
    dealer = Dealer(table)
    to_burn(table, dealer, "A♥")  # an ace: one more card burned
    table.handle(DeviceFault("shoe", "shoe_misread", "card 1 left the shoe unread", "stop"))
    dealer.index += 1
    assert table.state is TableState.DEVICE_FAULT
    table.cmd_acknowledge_fault("floor")
    assert table.state is TableState.BETTING_OPEN
    assert prompts(store)[-1] == "place_bets"
    assert store.rounds() == []


def test_lost_burn_cards_after_the_first_count_as_burned_631a_5_f_c7(store):
    """C7: the first card is a 5 (five more to burn); cards 2 and 3 leave the shoe unseen.
    They count as burned, so after card 4 only card 5 remains to burn."""
    table = make_table(store)
    dealer = Dealer(table)
    to_burn(table, dealer, "5♣")
    dealer.draw("2♣")  # index 1
    dealer.index = 4  # indexes 2 and 3 were never reported
    dealer.draw("9♦")
    gap = store.events(kind="card_gap")[-1].payload
    assert (gap["expected_index"], gap["received_index"], gap["lost_indexes"]) == (2, 4, [2, 3])
    assert (table.state, table.saved.shoe.burn_expected) == (TableState.BURN, 1)
    dealer.draw("K♠")  # index 5
    assert table.state is TableState.BETTING_OPEN
    assert table.shoe.burned == ["5♣", "2♣", "9♦", "K♠"]


def test_a_card_while_shuffling_is_recorded_and_discarded_631a_3_b_c5(store):
    """C5: a card out of the shoe while the next batch is shuffled belongs to the old decks;
    it is recorded, discarded, and the dealer told; the table stays shuffling."""
    table = make_table(store)
    dealer = Dealer(table)
    open_to_betting(table, dealer)
    table.cmd_no_more_bets()
    dealer.cover()
    dealer.draw("9♣", "8♦", "K♥", "K♠")  # the cover card's round; "last hand" next
    table.cmd_no_more_bets()
    dealer.draw("9♣", "8♦", "K♥", "K♠")
    assert table.state is TableState.END_OF_SHOE
    table.cmd_shuffle(8)
    assert table.state is TableState.SHUFFLING
    dealer.draw("7♥")
    assert table.state is TableState.SHUFFLING
    discarded = store.events(kind="card_discarded")[-1].payload
    assert (discarded["card"], discarded["state"], discarded["ruling"]) == (
        "7♥", "shuffling",
        "no round is in play; the card is discarded (631a.3(b), 631a.10(d), 681a.7(d))")
    assert store.events(kind="prompt")[-1].payload["action"] == "discard"


@pytest.mark.parametrize("device", ["seats", "display", "shuffler"])
def test_only_the_shoes_fault_stops_a_betting_table_c9(store, device):
    """C9: a seat-panel or display fault, and a shuffler's fault while no shuffle is awaited,
    are logged as warnings; betting stays open and the round is dealt and settled."""
    table = make_table(store)
    dealer = Dealer(table)
    open_to_betting(table, dealer)
    table.cmd_place_wager(4, "banker", 1000)
    table.handle(DeviceFault(device, "x_fault", "x detail", "x action"))
    assert table.state is TableState.BETTING_OPEN and table.fault is None
    (fault,) = store.events(kind="device_fault")
    assert (fault.device, fault.severity) == (device, "warning")
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦", "4♥", "4♠")  # Banker 7 beats Player 6
    assert store.rounds()[-1]["settlements"][0]["net_cents"] == 950
    table.handle(DeviceFault("shoe", "x_fault", "x detail", "x action"))
    assert table.state is TableState.DEVICE_FAULT  # the shoe's own fault does stop it
    assert store.events(kind="device_fault")[-1].severity == "error"
    table.handle(DeviceFaultCleared("shoe", "x_fault"))
    assert table.state is TableState.BETTING_OPEN


def test_a_new_dealer_at_a_631a_table_is_only_recorded_c16(store):
    """C16: 631a has no new dealer's burn (681a.7(c) is 21 Baccarat's), so the next card out
    of the shoe is the first card of the round, not a discard."""
    table = make_table(store)
    dealer = Dealer(table)
    open_to_betting(table, dealer)
    table.cmd_place_wager(1, "player", 1000)
    table.cmd_new_dealer("D-17")
    assert [e.payload for e in store.events(kind="new_dealer")] == [
        {"dealer": "D-17", "burn": False}]
    assert prompts(store)[-1] == "place_bets"
    table.handle(CardDrawn("shoe", dealer.index, Card.parse("9♣"), BackColour.RED, False))
    dealer.index += 1
    assert table.state is TableState.DEALING and table.locks == ["first-card"]
    dealer.draw("2♦", "K♥", "5♠")  # Player 9, Banker 7: naturals end it
    record = store.rounds()[-1]
    assert [c["card"] for c in record["cards"]] == ["9♣", "2♦", "K♥", "5♠"]
    assert [(s["seat"], s["outcome"], s["net_cents"]) for s in record["settlements"]] == [
        (1, "win", 1000)]
    assert store.events(kind="card_discarded") == []
