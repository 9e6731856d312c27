"""The dealing procedure as pure decisions: where a card from the shoe goes, what lost cards mean.

Both the live table (controller/table/rounds.py) and `tablectl simulate`
(controller/rules/simulate.py) ask these functions, so the same cards give the
same rounds in both. Nothing here reads a device or a clock: the caller says
where the table stands (`Phase`) and what it knows about the card, and applies
the `CardRuling` it gets back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from collections.abc import Iterable, Mapping, Sequence

from cards import Card
from controller.rules.baccarat import point_count
from controller.rules.irregularities import (
    Action, Decision, card_drawn_in_error, extra_card_after_17_21, face_up_in_shoe_21,
    misdealt_player_third,
)
from controller.rules.settlement import PlacedWager, VigorishLedger
from controller.rules.shoe import ShoePhase, phase_after_round

# The Baccarat wagers of 631a.8(a)(1)-(3) (627a for Minibaccarat); every other wager is
# optional and needs one of these at the seat first (docs/rulings.md C15).
BASE_WAGERS = frozenset({"banker", "player", "tie"})
# 681a.6(c): a 21 Baccarat player takes part with a Player or Banker wager; the Tie and the
# Bonus wagers are the options 681a.6(d) offers to such a player (docs/rulings.md C21).
BASE_WAGERS_21 = frozenset({"banker", "player"})


class Phase(enum.Enum):
    """Where the table stands when a card leaves the shoe."""

    BURN = "burn"  # 631a.5(f), 681a.7(c): the shoe's first cards
    BETTING = "betting"  # between rounds: no round is open
    LOCKED = "locked"  # "no more bets" (631a.8(c)); the round has no card yet
    DEALING = "dealing"  # a live round with cards on the layout
    SIMULATED = "simulated"  # a 631a.15(d) simulated round
    FAULT = "fault"  # a device fault stopped the table
    OUT_OF_PLAY = "out of play"  # no shoe in play (finished, shuffling, closed)


class Disposition(enum.Enum):
    """What the table does with the card."""

    BURN = "burn"
    OPEN_ROUND = "the first card of a round: it locks every seat"
    DEAL = "deal it to the round in play"
    SIMULATED_ROUND = "open a simulated round with it"
    SET_ASIDE = "set it aside for a simulated round after this round"
    DISCARD = "place it in the discard rack"
    HOLD = "record it; the round is void once the fault clears"


class Awaited(enum.Enum):
    """A card the procedure was waiting for, which a ruling says this one is (the table
    stops waiting: `CardFacts` no longer carries it)."""

    DEALER_BURN = "681a.7(c): a new dealer's first card, to the discard rack"
    UNDISCLOSED_DISCARD = "631a.15(c)(1): the additional card, discarded undisclosed"


# The phases every card's ruling compares with, as module names (as controller/table/
# machine.py's states: an Enum class's attribute costs 3.11 its metaclass's __getattr__).
(PHASE_BURN, PHASE_BETTING, PHASE_LOCKED, PHASE_SIMULATED, PHASE_DEALING, PHASE_FAULT,
 PHASE_OUT_OF_PLAY) = (Phase.BURN, Phase.BETTING, Phase.LOCKED, Phase.SIMULATED, Phase.DEALING,
                       Phase.FAULT, Phase.OUT_OF_PLAY)


@dataclass(frozen=True, slots=True)
class CardRuling:
    disposition: Disposition
    section: str
    reason: str
    fulfils: Awaited | None = None

    @property
    def text(self) -> str:
        return f"{self.reason} ({self.section})"


class CardFacts(NamedTuple):
    """What the table knows about the card and the moment, besides its phase (a named
    tuple: the table makes one for every card)."""

    face_up: bool = False  # found face up in the shoe (the shoe reports it)
    twenty_one: bool = False  # the table plays 681a, not 631a
    dealer_burn_due: bool = False  # 681a.7(c): a new dealer has not burned a card yet
    # 681a.9(b): a card after a completed 21 Baccarat round and before the next round
    # took a wager or a lock is the one the dealer drew by accident to a finished hand.
    after_completed_round: bool = False
    hand_of_17: bool = False  # the completed round left a hand of exactly 17
    # 631a.15(c)(1): the floor ruled the last card a disclosed Player third card, so the
    # next card out of the shoe goes to the discard bucket with it, undisclosed.
    undisclosed_discard_due: bool = False


def card_ruling(phase: Phase, facts: CardFacts) -> CardRuling:
    """Where the card goes (631a.5(f), 631a.15, 681a.7(c), 681a.9; rulings in docs/rulings.md)."""
    if phase is PHASE_FAULT:
        return CardRuling(Disposition.HOLD, "631a.15, 681a.9",
                          "a card left the shoe while the table was stopped by a fault")
    if phase is PHASE_OUT_OF_PLAY:
        return CardRuling(Disposition.DISCARD, "631a.3(b), 631a.10(d), 681a.7(d)",
                          "no round is in play; the card is discarded")
    if phase is PHASE_BURN:
        return CardRuling(Disposition.BURN, "681a.7(c)" if facts.twenty_one else "631a.5(f)",
                          "burned at the start of the shoe")
    if facts.twenty_one:
        return _ruling_681a(phase, facts)
    return _ruling_631a(phase, facts)


def _ruling_681a(phase: Phase, facts: CardFacts) -> CardRuling:
    # 681a has no simulated round and no "first card of the next hand": a card the
    # procedure did not call for goes to the discard rack (681a.9(a)-(b)).
    if facts.face_up and phase is not Phase.SIMULATED:
        decision = face_up_in_shoe_21()
        return CardRuling(Disposition.DISCARD, decision.section,
                          "found face up in the shoe: not used in this round")
    if phase is Phase.BETTING and facts.dealer_burn_due:
        return CardRuling(Disposition.DISCARD, "681a.7(c)",
                          "a new dealer's first card goes to the discard rack",
                          Awaited.DEALER_BURN)
    if phase is Phase.BETTING and facts.after_completed_round:
        decision = extra_card_after_17_21()
        if facts.hand_of_17:
            return CardRuling(Disposition.DISCARD, decision.section,
                              "drawn by accident to a hand of 17")
        return CardRuling(Disposition.DISCARD, f"{decision.section}, docs/rulings.md",
                          "drawn by accident after the round was complete")
    if phase is Phase.BETTING:
        return CardRuling(Disposition.OPEN_ROUND, "627b.3(a)(2), docs/rulings.md",
                          "the first card out of the shoe locks every seat")
    return CardRuling(Disposition.DEAL, "681a.7(e)-(g)", "the card the rules call for")


def _ruling_631a(phase: Phase, facts: CardFacts) -> CardRuling:
    if facts.undisclosed_discard_due and phase in (PHASE_BETTING, PHASE_LOCKED):
        return CardRuling(Disposition.DISCARD, "631a.15(c)(1)",
                          "the additional card drawn face down with a disclosed Player third "
                          "card: discarded without being disclosed", Awaited.UNDISCLOSED_DISCARD)
    if facts.face_up and phase in (PHASE_BETTING, PHASE_LOCKED):
        decision = card_drawn_in_error(disclosed=True)
        assert decision.action is Action.SIMULATED_ROUND
        return CardRuling(Disposition.SIMULATED_ROUND, decision.section,
                          "a disclosed card opens a simulated round; no wagers are accepted")
    if facts.face_up and phase is PHASE_DEALING:
        return CardRuling(Disposition.SET_ASIDE, "631a.15(d)",
                          "set aside; it opens a simulated round once this round is settled")
    if phase is PHASE_BETTING:
        # 631a.15(a)-(b): a card drawn before "no more bets" is the round's first card.
        return CardRuling(Disposition.OPEN_ROUND, "627b.3(a)(2), 631a.15(a), docs/rulings.md",
                          "the first card out of the shoe locks every seat")
    return _DEAL_631A


# The ruling on nearly every card of a 631a round: one immutable record, not one a card.
_DEAL_631A = CardRuling(Disposition.DEAL, "631a.9-631a.11", "the card the rules call for")


class LastCard(enum.Enum):
    """Where the last card out of the shoe went, for the floor's 631a.15(c) declaration."""

    FIRST_OF_ROUND = "the first card of the live round in play"
    FIRST_OF_SIMULATED = "the first card of a simulated round (631a.15(d))"
    BANKER_THIRD = "the Banker's third card of the round just settled"
    OTHER = "neither the first card after a settled round nor its Banker's third card"


