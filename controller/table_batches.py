"""The table's side of 681a.3(b): the batch in play, the shuffler's batch, loading the shoe.

The decisions are `controller.rules.batches.BatchTracker`'s (pure: it answers a
`BatchFault` or None); this part applies them: a breach stops the table for a
floor supervisor, a good step is saved.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.logsetup import bind_round
from cards import BackColour
from controller.table_base import TableBase
from controller.table_machine import TableState
from controller.table_snapshot import ShoeProgress
from controller.rules.batches import BatchError, BatchFault, BatchPlace
from drivers.protocols import BatchHeld, CardDrawn, DeviceFault, ShoeLoaded, ShuffleComplete


class BatchChecks(TableBase):
    """Applies the two-batch tracker's answers (or the single batch's colour) to the table."""

    def _shuffler_holds(self, back: BackColour | None) -> BatchFault | None:
        """The shuffler says which batch it holds: a batch the dealer just put in, or a check."""
        assert self.batches is not None
        if (back is not None and self.batches.in_shuffler is None
                and self.batches.place(back) is BatchPlace.OUT):
            return self.batches.shuffler_loaded(back)
        return self.batches.shuffler_reports(back)

    @staticmethod
    def _batch_call(step: Callable[..., BatchFault | None], *args: object) -> BatchFault | None:
        try:
            return step(*args)
        except BatchError as exc:  # a colour that is neither of the table's batches
            return BatchFault("batch-unknown-colour", str(exc), "one of the table's two batches",
                              "Stop: cards of another batch are at the table; call a floorperson.")

    def _card_from_batch_in_play(self, event: CardDrawn) -> bool:
        """681a.3(b): the card's back must be the batch in play. One check, not two: the
        two-batch tracker when the table has one, else the colour the shoe was loaded with."""
        if self.batches is not None:
            # Not persisted here: the tracker changes only at a shoe's first card (the discard
            # rack takes the batch in play), which is burned or discarded, steps that save the
            # state; a later card leaves it as it was, and a round's card saves no state.
            return self._track_batch(event.device, self.batches.card_drawn, event.back,
                                     persist=False)
        if self.shoe.back is None or int(event.back) == self.shoe.back:
            return True
        self._on_fault(DeviceFault(
            event.device, "batch_mismatch",
            f"card {event.index} has a {event.back.name} back; the batch in play is "
            f"{BackColour(self.shoe.back).name}",
            "stop dealing: the card's back colour is not the batch in play (681a.3(b)); "
            "call the floor supervisor"))
        return False

    def _track_batch(self, device: str, step: Callable[..., BatchFault | None], *args: object,
                     persist: bool = True) -> bool:
        """Apply one batch step; a breach stops the table (a supervisor rules). True if fine."""
        fault = self._batch_call(step, *args)
        if fault is None:
            if persist:
                with self.store.transaction():
                    self._persist_state()
            return True
        self._on_fault(DeviceFault(device, "batch_mismatch", f"{fault.detail} ({fault.code})",
                                   fault.action))
        return False

    def _on_batch_held(self, event: BatchHeld) -> None:
        self.batch_in_shuffler = event.back
        if self.batches is not None:
            self._track_batch("shuffler", self._shuffler_holds, event.back)
        with self.store.transaction():
            self._record("batch_held", {"back": event.back.name.lower()
                                        if event.back is not None else None},
                         device=event.device)

    def _shuffle_counted(self, done: ShuffleComplete) -> bool:
        """681a.3(b)(3): the shuffled batch is the one the tracker expects, fully counted."""
        return self.batches is None or self._track_batch(
            "shuffler", self.batches.shuffle_complete, done.back, done.verified)

    def _reconcile_shoe(self, done: ShuffleComplete) -> None:
        """The cards of the shoe just played, reconciled with the shuffler's count of its batch.

        Cards the controller never saw (index gaps, misreads) voided their round; here
        the count says whether they are physically back (631a.15, 681a.9, docs/rulings.md).
        """
        shoe = self.shoe
        played = shoe.shoe_no > 0 and shoe.cards_drawn > 0 and not shoe.reconciled
        if not played or (shoe.back is not None and int(done.back) != shoe.back):
            return
        shoe.reconciled = True
        self._record("shoe_reconciled", {
            "shoe_no": shoe.shoe_no, "back": done.back.name.lower(),
            "cards_drawn": shoe.cards_drawn, "lost_indexes": list(shoe.lost_indexes),
            "discarded": len(shoe.discarded), "cards_counted": done.cards_counted,
            "missing": done.missing, "extra": done.extra, "duplicates": done.duplicates,
            "accounted": done.verified}, severity="info" if done.verified else "error",
            device=done.device)

    def _on_shoe_loaded_event(self, event: ShoeLoaded) -> None:
        if self.state is TableState.CUT:
            if self.batches is not None:
                if not self._track_batch("shoe", self.batches.shoe_loaded, event.back):
                    return
            elif self.batch_shuffled is not None and event.back is not self.batch_shuffled:
                self._on_fault(DeviceFault(
                    event.device, "batch_mismatch",
                    f"the shoe was loaded with the {event.back.name} batch; the batch shuffled "
                    f"and verified is {self.batch_shuffled.name}",
                    "unload the shoe and load the batch that was shuffled (681a.3(b))"))
                return
            self.on_shoe_loaded(event.back)
            return
        with self.store.transaction():
            self._record("shoe_loaded_out_of_turn", {"state": self.state.value,
                                                     "cards": event.cards},
                         severity="warning", device=event.device)

    def on_shoe_loaded(self, back: BackColour | None = None) -> None:
        """The dealer loaded a new shoe (cut and cover cards in place)."""
        with self.store.transaction():
            self.shoe = ShoeProgress(shoe_no=self.shoe.shoe_no + 1,
                                     back=int(back) if back is not None else None)
            self.round_no = 0
            bind_round(self.shoe.shoe_no, None)
            self._record("shoe_loaded", {"shoe_no": self.shoe.shoe_no,
                                         "back": back.name.lower() if back is not None else None})
            self.shoe_loaded()
            self.announce("burn", detail="631a.5(f): expose the first card")
