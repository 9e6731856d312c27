"""The one state machine that owns the table and its rounds.

Device drivers put events on a queue; the daemon's loop hands them here one at
a time (`handle`). Every decision about a card is delegated to the rules
engine's coup (the table never decides a draw itself); every change of money
or state is written to the store in one transaction with its event, so a power
cut at any instant leaves either the step or nothing.

The table is assembled from parts: its states and transitions
(controller/table_machine.py), its saved state (controller/table_snapshot.py),
cards and rounds (controller/table_rounds.py) and the two-batch checks
(controller/table_batches.py) and faults (controller/table_faults.py); this file
holds the commands and the device-event dispatch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transitions import Machine

from controller.logsetup import bind_round
from cards import BackColour, Card
from controller.rules.procedure import BASE_WAGERS, base_wager_missing, vigorish_to_collect
from controller.rules.settlement import PlacedWager
from controller.memory.store import Store
from controller.table_base import CommandRefused
from controller.table_batches import BatchChecks
from controller.table_disclosed import DisclosedCards
from controller.table_faults import FaultHandling
from controller.table_machine import OPERATING, TRANSITIONS, TableState
from controller.table_ports import Announce, LockSeats, OpenSeats, Progressive, SetLed
from controller.table_rules import RulesAdapter
from controller.table_snapshot import TableSnapshot, wager_json
from controller.rules.batches import BatchTracker
from drivers.protocols import (
    BatchHeld, CardDrawn, CoverCardDrawn, DeviceEvent, DeviceFault, DeviceFaultCleared,
    LateSensorChange, LedState, LinkChanged, LockedOut, SeatSensorChanged, ShoeLoaded,
    ShuffleComplete, ShuffleProgress,
)

__all__ = ["BASE_WAGERS", "CommandRefused", "RulesAdapter", "Table", "TableState"]




class Table(DisclosedCards, BatchChecks, FaultHandling):
    """Owns the table's state machine, the round in progress and their durable record."""

    def __init__(self, *, table_id: str, seats: int, rules: RulesAdapter, store: Store,
                 announce: Announce | None = None,
                 lock_seats: LockSeats | None = None,
                 open_seats: OpenSeats | None = None,
                 set_led: SetLed | None = None,
                 progressive: Progressive | None = None,
                 batches: BatchTracker | None = None,
                 vig_collection: str = "at-payout") -> None:
        TableSnapshot.__init__(self, batches=batches)
        self.table_id = table_id
        self.seats = seats
        self.rules = rules
        self.store = store
        self._announce_hook = announce
        self._lock_seats = lock_seats
        self._open_seats = open_seats
        self._set_led = set_led
        self.progressive = progressive  # progressive.system.ProgressiveSystem, if offered
        # Seats whose progressive sensor may register a wager; none unless a progressive
        # wager is offered (set by the progressive system).
        self.progressive_seats_allowed = frozenset()
        self.vig_collection = vig_collection
        self.coup = None
        # Each transition saves the table's state after it, but those the round's cards
        # imply (`Transition.implied_by_cards`).
        self.machine = Machine(
            model=self, states=TableState, transitions=TRANSITIONS, initial=TableState.CLOSED,
            auto_transitions=False, queued=True,
        )
        for state in OPERATING:
            setattr(self, f"_resumes_{state.name.lower()}",
                    lambda s=state: self.resume_state is s)

    # --- persistence -------------------------------------------------------------

    def restore(self) -> None:
        """Resume where the store says the table was (after a restart or power cut)."""
        saved = self.store.load_table_state()
        if saved is None:
            return
        state_name, data = saved
        snapshot = TableSnapshot.from_json(data, self.batches)
        for name in TableSnapshot.names():
            setattr(self, name, getattr(snapshot, name))
        self.machine.set_state(TableState(state_name))
        if self.round_id is not None:
            record = self.store.round(self.round_id)
            if record is not None and record["state"] == "open":
                # Rebuild the coup from the cards recorded before the cut: the round is
                # completed from the cards already recorded (docs/rulings.md, recovery).
                # The store gives them as saved with the state and then as logged after it
                # (a card that moves only the shoe and the round's cards does not save the
                # state: `_on_round_card`); the shoe's position follows those.
                self.round_cards = record["cards"]
                self.coup = self.rules.new_coup(self.wagers)
                for item in self.round_cards:
                    self.coup.place(Card.parse(item["card"]))
                    if item["index"] > self.shoe.last_card_index:
                        self.shoe.last_card_index = item["index"]
                        self.shoe.cards_drawn += 1
                self._redo_changes_implied_by_cards()
        bind_round(self.shoe.shoe_no, self.round_id)
        with self.store.transaction():
            self._record("restored", {"state": self.state.value, "round_id": self.round_id})

    def on_enter_BETTING_OPEN(self) -> None:  # noqa: N802 - transitions' naming convention
        self.arm_seats()

    def arm_seats(self) -> None:
        """Unlock the seat sensors and the lock-out button for a new round.

        Seats whose progressive is unavailable (e.g. a linked meter offline) stay
        locked with their LED saying so.
        """
        leds: Mapping[int, LedState] = {}
        if self.progressive is not None:
            leds = self.progressive.open_betting()
            self.progressive_seats_allowed = frozenset(
                seat for seat, led in leds.items() if led is LedState.AWAITING)
        if self._open_seats is not None:
            self._open_seats(self.progressive_seats_allowed)
        self._show_leds({seat: led for seat, led in leds.items()
                         if led is not LedState.AWAITING})

    # --- commands (control API) ----------------------------------------------------

    def cmd_open(self) -> None:
        with self.store.transaction():
            self._record("table_opened")
            self.open_table()
            self.announce("inspect_cards", detail="inspect the decks (631a.4) then shuffle")

    def cmd_shuffle(self, decks: int) -> None:
        if self.state is TableState.DEVICE_FAULT and self.resume_state is TableState.SHUFFLING:
            self._technician_reshuffle(decks)
            return
        with self.store.transaction():
            self.start_shuffle()
            self._record("shuffle_requested", {"decks": decks})
            # 631a.13(d)(2)(i): marked vigorish is collected before play with a new shoe.
            self._collect_marked_vigorish(None, "new shoe")

    def cmd_seat_leaves(self, seat: int) -> int:
        """631a.13(d)(2)(i): a player leaving pays the vigorish marked at the seat."""
        if not 1 <= seat <= self.seats:
            raise CommandRefused(f"seat {seat} does not exist; allowed: 1 to {self.seats}")
        with self.store.transaction():
            return self._collect_marked_vigorish(seat, "player leaves")

    def _collect_marked_vigorish(self, seat: int | None, reason: str) -> int:
        collected = vigorish_to_collect(
            {s: t["vig_owed_cents"] for s, t in self.store.seat_totals().items()}, seat)
        for owing_seat, _ in collected:
            self.store.collect_vigorish(owing_seat)
        owed = dict(collected)
        if owed:
            self.announce("collect_vigorish", reason=reason,
                          seats=[{"seat": s, "cents": c} for s, c in sorted(owed.items())])
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
        problem = base_wager_missing(placed, self.wagers,
                                     without_base_wager=self.rules.without_base_wager(wager),
                                     twenty_one=self.rules.is_21)
        if problem:
            raise CommandRefused(problem)
        with self.store.transaction():
            self.wagers.append(placed)
            self.shoe.extra_card_window = False  # the next round has begun (681a.9(b))
            self._record("wager_accepted", wager_json(placed))
            self._persist_state()

    def cmd_no_more_bets(self, cause: str = "dealer") -> None:
        if self.state is not TableState.BETTING_OPEN:
            raise CommandRefused(f"'no more bets' applies only while betting is open; the table "
                                 f"is {self.state.value}")
        locked = self._lock_seats(cause) if self._lock_seats else None
        self._on_locked(locked, cause)

    def cmd_new_dealer(self, dealer: str = "") -> None:
        """A new dealer takes over the table (between rounds)."""
        if self.state not in (TableState.BETTING_OPEN, TableState.END_OF_SHOE,
                              TableState.CLOSED, TableState.OPENING, TableState.SHUFFLING,
                              TableState.CUT, TableState.BURN):
            raise CommandRefused(f"a new dealer takes over between rounds; the table is "
                                 f"{self.state.value}")
        with self.store.transaction():
            # 681a.7(c): the new dealer's first card goes to the discard rack; 631a has no
            # such burn. In a burn or before the shoe is loaded the shoe's own burn serves.
            burn = self.rules.is_21 and self.state is TableState.BETTING_OPEN
            self.shoe.dealer_burn_due = burn
            self._record("new_dealer", {"dealer": dealer, "burn": burn})
            self._persist_state()
            if burn:
                self.announce("burn", detail="681a.7(c): the new dealer places one card in the "
                              "discard rack before dealing")

    def cmd_validate_award(self, award_id: int, supervisor: str) -> dict[str, Any]:
        if self.progressive is None:
            raise CommandRefused("this table offers no progressive wager")
        from controller.progressive.errors import ProgressiveError

        if award_id not in {a.award_id for a in self.progressive.pending_awards()}:
            raise CommandRefused(f"award {award_id} is not awaiting validation: it was paid "
                                 "already or does not exist (tablectl meters shows awards)")
        try:
            # Its own steps, each durable (pending -> validated -> paid), so a crash in
            # between is finished exactly once by ProgressiveSystem.recover().
            award = self.progressive.validate_award(award_id, supervisor)
        except ProgressiveError as exc:
            raise CommandRefused(str(exc)) from exc
        with self.store.transaction():
            self._record("jackpot_validated", {"award_id": award_id, "supervisor": supervisor,
                                               "amount_cents": award.amount_cents,
                                               "seat": award.seat})
        return dict(award.as_dict())

    def mark_out_of_order(self, reason: str) -> None:
        with self.store.transaction():
            self.out_of_order_reason = reason
            self._record("out_of_order", {"reason": reason}, severity="critical")
            self.integrity_failed()

    # --- device events ----------------------------------------------------------------

    def handle(self, event: DeviceEvent) -> None:
        """Apply one device event. Called only from the event loop's thread."""
        if self.state is TableState.OUT_OF_ORDER:
            with self.store.transaction():
                self._record("event_ignored_out_of_order", {"device_event": type(event).__name__})
            return
        match event:
            case CardDrawn():
                self._on_card(event)
            case CoverCardDrawn():
                self._on_cover_card(event)
            case LockedOut():
                self._on_locked(event, event.cause)
            case DeviceFault():
                self._on_fault(event)
            case DeviceFaultCleared():
                self._on_fault_cleared(event.device, event.code)
            case LinkChanged():
                self._on_link(event)
            case ShuffleComplete():
                self._on_shuffle_complete(event)
            case ShuffleProgress():
                with self.store.transaction():  # the shuffler reports about once a deck
                    self._record("shuffle_progress", {"cards_counted": event.cards_counted,
                                                      "cards_expected": event.cards_expected},
                                 device=event.device)
            case LateSensorChange():
                with self.store.transaction():
                    # 631c.2(d)(2), 627b.6(d)(2): never a wager; recorded for the seat.
                    self._record("late_sensor_change", {"seat": event.seat,
                                                        "present": event.present},
                                 severity="warning", device="seats")
            case SeatSensorChanged():
                with self.store.transaction():  # what `tablectl test sensors` shows live
                    self._record("seat_sensor", {"seat": event.seat, "present": event.present},
                                 device="seats")
            case ShoeLoaded():
                self._on_shoe_loaded_event(event)
            case BatchHeld():
                self._on_batch_held(event)
            case _:
                raise TypeError(f"unknown device event {event!r}")

    def _on_shuffle_complete(self, done: ShuffleComplete) -> None:
        if not self._shuffle_counted(done):
            return
        with self.store.transaction():
            self._record("shuffle_complete", {"back": done.back.name.lower(),
                                              "cards_counted": done.cards_counted,
                                              "missing": done.missing, "extra": done.extra,
                                              "duplicates": done.duplicates}, device=done.device)
            self._reconcile_shoe(done)
            if self.state is TableState.SHUFFLING and done.verified:
                self._shuffle_verified(done.back)
            elif (done.verified and self.state is TableState.DEVICE_FAULT
                  and self.resume_state is TableState.SHUFFLING):
                # 681a.9(c): the batch was shuffled and counted out exactly after all.
                self.verified_in_fault = done.back
                gone = self.faults.verified_shuffle()
                if gone and not self.faults:
                    self._recover(done.device, gone[-1].code)
                else:
                    self._persist_state()

    def _shuffle_verified(self, back: BackColour) -> None:
        self.batch_shuffled = back
        self.shuffle_verified()
        self.announce("cut", detail="offer the cut (631a.5(b)); insert the cover cards "
                      "(631a.5(c)-(d)) and load the shoe")

    def _on_locked(self, locked: LockedOut | None, cause: str) -> None:
        if self.state is not TableState.BETTING_OPEN:
            # The seat panel echoes every lock the table asks for (no more bets, first card)
            # as a LockedOut event, and a button press after the first card is another one:
            # the round is already open, so neither changes anything.
            return
        with self.store.transaction():
            self.shoe.extra_card_window = False  # the next round has begun (681a.9(b))
            self.progressive_seats = locked.wagers if locked else frozenset()
            self.round_no += 1
            wagers = [wager_json(w) for w in self.wagers]
            self.round_id = self.store.open_round(self.shoe.shoe_no, self.round_no, wagers)
            self.round_cards = []
            bind_round(self.shoe.shoe_no, self.round_id)
            self._record("no_more_bets", {"cause": cause, "round_no": self.round_no,
                                          "wagers": wagers,
                                          "progressive_seats": sorted(self.progressive_seats)})
            self.coup = self.rules.new_coup(self.wagers)
            self.round_settlements = []
            if self.progressive is not None and locked is not None:
                # 631c.2(d)(2), 627b.3(a)(2), 627b.6(d)(2): only what the sensors held at
                # the lock, at seats holding a base wager, is a progressive wager.
                acceptance = self.progressive.on_lock(locked, wagers, self.round_id)
                self._record("progressive_accepted", acceptance.as_dict())
                self._show_leds(acceptance.leds)
                for award in acceptance.awards:
                    self._announce_award(award)
            self.lock_out()
            self.announce("deal", next=self.coup.next_card().name.lower())