@dataclass(frozen=True, slots=True)
class DisclosedThird:
    """The answer to "the last card was a Player third card dealt in error and disclosed".

    `refusal` names why the card cannot be one (then nothing changes); otherwise
    `decision` is 631a.15(c)'s, and `changes` says whether the table must undo what
    it did with the card (False: the card already went where 631a.15(c) puts it).
    """

    decision: Decision | None
    changes: bool
    refusal: str = ""


def disclosed_player_third(last: LastCard, player: Sequence[Card], banker: Sequence[Card], *,
                           option: str) -> DisclosedThird:
    """631a.15(c): the floor declares the last card a disclosed Player third card.

    `player` and `banker` are the hands the card followed, without the card: the
    settled round's hands when the card opened a round, the first four cards when it
    became the Banker's third. `option` is the Rules Submission's (c)(1)/(c)(2) choice.
    The controller only sees the order of the cards, so a card after a Player's Hand
    that drew its third card, or after a Banker's third card, was not a Player third
    card dealt in error (docs/rulings.md C20).
    """
    if last is LastCard.OTHER:
        return _refused("the last card out of the shoe is not the card after a round's "
                        "first four cards, so it cannot be a Player third card dealt in error")
    if len(player) != 2:
        return _refused(f"the Player's Hand it followed has {len(player)} cards: a third card "
                        "was authorised (631a.11(b)) or dealt already")
    if len(banker) != 2:
        return _refused(f"the Banker's Hand it followed has {len(banker)} cards: the card came "
                        "after the Banker's third card, not in place of the Player's")
    decision = misdealt_player_third(point_count(player), point_count(banker), disclosed=True,
                                     option=option)
    if decision.action is Action.USE_AS_BANKER_THIRD:
        if last is LastCard.BANKER_THIRD:
            return DisclosedThird(decision, changes=False)
        return _refused("the Banker's Hand was required to draw (631a.11(c)), so the card "
                        "after the first four was the Banker's third card, not this one")
    if last is LastCard.BANKER_THIRD:
        return _refused("the card became the Banker's third card, which 631a.11(c) required")
    already = decision.action is Action.SIMULATED_ROUND and last is LastCard.FIRST_OF_SIMULATED
    return DisclosedThird(decision, changes=not already)


