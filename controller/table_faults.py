"""The table's faults: what stops play, what a supervisor's ruling or a device's
recovery clears, and the round a fault leaves void.

Which faults exist and how each ends is `controller/faults.py` (pure: the catalogue
and the fault book); this part applies it to the table's state machine.
"""

from __future__ import annotations

from typing import Any

from controller.faults import HeldFault
from controller.table_base import CommandRefused, TableBase
from controller.table_machine import OPERATING, TableState
from drivers.protocols import DeviceFault, LinkChanged, LinkState


class FaultHandling(TableBase):
    """Device faults: the table stops, waits for the exits, and resumes the step."""

    def cmd_acknowledge_fault(self, supervisor: str = "") -> dict[str, Any]:
        """A floor supervisor's ruling: clears every fault a ruling can end (a misread card,
        a shuffle to redo) and answers which faults still hold and what clears each
        (controller/faults.py, docs/faults.md)."""
        if self.state is not TableState.DEVICE_FAULT or not self.faults:
            raise CommandRefused(f"no fault to acknowledge; the table is {self.state.value}")
        with self.store.transaction():
            first = dict(self.fault or self.faults.first() or {})
            ack = self.faults.acknowledge()
            self._record("fault_acknowledged", {**first, "supervisor": supervisor,
                                                **ack.as_dict()})
            if not self.faults:
                self._recover(ack.cleared[-1].device, ack.cleared[-1].code)
            else:
                self.fault = self.faults.first()
                self._persist_state()
        return ack.as_dict()

    @property
    def shuffle_wanted(self) -> bool:
        """A shuffle request should be (or stay) on its way to the shuffler: the table is
        shuffling, or a fault holds it there and a technician asked for the shuffle."""
        return self.state is TableState.SHUFFLING or (
            self.state is TableState.DEVICE_FAULT and self.resume_state is TableState.SHUFFLING)

    def _technician_reshuffle(self, decks: int) -> None:
        """681a.9(c): a technician's shuffle while a shuffle fault holds the table (tablectl
        test shuffler --shuffle): its verified count ends the fault (_on_shuffle_complete)."""
        if not self.faults.technician_may_shuffle():
            held = "; ".join(f"{f.device} {f.code}" for f in self.faults.held)
            raise CommandRefused(f"a shuffle cannot end this fault ({held}); "
                                 "see tablectl status for what clears it")
        with self.store.transaction():
            self._record("shuffle_requested", {"decks": decks, "during_fault": True})

    def _on_link(self, event: LinkChanged) -> None:
        # Drivers report a lost link as a DeviceFault with its own action text; the
        # link coming back up is what clears it.
        if event.state is LinkState.UP:
            self._on_fault_cleared(event.device, None)

    def _stops_play(self, device: str) -> bool:
        """Only a fault of a device the current step needs stops the table.

        The seat panel is not such a device: a chattering sensor or a lost GPIO makes
        the progressive wagers unavailable (the panel's LEDs say so) while the main
        game goes on, "no more bets" then coming from the dealer's console.
        """
        if device == "shoe":
            return True
        step = self.resume_state if self.state is TableState.DEVICE_FAULT else self.state
        return device == "shuffler" and step is TableState.SHUFFLING

    def _on_fault(self, fault: DeviceFault) -> None:
        if fault.code == "shoe_misread":
            self._on_misread(fault)
        with self.store.transaction():
            self._record("device_fault", {"code": fault.code, "detail": fault.detail,
                                          "action": fault.action},
                         severity="error" if self._stops_play(fault.device) else "warning",
                         device=fault.device)
            if not self._stops_play(fault.device):
                return
            held = HeldFault(fault.device, fault.code, fault.detail, fault.action)
            if self.state in OPERATING:
                self.resume_state = self.state
                self.faults.reset()
                self.faults.hold(held)
                self.fault = self.faults.first()
                self.verified_in_fault = None
                self.device_failed()
                self.announce("stop", detail=f"{fault.device}: {fault.detail}. {fault.action}")
            elif self.state is TableState.DEVICE_FAULT and self.faults.hold(held):
                # A second fault while the first holds: the table resumes only when both end.
                self._persist_state()

    def _on_misread(self, fault: DeviceFault) -> None:
        """A card left the shoe unread: it used up one index, and the table never guesses it."""
        if self.shoe.last_card_index >= 0:
            self.shoe.last_card_index += 1
        self.shoe.cards_drawn += 1
        if self.round_id is not None and self.coup is not None:
            self.void_after_recovery = f"a card left the shoe unread ({fault.detail})"
        elif self.state is TableState.BURN and self.shoe.burn_expected:
            self.shoe.burn_expected -= 1  # burned face down unread: still burned

    def _on_fault_cleared(self, device: str, code: str | None) -> None:
        if code is not None:
            with self.store.transaction():
                self._record("device_fault_cleared", {"code": code}, device=device)
        if self.state is not TableState.DEVICE_FAULT or not self.faults:
            return
        gone = self.faults.clear(device, code)
        if not gone:
            return
        with self.store.transaction():
            if self.faults:
                self.fault = self.faults.first()
                self._record("fault_still_held", {"cleared": [f.code for f in gone],
                                                  "still_held": [f.holding()
                                                                 for f in self.faults.held]},
                             device=device)
                self._persist_state()
                return
            self._recover(device, gone[-1].code)

    def _recover(self, device: str, code: str) -> None:
        """The last fault holding the table ended: resume the step it interrupted.
        Caller holds the store's transaction."""
        self._record("device_recovered", {"code": code}, device=device)
        self.fault = None
        self.faults.reset()
        self.device_recovered()
        self.resume_state = None
        reason, self.void_after_recovery = self.void_after_recovery, ""
        section, self.void_after_recovery_section = self.void_after_recovery_section, ""
        if reason and self.round_id is not None:
            self._void_round(reason, section or "631a.15(e)")
            return
        if self.state is TableState.BURN and self.shoe.burn_expected == 0:
            self.burn_done()  # the last burn card was the unread one
            self.announce("place_bets", round_no=self.round_no + 1)
            return
        if self.state is TableState.SHUFFLING:
            verified, self.verified_in_fault = self.verified_in_fault, None
            if verified is not None:
                self._shuffle_verified(verified)
                return
            # 681a.9(c): the shuffle the fault interrupted is redone; the daemon asks the
            # shuffler on this prompt (a table left in SHUFFLING with no shuffle running
            # was the issue-13 wedge).
            self._persist_state()
            self.announce("reshuffle", detail="681a.9(c): the batch is shuffled again")
            return
        self._persist_state()
        self.announce("resume", state=self.state.value)
