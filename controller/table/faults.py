"""The table's faults: what stops play, what a supervisor's ruling or a device's
recovery clears, and the round a fault leaves void.

Which faults exist and how each ends is `controller/faults.py` (pure: the catalogue
and the fault book); this part applies it to the table's state machine.
"""

from __future__ import annotations


from controller.events import records as ev
from controller.faults import Acknowledgement, HeldFault
from controller.table.batches import BatchChecks
from controller.table.cards import CardRouting
from controller.table.errors import CommandRefused
from controller.table.parts import TableParts
from controller.table.machine import OPERATING, TableState
from controller.table.rounds import RoundPlay
from drivers.protocols import DeviceFault, LinkChanged, LinkState, ShuffleComplete


class FaultHandling:
    """Device faults: the table stops, waits for the exits, and resumes the step."""

    def __init__(self, parts: TableParts, rounds: RoundPlay, batches: BatchChecks,
                 cards: CardRouting) -> None:
        self._saved, _, _, self._journal, self._machine = parts
        self._rounds = rounds
        self._batches = batches
        self._cards = cards  # the shoe's card indexes: a misread card uses one up

    def acknowledge(self, supervisor: str = "") -> Acknowledgement:
        """A floor supervisor's ruling: clears every fault a ruling can end (a misread card,
        a shuffle to redo) and answers which faults still hold and what clears each
        (controller/faults.py, docs/faults.md)."""
        saved = self._saved
        if self._machine.state is not TableState.DEVICE_FAULT or not saved.faults:
            raise CommandRefused(f"no fault to acknowledge; the table is "
                                 f"{self._machine.state.value}")
        first = dict(saved.fault or saved.faults.first() or {})
        ack = saved.faults.acknowledge()
        answer = ack.as_dict()
        self._journal.record(ev.FaultAcknowledged(
            supervisor, tuple(answer["cleared"]), tuple(answer["still_held"]),
            device=first.get("device"), code=first.get("code"), detail=first.get("detail"),
            action=first.get("action")))
        if not saved.faults:
            self._recover(ack.cleared[-1].device, ack.cleared[-1].code)
        else:
            saved.fault = saved.faults.first()
            self._journal.state_changed()
        return ack

    def shuffle_wanted(self) -> bool:
        """A shuffle request should be (or stay) on its way to the shuffler: the table is
        shuffling, or a fault holds it there and a technician asked for the shuffle."""
        state = self._machine.state
        return state is TableState.SHUFFLING or (
            state is TableState.DEVICE_FAULT and self._saved.resume_state is TableState.SHUFFLING)

    def technician_reshuffle(self, decks: int) -> None:
        """681a.9(c): a technician's shuffle while a shuffle fault holds the table (tablectl
        test shuffler --shuffle): its verified count ends the fault (`shuffle_verified`)."""
        if not self._saved.faults.technician_may_shuffle():
            held = "; ".join(f"{f.device} {f.code}" for f in self._saved.faults.held)
            raise CommandRefused(f"a shuffle cannot end this fault ({held}); "
                                 "see tablectl status for what clears it")
        self._journal.record(ev.ShuffleRequested(decks, during_fault=True))

    def shuffle_verified(self, done: ShuffleComplete) -> None:
        """681a.9(c): the batch was shuffled and counted out exactly after all, while a fault
        held the shuffling table; the table goes on to the cut once every fault ends."""
        self._saved.verified_in_fault = done.back
        gone = self._saved.faults.verified_shuffle()
        if gone and not self._saved.faults:
            self._recover(done.device, gone[-1].code)
        else:
            self._journal.state_changed()

    def on_link(self, event: LinkChanged) -> None:
        # Drivers report a lost link as a DeviceFault with its own action text; the
        # link coming back up is what clears it.
        if event.state is LinkState.UP:
            self.on_fault_cleared(event.device, None)

    def _stops_play(self, device: str) -> bool:
        """Only a fault of a device the current step needs stops the table.

        The seat panel is not such a device: a chattering sensor or a lost GPIO makes
        the progressive wagers unavailable (the panel's LEDs say so) while the main
        game goes on, "no more bets" then coming from the dealer's console.
        """
        if device == "shoe":
            return True
        state = self._machine.state
        step = self._saved.resume_state if state is TableState.DEVICE_FAULT else state
        return device == "shuffler" and step is TableState.SHUFFLING

    def on_fault(self, fault: DeviceFault) -> None:
        saved = self._saved
        if fault.code == "shoe_misread":
            self._on_misread(fault)
        stops = self._stops_play(fault.device)
        self._journal.record(ev.DeviceFaulted(fault.code, fault.detail, fault.action),
                             severity="error" if stops else "warning", device=fault.device)
        if not stops:
            return
        held = HeldFault(fault.device, fault.code, fault.detail, fault.action)
        if self._machine.state in OPERATING:
            saved.resume_state = self._machine.state
            saved.faults.reset()
            saved.faults.hold(held)
            saved.fault = saved.faults.first()
            saved.verified_in_fault = None
            self._machine.device_failed()
            self._journal.announce(ev.Prompt("stop", detail=f"{fault.device}: {fault.detail}. "
                                                     f"{fault.action}"))
        elif self._machine.state is TableState.DEVICE_FAULT and saved.faults.hold(held):
            # A second fault while the first holds: the table resumes only when both end.
            self._journal.state_changed()

    def _on_misread(self, fault: DeviceFault) -> None:
        """A card left the shoe unread: it used up one index, and the table never guesses it."""
        shoe = self._saved.shoe
        self._cards.on_unread_card()
        if self._rounds.in_play:
            self._saved.void_after_recovery = f"a card left the shoe unread ({fault.detail})"
        elif self._machine.state is TableState.BURN and shoe.burn_expected:
            shoe.burn_expected -= 1  # burned face down unread: still burned

    def on_fault_cleared(self, device: str, code: str | None) -> None:
        saved = self._saved
        if code is not None:
            self._journal.record(ev.DeviceFaultCleared(code), device=device)
        if self._machine.state is not TableState.DEVICE_FAULT or not saved.faults:
            return
        gone = saved.faults.clear(device, code)
        if not gone:
            return
        if saved.faults:
            saved.fault = saved.faults.first()
            self._journal.record(ev.FaultStillHeld(tuple(f.code for f in gone),
                                                   tuple(f.holding() for f in saved.faults.held)),
                                 device=device)
            self._journal.state_changed()
            return
        self._recover(device, gone[-1].code)

    def _recover(self, device: str, code: str) -> None:
        """The last fault holding the table ended: resume the step it interrupted."""
        saved, machine, journal = self._saved, self._machine, self._journal
        journal.record(ev.DeviceRecovered(code), device=device)
        saved.fault = None
        saved.faults.reset()
        machine.device_recovered()
        saved.resume_state = None
        reason, saved.void_after_recovery = saved.void_after_recovery, ""
        section, saved.void_after_recovery_section = saved.void_after_recovery_section, ""
        if reason and saved.round_id is not None:
            self._rounds.void_round(reason, section or "631a.15(e)")
            return
        if machine.state is TableState.BURN and saved.shoe.burn_expected == 0:
            machine.burn_done()  # the last burn card was the unread one
            journal.announce(ev.Prompt("place_bets", round_no=saved.round_no + 1))
            return
        if machine.state is TableState.SHUFFLING:
            verified, saved.verified_in_fault = saved.verified_in_fault, None
            if verified is not None:
                self._batches.shuffle_verified(verified)
                return
            # 681a.9(c): the shuffle the fault interrupted is redone; the daemon asks the
            # shuffler on this prompt (a table left in SHUFFLING with no shuffle running
            # was the issue-13 wedge).
            journal.state_changed()
            journal.announce(ev.Prompt("reshuffle",
                                       detail="681a.9(c): the batch is shuffled again"))
            return
        journal.state_changed()
        journal.announce(ev.Prompt("resume", state=machine.state.value))