def _refused(reason: str) -> DisclosedThird:
    return DisclosedThird(None, changes=False, refusal=reason)


class LostCardsAction(enum.Enum):
    VOID_ROUND = "void the round in play and return its wagers"
    VOID_AFTER_FAULT = "void the round once the fault clears"
    COUNT_AS_BURNED = "count the lost cards as burned"
    DISCARD_RECEIVED = "discard the card received; no round was open"
    RECORD = "record the lost cards; no round is affected"


@dataclass(frozen=True, slots=True)
class LostCards:
    """Cards that left the shoe with indexes the table never saw, and what that means."""

    indexes: tuple[int, ...]
    action: LostCardsAction
    section: str = "631a.15, 681a.9, docs/rulings.md"


def expected_card_index(last_index: int, phase: Phase, *, first_card_known: bool) -> int | None:
    """The index the shoe's next card must carry, or None when the table cannot know it.

    A shoe counts its cards from 0 at each load (docs/protocol.md), so in the burn, before
    the shoe's first card, the next is 0, and after any card the one after it. With no card
    seen elsewhere (a table started while a shoe is in play) the card received sets the count.
    """
    if last_index >= 0:
        return last_index + 1
    return 0 if phase is PHASE_BURN and not first_card_known else None


def first_card_unknown(index: int, phase: Phase, *, first_card_known: bool) -> bool:
    """docs/rulings.md C27: the card taken as the shoe's first in the burn (631a.5(f): its
    value says how many more to burn) must be the shoe's index 0. A later index means the
    first card went by unread (a misread, or lost at a power cut): nobody can check the
    burn against it, and the shoe ends."""
    return phase is PHASE_BURN and not first_card_known and index > 0


