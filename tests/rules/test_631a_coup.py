"""631a.6, 631a.9(c), 631a.10, 631a.11: values, Point Count, dealing order, third-card rules."""

from __future__ import annotations

import pytest

from controller.rules.baccarat import (
    BaccaratCoup, NextCard, Winner, banker_draws, banker_draws_value, burn_count, player_draws,
    point_count,
)
from cards import Card, Rank, Suit
from controller.rules.card_values import baccarat_value

from tests.rules.helpers import cards, deal

# Table 1 of 631a.11(c)(2)(iii), typed here from the regulation independently of the engine.
# Row: Banker's two-card Point Count; columns: value of the Player's third card 0..9.
INDEPENDENT_TABLE_1 = {
    3: ["D", "D", "D", "D", "D", "D", "D", "D", "S", "D"],
    4: ["S", "S", "D", "D", "D", "D", "D", "D", "S", "S"],
    5: ["S", "S", "S", "S", "D", "D", "D", "D", "S", "S"],
    6: ["S", "S", "S", "S", "S", "S", "D", "D", "S", "S"],
}
CELLS = [(b, v, INDEPENDENT_TABLE_1[b][v] == "D") for b in (3, 4, 5, 6) for v in range(10)]


@pytest.mark.parametrize("rank,value", [
    (Rank.TWO, 2), (Rank.THREE, 3), (Rank.FOUR, 4), (Rank.FIVE, 5), (Rank.SIX, 6),
    (Rank.SEVEN, 7), (Rank.EIGHT, 8), (Rank.NINE, 9)], ids=lambda x: str(x))
def test_631a_6_a_1_two_to_nine_face_value(rank: Rank, value: int) -> None:
    assert baccarat_value(Card(rank, Suit.HEARTS)) == value


@pytest.mark.parametrize("rank", [Rank.TEN, Rank.JACK, Rank.QUEEN, Rank.KING])
def test_631a_6_a_2_tens_and_faces_zero(rank: Rank) -> None:
    assert baccarat_value(Card(rank, Suit.SPADES)) == 0


def test_631a_6_a_3_ace_is_one() -> None:
    assert baccarat_value(Card(Rank.ACE, Suit.CLUBS)) == 1


def test_631a_6_b_1_ace_two_four_is_seven() -> None:
    assert point_count(cards("AS 2H 4D")) == 7


def test_631a_6_b_2_ace_two_nine_is_two() -> None:
    assert point_count(cards("AS 2H 9D")) == 2


def test_631a_9_c_dealing_order_player_banker_player_banker() -> None:
    """631a.9(a) two hands, Player's and Banker's; 631a.9(c) the order of the first four cards."""
    coup = BaccaratCoup()
    slots = [coup.place(c) for c in cards("2S 3H 4D 5C")]
    assert slots == [NextCard.PLAYER_FIRST, NextCard.BANKER_FIRST,
                     NextCard.PLAYER_SECOND, NextCard.BANKER_SECOND]
    assert [str(c) for c in coup.player] == ["2♠", "4♦"]
    assert [str(c) for c in coup.banker] == ["3♥", "5♣"]


def test_631a_9_c_third_cards_player_first_then_banker() -> None:
    coup = deal("2S 3H KD KC 4S 9H")  # Player 2 draws; Banker 3 with Player third 4 draws
    assert [str(c) for c in coup.player] == ["2♠", "K♦", "4♠"]
    assert [str(c) for c in coup.banker] == ["3♥", "K♣", "9♥"]


@pytest.mark.parametrize("banker,third,draws", CELLS,
                         ids=[f"631a.11(c)(2)(iii)-B{b}-P3rd{v}" for b, v, _ in CELLS])
def test_631a_11_c_2_iii_table_1_every_cell(banker: int, third: int, draws: bool) -> None:
    """Rows are the Banker's two-card Point Count (631a.11(d)), columns the value of the
    Player's third card (631a.11(e)), D draws and S stays (631a.11(f))."""
    assert banker_draws_value(banker, 3, third) is draws
    # the same cell through a dealt coup: Player 0 (10+K) draws `third`, Banker holds `banker`
    third_card = Card(Rank.KING, Suit.CLUBS) if third == 0 else Card(Rank(third), Suit.CLUBS)
    banker_cards = [Card(Rank.KING, Suit.HEARTS), Card(Rank(banker), Suit.HEARTS)]
    coup = BaccaratCoup()
    for c in (Card(Rank.TEN, Suit.SPADES), banker_cards[0], Card(Rank.KING, Suit.SPADES),
              banker_cards[1], third_card):
        coup.place(c)
    assert banker_draws(banker, 0, third_card) is draws
    assert (coup.next_card() is NextCard.BANKER_THIRD) is draws


@pytest.mark.parametrize("p,b", [(p, b) for p in range(10) for b in range(10) if p >= 8 or b >= 8])
def test_631a_11_a_natural_no_more_cards(p: int, b: int) -> None:
    assert player_draws(p, b) is False
    assert banker_draws(b, p, None) is False


@pytest.mark.parametrize("p", range(8), ids=[
    f"631a.11(b)(1)-P{p}" if p < 6 else f"631a.11(b)(2)-P{p}" for p in range(8)])
def test_631a_11_b_player_draws_below_6_stays_6_or_more(p: int) -> None:
    assert player_draws(p, 0) is (p < 6)


@pytest.mark.parametrize("b", range(8))
def test_631a_11_c_1_player_stood_banker_draws_on_5_or_less(b: int) -> None:
    assert banker_draws(b, 6, None) is (b <= 5)


@pytest.mark.parametrize("b,third", [(b, v) for b in (0, 1, 2) for v in range(10)])
def test_631a_11_c_2_i_banker_below_3_draws(b: int, third: int) -> None:
    assert banker_draws_value(b, 0, third) is True


@pytest.mark.parametrize("third", range(10))
def test_631a_11_c_2_ii_banker_7_stays(third: int) -> None:
    assert banker_draws_value(7, 0, third) is False


def test_631a_11_g_worked_example_banker_5_player_third_4_draws() -> None:
    assert banker_draws_value(5, 2, 4) is True


def test_631a_10_c_no_more_than_one_additional_card() -> None:
    coup = deal("AS AH AD AC 2S 2H")  # Player 2 draws, Banker 2 draws
    assert coup.complete and len(coup.player) == 3 and len(coup.banker) == 3
    with pytest.raises(ValueError, match="631a.10"):
        coup.place(Card(Rank.TWO, Suit.CLUBS))


def test_631a_12_a_result_names_winner_and_totals() -> None:
    r = deal("9S 8H KD KC").result()
    assert (r.player_total, r.banker_total, r.winner) == (9, 8, Winner.PLAYER)
    assert r.player_natural and r.banker_natural


def test_631a_1_dragon_7_and_panda_8_definitions() -> None:
    d7 = deal("KS 3H 6D 2C 2D").result()  # Player 6 stands; Banker 5 draws 2 -> 7
    assert d7.banker_total == 7 and len(d7.banker) == 3 and d7.dragon_7
    p8 = deal("2S KH 3D 5C 3C").result()  # Player 5 draws 3 -> 8; Banker 5 stays on 3
    assert p8.player_total == 8 and p8.panda_8


@pytest.mark.parametrize("rank,burn", [(Rank.ACE, 1), (Rank.FIVE, 5), (Rank.NINE, 9),
                                       (Rank.TEN, 10), (Rank.JACK, 10), (Rank.KING, 10)])
def test_631a_5_f_burn_equals_first_card_face_value(rank: Rank, burn: int) -> None:
    assert burn_count(Card(rank, Suit.CLUBS)) == burn
