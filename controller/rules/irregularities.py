"""Irregularities (631a.15, 681a.9) as pure decisions: what the dealer must do with a card.

The Rules Submission's choice between 631a.15(c)(1) and (2) is
`GameConfig.disclosed_player_third` ("discard" or "simulated-round").
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from controller.rules.baccarat import banker_draws


class Action(enum.Enum):
    USE_AS_BANKER_THIRD = "use the card as the Banker's third card"
    FIRST_CARD_NEXT_HAND = "use the card as the first card of the next hand"
    DISCARD_WITH_ONE_MORE = "discard the card and one more card drawn face down, undisclosed"
    SIMULATED_ROUND = "use the card as the first card of a simulated round without wagers"
    DISCARD = "place the card in the discard rack"
    VOID_ROUND = "void the round and return all wagers; replace the cards"
    RESHUFFLE = "reshuffle the cards"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    section: str

    @property
    def text(self) -> str:
        return f"{self.action.value} ({self.section})"


def misdealt_player_third(player_two_card_count: int, banker_two_card_count: int, *,
                          disclosed: bool, option: str = "discard") -> Decision:
    """631a.15(b)-(c): a third card dealt to the Player's Hand when 631a.11 gave it none.

    The Banker's need is judged as if the Player stood (631a.11(c)(1)).
    `option` is the Rules Submission's 631a.15(c) choice: "discard" for (c)(1),
    "simulated-round" for (c)(2).
    """
    banker_must_draw = banker_draws(banker_two_card_count, player_two_card_count, None)
    if not disclosed:
        if banker_must_draw:
            return Decision(Action.USE_AS_BANKER_THIRD, "631a.15(b)")
        return Decision(Action.FIRST_CARD_NEXT_HAND, "631a.15(b)")
    if banker_must_draw:
        return Decision(Action.USE_AS_BANKER_THIRD, "631a.15(c)")
    if option == "simulated-round":
        return Decision(Action.SIMULATED_ROUND, "631a.15(c)(2)")
    if option == "discard":
        return Decision(Action.DISCARD_WITH_ONE_MORE, "631a.15(c)(1)")
    raise ValueError(f"option {option!r}: must be 'discard' (631a.15(c)(1)) "
                     "or 'simulated-round' (631a.15(c)(2))")


def card_drawn_in_error(*, disclosed: bool) -> Decision:
    """631a.15(a) and (d): any other card drawn in error, or found face up in the shoe."""
    if disclosed:
        return Decision(Action.SIMULATED_ROUND, "631a.15(d)")
    return Decision(Action.FIRST_CARD_NEXT_HAND, "631a.15(a)")


def insufficient_cards() -> Decision:
    """631a.15(e): the shoe cannot complete the round."""
    return Decision(Action.VOID_ROUND, "631a.15(e)")


def face_up_in_shoe_21() -> Decision:
    """681a.9(a): a card found face up in the shoe is not used in that round."""
    return Decision(Action.DISCARD, "681a.9(a)")


def extra_card_after_17_21() -> Decision:
    """681a.9(b): a card drawn by accident to a hand of 17 is discarded."""
    return Decision(Action.DISCARD, "681a.9(b)")


def shuffler_failed_21() -> Decision:
    """681a.9(c): a jammed or incomplete automated shuffle means the cards are reshuffled."""
    return Decision(Action.RESHUFFLE, "681a.9(c)")
