"""Where each card out of the shoe goes: the burn, the round, the discard rack, set aside.

`controller.rules.procedure` decides (`card_ruling`, `lost_cards`); this part
applies the decision, handing the round's cards to `RoundPlay`. A card whose
back is not the batch in play never reaches here: the table's step sends it to
the faults first (controller/table/batches.py).
"""

from __future__ import annotations

from functools import partial

from controller.events import records as ev
from controller.rules.procedure import (
    PHASE_BETTING, PHASE_BURN, PHASE_DEALING, PHASE_FAULT, PHASE_LOCKED, PHASE_OUT_OF_PLAY,
    PHASE_SIMULATED, CardFacts, CardRuling, Disposition, LostCards, LostCardsAction, Phase,
    card_ruling, expected_card_index, first_card_unknown, lost_cards,
)
from controller.table.parts import TableParts
from controller.table.machine import (
    ROUND_IN_PLAY, STATE_BETTING_OPEN, STATE_BURN, STATE_DEVICE_FAULT, STATE_NO_MORE_BETS,
)
from controller.table.rounds import RoundPlay
from drivers.protocols import CardDrawn, CoverCardDrawn

_new_facts = partial(tuple.__new__, CardFacts)
_DEAL = Disposition.DEAL  # a module name, as machine.py's states
assert CardFacts._fields == ("face_up", "twenty_one", "dealer_burn_due", "after_completed_round",
                             "hand_of_17", "undisclosed_discard_due"), "_card_facts' order"


