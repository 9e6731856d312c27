"""The table's rounds: where each card from the shoe goes, settlement, void rounds.

Every decision about a card is the rules engine's (the coup says which hand
the next card goes to); this part records each step durably, with its event,
and tells the dealer what comes next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controller.logsetup import bind_round
from controller.rules.wager import Outcome, Settlement, SettlementPoint
from controller.table_base import TableBase
from controller.table_machine import ROUND_IN_PLAY, TableState
from controller.rules.dealing import hand_of
from controller.rules.procedure import (
    CardFacts, CardRuling, Disposition, LostCards, LostCardsAction, Phase, card_ruling,
    lost_cards, shoe_ends_after_round,
)
from controller.rules.settlement import void_round
from drivers.protocols import CardDrawn, CoverCardDrawn, LedState

if TYPE_CHECKING:
    from controller.progressive.ledger import Award


class RoundPlay(TableBase):
    """Cards, rounds and their settlement, applied to the store, the LEDs and the dealer."""

    def _on_cover_card(self, event: CoverCardDrawn) -> None:
        with self.store.transaction():
            self.shoe.cover_card_seen = True
            # 631a.10(d): complete this hand, then "last hand", then one more.
            self._record("cover_card", {"index": event.index}, device=event.device)
            misplaced = self.rules.game.misplaced_cover_card(event.index)
            if misplaced:
                # 631a.5(d), 681a.5(d): logged, and shown on the dealer's screen and in
                # `status` until the shoe is replaced; the shoe plays on by 631a.10(d) /
                # 681a.7(d) (docs/rulings.md C22). Not a prompt: the dealer's next card is
                # still the one the round's prompt names.
                self.shoe.cover_card_misplaced = misplaced
                self._record("cover_card_misplaced",
                             {"index": event.index,
                              "cards_below": self.rules.game.shoe_size - event.index,
                              "detail": misplaced}, severity="warning", device=event.device)
            self._persist_state()

    def _phase(self) -> Phase:
        """Where the table stands, in the terms of the dealing procedure's deciders."""
        state = self.state
        if state is TableState.BURN:
            return Phase.BURN
        if state is TableState.BETTING_OPEN:
            return Phase.BETTING
        if state is TableState.NO_MORE_BETS:
            return Phase.LOCKED
        if state in ROUND_IN_PLAY:
            return Phase.SIMULATED if self.simulated else Phase.DEALING
        if state is TableState.DEVICE_FAULT:
            return Phase.FAULT
        return Phase.OUT_OF_PLAY

    def _card_facts(self, event: CardDrawn) -> CardFacts:
        return CardFacts(face_up=event.face_up, twenty_one=self.rules.is_21,
                         dealer_burn_due=self.shoe.dealer_burn_due,
                         after_completed_round=self.shoe.extra_card_window,
                         hand_of_17=self.shoe.hand_of_17,
                         undisclosed_discard_due=self.shoe.undisclosed_discard_due)

    def _on_card(self, event: CardDrawn) -> None:
        # A card during a fault is handled below whatever its back (the round is voided).
        if self.state is not TableState.DEVICE_FAULT and not self._card_from_batch_in_play(event):
            return
        expected = self.shoe.last_card_index + 1
        lost = lost_cards(expected, event.index, self._phase(),
                          round_open=self.round_id is not None and self.coup is not None) \
            if self.shoe.last_card_index >= 0 else None
        self.shoe.last_card_index = event.index
        self.shoe.cards_drawn += 1
        if lost is not None and not self._apply_lost_cards(lost, expected, event):
            return
        ruling = card_ruling(self._phase(), self._card_facts(event))
        match ruling.disposition:
            case Disposition.BURN:
                self._on_burn_card(event)
            case Disposition.SIMULATED_ROUND:
                self._start_simulated_round(event)
            case Disposition.SET_ASIDE:
                self._set_aside_face_up_card(event)
            case Disposition.OPEN_ROUND:
                # The first card out of the shoe locks every seat; a card drawn before
                # "no more bets" becomes the first card of this round.
                locked = self._lock_seats("first-card") if self._lock_seats else None
                self._on_locked(locked, "first-card")
                self._on_round_card(event)
            case Disposition.DEAL:
                self._on_round_card(event)
            case Disposition.HOLD:
                self._on_card_during_fault(event)
            case Disposition.DISCARD:
                self._discard(event, ruling)

    def _apply_lost_cards(self, lost: LostCards, expected: int, event: CardDrawn) -> bool:
        """Cards left the shoe that the table never saw: nothing is settled from incomplete
        data. True if the card received goes on to be handled as usual."""
        with self.store.transaction():
            self.shoe.lost_indexes.extend(lost.indexes)
            self.shoe.cards_drawn += len(lost.indexes)
            self._persist_state()
            self._record("card_gap", {"expected_index": expected,
                                      "received_index": event.index, "card": str(event.card),
                                      "lost_indexes": list(lost.indexes),
                                      "action": lost.action.value, "section": lost.section},
                         severity="error", device=event.device)
            match lost.action:
                case LostCardsAction.VOID_ROUND:
                    self._void_round(f"card(s) {_indexes(lost.indexes)} left the shoe unseen "
                                     "by the controller", section=lost.section)
                    return False
                case LostCardsAction.DISCARD_RECEIVED:
                    self._discard(event, CardRuling(
                        Disposition.DISCARD, lost.section,
                        f"card(s) {_indexes(lost.indexes)} left the shoe unseen; collect every "
                        "card dealt since the last round to the discard rack"))
                    return False
                case LostCardsAction.VOID_AFTER_FAULT:
                    self.void_after_recovery = (f"card(s) {_indexes(lost.indexes)} left the "
                                                "shoe unseen by the controller")
                    self.void_after_recovery_section = lost.section
                case LostCardsAction.COUNT_AS_BURNED if self.shoe.burn_expected is not None:
                    # Burned face down unread, like a misread burn card (631a.5(f)).
                    self.shoe.burn_expected = max(0, self.shoe.burn_expected - len(lost.indexes))
                    if self.shoe.burn_expected == 0:
                        self.burn_done()
                        self.announce("place_bets", round_no=self.round_no + 1)
        return True

    def _discard(self, event: CardDrawn, ruling: CardRuling) -> None:
        """The card goes to the discard rack and into no round (631a.3(b), 681a.7(c), 681a.9)."""
        with self.store.transaction():
            self.shoe.discarded.append(str(event.card))
            if ruling.section.startswith("681a.7(c)"):
                self.shoe.dealer_burn_due = False
            undisclosed = ruling.section == "631a.15(c)(1)"
            if undisclosed:
                self.shoe.undisclosed_discard_due = False
            self._record("card_discarded", {"index": event.index, "card": str(event.card),
                                            "state": self.state.value,
                                            "ruling": ruling.text},
                         severity="warning", device=event.device)
            self._persist_state()
            # 631a.15(c)(1): the additional card is discarded without disclosing it, so the
            # dealer's display does not name it (the audit record above does).
            self.announce("discard", card="" if undisclosed else str(event.card),
                          ruling=ruling.text)

    def _on_burn_card(self, event: CardDrawn) -> None:
        with self.store.transaction():
            self.shoe.burned.append(str(event.card))
            if self.shoe.burn_expected is None:
                # 631a.5(f): expose the first card; burn as many more as its face value.
                self.shoe.burn_expected = self.rules.burn_count(event.card)
                self._record("burn_first_card", {"card": str(event.card), "index": event.index,
                                                 "burn": self.shoe.burn_expected,
                                                 "back": event.back.name.lower()})
            else:
                self.shoe.burn_expected -= 1
                self._record("burn_card", {"index": event.index,
                                           "back": event.back.name.lower()})
            if self.shoe.burn_expected == 0:
                self.burn_done()
                self.announce("place_bets", round_no=self.round_no + 1)
            else:
                self.announce("burn", remaining=self.shoe.burn_expected)
                self._persist_state()

    def _on_round_card(self, event: CardDrawn) -> None:
        """One card of the open round. The card itself saves no table state: it moves only
        the shoe's position and the round's cards, and its log entry, committed with the
        step, holds both (a restart takes them from the log: `restore`). Nor do the state
        changes the cards imply (the deal begins, the first four are out:
        `Transition.implied_by_cards`), which a restart makes again
        (`_redo_changes_implied_by_cards`). Whatever else a step changes saves the state
        itself: every other state change does, and every other change calls
        `_persist_state` (a gap before the card, a round opened for it, a settlement)."""
        assert self.coup is not None and self.round_id is not None
        with self.store.transaction():
            slot = self.coup.place(event.card)
            hand = hand_of(slot)  # the same words as `tablectl simulate`
            card = {"index": event.index, "card": str(event.card), "hand": hand,
                    "slot": slot.name.lower()}
            self.round_cards.append(card)
            self._record("card", {**card, "back": event.back.name.lower()}, device=event.device)
            if self.state is TableState.NO_MORE_BETS:
                self.first_card()
            if self.state is TableState.DEALING and self.coup.initial_cards_complete:
                self.four_cards()
                self._settle_point(SettlementPoint.FIRST_FOUR_CARDS)
                if self.coup.complete:
                    self.hands_complete()
                else:
                    self.third_card_due()
            elif self.state is TableState.THIRD_CARDS and self.coup.complete:
                self.hands_complete()
            if self.state is TableState.RESULT:
                self._finish_round()
            elif event.index + 1 >= self.rules.game.shoe_size:
                # 631a.15(e): the shoe's last card is out and the round is not complete.
                self._void_round("the shoe cannot complete the round")
            else:
                self.announce("deal", next=self.coup.next_card().name.lower())

    def _redo_changes_implied_by_cards(self) -> None:
        """At a restart, with the open round's cards restored: the state changes those cards
        made without saving the table's state, made again through the same transitions. The
        first card begins the deal (631a.9(c)); the first four out with the hands incomplete
        call for third cards (631a.9(e), 631a.10-631a.11). A settlement at the first four
        cards saved the state itself (`_settle_point`), and complete hands settle the round
        in the step of their last card, so neither is left to redo."""
        assert self.coup is not None
        if self.state is TableState.NO_MORE_BETS and self.round_cards:
            self.first_card()
        if (self.state is TableState.DEALING and self.coup.initial_cards_complete
                and not self.coup.complete):
            self.four_cards()
            self.third_card_due()

    def _start_simulated_round(self, event: CardDrawn, section: str = "631a.15(d)") -> None:
        """631a.15(d) (or (c)(2)): the disclosed card opens a simulated round in which no
        wager counts.

        Wagers already on the layout wait for the next live round. A live round already
        open (locked by "no more bets", or opened by this very card) is not dealt: it is
        closed void, its wagers returned to stand again (docs/rulings.md C19).
        """
        with self.store.transaction():
            if self.round_id is not None and not self.simulated:
                self._close_unplayed_round(
                    f"a disclosed card ({event.card}) opened a simulated round before this "
                    f"round was dealt; its wagers stand for the next live round", section,
                    wagers_stand=True)
            self.stashed_wagers, self.wagers = self.wagers, []
            self.simulated = True
            self.round_id = self.store.open_round(self.shoe.shoe_no, 0, [], simulated=True)
            bind_round(self.shoe.shoe_no, self.round_id)
            self._record("simulated_round", {"card": str(event.card), "index": event.index,
                                             "ruling": f"{section}: a disclosed card opens a "
                                             "simulated round; no wagers are accepted"},
                         severity="warning", device=event.device)
            self.coup = self.rules.new_coup()  # simulated: no wagers
            self.round_cards = []
            self.round_settlements = []
            self._persist_state()
            if self.state is TableState.BETTING_OPEN:
                self.lock_out()
        self._on_round_card(event)

    def _set_aside_face_up_card(self, event: CardDrawn) -> None:
        assert self.coup is not None
        with self.store.transaction():
            self.pending_simulated_card = event
            self._record("card_face_up", {"index": event.index, "card": str(event.card),
                                          "ruling": "631a.15(d): set aside; it opens a simulated "
                                          "round once this round is settled"},
                         severity="warning", device=event.device)
            self._persist_state()
            self.announce("set_aside", card=str(event.card),
                          next=self.coup.next_card().name.lower())

    def _on_card_during_fault(self, event: CardDrawn) -> None:
        """Nothing is settled from data the controller could not vouch for."""
        with self.store.transaction():
            in_round = self.round_id is not None and self.coup is not None
            self._record("card_during_fault", {"index": event.index, "card": str(event.card),
                                               "round_voided": in_round},
                         severity="error", device=event.device)
            if in_round and not self.void_after_recovery:
                self.void_after_recovery = (f"card {event.card} left the shoe while the table "
                                            "was in a device fault")
            self._persist_state()

    # --- settlement ------------------------------------------------------------------------

    def _settle_point(self, point: SettlementPoint) -> None:
        assert self.coup is not None
        settlements = [settlement_json(s, self.vig_collection)
                       for s in self.rules.settle(point, self.wagers, self.coup)]
        if settlements:
            self._record("settled_first_four_cards" if point is SettlementPoint.FIRST_FOUR_CARDS
                         else "settled_end_of_round", {"settlements": settlements})
            self.round_settlements.extend(settlements)
            self._persist_state()  # money: its state change may be one the cards imply

    def _finish_round(self) -> None:
        """631a.12: announce the result, collect losers, pay winners highest seat first."""
        assert self.coup is not None and self.round_id is not None
        summary = self.rules.result_summary(self.coup)
        self.announce_result()
        self._settle_point(SettlementPoint.END_OF_ROUND)
        settlements = list(self.round_settlements)
        self.store.close_round(self.round_id, "settled", summary, settlements, self.round_cards)
        if self.progressive is not None and not self.simulated:
            for award in self.progressive.on_round_result(self.round_id, self.coup.round_view(),
                                                          settlements):
                self._announce_award(award)
        table_net = -sum(s["net_cents"] for s in settlements)
        self._record("round_settled", {"round_no": 0 if self.simulated else self.round_no,
                                       "simulated": self.simulated, "result": summary,
                                       "settlements": settlements, "table_net_cents": table_net})
        was_simulated = self.simulated
        if self.simulated:
            self.simulated = False
            self.wagers, self.stashed_wagers = self.stashed_wagers, []
        else:
            self.shoe.rounds_in_shoe += 1
            self.wagers = []
            # 681a.9(b): until the next round takes a wager or a lock, a card is one drawn
            # by accident to the finished hands.
            self.shoe.extra_card_window = self.rules.is_21
            self.shoe.hand_of_17 = 17 in (summary["player_total"], summary["banker_total"])
        self.round_settlements = []
        self.coup = None
        self.progressive_seats = frozenset()
        finished_round = self.round_id
        self.round_id = None
        # The "one more hand" of 631a.10(d) is a live hand, never a simulated one.
        if shoe_ends_after_round(cover_card_seen=self.shoe.cover_card_seen,
                                 last_hand_announced=self.shoe.last_hand_announced,
                                 simulated=was_simulated,
                                 reshuffle_at_cover=self.rules.reshuffles_at_cover_card):
            if self.batches is not None:
                self.batches.shoe_collected()  # shoe and discard rack emptied (681a.3(b)(5))
            self.shoe_finished()
            held, self.pending_simulated_card = self.pending_simulated_card, None
            if held is not None:
                # No round follows the last hand: the card set aside for a simulated round
                # goes with the decks (631a.3(b), 631a.10(d)), never into the next shoe.
                self._discard(held, CardRuling(
                    Disposition.DISCARD, "631a.3(b), 631a.10(d), 631a.15(d)",
                    "set aside in the last hand; no round follows, so it is discarded"))
            self._record("shoe_complete", {"shoe_no": self.shoe.shoe_no,
                                           "rounds": self.shoe.rounds_in_shoe,
                                           "last_round_id": finished_round})
            self.announce("shoe_complete", detail="replace the decks (631a.3(b), 631a.10(d))")
            return
        self.next_round()
        if self.shoe.cover_card_seen and not self.shoe.last_hand_announced:
            self.shoe.last_hand_announced = True
            self._persist_state()
            self.announce("last_hand", detail="631a.10(d): one more hand after this announcement")
        bind_round(self.shoe.shoe_no, None)
        held, self.pending_simulated_card = self.pending_simulated_card, None
        if held is not None:
            self._start_simulated_round(held)
        else:
            self.announce("place_bets", round_no=self.round_no + 1)

    def _announce_award(self, award: Award) -> None:
        """631c.6(c)(5): the win light is on; a floor supervisor validates before payment."""
        self._show_leds({award.seat: LedState.WON})
        self.announce("jackpot", award_id=award.award_id, seat=award.seat,
                      progressive=award.progressive, level=award.level,
                      amount_cents=award.amount_cents,
                      detail="verify the win light, then a floor supervisor validates "
                             "(tablectl jackpot validate)")

    def _void_round(self, reason: str, section: str = "631a.15(e)") -> None:
        """The round is void: every wager not yet settled is returned (631a.15(e), or
        `section`); a settlement made at the first four cards stands (docs/rulings.md C7)."""
        self._close_unplayed_round(reason, section)
        # A void simulated round gives back the wagers that waited for it (631a.15(d)).
        self.wagers = self.stashed_wagers if self.simulated else []
        self.stashed_wagers, self.simulated, self.pending_simulated_card = [], False, None
        if self.batches is not None:
            self.batches.shoe_collected()
        self.void_round()
        self.announce("shoe_complete", detail=f"round void ({reason}); replace the decks")

    def _close_unplayed_round(self, reason: str, section: str, *,
                              wagers_stand: bool = False) -> None:
        """Close the open round void, every wager not yet settled returned (`section`); what
        the first four cards settled stands, so the record holds those settlements and the
        returns (`void_round`). The table's state and the wagers on the layout are the
        caller's to decide. No round is ever left open.

        `wagers_stand`: the caller keeps these wagers on the layout for the next live round
        (docs/rulings.md C19, C20), so they will be stored again in that round; the record
        says so, or an audit summing wagers over rounds would count them twice."""
        assert self.round_id is not None
        settled = {(s["seat"], s["wager"]) for s in self.round_settlements}
        settlements = self.round_settlements + [
            settlement_json(s, self.vig_collection)
            for s in void_round(self.wagers, section, settled=settled)]
        outcome: dict[str, Any] = {"reason": reason}
        if wagers_stand:
            outcome["wagers_stand"] = True
        self.store.close_round(self.round_id, "void", outcome, settlements, self.round_cards)
        if self.progressive is not None and not self.simulated:
            returned = self.progressive.on_round_void(self.round_id, reason)
            if returned:
                self._record("progressive_wagers_returned",
                             {"seats": [{"seat": seat, "cents": cents}
                                        for seat, cents in returned]})
        self._record("round_void", {**outcome, "settlements": settlements},
                     severity="warning")
        self.coup, self.round_id, self.round_settlements = None, None, []


def settlement_json(s: Settlement, vig_collection: str) -> dict[str, Any]:
    marked = s.vigorish_cents if vig_collection == "marked" else 0
    return {
        "seat": s.seat, "wager": s.wager, "amount_cents": s.amount_cents,
        "outcome": s.outcome.value, "odds": str(s.odds), "win_cents": s.win_cents,
        "vigorish_cents": s.vigorish_cents, "vig_marked_cents": marked,
        # With marked vigorish (631a.13(d)(2)) the seat keeps the full win until collection.
        "net_cents": s.net_cents + marked if s.outcome is Outcome.WIN else s.net_cents,
        "label": s.label, "section": s.section,
    }


def _indexes(indexes: tuple[int, ...]) -> str:
    return ", ".join(str(i) for i in indexes) or "?"
