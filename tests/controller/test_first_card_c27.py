"""docs/rulings.md C27: the shoe's first card sets the burn (631a.5(f)); when it went by
unread (lost at a power cut or a reader outage, or misread) no later card stands in for it,
and the shoe ends."""

from __future__ import annotations

import pytest

from cards import BackColour, Card
from controller.config import load_config
from controller.rules.dealing import Draw, ShoeDealing
from controller.rules.game import build_game
from controller.rules.procedure import Phase, expected_card_index, first_card_unknown
from controller.table.machine import TableState
from drivers.protocols import DeviceFault, ShuffleComplete
from controller.memory.store import Store
from tests.controller.test_table import CONFIG, Dealer, make_table, open_to_betting

REASON = ("the shoe's first card (index 0) was not read, so the burn it sets cannot be "
          "checked; the shoe ends (631a.5(f), docs/rulings.md C27)")


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "table.sqlite")
    yield s
    s.close()


def to_burn(table):
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    table.on_shoe_loaded()
    assert table.state is TableState.BURN


def test_the_next_index_is_known_from_the_burn_on_631a_5_f():
    assert expected_card_index(-1, Phase.BURN, first_card_known=False) == 0
    assert expected_card_index(-1, Phase.BETTING, first_card_known=False) is None
    assert expected_card_index(4, Phase.BURN, first_card_known=True) == 5
    assert first_card_unknown(1, Phase.BURN, first_card_known=False)
    assert not first_card_unknown(0, Phase.BURN, first_card_known=False)
    assert not first_card_unknown(3, Phase.BURN, first_card_known=True)
    assert not first_card_unknown(3, Phase.BETTING, first_card_known=False)


def test_a_lost_first_card_ends_the_shoe_c27(store):
    table = make_table(store)
    dealer = Dealer(table)
    to_burn(table)
    dealer.index = 1  # the first card (index 0) left the shoe unseen: a power cut
    dealer.draw("K♣")
    assert table.state is TableState.END_OF_SHOE
    assert store.events(kind="burn_first_card") == []
    gap = store.events(kind="card_gap")[-1].payload
    assert (gap["expected_index"], gap["received_index"], gap["lost_indexes"]) == (0, 1, [0])
    discarded = store.events(kind="card_discarded")[-1].payload
    assert (discarded["index"], discarded["card"], discarded["state"],
            discarded["ruling"]) == (1, "K♣", "burn", REASON)
    prompt = store.events(kind="prompt")[-1].payload
    assert (prompt["action"], prompt["detail"]) == ("shoe_complete",
                                                    f"{REASON}; replace the decks")
    assert table.saved.shoe.cards_drawn == 2
    assert store.rounds() == []


def test_a_misread_first_card_ends_the_shoe_after_the_supervisor_rules_c27(store):
    table = make_table(store)
    dealer = Dealer(table)
    to_burn(table)
    table.handle(DeviceFault("shoe", "shoe_misread", "card 0 left the shoe unread", "stop"))
    dealer.index += 1  # the unread card used index 0
    table.cmd_acknowledge_fault("floor")
    assert table.state is TableState.BURN
    dealer.draw("K♣")  # a burn card: it cannot be told how many the unread card asked for
    assert table.state is TableState.END_OF_SHOE
    assert store.events(kind="card_gap") == []  # nothing was lost: the misread is on record
    assert store.events(kind="card_discarded")[-1].payload["ruling"] == REASON
    assert table.saved.shoe.cards_drawn == 2


def test_a_first_card_read_is_still_the_burn_631a_5_f(store):
    table = make_table(store)
    dealer = Dealer(table)
    open_to_betting(table, dealer, first="3♠")
    first = store.events(kind="burn_first_card")[-1].payload
    assert (first["card"], first["index"], first["burn"]) == ("3♠", 0, 3)
    assert store.events(kind="card_gap") == []


def test_simulate_ends_the_shoe_at_a_lost_first_card_as_the_table_does_c27():
    dealing = ShoeDealing(build_game(load_config(CONFIG).submission), 1)
    dealing.apply(Draw(0, Card.parse("3♠"), lost=True))
    dealing.apply(Draw(1, Card.parse("K♣")))
    assert dealing.finished
    assert dealing.phase is Phase.OUT_OF_PLAY
    assert dealing.burn_expected is None  # K♣ was not taken for the first card
