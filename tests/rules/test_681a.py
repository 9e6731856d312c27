"""681a 21 Baccarat: values, naturals, drawing, settlement, payout odds, Bonus paytables."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.rules.baccarat import NextCard, Winner
from controller.rules.game import Coup, load_game
from controller.rules.par import compute_par_sheet
from controller.rules.par21 import TwentyOneEnumeration
from controller.rules.twentyone import (
    BONUS_PAYTABLES, TwentyOneCoup, bonus_hands, hand_total, is_natural, winner_21,
)
from controller.rules.wager import Outcome, RoundView

from tests.rules.helpers import CONFIG, cards, game_of


def coup_of(text: str, *, bonus: bool = False, rule: str = "one-card") -> TwentyOneCoup:
    coup = TwentyOneCoup(draw_rule=rule, bonus_wagered=bonus)
    for c in cards(text):
        if coup.complete:
            break
        coup.place(c)
    return coup


def g21(decks: int = 8, **wagers: dict[str, object]):  # type: ignore[no-untyped-def]
    return game_of({"tie": {}, **wagers}, family="21-baccarat", decks=decks)


def v21(player: str, banker: str, pe: str = "", be: str = "") -> RoundView:
    p, b = tuple(cards(player)), tuple(cards(banker))
    return RoundView(p, b, hand_total(c.rank for c in p)[0], hand_total(c.rank for c in b)[0],
                     player_extra=tuple(cards(pe)), banker_extra=tuple(cards(be)))


@pytest.mark.parametrize("text,total", [("2S 10H", 12), ("JS QH", 20), ("KS 5H", 15)],
                         ids=["681a.3(d)(1)", "681a.3(d)(2)-JQ", "681a.3(d)(2)-K"])
def test_681a_3_d_1_2_card_values(text: str, total: int) -> None:
    assert hand_total(c.rank for c in cards(text))[0] == total


@pytest.mark.parametrize("text,total,soft", [("AS 6H", 17, True), ("AS 6H 9D", 16, False),
                                             ("AS AH", 12, True), ("AS AH 9C", 21, True)])
def test_681a_3_d_3_ace_eleven_unless_over_21(text: str, total: int, soft: bool) -> None:
    assert hand_total(c.rank for c in cards(text)) == (total, soft)  # 681a.1 soft/hard total


@pytest.mark.parametrize("text,natural", [("AS KH", True), ("AS AH", True), ("AS 10H", True),
                                          ("5S 6H", False), ("KS QH", False)])
def test_681a_1_natural(text: str, natural: bool) -> None:
    assert is_natural([c.rank for c in cards(text)]) is natural


def test_681a_7_e_dealing_order() -> None:
    """681a.7(e)(1) Player, 681a.7(e)(2) Banker, 681a.7(e)(3) Player, 681a.7(e)(4) Banker."""
    coup = TwentyOneCoup()
    slots = [coup.place(c) for c in cards("2S 3H 4D 5C")]
    assert slots == [NextCard.PLAYER_FIRST, NextCard.BANKER_FIRST,
                     NextCard.PLAYER_SECOND, NextCard.BANKER_SECOND]


def test_681a_7_f_1_natural_no_more_cards_without_bonus() -> None:
    coup = coup_of("AS 5H KD 6C")
    assert coup.complete and coup.result().winner is Winner.PLAYER


def test_681a_7_f_2_bonus_only_card_after_a_natural() -> None:
    coup = coup_of("AS 5H KD 6C 9S", bonus=True)
    assert coup.complete and [str(c) for c in coup.banker_extra] == ["9♠"]
    r = coup.result()
    assert r.banker_total == 11 and r.winner is Winner.PLAYER  # the extra card does not count


def test_681a_7_g_each_hand_under_17_takes_one_card_player_first() -> None:
    coup = coup_of("5S 6H 4D 3C 2S 9H 7D")
    assert [str(c) for c in coup.player] == ["5♠", "4♦", "2♠"]
    assert [str(c) for c in coup.banker] == ["6♥", "3♣", "9♥"]
    assert coup.complete  # one-card ruling: 11 and 18 stand after one card


def test_681a_7_g_draw_to_17_option() -> None:
    coup = coup_of("5S KH 4D 7C 2S 3H 9D", rule="to-17")
    assert [str(c) for c in coup.player] == ["5♠", "4♦", "2♠", "3♥", "9♦"]
    assert coup.complete


def test_681a_2_b_7_i_stand_on_soft_17() -> None:
    assert coup_of("AS 10H 6D 8C").complete  # Player soft 17, Banker 18: no draw


@pytest.mark.parametrize("p,b,winner", [
    (20, 22, Winner.PLAYER), (22, 20, Winner.BANKER),
    (20, 19, Winner.PLAYER), (18, 19, Winner.BANKER),
    (23, 25, Winner.PLAYER), (26, 24, Winner.BANKER),
    (19, 19, Winner.TIE), (24, 24, Winner.TIE),
], ids=["681a.7(i)(1)", "681a.7(j)(1)",
        "681a.7(i)(2)(i)+681a.7(j)(2)(ii)", "681a.7(i)(2)(ii)+681a.7(j)(2)(i)",
        "681a.7(i)(3)(i)+681a.7(j)(3)(ii)", "681a.7(i)(3)(ii)+681a.7(j)(3)(i)",
        "681a.7(i)(4)+681a.7(j)(4)", "681a.7(i)(4)+681a.7(j)(4)-over-21"])
def test_681a_7_i_j_settlement(p: int, b: int, winner: Winner) -> None:
    assert winner_21(p, b) is winner


def test_681a_6_c_player_and_banker_wagers() -> None:
    """681a.6(c)(1)(i)-(ii), 681a.6(c)(2)(i)-(ii) and 681a.6(c)(2)(ii)."""
    g = g21()
    player, banker = g.wager_rules["player"], g.wager_rules["banker"]
    s = player.settle(1, 1000, v21("KS 9H", "KD 8C"))
    assert s.outcome is Outcome.WIN and s.win_cents == 1000  # 681a.6(c)(1)(i), 681a.8(a)
    s = banker.settle(1, 1000, v21("KS 5H 9D", "KD 8C"))
    assert s.outcome is Outcome.WIN  # 681a.6(c)(2)(i): Player over 21
    s = player.settle(1, 1000, v21("KS 9H 5C", "KD 6C 9S"))
    assert s.outcome is Outcome.WIN  # 681a.6(c)(1)(ii): both over, Player lower
    s = banker.settle(1, 1000, v21("KS 6H 9D", "KD 9C 5S"))
    assert s.outcome is Outcome.WIN  # 681a.6(c)(2)(ii): both over, Banker lower


def test_681a_8_a_win_with_17_pays_1_to_2() -> None:
    s = g21().wager_rules["player"].settle(1, 1001, v21("KS 7H", "KD 5C 9S"))
    assert s.odds == Fraction(1, 2) and s.win_cents == 500  # rounded down to the cent


def test_681a_8_b_tie_10_to_1() -> None:
    """681a.6(d)(1) Tie wager; 681a.7(k)(1)(i) paid, 681a.7(k)(1)(ii) collected."""
    s = g21().wager_rules["tie"].settle(1, 500, v21("KS 8H", "9D 9C"))
    assert s.outcome is Outcome.WIN and s.win_cents == 5000  # 681a.7(k)(1)(i)
    assert g21().wager_rules["tie"].settle(1, 500, v21("KS 7H", "9D 9C")).outcome is Outcome.LOSE


@pytest.mark.parametrize("text,line", [
    ("7S 7H 7D", 0), ("5S 5H 5D", 1), ("5S 7H 6D", 2), ("QS KH AD", 2), ("6S 6H 9D", 3),
    ("9S 9H", 4)], ids=["681a.3(e)(1)", "681a.3(e)(2)", "681a.3(e)(3)", "681a.3(e)(3)-QKA",
                        "681a.3(e)(4)", "681a.3(e)(5)"])
def test_681a_3_e_bonus_hands(text: str, line: int) -> None:
    assert line in bonus_hands([c.rank for c in cards(text)])


def test_681a_3_e_5_pair_only_on_first_two_cards() -> None:
    assert bonus_hands([c.rank for c in cards("5S 9H 5D")]) == []


PAYLINES = [(t, i) for t in "ABCDEF" for i in range(5)]
HANDS = ["7S 7H 7D", "5S 5H 5D", "5S 7H 6D", "2S 9H KD", "9S 9H"]


@pytest.mark.parametrize("table,line", PAYLINES,
                         ids=[f"681a.8(c)-{t}-{i}" for t, i in PAYLINES])
def test_681a_8_c_bonus_paytables(table: str, line: int) -> None:
    """681a.6(d)(2) Bonus on the Player's Hand; 681a.7(k)(2)(i) a winner is paid."""
    decks = 4 if table in "ABC" else 8
    g = g21(decks, bonus_player={"paytable": table})
    hand = cards(HANDS[line])
    view = RoundView(tuple(hand[:2]), tuple(cards("KD 8C")), 0, 18,
                     player_extra=tuple(hand[2:]))
    s = g.wager_rules["bonus_player"].settle(1, 100, view)
    assert s.outcome is Outcome.WIN and s.win_cents == 100 * BONUS_PAYTABLES[table][line]


