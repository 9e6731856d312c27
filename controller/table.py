"""The one state machine that owns the table and its rounds.

Device drivers put events on a queue; the daemon's loop hands them here one at
a time (`handle`). Every decision about a card is delegated to the rules
engine's coup (the table never decides a draw itself); every change of money
or state is written to the store in one transaction with its event, so a power
cut at any instant leaves either the step or nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from transitions import Machine

from controller.logsetup import bind_round
from cards import BackColour, Card
from controller.rules.settlement import PlacedWager, check_wager, settle_round
from controller.rules.wager import Outcome, Settlement, SettlementPoint
from controller.store import Store
from controller.rules.batches import BatchError, BatchFault, BatchPlace, BatchTracker
from drivers.protocols import (
    BatchHeld, CardDrawn, CoverCardDrawn, DeviceEvent, DeviceFault, DeviceFaultCleared,
    LateSensorChange, LedState, LinkChanged, LinkState, LockedOut, SeatSensorChanged, ShoeLoaded,
    ShuffleComplete, ShuffleProgress,
)

log = structlog.get_logger("table")


class TableState(enum.Enum):
    CLOSED = "closed"
    OPENING = "opening"  # card inspection, 631a.4 / 681a.4
    SHUFFLING = "shuffling"
    CUT = "cut"  # cut and cover cards placed, waiting for the shoe to be loaded, 631a.5(b)-(d)
    BURN = "burn"  # 631a.5(f)
    BETTING_OPEN = "betting_open"
    NO_MORE_BETS = "no_more_bets"  # lock-out, 631a.8(c)
    DEALING = "dealing"  # the first four cards, 631a.9(c)
    FIRST_FOUR_SETTLED = "first_four_settled"  # settlement point after four cards, 631a.9(e)
    THIRD_CARDS = "third_cards"  # 631a.10-631a.11
    RESULT = "result"  # 631a.12(a)
    SETTLEMENT = "settlement"  # 631a.12(b)
    END_OF_SHOE = "end_of_shoe"  # 631a.3(b), 631a.10(d): new decks / batch swap
    DEVICE_FAULT = "device_fault"
    OUT_OF_ORDER = "out_of_order"  # 681a.9(d); integrity failures


# States in which a device fault interrupts play and from which play resumes.
_OPERATING = [TableState.OPENING, TableState.SHUFFLING, TableState.CUT, TableState.BURN,
              TableState.BETTING_OPEN, TableState.NO_MORE_BETS, TableState.DEALING,
              TableState.FIRST_FOUR_SETTLED, TableState.THIRD_CARDS, TableState.RESULT,
              TableState.SETTLEMENT, TableState.END_OF_SHOE]

TRANSITIONS: list[dict[str, Any]] = [
    {"trigger": "open_table", "source": TableState.CLOSED, "dest": TableState.OPENING},
    {"trigger": "start_shuffle", "source": [TableState.OPENING, TableState.END_OF_SHOE],
     "dest": TableState.SHUFFLING},
    {"trigger": "shuffle_verified", "source": TableState.SHUFFLING, "dest": TableState.CUT},
    {"trigger": "shoe_loaded", "source": TableState.CUT, "dest": TableState.BURN},
    {"trigger": "burn_done", "source": TableState.BURN, "dest": TableState.BETTING_OPEN},
    {"trigger": "lock_out", "source": TableState.BETTING_OPEN, "dest": TableState.NO_MORE_BETS},
    {"trigger": "first_card", "source": TableState.NO_MORE_BETS, "dest": TableState.DEALING},
    {"trigger": "four_cards", "source": TableState.DEALING, "dest": TableState.FIRST_FOUR_SETTLED},
    {"trigger": "third_card_due", "source": TableState.FIRST_FOUR_SETTLED,
     "dest": TableState.THIRD_CARDS},
    {"trigger": "hands_complete", "source": [TableState.FIRST_FOUR_SETTLED, TableState.THIRD_CARDS],
     "dest": TableState.RESULT},
    {"trigger": "announce_result", "source": TableState.RESULT, "dest": TableState.SETTLEMENT},
    {"trigger": "next_round", "source": TableState.SETTLEMENT, "dest": TableState.BETTING_OPEN},
    {"trigger": "shoe_finished", "source": TableState.SETTLEMENT, "dest": TableState.END_OF_SHOE},
    {"trigger": "void_round", "source": [TableState.NO_MORE_BETS, TableState.DEALING,
                                         TableState.FIRST_FOUR_SETTLED, TableState.THIRD_CARDS],
     "dest": TableState.END_OF_SHOE},
    {"trigger": "device_failed", "source": _OPERATING, "dest": TableState.DEVICE_FAULT},
    {"trigger": "close_table", "source": [TableState.OPENING, TableState.BETTING_OPEN,
                                          TableState.END_OF_SHOE, TableState.DEVICE_FAULT],
     "dest": TableState.CLOSED},
    {"trigger": "integrity_failed", "source": "*", "dest": TableState.OUT_OF_ORDER},
] + [
    # Recovery returns to the state the fault interrupted, never further.
    {"trigger": "device_recovered", "source": TableState.DEVICE_FAULT, "dest": state,
     "conditions": f"_resumes_{state.name.lower()}"}
    for state in _OPERATING
]

# The Baccarat wagers of 631a.8(a)(1)-(3) (627a for Minibaccarat, 681a.6 for 21 Baccarat);
# every other wager is optional and needs one of these at the seat first.
BASE_WAGERS = frozenset({"banker", "player", "tie"})

# Faults no device will ever clear by itself: a floor supervisor acknowledges them.
ONE_SHOT_FAULTS = frozenset({"shoe_misread", "batch_mismatch", "shuffle_request_failed"})


@dataclass
class ShoeProgress:
    shoe_no: int = 0
    cards_drawn: int = 0
    burn_expected: int | None = None  # cards still to burn after the exposed first card
    burned: list[str] = field(default_factory=list)
    cover_card_seen: bool = False
    last_hand_announced: bool = False
    rounds_in_shoe: int = 0
    last_card_index: int = -1
    back: int | None = None  # BackColour of the batch in the shoe (681a.3(b))


class RulesAdapter:
    """The seam between the table and the rules engine's `Game` (controller.rules.game)."""

    def __init__(self, game: Any) -> None:
        self.game = game

    def new_coup(self, wagers: list[dict[str, Any]] = ()) -> Any:  # type: ignore[assignment]
        # 681a.7(f)(2): the extra card after a natural is dealt only for Bonus wagers.
        return self.game.new_coup(bonus_wagered=any(w["wager"].startswith("bonus_")
                                                    for w in wagers))

    @property
    def reshuffles_at_cover_card(self) -> bool:
        """681a: the shoe ends with the cover card's round; 631a.10(d) plays one more."""
        return bool(self.game.reshuffles_at_cover_card)

    def burn_count(self, first: Card) -> int:
        return int(self.game.burn_count(first))

    def offered(self) -> list[str]:
        return list(self.game.wager_rules)

    def without_base_wager(self, key: str) -> bool:
        """631c.7(b): the Rules Submission offers this wager without a Baccarat wager."""
        config = self.game.submission.wager(key)
        return bool(config is not None and config.without_base_wager)

    def check_wager(self, seat: int, key: str, amount_cents: int) -> str | None:
        return check_wager(self.game, PlacedWager(seat, key, amount_cents))

    def settle(self, point: SettlementPoint, wagers: list[dict[str, Any]], coup: Any
               ) -> list[Settlement]:
        placed = [PlacedWager(w["seat"], w["wager"], w["amount_cents"]) for w in wagers]
        return settle_round(self.game, placed, coup.round_view(), point)

    @staticmethod
    def result_summary(coup: Any) -> dict[str, Any]:
        view, result = coup.round_view(), coup.result()
        summary: dict[str, Any] = {
            "player": [str(c) for c in view.player], "banker": [str(c) for c in view.banker],
            "player_total": view.player_total, "banker_total": view.banker_total,
            "winner": getattr(result.winner, "value", str(result.winner)),
        }
        for flag in ("player_natural", "banker_natural", "dragon_7", "panda_8"):
            if hasattr(result, flag):
                summary[flag] = bool(getattr(result, flag))
        if view.extra:
            summary["extra"] = [str(c) for c in view.extra]
        return summary


