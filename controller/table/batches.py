"""The table's side of 681a.3(b): the batch in play, the shuffler's batch, loading the shoe.

The decisions are `controller.rules.batches.BatchTracker`'s (pure: it answers a
`BatchFault` or None); this part applies them. A good step is kept in the saved
state; a breach comes back as the `DeviceFault` that stops the table for a floor
supervisor, which the table's step hands to the faults (controller/table/faults.py).
"""

from __future__ import annotations

from collections.abc import Callable

from cards import BackColour
from controller.events import records as ev
from controller.logsetup import bind_round
from controller.rules.batches import BatchError, BatchFault, BatchPlace
from controller.table.parts import TableParts
from controller.table.machine import TableState
from controller.table.state import ShoeProgress
from drivers.protocols import BatchHeld, CardDrawn, DeviceFault, ShoeLoaded, ShuffleComplete


class BatchChecks:
    """Applies the two-batch tracker's answers (or the single batch's colour) to the table."""

    def __init__(self, parts: TableParts) -> None:
        self._saved, _, _, self._journal, self._machine = parts

    def card_fault(self, event: CardDrawn) -> DeviceFault | None:
        """681a.3(b): the card's back must be the batch in play. One check, not two: the
        two-batch tracker when the table has one, else the colour the shoe was loaded with."""
        saved = self._saved
        if saved.batches is not None:
            # Not saved here: the tracker changes only at a shoe's first card (the discard
            # rack takes the batch in play), which is burned or discarded, steps that save the
            # state; a later card leaves it as it was, and a round's card saves no state.
            return self._track(event.device, saved.batches.card_drawn, event.back, save=False)
        if saved.shoe.back is None or int(event.back) == saved.shoe.back:
            return None
        return DeviceFault(
            event.device, "batch_mismatch",
            f"card {event.index} has a {event.back.name} back; the batch in play is "
            f"{BackColour(saved.shoe.back).name}",
            "stop dealing: the card's back colour is not the batch in play (681a.3(b)); "
            "call the floor supervisor")

    def shuffler_holds(self, event: BatchHeld) -> DeviceFault | None:
        """The shuffler says which batch it holds: one the dealer just put in, or a check."""
        self._saved.batch_in_shuffler = event.back
        if self._saved.batches is None:
            return None
        return self._track("shuffler", self._tracker_step_for_held, event.back)

    def record_held(self, event: BatchHeld) -> None:
        self._journal.record(ev.BatchHeld(event.back), device=event.device)

    def shuffle_fault(self, done: ShuffleComplete) -> DeviceFault | None:
        """681a.3(b)(3): the shuffled batch is the one the tracker expects, fully counted."""
        if self._saved.batches is None:
            return None
        return self._track("shuffler", self._saved.batches.shuffle_complete, done.back,
                           done.verified)

    def reconcile_shoe(self, done: ShuffleComplete) -> None:
        """The cards of the shoe just played, reconciled with the shuffler's count of its batch.

        Cards the controller never saw (index gaps, misreads) voided their round; here
        the count says whether they are physically back (631a.15, 681a.9, docs/rulings.md).
        """
        shoe = self._saved.shoe
        played = shoe.shoe_no > 0 and shoe.cards_drawn > 0 and not shoe.reconciled
        if not played or (shoe.back is not None and int(done.back) != shoe.back):
            return
        shoe.reconciled = True
        self._journal.record(ev.ShoeReconciled(  # an error unless every card is accounted
            shoe.shoe_no, done.back, shoe.cards_drawn, tuple(shoe.lost_indexes),
            len(shoe.discarded), done.cards_counted, done.missing, done.extra, done.duplicates,
            accounted=done.verified), device=done.device)

    def shuffle_verified(self, back: BackColour) -> None:
        """631a.5(a)-(b): the batch is shuffled and counted; the dealer offers the cut."""
        self._saved.batch_shuffled = back
        self._machine.shuffle_verified()
        self._journal.announce(ev.Prompt("cut", detail="offer the cut (631a.5(b)); insert the "
                                         "cover cards (631a.5(c)-(d)) and load the shoe"))

    def shoe_loaded(self, event: ShoeLoaded) -> DeviceFault | None:
        """The shoe reports a load: the batch shuffled, in turn, or a fault (681a.3(b))."""
        saved = self._saved
        if self._machine.state is not TableState.CUT:
            self._journal.record(ev.ShoeLoadedOutOfTurn(self._machine.state.value, event.cards),
                                 device=event.device)
            return None
        if saved.batches is not None:
            fault = self._track("shoe", saved.batches.shoe_loaded, event.back)
            if fault is not None:
                return fault
        elif saved.batch_shuffled is not None and event.back is not saved.batch_shuffled:
            return DeviceFault(
                event.device, "batch_mismatch",
                f"the shoe was loaded with the {event.back.name} batch; the batch shuffled "
                f"and verified is {saved.batch_shuffled.name}",
                "unload the shoe and load the batch that was shuffled (681a.3(b))")
        self.load_shoe(event.back)
        return None

    def load_shoe(self, back: BackColour | None = None) -> None:
        """The dealer loaded a new shoe (cut and cover cards in place)."""
        saved = self._saved
        saved.shoe = ShoeProgress(shoe_no=saved.shoe.shoe_no + 1,
                                  back=int(back) if back is not None else None)
        saved.round_no = 0
        bind_round(saved.shoe.shoe_no, None)
        self._journal.record(ev.ShoeLoaded(saved.shoe.shoe_no, back))
        self._machine.shoe_loaded()
        self._journal.announce(ev.Prompt("burn", detail="631a.5(f): expose the first card"))

    def _tracker_step_for_held(self, back: BackColour | None) -> BatchFault | None:
        """A batch the dealer just put in the shuffler, or the shuffler's check of it."""
        batches = self._saved.batches
        assert batches is not None
        if (back is not None and batches.in_shuffler is None
                and batches.place(back) is BatchPlace.OUT):
            return batches.shuffler_loaded(back)
        return batches.shuffler_reports(back)

    def _track(self, device: str, step: Callable[..., BatchFault | None], *args: object,
               save: bool = True) -> DeviceFault | None:
        """Apply one batch step: a good one is kept (saved unless `save` is False), a breach
        comes back as the fault that stops the table (a supervisor rules)."""
        try:
            fault = step(*args)
        except BatchError as exc:  # a colour that is neither of the table's batches
            fault = BatchFault("batch-unknown-colour", str(exc), "one of the table's two batches",
                               "Stop: cards of another batch are at the table; call a "
                               "floorperson.")
        if fault is None:
            if save:
                self._journal.state_changed()
            return None
        return DeviceFault(device, "batch_mismatch", f"{fault.detail} ({fault.code})",
                           fault.action)
