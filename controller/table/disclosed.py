"""The floor's 631a.15(c) declaration: the last card out of the shoe was a Player third
card dealt in error and disclosed.

The shoe reports cards in the order they leave it, so by the time anyone can say a
card was meant for the Player's Hand, the table has already placed it where the
procedure called for the next card: the Banker's third card, or the first card of the
next round (docs/rulings.md C1, C4). A floor supervisor's command says what the shoe
cannot; `controller.rules.procedure.disclosed_player_third` decides, this part applies
the decision (docs/rulings.md C20).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from cards import BackColour, Card
from controller.events import records as ev
from controller.rules.irregularities import Action
from controller.rules.procedure import LastCard, disclosed_player_third
from controller.table.errors import CommandRefused
from controller.table.parts import TableParts
from controller.table.machine import TableState
from controller.table.rounds import RoundPlay
from drivers.protocols import CardDrawn


@dataclass(frozen=True)
class Declaration:
    """What the declaration decided: 631a.15(c)'s action and section, and whether the table
    undid what it had done with the card (`changed`)."""

    action: str
    section: str
    decision: str
    changed: bool
    card: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class DisclosedCards:
    """Applies 631a.15(c)(1)/(2) to the card the floor declares a disclosed Player third."""

    def __init__(self, parts: TableParts, rounds: RoundPlay) -> None:
        self._saved, self._rules, self._ports, self._journal, self._machine = parts
        self._rounds = rounds

    def declare(self, supervisor: str = "") -> Declaration:
        """The floor's declaration, refused (`CommandRefused`) where 631a.15(c) does not
        apply to the last card out of the shoe."""
        if self._rules.is_21:
            raise CommandRefused("631a.15(c) is a Baccarat (631a) rule; at a 21 Baccarat table "
                                 "a card the procedure did not call for is discarded (681a.9)")
        if self._machine.state not in (TableState.BETTING_OPEN, TableState.NO_MORE_BETS,
                                       TableState.DEALING, TableState.END_OF_SHOE):
            raise CommandRefused(f"a Player third card dealt in error is declared right after it "
                                 f"leaves the shoe; the table is {self._machine.state.value}")
        last, card, player, banker = self._last_card()
        ruling = disclosed_player_third(last, player, banker,
                                        option=self._rules.disclosed_player_third)
        if ruling.decision is None:
            named = f" ({card})" if card else ""
            raise CommandRefused(f"{ruling.refusal} (631a.15(c)); the last card out of the "
                                 f"shoe, index {self._saved.shoe.last_card_index}{named}, was "
                                 f"{last.value}")
        decision = ruling.decision
        index = self._saved.shoe.last_card_index
        self._journal.record(ev.PlayerThirdDisclosed(
            supervisor, index, Card.parse(card), decision.action.name.lower(), decision.section,
            ruling.changes))
        if ruling.changes and decision.action is Action.SIMULATED_ROUND:  # 631a.15(c)(2)
            self._rounds.start_simulated_round(self._drawn(index, card), decision.section)
        elif ruling.changes:
            self._discard_disclosed_third(index, card)
        else:
            self._journal.state_changed()
        return Declaration(decision.action.name.lower(), decision.section, decision.text,
                           ruling.changes, card)

    def _last_card(self) -> tuple[LastCard, str, list[Card], list[Card]]:
        """Where the last card out of the shoe went, with the hands it followed."""
        saved = self._saved
        index = saved.shoe.last_card_index
        recent = [r for r in self._ports.store.rounds(limit=2)
                  if r["shoe_no"] == saved.shoe.shoe_no]
        if (saved.round_id is not None and self._machine.state is TableState.DEALING
                and len(recent) == 2):
            previous, current = recent
            if (len(current["cards"]) == 1 and current["cards"][0]["index"] == index
                    and previous["state"] == "settled" and previous["cards"]
                    and previous["cards"][-1]["index"] == index - 1):
                player, banker = _hands(previous["cards"])
                last = LastCard.FIRST_OF_SIMULATED if saved.simulated else LastCard.FIRST_OF_ROUND
                return last, current["cards"][0]["card"], player, banker
        if saved.round_id is None and recent and recent[-1]["state"] == "settled":
            cards = recent[-1]["cards"]
            if cards and cards[-1]["index"] == index and cards[-1]["slot"] == "banker_third":
                player, banker = _hands(cards[:-1])
                return LastCard.BANKER_THIRD, cards[-1]["card"], player, banker
        return LastCard.OTHER, "", [], []

    def _drawn(self, index: int, card: str) -> CardDrawn:
        shoe = self._saved.shoe
        back = BackColour(shoe.back) if shoe.back is not None else BackColour.RED
        return CardDrawn("shoe", index, Card.parse(card), back, True)

    def _discard_disclosed_third(self, index: int, card: str) -> None:
        """631a.15(c)(1): the card and one more, drawn face down, go to the discard bucket;
        betting reopens for the round the card had opened (docs/rulings.md C20)."""
        reason = (f"its first card ({card}, index {index}) was a Player third card dealt in "
                  "error and disclosed; it goes to the discard bucket")
        saved = self._saved
        if saved.simulated:
            # The round was a 631a.15(d) simulated one: no wager; those waiting stand again.
            self._rounds.close_unplayed_round(reason, "631a.15(c)(1)")
            saved.wagers, saved.stashed_wagers, saved.simulated = saved.stashed_wagers, [], False
        else:
            self._rounds.close_unplayed_round(f"{reason}; its wagers stand for the next round",
                                              "631a.15(c)(1)", wagers_stand=True)
        saved.shoe.discarded.append(card)
        saved.shoe.undisclosed_discard_due = True
        self._machine.card_withdrawn()
        self._journal.announce(ev.Prompt(
            "discard", card=Card.parse(card), ruling="631a.15(c)(1): place this card and one "
            "more, drawn face down, in the discard bucket without disclosing it"))
        self._journal.announce(ev.Prompt("place_bets", round_no=saved.round_no + 1))


def _hands(cards: list[dict[str, Any]]) -> tuple[list[Card], list[Card]]:
    """The Player's and the Banker's cards of a round as the store records them."""
    return ([Card.parse(c["card"]) for c in cards if c["hand"] == "player"],
            [Card.parse(c["card"]) for c in cards if c["hand"] == "banker"])
