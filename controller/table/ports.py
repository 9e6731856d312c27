"""What the table needs from the world outside it, as Protocols (no `Any` at these seams).

The daemon hands the table the real objects (the seat panel's methods, the
progressive system, the store); the tests hand it stand-ins that satisfy the
same Protocols. `Ports` holds them, once, for the table and every collaborator:
the daemon swaps the store for an empty one when the store fails, and every
part then writes to the new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from controller.memory.store import Store
from drivers.protocols import LedState, LockedOut

if TYPE_CHECKING:
    from controller.events.records import SettledWager
    from controller.progressive.core import Acceptance
    from controller.progressive.ledger import Award
    from controller.rules.wager import RoundView

# Tell the dealer what to do next: the prompt's action (its details reach the displays with
# the prompt's event in the log).
Announce = Callable[[str], None]
LockSeats = Callable[[str], LockedOut]  # lock every seat now; returns what the sensors held
OpenSeats = Callable[[frozenset[int]], None]  # unlock; these seats may take progressive wagers
SetLed = Callable[[int, LedState], None]


class Progressive(Protocol):
    """The table's view of `controller.progressive.system.ProgressiveSystem`."""

    def open_betting(self) -> dict[int, LedState]: ...

    def on_lock(self, locked: LockedOut, base_wagers: Sequence[Mapping[str, Any]],
                round_id: int) -> Acceptance: ...

    def on_round_result(self, round_id: int, round_view: RoundView,
                        settlements: Sequence[SettledWager]) -> Iterable[Award]: ...

    def on_round_void(self, round_id: int, reason: str) -> list[tuple[int, int]]: ...

    def pending_awards(self) -> list[Award]: ...

    def validate_award(self, award_id: int, supervisor: str) -> Award: ...


@dataclass
class Ports:
    """The store and the devices the table acts through; None where the table has none."""

    store: Store
    announce: Announce | None = None
    lock_seats: LockSeats | None = None
    open_seats: OpenSeats | None = None
    set_led: SetLed | None = None
    progressive: Progressive | None = None  # progressive.system.ProgressiveSystem, if offered

    def show_leds(self, leds: Mapping[int, LedState]) -> None:
        if self.set_led is not None:
            for seat, led in leds.items():
                self.set_led(seat, led)
