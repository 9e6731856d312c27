"""The dealing procedure's pure deciders (controller.rules.procedure), named by section."""

from __future__ import annotations

import pytest

from cards import Card
from controller.rules.irregularities import Action
from controller.rules.procedure import (
    CardFacts, Disposition, LastCard, LostCardsAction, Phase, base_wager_missing, card_ruling,
    disclosed_player_third, lost_cards, shoe_ends_after_round, vigorish_to_collect,
)
from controller.rules.settlement import PlacedWager

B21 = CardFacts(twenty_one=True)


@pytest.mark.parametrize("phase, facts, disposition, section", [
    (Phase.BURN, CardFacts(), Disposition.BURN, "631a.5(f)"),
    (Phase.BURN, B21, Disposition.BURN, "681a.7(c)"),
    (Phase.BETTING, CardFacts(), Disposition.OPEN_ROUND, "627b.3(a)(2), 631a.15(a), docs/rulings.md"),
    (Phase.BETTING, CardFacts(face_up=True), Disposition.SIMULATED_ROUND, "631a.15(d)"),
    (Phase.LOCKED, CardFacts(face_up=True), Disposition.SIMULATED_ROUND, "631a.15(d)"),
    (Phase.DEALING, CardFacts(face_up=True), Disposition.SET_ASIDE, "631a.15(d)"),
    (Phase.SIMULATED, CardFacts(face_up=True), Disposition.DEAL, "631a.9-631a.11"),
    (Phase.FAULT, CardFacts(), Disposition.HOLD, "631a.15, 681a.9"),
    (Phase.OUT_OF_PLAY, B21, Disposition.DISCARD, "631a.3(b), 631a.10(d), 681a.7(d)"),
    # 631a.15(c)(1): the card drawn face down after a declared disclosed Player third card.
    (Phase.BETTING, CardFacts(undisclosed_discard_due=True, face_up=True), Disposition.DISCARD,
     "631a.15(c)(1)"),
    (Phase.LOCKED, CardFacts(undisclosed_discard_due=True), Disposition.DISCARD,
     "631a.15(c)(1)"),
])
def test_631a_15_and_the_burn(phase, facts, disposition, section):
    ruling = card_ruling(phase, facts)
    assert (ruling.disposition, ruling.section) == (disposition, section)


@pytest.mark.parametrize("phase, facts, section, reason", [
    (Phase.BETTING, CardFacts(twenty_one=True, face_up=True), "681a.9(a)",
     "found face up in the shoe: not used in this round"),
    (Phase.DEALING, CardFacts(twenty_one=True, face_up=True), "681a.9(a)",
     "found face up in the shoe: not used in this round"),
    (Phase.BETTING, CardFacts(twenty_one=True, dealer_burn_due=True), "681a.7(c)",
     "a new dealer's first card goes to the discard rack"),
    (Phase.BETTING, CardFacts(twenty_one=True, after_completed_round=True, hand_of_17=True),
     "681a.9(b)", "drawn by accident to a hand of 17"),
    (Phase.BETTING, CardFacts(twenty_one=True, after_completed_round=True),
     "681a.9(b), docs/rulings.md", "drawn by accident after the round was complete"),
])
def test_681a_7_c_and_681a_9_discard_never_deal(phase, facts, section, reason):
    ruling = card_ruling(phase, facts)
    assert (ruling.disposition, ruling.section, ruling.reason) == (
        Disposition.DISCARD, section, reason)


def test_681a_a_card_once_betting_has_begun_opens_the_round():
    assert card_ruling(Phase.BETTING, B21).disposition is Disposition.OPEN_ROUND
    assert card_ruling(Phase.DEALING, B21).disposition is Disposition.DEAL


@pytest.mark.parametrize("phase, round_open, action", [
    (Phase.DEALING, True, LostCardsAction.VOID_ROUND),
    (Phase.LOCKED, True, LostCardsAction.VOID_ROUND),
    (Phase.SIMULATED, True, LostCardsAction.VOID_ROUND),
    (Phase.FAULT, True, LostCardsAction.VOID_AFTER_FAULT),
    (Phase.FAULT, False, LostCardsAction.RECORD),
    (Phase.BURN, False, LostCardsAction.COUNT_AS_BURNED),
    (Phase.BETTING, False, LostCardsAction.DISCARD_RECEIVED),
    (Phase.OUT_OF_PLAY, False, LostCardsAction.RECORD),
])
def test_lost_cards_are_never_settled_631a_15_681a_9(phase, round_open, action):
    lost = lost_cards(26, 28, phase, round_open=round_open)
    assert lost is not None and (lost.indexes, lost.action) == ((26, 27), action)
    assert lost_cards(26, 26, phase, round_open=round_open) is None


def test_an_optional_wager_needs_a_base_wager_at_its_seat_631c_3_c():
    bonus = PlacedWager(3, "dragon_bonus_player", 500)
    assert base_wager_missing(bonus, [PlacedWager(2, "banker", 500)]) == (
        "seat 3 must first place a Banker, Player or Tie wager before the optional wager "
        "'dragon_bonus_player' (631c.3(c))")
    assert base_wager_missing(bonus, [PlacedWager(3, "tie", 500)]) is None
    assert base_wager_missing(bonus, [], without_base_wager=True) is None  # 631c.7(b)
    assert base_wager_missing(PlacedWager(3, "player", 500), []) is None