class CardRouting:
    """Applies the procedure's ruling on each card: burn, deal, discard, hold or set aside."""

    def __init__(self, parts: TableParts, rounds: RoundPlay) -> None:
        self._saved, self._rules, self._ports, self._journal, self._machine = parts
        self._rounds = rounds

    def on_card(self, event: CardDrawn) -> None:
        shoe = self._saved.shoe
        phase = self._phase()
        # A gap cannot change it: lost cards count as burned only once the first is known.
        first_known = shoe.burn_expected is not None
        expected = expected_card_index(shoe.last_card_index, phase, first_card_known=first_known)
        # The card expected (nearly every card) is no gap: `lost_cards` would say None.
        lost = lost_cards(expected, event.index, phase, round_open=self._rounds.in_play) \
            if expected is not None and event.index != expected else None
        shoe.last_card_index = event.index
        shoe.cards_drawn += 1
        if lost is not None:
            assert expected is not None
            if not self._apply_lost_cards(lost, expected, event):
                return
            phase = self._phase()  # the gap may have changed it
        if first_card_unknown(event.index, phase, first_card_known=first_known):
            self._end_shoe_without_its_first_card(event)
            return
        ruling = card_ruling(phase, self._card_facts(event))
        if ruling.disposition is _DEAL:  # a round's card: nearly every card is one
            self._rounds.play_card(event)
            return
        match ruling.disposition:
            case Disposition.BURN:
                self._on_burn_card(event)
            case Disposition.SIMULATED_ROUND:
                self._rounds.start_simulated_round(event)
            case Disposition.SET_ASIDE:
                self._set_aside_face_up_card(event)
            case Disposition.OPEN_ROUND:
                # The first card out of the shoe locks every seat; a card drawn before
                # "no more bets" becomes the first card of this round.
                lock = self._ports.lock_seats
                self._rounds.open_round(lock("first-card") if lock else None, "first-card")
                self._rounds.play_card(event)
            case Disposition.HOLD:
                self._on_card_during_fault(event)
            case Disposition.DISCARD:
                self._rounds.discard(event, ruling)

    def on_cover_card(self, event: CoverCardDrawn) -> None:
        self._saved.shoe.cover_card_seen = True
        # 631a.10(d): complete this hand, then "last hand", then one more.
        self._journal.record(ev.CoverCard(event.index), device=event.device)
        misplaced = self._rules.game.misplaced_cover_card(event.index)
        if misplaced:
            # 631a.5(d), 681a.5(d): logged, and shown on the dealer's screen and in
            # `status` until the shoe is replaced; the shoe plays on by 631a.10(d) /
            # 681a.7(d) (docs/rulings.md C22). Not a prompt: the dealer's next card is
            # still the one the round's prompt names.
            self._saved.shoe.cover_card_misplaced = misplaced
            self._journal.record(ev.CoverCardMisplaced(
                event.index, self._rules.game.shoe_size - event.index, misplaced),
                device=event.device)
        self._journal.state_changed()

    def _phase(self) -> Phase:
        """Where the table stands, in the terms of the dealing procedure's deciders."""
        state = self._machine.state
        if state is STATE_BURN:
            return PHASE_BURN
        if state is STATE_BETTING_OPEN:
            return PHASE_BETTING
        if state is STATE_NO_MORE_BETS:
            return PHASE_LOCKED
        if state in ROUND_IN_PLAY:
            return PHASE_SIMULATED if self._saved.simulated else PHASE_DEALING
        if state is STATE_DEVICE_FAULT:
            return PHASE_FAULT
        return PHASE_OUT_OF_PLAY

    def _card_facts(self, event: CardDrawn) -> CardFacts:
        shoe = self._saved.shoe
        # CardFacts(face_up=..., ...) in its fields' order, without the named tuple's
        # Python __new__ and its keywords (every card makes one).
        return _new_facts((event.face_up, self._rules.is_21, shoe.dealer_burn_due,
                           shoe.extra_card_window, shoe.hand_of_17,
                           shoe.undisclosed_discard_due))

    def _apply_lost_cards(self, lost: LostCards, expected: int, event: CardDrawn) -> bool:
        """Cards left the shoe that the table never saw: nothing is settled from incomplete
        data. True if the card received goes on to be handled as usual."""
        saved, shoe = self._saved, self._saved.shoe
        shoe.lost_indexes.extend(lost.indexes)
        shoe.cards_drawn += len(lost.indexes)
        self._journal.state_changed()
        self._journal.record(ev.CardGap(expected, event.index, event.card, tuple(lost.indexes),
                                        lost.action.value, lost.section), device=event.device)
        match lost.action:
            case LostCardsAction.VOID_ROUND:
                self._rounds.void_round(f"card(s) {_indexes(lost.indexes)} left the shoe unseen "
                                        "by the controller", section=lost.section)
                return False
            case LostCardsAction.DISCARD_RECEIVED:
                self._rounds.discard(event, CardRuling(
                    Disposition.DISCARD, lost.section,
                    f"card(s) {_indexes(lost.indexes)} left the shoe unseen; collect every "
                    "card dealt since the last round to the discard rack"))
                return False
            case LostCardsAction.VOID_AFTER_FAULT:
                saved.void_after_recovery = (f"card(s) {_indexes(lost.indexes)} left the "
                                             "shoe unseen by the controller")
                saved.void_after_recovery_section = lost.section
            case LostCardsAction.COUNT_AS_BURNED if shoe.burn_expected is not None:
                # Burned face down unread, like a misread burn card (631a.5(f)).
                shoe.burn_expected = max(0, shoe.burn_expected - len(lost.indexes))
                if shoe.burn_expected == 0:
                    self._machine.burn_done()
                    self._journal.announce(ev.Prompt("place_bets", round_no=saved.round_no + 1))
        return True

    def on_unread_card(self) -> None:
        """A card left the shoe unread (a misread): it used up the index the next card was
        due to carry, in the burn before the first card index 0, the first card itself,
        which no later card stands in for (631a.5(f), docs/rulings.md C27)."""
        shoe = self._saved.shoe
        expected = expected_card_index(shoe.last_card_index, self._phase(),
                                       first_card_known=shoe.burn_expected is not None)
        if expected is not None:
            shoe.last_card_index = expected
        shoe.cards_drawn += 1

    def _end_shoe_without_its_first_card(self, event: CardDrawn) -> None:
        """docs/rulings.md C27: the shoe's first card went by unread, so the burn it sets
        (631a.5(f)) cannot be checked; the card received is discarded and the shoe ends."""
        saved = self._saved
        if saved.batches is not None:
            saved.batches.shoe_collected()
        ruling = CardRuling(Disposition.DISCARD, "631a.5(f), docs/rulings.md C27",
                            "the shoe's first card (index 0) was not read, so the burn it "
                            "sets cannot be checked; the shoe ends")
        self._rounds.discard(event, ruling)
        self._machine.first_card_unknown()
        self._journal.announce(ev.Prompt("shoe_complete",
                                         detail=f"{ruling.text}; replace the decks"))

    def _on_burn_card(self, event: CardDrawn) -> None:
        shoe = self._saved.shoe
        shoe.burned.append(str(event.card))
        if shoe.burn_expected is None:
            # 631a.5(f): expose the first card; burn as many more as its face value.
            shoe.burn_expected = self._rules.burn_count(event.card)
            self._journal.record(ev.BurnFirstCard(event.card, event.index, shoe.burn_expected,
                                                  event.back))
        else:
            shoe.burn_expected -= 1
            self._journal.record(ev.BurnCard(event.index, event.back))
        if shoe.burn_expected == 0:
            self._machine.burn_done()
            self._journal.announce(ev.Prompt("place_bets", round_no=self._saved.round_no + 1))
        else:
            self._journal.announce(ev.Prompt("burn", remaining=shoe.burn_expected))
            self._journal.state_changed()

    def _set_aside_face_up_card(self, event: CardDrawn) -> None:
        coup = self._rounds.coup
        assert coup is not None
        self._saved.pending_simulated_card = event
        self._journal.record(ev.CardFaceUp(event.index, event.card, (
            "631a.15(d): set aside; it opens a simulated round once this round is settled")),
            device=event.device)
        self._journal.state_changed()
        self._journal.announce(ev.Prompt("set_aside", card=event.card,
                                         next=coup.next_card().name.lower()))

    def _on_card_during_fault(self, event: CardDrawn) -> None:
        """Nothing is settled from data the controller could not vouch for."""
        in_round = self._rounds.in_play
        self._journal.record(ev.CardDuringFault(event.index, event.card, in_round),
                             device=event.device)
        if in_round and not self._saved.void_after_recovery:
            self._saved.void_after_recovery = (f"card {event.card} left the shoe while the "
                                               "table was in a device fault")
        self._journal.state_changed()


def _indexes(indexes: tuple[int, ...]) -> str:
    return ", ".join(str(i) for i in indexes) or "?"
