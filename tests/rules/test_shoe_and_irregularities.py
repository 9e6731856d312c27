"""Shoe procedures (631a.5, 631a.10(d), 681a.5, 681a.7(c)-(d)) and irregularities (631a.15, 681a.9)."""

from __future__ import annotations

import pytest

from cards import shoe_of
from controller.rules.irregularities import (
    Action, card_drawn_in_error, extra_card_after_17_21, face_up_in_shoe_21,
    insufficient_cards, misdealt_player_third, shuffler_failed_21,
)
from controller.rules.shoe import (
    CutError, ShoePhase, burn_plan, can_complete_631a_round, cut_and_cover, phase_after_round,
)

from tests.rules.helpers import cards

STACK = shoe_of(8)


def test_631a_5_c_cut_at_least_ten_from_either_end() -> None:
    for bad in (9, len(STACK) - 9):
        with pytest.raises(CutError, match="631a.5"):
            cut_and_cover(STACK, bad, 14)
    cut_and_cover(STACK, 10, 14)


def test_631a_5_d_cards_above_cover_go_to_the_bottom() -> None:
    shoe = cut_and_cover(STACK, 100, 14)
    assert shoe.cards[0] == STACK[100] and shoe.cards[-100:] == tuple(STACK[:100])
    assert sorted(map(str, shoe.cards)) == sorted(map(str, STACK))


def test_631a_5_d_second_cover_card_at_least_14_from_bottom() -> None:
    with pytest.raises(CutError, match="631a.5"):
        cut_and_cover(STACK, 100, 13)
    assert cut_and_cover(STACK, 100, 14).cover_index == len(STACK) - 14


def test_681a_5_c_d_cut_and_cover_card_ten_from_bottom() -> None:
    """681a.5(c) cut; 681a.5(d) second cover card at least ten above the bottom."""
    shoe = cut_and_cover(shoe_of(4), 10, 10, min_cover_from_bottom=10)
    assert shoe.cover_index == 208 - 10


@pytest.mark.parametrize("text,burn", [("AS", 1), ("7H", 7), ("QD", 10)])
def test_631a_5_f_burn_plan(text: str, burn: int) -> None:
    assert burn_plan(cards(text)[0]) == burn


def test_681a_7_c_burn_only_the_first_card() -> None:
    assert burn_plan(cards("QD")[0], twenty_one=True) == 0


def test_631a_10_d_cover_card_round_then_last_hand_then_new_decks() -> None:
    phase = phase_after_round(ShoePhase.PLAYING, False, reshuffle_at_cover=False)
    assert phase is ShoePhase.PLAYING
    phase = phase_after_round(phase, True, reshuffle_at_cover=False)
    assert phase is ShoePhase.LAST_HAND
    assert phase_after_round(phase, False, reshuffle_at_cover=False) is ShoePhase.FINISHED


def test_681a_7_d_cover_card_round_then_reshuffle() -> None:
    """681a.7(d)(1) and 681a.7(d)(2): complete the hand, then collect and reshuffle."""
    assert phase_after_round(ShoePhase.PLAYING, True, reshuffle_at_cover=True) is ShoePhase.FINISHED


def test_681a_5_f_reshuffle_after_cover_card_round() -> None:
    assert phase_after_round(ShoePhase.FINISHED, False, reshuffle_at_cover=True) is ShoePhase.FINISHED


def test_631a_15_e_insufficient_cards_void_round() -> None:
    assert not can_complete_631a_round(5) and can_complete_631a_round(6)
    assert insufficient_cards().action is Action.VOID_ROUND


@pytest.mark.parametrize("banker,action", [(5, Action.USE_AS_BANKER_THIRD),
                                           (6, Action.FIRST_CARD_NEXT_HAND)])
def test_631a_15_b_undisclosed_misdealt_player_third(banker: int, action: Action) -> None:
    d = misdealt_player_third(6, banker, disclosed=False)
    assert d.action is action and d.section == "631a.15(b)"


def test_631a_15_c_disclosed_used_as_banker_third_when_banker_draws() -> None:
    d = misdealt_player_third(7, 4, disclosed=True)
    assert d.action is Action.USE_AS_BANKER_THIRD and d.section == "631a.15(c)"


def test_631a_15_c_1_discard_with_one_more() -> None:
    d = misdealt_player_third(6, 7, disclosed=True, option="discard")
    assert d.action is Action.DISCARD_WITH_ONE_MORE and d.section == "631a.15(c)(1)"


def test_631a_15_c_2_simulated_round() -> None:
    d = misdealt_player_third(6, 6, disclosed=True, option="simulated-round")
    assert d.action is Action.SIMULATED_ROUND and d.section == "631a.15(c)(2)"


def test_631a_15_c_unknown_option_rejected() -> None:
    with pytest.raises(ValueError, match="631a.15"):
        misdealt_player_third(6, 6, disclosed=True, option="keep")


def test_631a_15_a_undisclosed_card_first_card_of_next_hand() -> None:
    assert card_drawn_in_error(disclosed=False).action is Action.FIRST_CARD_NEXT_HAND


def test_631a_15_d_disclosed_card_simulated_round() -> None:
    d = card_drawn_in_error(disclosed=True)
    assert d.action is Action.SIMULATED_ROUND and d.section == "631a.15(d)"


def test_681a_9_a_face_up_card_discarded() -> None:
    assert face_up_in_shoe_21().action is Action.DISCARD


def test_681a_9_b_extra_card_after_17_discarded() -> None:
    assert extra_card_after_17_21().section == "681a.9(b)"


def test_681a_9_c_shuffler_jam_reshuffle() -> None:
    assert shuffler_failed_21().action is Action.RESHUFFLE
