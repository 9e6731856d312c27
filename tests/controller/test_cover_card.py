"""631a.5(d), 681a.5(d): a second cover card nearer the bottom than the regulation allows is
reported to the dealer and logged when it comes out of the shoe (docs/rulings.md C22)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.memory.store import Store
from controller.table.machine import TableState
from tests.controller.test_table import Dealer, betting

@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    db = Store(tmp_path / "table.sqlite")
    yield db
    db.close()


SHOE_CARDS = 416  # config/simulated-table.toml: eight decks (631a.3(a))
ROUND = ("2♣", "3♦", "4♥", "4♠")  # Player 6, Banker 7: both stand, four cards a round


def deal_to(dealer: Dealer, index: int) -> None:
    """Whole rounds of four cards until the next card's index is `index` (a multiple of 4
    past the burn of four: the exposed 3♠ and three more, 631a.5(f))."""
    table = dealer.table
    while dealer.index < index:
        table.cmd_no_more_bets()
        dealer.draw(*ROUND)
        assert table.state is TableState.BETTING_OPEN


@pytest.mark.parametrize("cards_below,reported", [(14, False), (10, True), (6, True)])
def test_631a_5_d_a_cover_card_fewer_than_14_cards_above_the_bottom_is_reported(
        store: Store, cards_below: int, reported: bool) -> None:
    """The cover card comes out after 416 - `cards_below` cards, between a round's second and
    third cards (631a.10(d)): 14 cards below it is within 631a.5(d); 10 or 6 are not, and the
    dealer's state and the log say so with the exact count."""
    table, dealer = betting(store)  # 3♠ exposed, three burned: the next card is index 4
    cover_at = SHOE_CARDS - cards_below
    deal_to(dealer, cover_at - 2)
    table.cmd_no_more_bets()
    dealer.draw("2♣", "3♦")
    dealer.cover()
    events = store.events(kind="cover_card_misplaced")
    if not reported:
        assert events == [] and table.shoe.cover_card_misplaced == ""
    else:
        detail = (f"the cover card came out with {cards_below} card(s) below it; 631a.5(d) "
                  "places it at least 14 cards above the bottom: check the cover card at the "
                  "next shoe's cut")
        (event,) = events
        assert (event.severity, event.device, event.payload) == (
            "warning", "shoe", {"index": cover_at, "cards_below": cards_below,
                                "detail": detail})
        assert table.shoe.cover_card_misplaced == detail
    dealer.draw("4♥", "4♠")  # the cover card's round is completed (631a.10(d))
    assert table.state is TableState.BETTING_OPEN
    if cards_below == 6:
        # Four cards left after the cover card's round: the last hand's Player 2+3 = 5 must
        # draw (631a.10) and the shoe is empty: void (631a.15(e)); the notice stays until
        # the shoe is replaced.
        table.cmd_no_more_bets()
        dealer.draw("2♣", "3♦", "3♥", "K♠")
        assert dealer.index == SHOE_CARDS
        assert table.state is TableState.END_OF_SHOE
        assert store.events(kind="round_void")[-1].payload["reason"] == \
            "the shoe cannot complete the round"
        assert table.shoe.cover_card_misplaced.startswith("the cover card came out with 6")


def test_681a_5_d_the_cover_card_at_least_ten_cards_above_the_bottom() -> None:
    """681a.5(d): ten cards above the bottom of a 208-card (four-deck) shoe is within range,
    nine is not."""
    from controller.rules.game import load_game

    game = load_game(Path(__file__).parents[2] / "config" / "21-baccarat-4deck.toml")
    assert game.shoe_size == 208
    assert game.misplaced_cover_card(198) == ""
    assert game.misplaced_cover_card(199) == (
        "the cover card came out with 9 card(s) below it; 681a.5(d) places it at least 10 "
        "cards above the bottom: check the cover card at the next shoe's cut")


def test_631a_5_d_tablectl_status_shows_a_misplaced_cover_card() -> None:
    """The daemon's `status` carries the shoe's `cover_card_misplaced`; `tablectl status`
    shows it in place of "passed" (docs/rulings.md C22)."""
    from controller.cli.status_view import render_status
    from tests.cli.conftest import STATUS

    detail = ("the cover card came out with 6 card(s) below it; 631a.5(d) places it at "
              "least 14 cards above the bottom: check the cover card at the next shoe's cut")
    shown = render_status({**STATUS, "shoe": {**STATUS["shoe"], "cover_card_seen": True,
                                              "cover_card_misplaced": detail}})
    assert f"MISPLACED: {detail}" in shown
    assert "MISPLACED" not in render_status(STATUS)
