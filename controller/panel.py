"""What the daemon sends the table's display: the dealer's prompts, the win lights and the
progressive meters (drivers/display.py drives the device; this decides what to send)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from drivers.protocols import ProgressiveDisplay

if TYPE_CHECKING:
    from controller.progressive.system import ProgressiveSystem

LINKED_SYNC_S = 2.0  # a pit display lagging a hit at another table by 2 s is acceptable


class Panel:
    def __init__(self, display: ProgressiveDisplay | None) -> None:
        self._display = display
        self._shown_meters: dict[str, int] = {}

    def prompt(self, action: str) -> None:
        if self._display is not None:
            self._display.show_prompt(action.replace("_", " "))

    def win_light(self, seat: int, on: bool) -> None:
        """631c.6(c)(5): the light the dealer verifies before a progressive is paid."""
        if self._display is not None:
            self._display.win_light(seat, on)

    def meters(self, progressive: ProgressiveSystem | None) -> None:
        """The meters' amounts, sent only when they changed."""
        if progressive is None:
            return
        amounts = dict(progressive.display_amounts())
        if amounts != self._shown_meters and self._display is not None:
            self._display.show_meters(amounts)
        self._shown_meters = amounts

    async def follow_linked(self, progressive: ProgressiveSystem) -> None:
        """Linked progressives (605a.8): flush the outbox and follow the shared meter."""
        while True:
            await progressive.sync_async()
            self.meters(progressive)
            await asyncio.sleep(LINKED_SYNC_S)
