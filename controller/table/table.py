"""The one state machine that owns the table and its rounds: the facade.

Device drivers put events on a queue; the daemon's loop hands them here one at a
time (`handle`), and the control API calls the `cmd_*` entry points. Each entry
point is one step (`_step`): it alone opens the store's transaction, hands the
event or command to the collaborator whose concern it is, and at the end applies
the save rule, so a power cut at any instant leaves either the whole step or
nothing. Every decision about a card is the rules engine's (the table never
decides a draw itself).

The collaborators (controller/table/): the cards' routing (cards.py), the round and
its coup (rounds.py), its money (settlement.py), the two-batch checks (batches.py),
faults (faults.py), the floor's 631a.15(c) declaration (disclosed.py) and the seat
panel (seating.py). Each takes the saved state (state.py), the rules (rules_seam.py),
the ports (ports.py) and the journal (journal.py, the one writer of events); none
calls back into the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cards import BackColour
from controller.events import records as ev
from controller.events import system_records as sr
from controller.events.progressive_records import JackpotValidated
from controller.logsetup import bind_round
from controller.rules.batches import BatchTracker
from controller.rules.game import Coup
from controller.rules.procedure import base_wager_missing, vigorish_to_collect
from controller.rules.settlement import PlacedWager
from controller.memory.store import Store
from controller.table.batches import BatchChecks
from controller.table.cards import CardRouting
from controller.table.disclosed import DisclosedCards
from controller.table.errors import CommandRefused
from controller.table.faults import FaultHandling
from controller.table.journal import Journal
from controller.table.machine import (
    STATE_DEVICE_FAULT, STATE_OUT_OF_ORDER, TableMachine, TableState,
)
from controller.table.parts import TableParts
from controller.table.ports import Announce, LockSeats, OpenSeats, Ports, Progressive, SetLed
from controller.table.rounds import RoundPlay
from controller.table.rules_seam import RulesAdapter
from controller.table.saved_view import SavedField
from controller.table.seating import Seating
from controller.table.settlement import Settling
from controller.table.state import SavedState, ShoeProgress
from controller.table.step import TableStep
from drivers.protocols import (
    BatchHeld, CardDrawn, CoverCardDrawn, DeviceEvent, DeviceFault, DeviceFaultCleared,
    LateSensorChange, LinkChanged, LinkState, LockedOut, SeatSensorChanged, ShoeLoaded,
    ShuffleComplete, ShuffleProgress,
)

if TYPE_CHECKING:
    from controller.faults import FaultBook
    from controller.progressive.ledger import Award


class Table:
    """Owns the table's state machine, the round in progress and their durable record."""

    # What the daemon's status and the tests read of the saved state (read-only here: only
    # the collaborators change it, each in its own step).
    shoe: SavedField[ShoeProgress] = SavedField()
    round_id: SavedField[int | None] = SavedField()
    round_no: SavedField[int] = SavedField()
    round_cards: SavedField[list[dict[str, Any]]] = SavedField()
    wagers: SavedField[list[PlacedWager]] = SavedField()
    stashed_wagers: SavedField[list[PlacedWager]] = SavedField()
    simulated: SavedField[bool] = SavedField()
    pending_simulated_card: SavedField[CardDrawn | None] = SavedField()
    fault: SavedField[dict[str, str] | None] = SavedField()
    faults: SavedField[FaultBook] = SavedField()
    out_of_order_reason: SavedField[str] = SavedField()
    batches: SavedField[BatchTracker | None] = SavedField()
    batch_in_shuffler: SavedField[BackColour | None] = SavedField()
    batch_shuffled: SavedField[BackColour | None] = SavedField()

    def __init__(self, *, table_id: str, seats: int, rules: RulesAdapter, store: Store,
                 announce: Announce | None = None,
                 lock_seats: LockSeats | None = None,
                 open_seats: OpenSeats | None = None,
                 set_led: SetLed | None = None,
                 progressive: Progressive | None = None,
                 batches: BatchTracker | None = None,
                 vig_collection: str = "at-payout") -> None:
        self.table_id = table_id
        self.seats = seats
        self.rules = rules
        self.saved = saved = SavedState(batches=batches)
        self.ports = ports = Ports(store, announce, lock_seats, open_seats, set_led, progressive)
        self.journal = journal = Journal(ports, saved)
        self.seating = Seating(ports, journal)
        self.machine = TableMachine(lambda: saved.resume_state, self.seating.arm)
        parts = TableParts(saved, rules, ports, journal, self.machine)
        self.rounds = RoundPlay(parts, self.seating, Settling(parts, vig_collection))
        self.cards = CardRouting(parts, self.rounds)
        self.batch_checks = BatchChecks(parts)
        self.fault_handling = FaultHandling(parts, self.rounds, self.batch_checks, self.cards)
        self.disclosed = DisclosedCards(parts, self.rounds)
        self._steps = TableStep(lambda: self.ports.store.step(), self._saves_state,
                                self._save_state)

    @property
    def state(self) -> TableState:
        return self.machine.state

    @property
    def store(self) -> Store:
        return self.ports.store

    @store.setter
    def store(self, store: Store) -> None:
        """The daemon's empty store once the real one failed: every part writes there now."""
        self.ports.store = store

    @property
    def coup(self) -> Coup | None:
        return self.rounds.coup

    @property
    def shuffle_wanted(self) -> bool:
        return self.fault_handling.shuffle_wanted()

    # --- the step and the save rule ---------------------------------------------------

    def _step(self) -> TableStep:
        """One step: the store's transaction around everything an entry point does, the
        table's state saved at its end if the save rule says so. An entry point called
        while a step runs (from a port's callback) is part of that step (step.py)."""
        return self._steps

    def _save_state(self) -> None:
        self.ports.store.save_table_state(self.state.value, self.saved.to_json())

    def _saves_state(self) -> bool:
        """The save rule. A step saves the table's state if a part changed a saved field in a
        way the round's cards do not imply (`Journal.state_changed`), or the machine made a
        transition the cards do not imply (`Transition.implied_by_cards`). A round's card
        alone saves nothing: its log entry, committed with the step, holds the shoe's
        position and the round's cards, and a restart redoes the transitions they imply
        (`RoundPlay.resume`)."""
        changed = self.journal.take_state_changed()
        transitioned = self.machine.take_change()
        return changed or transitioned

    # --- persistence ------------------------------------------------------------------

    def restore(self) -> None:
        """Resume where the store says the table was (after a restart or power cut)."""
        saved = self.store.load_table_state()
        if saved is None:
            return
        state_name, data = saved
        with self._step():
            self.saved.replace_with(SavedState.from_json(data, self.saved.batches))
            self.machine.set_state(TableState(state_name))
            for logged in self.store.logged_after_saved_state(ev.WagerAccepted.KIND):
                self._wager_placed(PlacedWager(logged["seat"], logged["wager"],
                                               logged["amount_cents"]))
            if self.saved.round_id is not None:
                record = self.store.round(self.saved.round_id)
                if record is not None and record["state"] == "open":
                    self.rounds.resume(record["cards"])
            bind_round(self.saved.shoe.shoe_no, self.saved.round_id)
            self.journal.record(sr.Restored(self.state.value, self.saved.round_id))

    def arm_seats(self) -> None:
        """Unlock the seat sensors for betting (the daemon, restored mid-betting)."""
        self.seating.arm()

    def _announce_award(self, award: Award) -> None:
        """An award a crash interrupted, announced again at a restart (the daemon)."""
        with self._step():
            self.seating.announce_award(award)

    # --- commands (control API) ---------------------------------------------------------

    def cmd_open(self) -> None:
        with self._step():
            self.journal.record(ev.TableOpened())
            self.machine.open_table()
            self.journal.announce(ev.Prompt("inspect_cards", detail="inspect the decks (631a.4) "
                                            "then shuffle"))

    def cmd_shuffle(self, decks: int) -> None:
        with self._step():
            if self.state is TableState.DEVICE_FAULT and \
                    self.saved.resume_state is TableState.SHUFFLING:
                self.fault_handling.technician_reshuffle(decks)
                return
            self.machine.start_shuffle()
            self.journal.record(ev.ShuffleRequested(decks))
            # 631a.13(d)(2)(i): marked vigorish is collected before play with a new shoe.
            self._collect_marked_vigorish(None, "new shoe")

    def cmd_seat_leaves(self, seat: int) -> int:
        """631a.13(d)(2)(i): a player leaving pays the vigorish marked at the seat."""
        if not 1 <= seat <= self.seats:
            raise CommandRefused(f"seat {seat} does not exist; allowed: 1 to {self.seats}")
        with self._step():
            return self._collect_marked_vigorish(seat, "player leaves")

    def _collect_marked_vigorish(self, seat: int | None, reason: str) -> int:
        store = self.ports.store
        collected = vigorish_to_collect(
            {s: t["vig_owed_cents"] for s, t in store.seat_totals().items()}, seat)
        for owing_seat, _ in collected:
            store.collect_vigorish(owing_seat)
        owed = dict(collected)
        if owed:
            self.journal.announce(ev.Prompt("collect_vigorish", reason=reason, seats=tuple(
                {"seat": s, "cents": c} for s, c in sorted(owed.items()))))
        return sum(owed.values())

    def cmd_place_wager(self, seat: int, wager: str, amount_cents: int) -> None:
        if self.state is not TableState.BETTING_OPEN:
            raise CommandRefused(f"wagers are accepted only while betting is open (631a.8(c)); "
                                 f"the table is {self.state.value}")
        if not 1 <= seat <= self.seats:
            raise CommandRefused(f"seat {seat} does not exist; allowed: 1 to {self.seats}")
        if wager not in self.rules.offered():
            raise CommandRefused(f"wager {wager!r} is not offered at this table; allowed: "
                                 f"{', '.join(sorted(self.rules.offered()))}")
        if not isinstance(amount_cents, int) or isinstance(amount_cents, bool) or amount_cents <= 0:
            raise CommandRefused(f"amount {amount_cents!r}: must be a positive whole number of cents")
        placed = PlacedWager(seat, wager, amount_cents)
        problem = self.rules.check_wager(placed)
        if problem:
            raise CommandRefused(problem)
        problem = base_wager_missing(placed, self.saved.wagers,
                                     without_base_wager=self.rules.without_base_wager(wager),
                                     twenty_one=self.rules.is_21)
        if problem:
            raise CommandRefused(problem)
        with self._step():
            self._wager_placed(placed)
            self.journal.record(ev.WagerAccepted(placed.seat, placed.wager, placed.amount_cents))

    def _wager_placed(self, placed: PlacedWager) -> None:
        """What an accepted wager changes in the saved state. Its log entry, committed in
        the same step, implies both changes, so the step saves no state (the whole state's
        JSON, its row MAC and the digests five times a round): a restart makes them again
        from the entries logged after the last save (`restore`)."""
        self.saved.wagers.append(placed)
        self.saved.shoe.extra_card_window = False  # the next round has begun (681a.9(b))

    def cmd_no_more_bets(self, cause: str = "dealer") -> None:
        if self.state is not TableState.BETTING_OPEN:
            raise CommandRefused(f"'no more bets' applies only while betting is open; the table "
                                 f"is {self.state.value}")
        lock = self.ports.lock_seats
        locked = lock(cause) if lock is not None else None
        with self._step():
            self.rounds.open_round(locked, cause)

    def cmd_new_dealer(self, dealer: str = "") -> None:
        """A new dealer takes over the table (between rounds)."""
        if self.state not in (TableState.BETTING_OPEN, TableState.END_OF_SHOE,
                              TableState.CLOSED, TableState.OPENING, TableState.SHUFFLING,
                              TableState.CUT, TableState.BURN):
            raise CommandRefused(f"a new dealer takes over between rounds; the table is "
                                 f"{self.state.value}")
        with self._step():
            # 681a.7(c): the new dealer's first card goes to the discard rack; 631a has no
            # such burn. In a burn or before the shoe is loaded the shoe's own burn serves.
            burn = self.rules.is_21 and self.state is TableState.BETTING_OPEN
            self.saved.shoe.dealer_burn_due = burn
            self.journal.record(ev.NewDealer(dealer, burn))
            self.journal.state_changed()
            if burn:
                self.journal.announce(ev.Prompt("burn", detail="681a.7(c): the new dealer places "
                                                "one card in the discard rack before dealing"))

    def cmd_validate_award(self, award_id: int, supervisor: str) -> dict[str, Any]:
        progressive = self.ports.progressive
        if progressive is None:
            raise CommandRefused("this table offers no progressive wager")
        from controller.progressive.errors import ProgressiveError

        if award_id not in {a.award_id for a in progressive.pending_awards()}:
            raise CommandRefused(f"award {award_id} is not awaiting validation: it was paid "
                                 "already or does not exist (tablectl jackpot pending lists "
                                 "those awaiting it)")
        try:
            # Its own steps, each durable (pending -> validated -> paid), so a crash in
            # between is finished exactly once by ProgressiveSystem.recover().
            award = progressive.validate_award(award_id, supervisor)
        except ProgressiveError as exc:
            raise CommandRefused(str(exc)) from exc
        with self._step():
            self.journal.record(JackpotValidated(award_id, supervisor, award.amount_cents,
                                                 award.seat))
        return dict(award.as_dict())

    def cmd_acknowledge_fault(self, supervisor: str = "") -> dict[str, Any]:
        with self._step():
            return self.fault_handling.acknowledge(supervisor).as_dict()

    def cmd_disclosed_player_third(self, supervisor: str = "") -> dict[str, Any]:
        with self._step():
            return self.disclosed.declare(supervisor).as_dict()

    def mark_out_of_order(self, reason: str) -> None:
        with self._step():
            self.saved.out_of_order_reason = reason
            self.journal.record(sr.OutOfOrder(reason))
            self.machine.integrity_failed()

    def on_shoe_loaded(self, back: BackColour | None = None) -> None:
        """The dealer loaded a new shoe (cut and cover cards in place)."""
        with self._step():
            self.batch_checks.load_shoe(back)

    # --- device events ------------------------------------------------------------------

    def handle(self, event: DeviceEvent) -> None:
        """Apply one device event as one step. Called only from the event loop's thread."""
        if self.machine.state is STATE_OUT_OF_ORDER:  # not the property: a call, every card
            with self._step():
                self.journal.record(sr.EventIgnoredOutOfOrder(type(event).__name__))
            return
        if isinstance(event, LockedOut) and self.state is not TableState.BETTING_OPEN:
            # The seat panel echoes every lock the table asks for (no more bets, first card)
            # as a LockedOut event, and a button press after the first card is another one:
            # the round is already open, so neither changes anything (nor opens a step).
            return
        if isinstance(event, LinkChanged) and event.state is not LinkState.UP:
            return  # a lost link comes as a DeviceFault with its own action text
        with self._step():
            self._apply(event)

    def _apply(self, event: DeviceEvent) -> None:
        journal = self.journal
        match event:
            case CardDrawn():
                # A card during a fault is handled whatever its back (the round is voided).
                fault = (self.batch_checks.card_fault(event)
                         if self.machine.state is not STATE_DEVICE_FAULT else None)
                if fault is not None:
                    self.fault_handling.on_fault(fault)
                else:
                    self.cards.on_card(event)
            case CoverCardDrawn():
                self.cards.on_cover_card(event)
            case LockedOut():
                self.rounds.open_round(event, event.cause)
            case DeviceFault():
                self.fault_handling.on_fault(event)
            case DeviceFaultCleared():
                self.fault_handling.on_fault_cleared(event.device, event.code)
            case LinkChanged():
                self.fault_handling.on_link(event)
            case ShuffleComplete():
                self._on_shuffle_complete(event)
            case ShuffleProgress():  # the shuffler reports about once a deck
                journal.record(ev.ShuffleProgress(event.cards_counted, event.cards_expected),
                               device=event.device)
            case LateSensorChange():
                # 631c.2(d)(2), 627b.6(d)(2): never a wager; recorded for the seat.
                journal.record(ev.LateSensorChange(event.seat, event.present), device="seats")
            case SeatSensorChanged():  # what `tablectl test sensors` shows live
                journal.record(ev.SeatSensor(event.seat, event.present), device="seats")
            case ShoeLoaded():
                self._on_fault(self.batch_checks.shoe_loaded(event))
            case BatchHeld():
                self._on_fault(self.batch_checks.shuffler_holds(event))
                self.batch_checks.record_held(event)
            case _:
                raise TypeError(f"unknown device event {event!r}")

    def _on_fault(self, fault: DeviceFault | None) -> None:
        if fault is not None:
            self.fault_handling.on_fault(fault)

    def _on_shuffle_complete(self, done: ShuffleComplete) -> None:
        fault = self.batch_checks.shuffle_fault(done)
        if fault is not None:
            self.fault_handling.on_fault(fault)
            return
        self.journal.record(ev.ShuffleComplete(done.back, done.cards_counted, done.missing,
                                               done.extra, done.duplicates), device=done.device)
        self.batch_checks.reconcile_shoe(done)
        if self.state is TableState.SHUFFLING and done.verified:
            self.batch_checks.shuffle_verified(done.back)
        elif (done.verified and self.state is TableState.DEVICE_FAULT
              and self.saved.resume_state is TableState.SHUFFLING):
            self.fault_handling.shuffle_verified(done)