def test_681a_8_c_paytables_as_published() -> None:
    assert BONUS_PAYTABLES == {
        "A": (100, 40, 11, 5, 3), "B": (80, 40, 12, 5, 3), "C": (80, 40, 10, 6, 3),
        "D": (100, 40, 10, 5, 3), "E": (80, 40, 11, 5, 3), "F": (80, 35, 12, 5, 3)}


def test_681a_7_k_3_banker_bonus_loses_without_pair() -> None:
    """681a.6(d)(3) Bonus on the Banker's Hand: 681a.7(k)(3)(ii) collected, 681a.7(k)(3)(i) paid."""
    g = g21(bonus_banker={"paytable": "D"}, bonus_player={"paytable": "D"})
    s = g.wager_rules["bonus_banker"].settle(1, 100, v21("KS 8H", "2D 9C 4S"))
    assert s.outcome is Outcome.LOSE
    s = g.wager_rules["bonus_banker"].settle(1, 100, v21("KS 8H", "4D 4C"))
    assert s.outcome is Outcome.WIN and s.win_cents == 300
    s = g.wager_rules["bonus_player"].settle(1, 100, v21("KS 8H", "4D 4C"))
    assert s.outcome is Outcome.LOSE  # 681a.7(k)(2)(ii)


def test_681a_7_h_settlement_from_the_dealers_far_right() -> None:
    """681a.7(h): settled from the player farthest to the dealer's right (highest seat) on."""
    from controller.rules.settlement import PlacedWager, settle_round
    from controller.rules.wager import SettlementPoint

    g = g21()
    wagers = [PlacedWager(s, "player", 100) for s in (1, 5, 3, 8)]
    out = settle_round(g, wagers, v21("KS 9H", "KD 8C"), SettlementPoint.END_OF_ROUND)
    assert [s.seat for s in out] == [8, 5, 3, 1]