class Table:
    """Owns the table's state machine, the round in progress and their durable record."""

    state: TableState  # set by transitions

    if TYPE_CHECKING:  # the triggers transitions adds to the model, one per TRANSITIONS entry
        def open_table(self) -> bool: ...
        def start_shuffle(self) -> bool: ...
        def shuffle_verified(self) -> bool: ...
        def shoe_loaded(self) -> bool: ...
        def burn_done(self) -> bool: ...
        def lock_out(self) -> bool: ...
        def first_card(self) -> bool: ...
        def four_cards(self) -> bool: ...
        def third_card_due(self) -> bool: ...
        def hands_complete(self) -> bool: ...
        def announce_result(self) -> bool: ...
        def next_round(self) -> bool: ...
        def shoe_finished(self) -> bool: ...
        def void_round(self) -> bool: ...
        def device_failed(self) -> bool: ...
        def close_table(self) -> bool: ...
        def integrity_failed(self) -> bool: ...
        def device_recovered(self) -> bool: ...

    def __init__(self, *, table_id: str, seats: int, rules: RulesAdapter, store: Store,
                 announce: Callable[[str, Mapping[str, Any]], None] | None = None,
                 lock_seats: Callable[[str], LockedOut] | None = None,
                 open_seats: Callable[[frozenset[int]], None] | None = None,
                 set_led: Callable[[int, LedState], None] | None = None,
                 progressive: Any = None,
                 batches: BatchTracker | None = None,
                 vig_collection: str = "at-payout") -> None:
        self.table_id = table_id
        self.seats = seats
        self.rules = rules
        self.store = store
        self._announce_hook = announce
        self._lock_seats = lock_seats
        self._open_seats = open_seats
        self._set_led = set_led
        self.progressive = progressive  # controller.progressive.ProgressiveSystem, if offered
        self.batches = batches  # 681a.3(b): two batches alternating, when the table has them
        # Seats whose progressive sensor may register a wager; none unless a progressive
        # wager is offered (set by the progressive system).
        self.progressive_seats_allowed: frozenset[int] = frozenset()
        self.vig_collection = vig_collection
        self.shoe = ShoeProgress()
        self.round_id: int | None = None
        self.round_no = 0
        self.coup: Any = None
        self.wagers: list[dict[str, Any]] = []  # {seat, wager, amount_cents}
        self.round_settlements: list[dict[str, Any]] = []  # both settlement points, this round
        self.progressive_seats: frozenset[int] = frozenset()
        # 631a.15(d): a face-up card found during a live round waits for a simulated round.
        self.pending_simulated_card: CardDrawn | None = None
        self.simulated = False  # the round in progress is a simulated round (no wagers)
        self.stashed_wagers: list[dict[str, Any]] = []  # wagers waiting out a simulated round
        self.void_after_recovery = ""  # why the round must be voided once the fault clears
        self.batch_in_shuffler: BackColour | None = None  # as the shuffler last reported
        self.batch_shuffled: BackColour | None = None  # verified by the last shuffle
        self.fault: dict[str, str] | None = None
        self._resume_state: TableState | None = None
        self.out_of_order_reason = ""
        self.machine = Machine(
            model=self, states=TableState, transitions=TRANSITIONS, initial=TableState.CLOSED,
            auto_transitions=False, queued=True, after_state_change="_persist_state",
        )
        for state in _OPERATING:
            setattr(self, f"_resumes_{state.name.lower()}",
                    lambda s=state: self._resume_state is s)

    # --- persistence -------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "shoe": vars(self.shoe).copy(), "round_id": self.round_id, "round_no": self.round_no,
            "wagers": self.wagers, "round_settlements": self.round_settlements,
            "progressive_seats": sorted(self.progressive_seats),
            "fault": self.fault, "resume_state": self._resume_state.value if self._resume_state
            else None, "out_of_order_reason": self.out_of_order_reason,
            "pending_simulated_card": _card_json(self.pending_simulated_card)
            if self.pending_simulated_card else None,
            "simulated": self.simulated, "stashed_wagers": self.stashed_wagers,
            "void_after_recovery": self.void_after_recovery,
            "batch_in_shuffler": _colour(self.batch_in_shuffler),
            "batch_tracker": self.batches.to_dict() if self.batches is not None else None,
            "batch_shuffled": _colour(self.batch_shuffled),
        }

    def _persist_state(self) -> None:
        self.store.save_table_state(self.state.value, self.snapshot())

    def _record(self, kind: str, payload: Mapping[str, Any] | None = None, *,
                severity: str = "info", device: str | None = None) -> None:
        self.store.append_event(kind, payload, severity=severity, device=device,
                                round_id=self.round_id)
        # structlog reserves "event" for the message itself.
        fields = {("event_" if key == "event" else key): value
                  for key, value in (payload or {}).items()}
        getattr(log, "warning" if severity == "warning" else
                "error" if severity in ("error", "critical") else "info")(kind, **fields)

    def announce(self, action: str, **detail: Any) -> None:
        """Tell the dealer what the rules require next (recorded, and shown on the display)."""
        self._record("prompt", {"action": action, **detail})
        if self._announce_hook is not None:
            self._announce_hook(action, detail)

    def restore(self) -> None:
        """Resume where the store says the table was (after a restart or power cut)."""
        saved = self.store.load_table_state()
        if saved is None:
            return
        state_name, data = saved
        self.shoe = ShoeProgress(**data["shoe"])
        self.round_id = data["round_id"]
        self.round_no = data["round_no"]
        self.wagers = list(data["wagers"])
        self.round_settlements = list(data.get("round_settlements", []))
        self.progressive_seats = frozenset(data.get("progressive_seats", []))
        self.fault = data["fault"]
        self._resume_state = TableState(data["resume_state"]) if data["resume_state"] else None
        self.out_of_order_reason = data.get("out_of_order_reason", "")
        held = data.get("pending_simulated_card")
        self.pending_simulated_card = _card_from_json(held) if held else None
        self.simulated = bool(data.get("simulated", False))
        self.stashed_wagers = list(data.get("stashed_wagers", []))
        self.void_after_recovery = data.get("void_after_recovery", "")
        self.batch_in_shuffler = _colour_from(data.get("batch_in_shuffler"))
        self.batch_shuffled = _colour_from(data.get("batch_shuffled"))
        if self.batches is not None and data.get("batch_tracker"):
            self.batches = BatchTracker.from_dict(data["batch_tracker"])
        self.machine.set_state(TableState(state_name))
        if self.round_id is not None:
            record = self.store.round(self.round_id)
            if record is not None and record["state"] == "open":
                # Rebuild the coup from the cards recorded before the cut: the round is
                # completed from the cards already recorded (docs/rulings.md, recovery).
                self.coup = self.rules.new_coup(self.wagers)
                for item in record["cards"]:
                    self.coup.place(Card.parse(item["card"]))
        bind_round(self.shoe.shoe_no, self.round_id)
        with self.store.transaction():
            self._record("restored", {"state": state_name, "round_id": self.round_id})

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

    def _show_leds(self, leds: Mapping[int, LedState]) -> None:
        if self._set_led is not None:
            for seat, led in leds.items():
                self._set_led(seat, led)

    # --- commands (control API) ----------------------------------------------------

    def cmd_open(self) -> None:
        with self.store.transaction():
            self._record("table_opened")
            self.open_table()
            self.announce("inspect_cards", detail="inspect the decks (631a.4) then shuffle")

    def cmd_shuffle(self, decks: int) -> None:
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
        owed = {s: t["vig_owed_cents"] for s, t in self.store.seat_totals().items()
                if t["vig_owed_cents"] and (seat is None or s == seat)}
        for owing_seat in sorted(owed, reverse=True):  # highest seat first, as 631a.12(b)
            self.store.collect_vigorish(owing_seat)
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
        problem = self.rules.check_wager(seat, wager, amount_cents)
        if problem:
            raise CommandRefused(problem)
        if wager not in BASE_WAGERS and not self.rules.without_base_wager(wager) and not any(
                w["seat"] == seat and w["wager"] in BASE_WAGERS for w in self.wagers):
            # 631c.3(c), 631c.4(c), 627b.5(a)-(b): an optional wager follows a Baccarat
            # wager at the same seat (applied to every optional wager, docs/rulings.md C15).
            raise CommandRefused(f"seat {seat} must first place a Banker, Player or Tie wager "
                                 f"before the optional wager {wager!r} (631c.3(c))")
        with self.store.transaction():
            self.wagers.append({"seat": seat, "wager": wager, "amount_cents": amount_cents})
            self._record("wager_accepted", {"seat": seat, "wager": wager,
                                            "amount_cents": amount_cents})
            self._persist_state()

    def cmd_no_more_bets(self, cause: str = "dealer") -> None:
        if self.state is not TableState.BETTING_OPEN:
            raise CommandRefused(f"'no more bets' applies only while betting is open; the table "
                                 f"is {self.state.value}")
        locked = self._lock_seats(cause) if self._lock_seats else None
        self._on_locked(locked, cause)

    def cmd_acknowledge_fault(self, supervisor: str = "") -> None:
        """A floor supervisor's ruling on a fault no device will clear (e.g. a misread card)."""
        if self.state is not TableState.DEVICE_FAULT or not self.fault:
            raise CommandRefused(f"no fault to acknowledge; the table is {self.state.value}")
        with self.store.transaction():
            self._record("fault_acknowledged", {**self.fault, "supervisor": supervisor})
            if self.fault["code"] in ONE_SHOT_FAULTS:
                self._on_fault_cleared(self.fault["device"], self.fault["code"])

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
                self.batch_in_shuffler = event.back
                if self.batches is not None:
                    self._track_batch("shuffler", self._shuffler_holds, event.back)
                with self.store.transaction():
                    self._record("batch_held", {"back": event.back.name.lower()
                                                if event.back is not None else None},
                                 device=event.device)
            case _:
                raise TypeError(f"unknown device event {event!r}")

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
        return device == "shuffler" and self.state is TableState.SHUFFLING

    def _on_fault(self, fault: DeviceFault) -> None:
        if fault.code == "shoe_misread":
            self._on_misread(fault)
        with self.store.transaction():
            self._record("device_fault", {"code": fault.code, "detail": fault.detail,
                                          "action": fault.action},
                         severity="error" if self._stops_play(fault.device) else "warning",
                         device=fault.device)
            if self.state in _OPERATING and self._stops_play(fault.device):
                self._resume_state = self.state
                self.fault = {"device": fault.device, "code": fault.code, "detail": fault.detail,
                              "action": fault.action}
                self.device_failed()
                self.announce("stop", detail=f"{fault.device}: {fault.detail}. {fault.action}")

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
        if self.state is not TableState.DEVICE_FAULT or not self.fault:
            return
        if self.fault["device"] != device or (code is not None and self.fault["code"] != code
                                              and not self.fault["code"].startswith("link_")):
            return
        with self.store.transaction():
            self._record("device_recovered", {"code": code or self.fault["code"]}, device=device)
            self.fault = None
            self.device_recovered()
            self._resume_state = None
            reason, self.void_after_recovery = self.void_after_recovery, ""
            if reason and self.round_id is not None:
                self._void_round(reason)
                return
            if self.state is TableState.BURN and self.shoe.burn_expected == 0:
                self.burn_done()  # the last burn card was the unread one
                self.announce("place_bets", round_no=self.round_no + 1)
                return
            self._persist_state()
            self.announce("resume", state=self.state.value)

    def _on_shuffle_complete(self, done: ShuffleComplete) -> None:
        if self.batches is not None and not self._track_batch(
                "shuffler", self.batches.shuffle_complete, done.back, done.verified):
            return
        with self.store.transaction():
            self._record("shuffle_complete", {"back": done.back.name.lower(),
                                              "cards_counted": done.cards_counted,
                                              "missing": done.missing, "extra": done.extra,
                                              "duplicates": done.duplicates}, device=done.device)
            if self.state is TableState.SHUFFLING and done.verified:
                self.batch_shuffled = done.back
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
            self.progressive_seats = locked.wagers if locked else frozenset()
            self.round_no += 1
            self.round_id = self.store.open_round(self.shoe.shoe_no, self.round_no, self.wagers)
            bind_round(self.shoe.shoe_no, self.round_id)
            self._record("no_more_bets", {"cause": cause, "round_no": self.round_no,
                                          "wagers": self.wagers,
                                          "progressive_seats": sorted(self.progressive_seats)})
            self.coup = self.rules.new_coup(self.wagers)
            self.round_settlements = []
            if self.progressive is not None and locked is not None:
                # 631c.2(d)(2), 627b.3(a)(2), 627b.6(d)(2): only what the sensors held at
                # the lock, at seats holding a base wager, is a progressive wager.
                acceptance = self.progressive.on_lock(locked, self.wagers, self.round_id)
                self._record("progressive_accepted", acceptance.as_dict())
                self._show_leds(acceptance.leds)
                for award in acceptance.awards:
                    self._announce_award(award)
            self.lock_out()
            self.announce("deal", next=self.coup.next_card().name.lower())

    def _on_cover_card(self, event: CoverCardDrawn) -> None:
        with self.store.transaction():
            self.shoe.cover_card_seen = True
            # 631a.10(d): complete this hand, then "last hand", then one more.
            self._record("cover_card", {"index": event.index}, device=event.device)
            self._persist_state()

    def _on_card(self, event: CardDrawn) -> None:
        # A card during a fault is handled below whatever its back (the round is voided).
        if self.state is not TableState.DEVICE_FAULT and not self._card_from_batch_in_play(event):
            return
        if self.shoe.last_card_index >= 0 and event.index != self.shoe.last_card_index + 1:
            self._on_card_gap(event)
            return
        self.shoe.last_card_index = event.index
        self.shoe.cards_drawn += 1
        state = self.state
        if state is TableState.BURN:
            self._on_burn_card(event)
        elif event.face_up and state in (TableState.BETTING_OPEN, TableState.NO_MORE_BETS):
            self._start_simulated_round(event)  # 631a.15(d)
        elif event.face_up and state in (TableState.DEALING, TableState.THIRD_CARDS) \
                and not self.simulated:
            self._set_aside_face_up_card(event)  # 631a.15(d), after the live round
        elif state is TableState.BETTING_OPEN:
            # 627b.3(a)(2), applied to every game (docs/rulings.md): the first card out of
            # the shoe locks every seat; a card drawn before "no more bets" (631a.15(a)-(b))
            # becomes the first card of this round.
            locked = self._lock_seats("first-card") if self._lock_seats else None
            self._on_locked(locked, "first-card")
            self._on_round_card(event)
        elif state in (TableState.NO_MORE_BETS, TableState.DEALING, TableState.THIRD_CARDS):
            self._on_round_card(event)
        elif state is TableState.DEVICE_FAULT:
            self._on_card_during_fault(event)
        else:
            self._on_card_out_of_play(event)

    def _on_card_gap(self, event: CardDrawn) -> None:
        """Cards left the shoe that the table never saw: nothing is settled from incomplete data."""
        with self.store.transaction():
            self._record("card_gap", {"expected_index": self.shoe.last_card_index + 1,
                                      "received_index": event.index, "card": str(event.card)},
                         severity="error", device=event.device)
            self.shoe.last_card_index = event.index
            if self.round_id is not None and self.coup is not None and self.state in (
                    TableState.NO_MORE_BETS, TableState.DEALING, TableState.FIRST_FOUR_SETTLED,
                    TableState.THIRD_CARDS):
                self._void_round("cards left the shoe unseen by the controller")

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
        assert self.coup is not None and self.round_id is not None
        with self.store.transaction():
            slot = self.coup.place(event.card)
            hand = slot.hand.value if slot.hand else "extra"
            self.store.add_round_card(self.round_id, {"index": event.index,
                                                      "card": str(event.card), "hand": hand,
                                                      "slot": slot.name.lower()})
            self._record("card", {"index": event.index, "card": str(event.card), "hand": hand,
                                  "slot": slot.name.lower(), "back": event.back.name.lower()},
                         device=event.device)
            self._persist_state()  # the shoe position moves with every card
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
            else:
                self.announce("deal", next=self.coup.next_card().name.lower())

    def _start_simulated_round(self, event: CardDrawn) -> None:
        """631a.15(d): the disclosed card opens a simulated round in which no wager counts.

        Wagers already on the layout wait for the next live round.
        """
        with self.store.transaction():
            self.stashed_wagers, self.wagers = self.wagers, []
            self.simulated = True
            self.round_id = self.store.open_round(self.shoe.shoe_no, 0, [], simulated=True)
            bind_round(self.shoe.shoe_no, self.round_id)
            self._record("simulated_round", {"card": str(event.card), "index": event.index,
                                             "ruling": "631a.15(d): a disclosed card opens a "
                                             "simulated round; no wagers are accepted"},
                         severity="warning", device=event.device)
            self.coup = self.rules.new_coup()  # simulated: no wagers
            self.round_settlements = []
            if self.state is TableState.BETTING_OPEN:
                self.lock_out()
        self._on_round_card(event)

    def _set_aside_face_up_card(self, event: CardDrawn) -> None:
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
            if in_round:
                self.void_after_recovery = (f"card {event.card} left the shoe while the table "
                                            "was in a device fault")
            self._persist_state()

    def _on_card_out_of_play(self, event: CardDrawn) -> None:
        """A card when no round can use it (shoe finished, shuffling): it goes with the old decks."""
        with self.store.transaction():
            self._record("card_discarded", {"index": event.index, "card": str(event.card),
                                            "state": self.state.value,
                                            "ruling": "631a.3(b), 631a.10(d): no round is in "
                                            "play; the card is discarded"},
                         severity="warning", device=event.device)
            self.announce("discard", card=str(event.card))

    # --- settlement ------------------------------------------------------------------------

    def _settle_point(self, point: SettlementPoint) -> None:
        settlements = [_settlement_json(s, self.vig_collection)
                       for s in self.rules.settle(point, self.wagers, self.coup)]
        if settlements:
            self._record("settled_" + point.value.replace("-", "_"), {"settlements": settlements})
            self.round_settlements.extend(settlements)

    def _finish_round(self) -> None:
        """631a.12: announce the result, collect losers, pay winners highest seat first."""
        summary = self.rules.result_summary(self.coup)
        self.announce_result()
        self._settle_point(SettlementPoint.END_OF_ROUND)
        settlements = list(self.round_settlements)
        assert self.round_id is not None
        self.store.close_round(self.round_id, "settled", summary, settlements)
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
        self.round_settlements = []
        self.coup = None
        self.progressive_seats = frozenset()
        finished_round = self.round_id
        self.round_id = None
        # The "one more hand" of 631a.10(d) is a live hand, never a simulated one.
        if self.shoe.cover_card_seen and not was_simulated and (
                self.shoe.last_hand_announced or self.rules.reshuffles_at_cover_card):
            if self.batches is not None:
                self.batches.shoe_collected()  # shoe and discard rack emptied (681a.3(b)(5))
            self.shoe_finished()
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

    def _announce_award(self, award: Any) -> None:
        """631c.6(c)(5): the win light is on; a floor supervisor validates before payment."""
        self._show_leds({award.seat: LedState.WON})
        self.announce("jackpot", award_id=award.award_id, seat=award.seat,
                      progressive=award.progressive, level=award.level,
                      amount_cents=award.amount_cents,
                      detail="verify the win light, then a floor supervisor validates "
                             "(tablectl jackpot validate)")

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

    def _void_round(self, reason: str) -> None:
        """631a.15(e): the round is void and every wager is returned."""
        assert self.round_id is not None
        settlements = [{"seat": w["seat"], "wager": w["wager"], "amount_cents": w["amount_cents"],
                        "outcome": "void", "win_cents": 0, "vigorish_cents": 0, "net_cents": 0,
                        "label": "void: wager returned", "section": "631a.15(e)"}
                       for w in self.wagers]
        self.store.close_round(self.round_id, "void", {"reason": reason}, settlements)
        if self.progressive is not None and not self.simulated:
            returned = self.progressive.on_round_void(self.round_id, reason)
            if returned:
                self._record("progressive_wagers_returned",
                             {"seats": [{"seat": seat, "cents": cents}
                                        for seat, cents in returned]})
        self._record("round_void", {"reason": reason, "settlements": settlements},
                     severity="warning")
        self.wagers, self.coup, self.round_id = [], None, None
        if self.batches is not None:
            self.batches.shoe_collected()
        self.void_round()
        self.announce("shoe_complete", detail=f"round void ({reason}); replace the decks")

    # --- shoe lifecycle -----------------------------------------------------------------------

    # --- two-batch alternation (681a.3(b)) -------------------------------------------------

    def _shuffler_holds(self, back: BackColour | None) -> Any:
        """The shuffler says which batch it holds: a batch the dealer just put in, or a check."""
        assert self.batches is not None
        if (back is not None and self.batches.in_shuffler is None
                and self.batches.place(back) is BatchPlace.OUT):
            return self.batches.shuffler_loaded(back)
        return self.batches.shuffler_reports(back)

    @staticmethod
    def _batch_call(step: Callable[..., Any], *args: Any) -> Any:
        try:
            return step(*args)
        except BatchError as exc:  # a colour that is neither of the table's batches
            return BatchFault("batch-unknown-colour", str(exc), "one of the table's two batches",
                              "Stop: cards of another batch are at the table; call a floorperson.")

    def _card_from_batch_in_play(self, event: CardDrawn) -> bool:
        """681a.3(b): the card's back must be the batch in play. One check, not two: the
        two-batch tracker when the table has one, else the colour the shoe was loaded with."""
        if self.batches is not None:
            # Not persisted here: the card's own step persists the tracker with the card.
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

    def _track_batch(self, device: str, step: Callable[..., Any], *args: Any,
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

    def mark_out_of_order(self, reason: str) -> None:
        with self.store.transaction():
            self.out_of_order_reason = reason
            self._record("out_of_order", {"reason": reason}, severity="critical")
            self.integrity_failed()


class CommandRefused(Exception):
    """A control command that the table's state or the rules do not allow."""


def _colour(back: BackColour | None) -> str | None:
    return back.name.lower() if back is not None else None


def _colour_from(name: str | None) -> BackColour | None:
    return BackColour[name.upper()] if name else None


def _card_json(event: CardDrawn) -> dict[str, Any]:
    return {"device": event.device, "index": event.index, "card": str(event.card),
            "back": event.back.value, "face_up": event.face_up}


def _card_from_json(data: Mapping[str, Any]) -> CardDrawn:
    return CardDrawn(data["device"], data["index"], Card.parse(data["card"]),
                     BackColour(data["back"]), data["face_up"])


def _settlement_json(s: Settlement, vig_collection: str) -> dict[str, Any]:
    marked = s.vigorish_cents if vig_collection == "marked" else 0
    return {
        "seat": s.seat, "wager": s.wager, "amount_cents": s.amount_cents,
        "outcome": s.outcome.value, "odds": str(s.odds), "win_cents": s.win_cents,
        "vigorish_cents": s.vigorish_cents, "vig_marked_cents": marked,
        # With marked vigorish (631a.13(d)(2)) the seat keeps the full win until collection.
        "net_cents": s.net_cents + marked if s.outcome is Outcome.WIN else s.net_cents,
        "label": s.label, "section": s.section,
    }
