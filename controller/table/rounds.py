"""The table's rounds: opened at the lock, each card of the coup, settled or void.

Every decision about a card is the rules engine's (the coup says which hand the
next card goes to); this part applies it to the saved state, records each step
through the journal and tells the dealer what comes next. Which card goes where
(a burn, a discard, the round) is decided before, in controller/table/cards.py.
"""

from __future__ import annotations

from typing import Any

from cards import Card
from controller.events import UNDISCLOSED
from controller.events import records as ev
from controller.events.progressive_records import ProgressiveAccepted
from controller.logsetup import bind_round
from controller.rules.dealing import hand_of
from controller.rules.game import Coup
from controller.rules.procedure import (
    Awaited, CardRuling, Disposition, shoe_ends_after_round,
)
from controller.rules.wager import SettlementPoint
from controller.table.parts import TableParts
from controller.table.machine import (
    STATE_DEALING, STATE_NO_MORE_BETS, STATE_RESULT, STATE_THIRD_CARDS, TableState,
)
from controller.table.seating import Seating
from controller.table.settlement import Settling
from controller.table.state import wager_json
from drivers.protocols import CardDrawn, LockedOut


class RoundPlay:
    """The open round and its coup, applied to the store, the seats and the dealer."""

    def __init__(self, parts: TableParts, seating: Seating, settling: Settling) -> None:
        self._saved, self._rules, self._ports, self._journal, self._machine = parts
        self._seating = seating
        self._settling = settling
        # The coup in play: not saved, rebuilt at a restart from the round's cards (`resume`).
        self.coup: Coup | None = None

    @property
    def in_play(self) -> bool:
        """A live or simulated round is open and being dealt."""
        return self._saved.round_id is not None and self.coup is not None

    def resume(self, cards: list[dict[str, Any]]) -> None:
        """After a restart or power cut: the open round's coup rebuilt from the cards recorded
        before the cut; the round is completed from them (docs/rulings.md, recovery). The
        store gives them as saved with the state and then as logged after it (a card that
        moves only the shoe and the round's cards does not save the state: `play_card`);
        the shoe's position follows those."""
        saved = self._saved
        saved.round_cards = cards
        self.coup = self._rules.new_coup(saved.wagers)
        for item in cards:
            self.coup.place(Card.parse(item["card"]))
            if item["index"] > saved.shoe.last_card_index:
                saved.shoe.last_card_index = item["index"]
                saved.shoe.cards_drawn += 1
        self._redo_changes_implied_by_cards()

    def open_round(self, locked: LockedOut | None, cause: str) -> None:
        """631a.8(c): no more bets; the round opens with the wagers on the layout."""
        saved = self._saved
        # Only while betting is open: `Table.handle` drops the seat panel's echoed locks
        # before a step, `cmd_no_more_bets` refuses, the first card is ruled OPEN_ROUND only
        # in the betting phase.
        assert self._machine.state is TableState.BETTING_OPEN, self._machine.state
        saved.shoe.extra_card_window = False  # the next round has begun (681a.9(b))
        saved.progressive_seats = locked.wagers if locked else frozenset()
        saved.round_no += 1
        placed = tuple(ev.Wager(w.seat, w.wager, w.amount_cents) for w in saved.wagers)
        # The round's row and the lock's entry write the same wagers' texts, made once
        # (controller/memory/part_texts.py).
        saved.round_id = self._ports.store.open_round(saved.shoe.shoe_no, saved.round_no, placed)
        saved.round_cards = []
        bind_round(saved.shoe.shoe_no, saved.round_id)
        self._journal.record(ev.NoMoreBets(cause, saved.round_no, placed,
                                           tuple(sorted(saved.progressive_seats))))
        self.coup = self._rules.new_coup(saved.wagers)
        saved.round_settlements = []
        progressive = self._ports.progressive
        if progressive is not None and locked is not None:
            # 631c.2(d)(2), 627b.3(a)(2), 627b.6(d)(2): only what the sensors held at
            # the lock, at seats holding a base wager, is a progressive wager.
            wagers = [wager_json(w) for w in saved.wagers]
            acceptance = progressive.on_lock(locked, wagers, saved.round_id)
            accepted = acceptance.as_dict()
            self._journal.record(ProgressiveAccepted(
                accepted["progressive"], tuple(accepted["accepted"]), tuple(accepted["refused"]),
                accepted["leds"], tuple(accepted["awards"])))
            self._ports.show_leds(acceptance.leds)
            for award in acceptance.awards:
                self._seating.announce_award(award)
        self._machine.lock_out()
        self._journal.announce(ev.Prompt.deal(self.coup.next_card().name.lower()))

    def play_card(self, event: CardDrawn) -> None:
        """One card of the open round. The card itself saves no table state: it moves only
        the shoe's position and the round's cards, and its log entry, committed with the
        step, holds both (a restart takes them from the log: `resume`). Nor do the state
        changes the cards imply (the deal begins, the first four are out:
        `Transition.implied_by_cards`), which a restart makes again
        (`_redo_changes_implied_by_cards`). Whatever else a step changes is saved by the
        table's save rule (`Table._step`): every other state change, and every change a
        part reports (a gap before the card, a round opened for it, a settlement)."""
        coup, machine = self.coup, self._machine
        assert coup is not None and self._saved.round_id is not None
        slot = coup.place(event.card)
        hand = hand_of(slot)  # the same words as `tablectl simulate`
        # `_name_`: the member's name as stored (`name` is a Python-level property).
        dealt = ev.CardDealt.of(event.index, event.card, hand, slot._name_.lower(), event.back)
        self._saved.round_cards.append(dealt.round_card())
        self._journal.record(dealt, device=event.device)
        if machine.state is STATE_NO_MORE_BETS:
            machine.first_card()
        if machine.state is STATE_DEALING and coup.initial_cards_complete:
            machine.four_cards()
            self._settling.settle_point(SettlementPoint.FIRST_FOUR_CARDS, coup)
            if coup.complete:
                machine.hands_complete()
            else:
                machine.third_card_due()
        elif machine.state is STATE_THIRD_CARDS and coup.complete:
            machine.hands_complete()
        if machine.state is STATE_RESULT:
            self._finish_round(coup)
        elif event.index + 1 >= self._rules.shoe_size:
            # 631a.15(e): the shoe's last card is out and the round is not complete.
            self.void_round("the shoe cannot complete the round")
        else:
            self._journal.announce(ev.Prompt.deal(coup.next_card()._name_.lower()))

    def _redo_changes_implied_by_cards(self) -> None:
        """At a restart, with the open round's cards restored: the state changes those cards
        made without saving the table's state, made again through the same transitions. The
        first card begins the deal (631a.9(c)); the first four out with the hands incomplete
        call for third cards (631a.9(e), 631a.10-631a.11). A settlement at the first four
        cards saved the state itself (`Settling.settle_point`), and complete hands settle the
        round in the step of their last card, so neither is left to redo."""
        coup, machine = self.coup, self._machine
        assert coup is not None
        if machine.state is TableState.NO_MORE_BETS and self._saved.round_cards:
            machine.first_card()
        if (machine.state is TableState.DEALING and coup.initial_cards_complete
                and not coup.complete):
            machine.four_cards()
            machine.third_card_due()

    def start_simulated_round(self, event: CardDrawn, section: str = "631a.15(d)") -> None:
        """631a.15(d) (or (c)(2)): the disclosed card opens a simulated round in which no
        wager counts.

        Wagers already on the layout wait for the next live round. A live round already
        open (locked by "no more bets", or opened by this very card) is not dealt: it is
        closed void, its wagers returned to stand again (docs/rulings.md C19).
        """
        saved = self._saved
        if saved.round_id is not None and not saved.simulated:
            self.close_unplayed_round(
                f"a disclosed card ({event.card}) opened a simulated round before this "
                f"round was dealt; its wagers stand for the next live round", section,
                wagers_stand=True)
        saved.stashed_wagers, saved.wagers = saved.wagers, []
        saved.simulated = True
        saved.round_id = self._ports.store.open_round(saved.shoe.shoe_no, 0, [], simulated=True)
        bind_round(saved.shoe.shoe_no, saved.round_id)
        self._journal.record(ev.SimulatedRound(event.card, event.index, (
            f"{section}: a disclosed card opens a simulated round; no wagers are accepted")),
            device=event.device)
        self.coup = self._rules.new_coup()  # simulated: no wagers
        saved.round_cards = []
        saved.round_settlements = []
        self._journal.state_changed()
        if self._machine.state is TableState.BETTING_OPEN:
            self._machine.lock_out()
        self.play_card(event)

    def discard(self, event: CardDrawn, ruling: CardRuling) -> None:
        """The card goes to the discard rack and into no round (631a.3(b), 681a.7(c), 681a.9)."""
        shoe = self._saved.shoe
        shoe.discarded.append(str(event.card))
        if ruling.fulfils is Awaited.DEALER_BURN:
            shoe.dealer_burn_due = False
        undisclosed = ruling.fulfils is Awaited.UNDISCLOSED_DISCARD
        if undisclosed:
            shoe.undisclosed_discard_due = False
        self._journal.record(ev.CardDiscarded(event.index, event.card,
                                              self._machine.state.value, ruling.text),
                             device=event.device)
        self._journal.state_changed()
        # 631a.15(c)(1): the additional card is discarded without disclosing it, so the
        # dealer's display does not name it (the audit record above does).
        self._journal.announce(ev.Prompt("discard", card=UNDISCLOSED if undisclosed
                                         else event.card, ruling=ruling.text))

    def _finish_round(self, coup: Coup) -> None:
        """631a.12: announce the result, collect losers, pay winners highest seat first."""
        saved, machine, journal = self._saved, self._machine, self._journal
        assert saved.round_id is not None
        summary = self._rules.result_summary(coup)
        machine.announce_result()
        self._settling.settle_point(SettlementPoint.END_OF_ROUND, coup)
        settlements = tuple(saved.round_settlements)
        # The result's and the settlements' texts are those their log entries wrote.
        self._ports.store.close_round(saved.round_id, "settled", summary, settlements,
                                      saved.round_cards)
        saved.round_cards = []  # in the round's row now: no longer saved with the state
        if self._ports.progressive is not None and not saved.simulated:
            for award in self._ports.progressive.on_round_result(
                    saved.round_id, coup.round_view(), settlements):
                self._seating.announce_award(award)
        journal.record(ev.RoundSettled.of(0 if saved.simulated else saved.round_no,
                                          saved.simulated, summary, settlements))
        was_simulated = saved.simulated
        if saved.simulated:
            saved.simulated = False
            saved.wagers, saved.stashed_wagers = saved.stashed_wagers, []
        else:
            saved.shoe.rounds_in_shoe += 1
            saved.wagers = []
            # 681a.9(b): until the next round takes a wager or a lock, a card is one drawn
            # by accident to the finished hands.
            saved.shoe.extra_card_window = self._rules.is_21
            saved.shoe.hand_of_17 = 17 in (summary.player_total, summary.banker_total)
        saved.round_settlements = []
        self.coup = None
        saved.progressive_seats = frozenset()
        finished_round = saved.round_id
        saved.round_id = None
        # The "one more hand" of 631a.10(d) is a live hand, never a simulated one.
        if shoe_ends_after_round(cover_card_seen=saved.shoe.cover_card_seen,
                                 last_hand_announced=saved.shoe.last_hand_announced,
                                 simulated=was_simulated,
                                 reshuffle_at_cover=self._rules.reshuffles_at_cover_card):
            if saved.batches is not None:
                saved.batches.shoe_collected()  # shoe and discard rack emptied (681a.3(b)(5))
            machine.shoe_finished()
            held, saved.pending_simulated_card = saved.pending_simulated_card, None
            if held is not None:
                # No round follows the last hand: the card set aside for a simulated round
                # goes with the decks (631a.3(b), 631a.10(d)), never into the next shoe.
                self.discard(held, CardRuling(
                    Disposition.DISCARD, "631a.3(b), 631a.10(d), 631a.15(d)",
                    "set aside in the last hand; no round follows, so it is discarded"))
            journal.record(ev.ShoeComplete(saved.shoe.shoe_no, saved.shoe.rounds_in_shoe,
                                           finished_round))
            journal.announce(ev.Prompt("shoe_complete",
                                       detail="replace the decks (631a.3(b), 631a.10(d))"))
            return
        machine.next_round()
        if saved.shoe.cover_card_seen and not saved.shoe.last_hand_announced:
            saved.shoe.last_hand_announced = True
            journal.state_changed()
            journal.announce(ev.Prompt("last_hand", detail="631a.10(d): one more hand after "
                                       "this announcement"))
        bind_round(saved.shoe.shoe_no, None)
        held, saved.pending_simulated_card = saved.pending_simulated_card, None
        if held is not None:
            self.start_simulated_round(held)
        else:
            journal.announce(ev.Prompt("place_bets", round_no=saved.round_no + 1))

    def void_round(self, reason: str, section: str = "631a.15(e)") -> None:
        """The round is void: every wager not yet settled is returned (631a.15(e), or
        `section`); a settlement made at the first four cards stands (docs/rulings.md C7)."""
        saved = self._saved
        self.close_unplayed_round(reason, section)
        # A void simulated round gives back the wagers that waited for it (631a.15(d)).
        saved.wagers = saved.stashed_wagers if saved.simulated else []
        saved.stashed_wagers, saved.simulated, saved.pending_simulated_card = [], False, None
        if saved.batches is not None:
            saved.batches.shoe_collected()
        self._machine.void_round()
        self._journal.announce(ev.Prompt("shoe_complete",
                                         detail=f"round void ({reason}); replace the decks"))

    def close_unplayed_round(self, reason: str, section: str, *,
                             wagers_stand: bool = False) -> None:
        """The open round closed void (`Settling.close_unplayed`); its coup is over."""
        self._settling.close_unplayed(reason, section, wagers_stand=wagers_stand)
        self.coup = None