def test_21_baccarat_takes_part_with_a_player_or_banker_wager_only_681a_6_c_d():
    """681a.6(c): the Player or Banker wager; 681a.6(d)(1)-(3): the Tie and the Bonus wagers
    are options for a player who placed one (docs/rulings.md C21)."""
    tie, bonus = PlacedWager(2, "tie", 500), PlacedWager(2, "bonus_player", 500)
    refused = ("seat 2 must first place a Player or Banker wager before the optional wager "
               "{!r} (681a.6(c)-(d))")
    assert base_wager_missing(tie, [], twenty_one=True) == refused.format("tie")
    assert base_wager_missing(bonus, [tie], twenty_one=True) == refused.format("bonus_player")
    assert base_wager_missing(bonus, [PlacedWager(1, "banker", 1000)], twenty_one=True) == (
        refused.format("bonus_player"))
    for base in ("player", "banker"):
        assert base_wager_missing(PlacedWager(2, base, 1000), [], twenty_one=True) is None
        assert base_wager_missing(tie, [PlacedWager(2, base, 1000)], twenty_one=True) is None
    assert base_wager_missing(tie, []) is None  # 631a.8(a)(3): a base wager at 631a tables


@pytest.mark.parametrize("cover, announced, simulated, reshuffle, ends", [
    (False, False, False, False, False),
    (True, False, False, False, False),  # 631a.10(d): "last hand" comes next
    (True, True, False, False, True),
    (True, False, False, True, True),  # 681a.7(d): reshuffle after the cover card's round
    (True, True, True, False, False),  # a simulated round is never the last hand
])
def test_the_shoe_ends_631a_10_d_681a_7_d(cover, announced, simulated, reshuffle, ends):
    assert shoe_ends_after_round(cover_card_seen=cover, last_hand_announced=announced,
                                 simulated=simulated, reshuffle_at_cover=reshuffle) is ends


def test_marked_vigorish_is_collected_highest_seat_first_631a_13_d_2():
    owed = {2: 50, 7: 125, 4: 0}
    assert vigorish_to_collect(owed, None) == [(7, 125), (2, 50)]
    assert vigorish_to_collect(owed, 2) == [(2, 50)]
    assert vigorish_to_collect(owed, 4) == []


def _cards(text: str) -> list[Card]:
    return [Card.parse(t) for t in text.split()]


@pytest.mark.parametrize("last, player, banker, option, action, section, changes", [
    # Player 6 and Banker 7 stand: the Rules Submission's choice (631a.15(c)(1)/(2)).
    (LastCard.FIRST_OF_ROUND, "6♠ K♦", "7♣ K♥", "discard", Action.DISCARD_WITH_ONE_MORE,
     "631a.15(c)(1)", True),
    (LastCard.FIRST_OF_ROUND, "6♠ K♦", "7♣ K♥", "simulated-round", Action.SIMULATED_ROUND,
     "631a.15(c)(2)", True),
    (LastCard.FIRST_OF_SIMULATED, "6♠ K♦", "7♣ K♥", "simulated-round", Action.SIMULATED_ROUND,
     "631a.15(c)(2)", False),
    (LastCard.FIRST_OF_SIMULATED, "6♠ K♦", "7♣ K♥", "discard", Action.DISCARD_WITH_ONE_MORE,
     "631a.15(c)(1)", True),
    # A natural stands both hands (631a.11(a)): a Player 4 with a Banker 9 gets no third card.
    (LastCard.FIRST_OF_ROUND, "4♠ K♦", "9♣ K♥", "discard", Action.DISCARD_WITH_ONE_MORE,
     "631a.15(c)(1)", True),
    # Banker 5 must draw when the Player stands (631a.11(c)(1)): already its third card.
    (LastCard.BANKER_THIRD, "K♠ 7♦", "2♣ 3♥", "discard", Action.USE_AS_BANKER_THIRD,
     "631a.15(c)", False),
])
def test_a_disclosed_player_third_card_631a_15_c(last, player, banker, option, action,
                                                   section, changes):
    ruling = disclosed_player_third(last, _cards(player), _cards(banker), option=option)
    assert ruling.decision is not None and ruling.refusal == ""
    assert (ruling.decision.action, ruling.decision.section, ruling.changes) == (
        action, section, changes)


@pytest.mark.parametrize("last, player, banker, refusal", [
    (LastCard.OTHER, "", "", "the last card out of the shoe is not the card after a round's "
                             "first four cards, so it cannot be a Player third card dealt in error"),
    (LastCard.FIRST_OF_ROUND, "3♠ 2♦ K♦", "K♣ 4♥", "the Player's Hand it followed has 3 cards: "
                                                   "a third card was authorised (631a.11(b)) or "
                                                   "dealt already"),
    (LastCard.FIRST_OF_ROUND, "K♠ 7♦", "2♣ 3♥ 4♦", "the Banker's Hand it followed has 3 cards: "
                                                   "the card came after the Banker's third card, "
                                                   "not in place of the Player's"),
    # 631a.11(c): with Banker 5 after a Player's 7 the next card was the Banker's, not this one.
    (LastCard.FIRST_OF_ROUND, "K♠ 7♦", "2♣ 3♥", "the Banker's Hand was required to draw "
                                                "(631a.11(c)), so the card after the first four "
                                                "was the Banker's third card, not this one"),
    (LastCard.BANKER_THIRD, "6♠ K♦", "7♣ K♥", "the card became the Banker's third card, which "
                                              "631a.11(c) required"),
])
def test_a_card_that_cannot_be_a_disclosed_player_third_card_631a_15_c(last, player, banker,
                                                                         refusal):
    ruling = disclosed_player_third(last, _cards(player), _cards(banker), option="discard")
    assert (ruling.decision, ruling.changes, ruling.refusal) == (None, False, refusal)
