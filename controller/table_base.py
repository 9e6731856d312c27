"""What every part of the table shares: its saved state, its collaborators, its record.

`Table` (controller/table.py) is assembled from `RoundPlay` (cards and rounds,
controller/table_rounds.py) and `BatchChecks` (681a.3(b), controller/table_batches.py),
both built on this base. The saved state is a `TableSnapshot`: the table is one,
plus the collaborators it applies decisions through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from controller import logsetup
from controller.rules.game import Coup
from controller.memory.store import GROUPED_KINDS, Store
from controller.table_machine import TableState
from controller.table_ports import Announce, LockSeats, OpenSeats, Progressive, SetLed
from controller.table_rules import RulesAdapter
from controller.table_snapshot import TableSnapshot
from drivers.protocols import DeviceFault, LedState, LockedOut

if TYPE_CHECKING:
    from cards import BackColour
    from drivers.protocols import CardDrawn

log = structlog.get_logger("table")


class CommandRefused(Exception):
    """A control command that the table's state or the rules do not allow."""


class TableBase(TableSnapshot):
    """The saved fields (inherited from `TableSnapshot`) and the collaborators."""

    # A table is one object with an identity, not a value: the dataclass's field-wise
    # equality (which would also make it unhashable) does not apply to it.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    state: TableState  # set by transitions
    table_id: str
    seats: int
    rules: RulesAdapter
    store: Store
    progressive: Progressive | None
    vig_collection: str
    coup: Coup | None
    progressive_seats_allowed: frozenset[int]
    _announce_hook: Announce | None
    _lock_seats: LockSeats | None
    _open_seats: OpenSeats | None
    _set_led: SetLed | None

    if TYPE_CHECKING:  # the triggers transitions adds to the model (controller.table_machine)
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
        def card_withdrawn(self) -> bool: ...
        def device_failed(self) -> bool: ...
        def close_table(self) -> bool: ...
        def integrity_failed(self) -> bool: ...
        def device_recovered(self) -> bool: ...

        # Defined by the parts the table is assembled from.
        def _on_fault(self, fault: DeviceFault) -> None: ...
        def _on_locked(self, locked: LockedOut | None, cause: str) -> None: ...
        def _card_from_batch_in_play(self, event: CardDrawn) -> bool: ...
        def _void_round(self, reason: str, section: str = "631a.15(e)") -> None: ...
        def _shuffle_verified(self, back: BackColour) -> None: ...
        def _on_fault_cleared(self, device: str, code: str | None) -> None: ...

    def snapshot(self) -> TableSnapshot:
        return TableSnapshot(**{name: getattr(self, name) for name in TableSnapshot.names()})

    def _persist_state(self) -> None:
        # Once per step, as the step leaves the table (a card asks for it, and so does each
        # state change the card causes); at once when no step is open.
        self.store.before_commit("table_state", self._save_state_now)

    def _save_state_now(self) -> None:
        # The table is a TableSnapshot: its fields are saved as they stand, without first
        # copying them into a new snapshot (this runs at every card).
        self.store.save_table_state(self.state.value, TableSnapshot.to_json(self))

    def _record(self, kind: str, payload: Mapping[str, Any] | None = None, *,
                severity: str = "info", device: str | None = None) -> None:
        self.store.append_event(kind, payload, severity=severity, device=device,
                                round_id=self.round_id)
        # Cards, prompts and sensor/shuffler progress are in the store's log; the journal
        # gets them at debug level only (a shoe is ~900 of them, each a journald write on
        # the Pi), and everything else at its severity.
        level = ("warning" if severity == "warning" else
                 "error" if severity in ("error", "critical") else
                 "debug" if kind in GROUPED_KINDS else "info")
        if level == "debug" and not logsetup.debug_enabled:
            return  # the line would be dropped: it is not built
        # structlog reserves "event" for the message itself.
        fields = {("event_" if key == "event" else key): value
                  for key, value in (payload or {}).items()}
        getattr(log, level)(kind, **fields)

    def announce(self, action: str, **detail: Any) -> None:
        """Tell the dealer what the rules require next (recorded, and shown on the display)."""
        self._record("prompt", {"action": action, **detail})
        if self._announce_hook is not None:
            self._announce_hook(action, detail)

    def _show_leds(self, leds: Mapping[int, LedState]) -> None:
        if self._set_led is not None:
            for seat, led in leds.items():
                self._set_led(seat, led)