def test_681a_7_c_burn_one_card_and_reshuffle_at_cover() -> None:
    """681a.7(c) one card burned; 681a.7(d)(1)-(2) collect and reshuffle after the cover card."""
    g = load_game(CONFIG / "21-baccarat-4deck.toml")
    assert g.burn_count(cards("KS")[0]) == 0 and g.reshuffles_at_cover_card
    assert isinstance(g.new_coup(), Coup)


@pytest.mark.parametrize("decks", [4, 8])
def test_681a_par_sheet_exact_and_consistent(decks: int) -> None:
    e = TwentyOneEnumeration(decks)
    assert sum(e.totals.values()) == e.denominator
    assert e.totals == TwentyOneEnumeration(decks)._recursive_totals()  # two independent methods
    sheet = compute_par_sheet(load_game(CONFIG / f"21-baccarat-{decks}deck.toml"))
    assert not sheet.missing
    for wp in sheet.wagers:
        assert wp.total_probability == 1
        assert wp.house_edge > 0, wp.key


def test_681a_to_17_par_reported_unavailable() -> None:
    g = game_of({"tie": {}}, family="21-baccarat", decks=4, drawing={"rule": "to-17"})
    sheet = compute_par_sheet(g)
    assert {m.split(":")[0] for m in sheet.missing} == {"player", "banker", "tie"}


def test_681a_1_two_aces_natural_counts_as_21() -> None:
    """681a.1 natural of two aces ends the round (681a.7(f)(1)) and beats a 20 (ruling)."""
    coup = coup_of("AS KH AD QC")
    r = coup.result()
    assert coup.complete and r.player_natural and r.player_total == 21
    assert r.winner is Winner.PLAYER
    s = g21().wager_rules["player"].settle(1, 100, coup.round_view())
    assert s.outcome is Outcome.WIN and s.win_cents == 100
