"""The seat panel's side of a round: sensors and LEDs armed for betting, the win light.

631c.2(d)(2), 627b.6(d)(2): a seat takes a progressive wager only while its sensor
is armed; 631c.6(c)(5): a progressive award lights the seat's win light for the
dealer to verify before a floor supervisor validates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from controller.events import records as ev
from controller.table.journal import Journal
from controller.table.ports import Ports
from drivers.protocols import LedState

if TYPE_CHECKING:
    from controller.progressive.ledger import Award


class Seating:
    """Arms the seats when betting opens and lights a progressive award's seat."""

    def __init__(self, ports: Ports, journal: Journal) -> None:
        self._ports = ports
        self._journal = journal

    def arm(self) -> None:
        """Unlock the seat sensors and the lock-out button for a new round.

        Seats whose progressive is unavailable (e.g. a linked meter offline) stay
        locked with their LED saying so.
        """
        leds: Mapping[int, LedState] = {}
        allowed: frozenset[int] = frozenset()  # none unless a progressive wager is offered
        if self._ports.progressive is not None:
            leds = self._ports.progressive.open_betting()
            allowed = frozenset(seat for seat, led in leds.items() if led is LedState.AWAITING)
        if self._ports.open_seats is not None:
            self._ports.open_seats(allowed)
        self._ports.show_leds({seat: led for seat, led in leds.items()
                               if led is not LedState.AWAITING})

    def announce_award(self, award: Award) -> None:
        """631c.6(c)(5): the win light is on; a floor supervisor validates before payment."""
        self._ports.show_leds({award.seat: LedState.WON})
        self._journal.announce(ev.Prompt(
            "jackpot", award_id=award.award_id, seat=award.seat, progressive=award.progressive,
            level=award.level, amount_cents=award.amount_cents,
            detail="verify the win light, then a floor supervisor validates "
                   "(tablectl jackpot validate)"))