def lost_cards(expected_index: int, received_index: int, phase: Phase, *,
               round_open: bool) -> LostCards | None:
    """A card-index gap: the cards between were dealt unseen, so nothing is settled on a guess.

    None if `received_index` is the card expected. A round with lost cards is
    void (its layout cannot be checked against the controller's hands); lost
    burn cards count as burned; between rounds the received card is discarded
    with the lost ones, since they may have been dealt to the layout already.
    """
    if expected_index < 0 or received_index == expected_index:
        return None
    lost = tuple(range(expected_index, received_index)) if received_index > expected_index \
        else ()
    if phase is Phase.FAULT:
        action = LostCardsAction.VOID_AFTER_FAULT if round_open else LostCardsAction.RECORD
    elif phase in (Phase.LOCKED, Phase.DEALING, Phase.SIMULATED) and round_open:
        action = LostCardsAction.VOID_ROUND
    elif phase is Phase.BURN:
        action = LostCardsAction.COUNT_AS_BURNED
    elif phase is Phase.BETTING:
        action = LostCardsAction.DISCARD_RECEIVED
    else:
        action = LostCardsAction.RECORD
    return LostCards(lost, action)


def base_wager_missing(placed: PlacedWager, on_layout: Iterable[PlacedWager], *,
                       without_base_wager: bool = False, twenty_one: bool = False
                       ) -> str | None:
    """Why an optional wager may not be placed yet, or None.

    631c.3(c), 631c.4(c), 627b.5(a)-(b): an optional wager follows a Baccarat wager at
    the same seat (applied to every optional wager, docs/rulings.md C15); 631c.7(b) lets a
    Rules Submission offer one without (`without_base_wager`). `twenty_one`: 681a.6(c)-(d),
    where only a Player or Banker wager is a base wager and the Tie is optional (C21).
    """
    base = BASE_WAGERS_21 if twenty_one else BASE_WAGERS
    if placed.wager in base or without_base_wager:
        return None
    if any(w.seat == placed.seat and w.wager in base for w in on_layout):
        return None
    if twenty_one:
        return (f"seat {placed.seat} must first place a Player or Banker wager before the "
                f"optional wager {placed.wager!r} (681a.6(c)-(d))")
    return (f"seat {placed.seat} must first place a Banker, Player or Tie wager before the "
            f"optional wager {placed.wager!r} (631c.3(c))")


def shoe_ends_after_round(*, cover_card_seen: bool, last_hand_announced: bool,
                          simulated: bool, reshuffle_at_cover: bool) -> bool:
    """631a.10(d), 681a.7(d): whether the round just completed ends the shoe.

    The "one more hand" after the cover card is a live hand: a simulated round
    (631a.15(d)) never ends the shoe (docs/rulings.md C2).
    """
    if simulated:
        return False
    phase = ShoePhase.LAST_HAND if last_hand_announced else ShoePhase.PLAYING
    return phase_after_round(phase, cover_card_seen,
                             reshuffle_at_cover=reshuffle_at_cover) is ShoePhase.FINISHED


def vigorish_to_collect(owed: Mapping[int, int], seat: int | None) -> list[tuple[int, int]]:
    """631a.13(d)(2)(i): the marked vigorish collected before a new shoe (`seat` None) or
    from a player who leaves, as (seat, cents), highest seat first as 631a.12(b) pays."""
    ledger = VigorishLedger(dict(owed))
    if seat is None:
        collected, _ = ledger.new_shoe()
    else:
        cents, _ = ledger.seat_leaves(seat)
        collected = {seat: cents}
    return sorted(((s, c) for s, c in collected.items() if c), reverse=True)
