"""A simulated progressive meter display with win lights, on a pseudo-terminal.

The daemon opens ``SimulatedDisplay.port`` with pyserial (``[display] url``).
The simulator shows what it was told: ``meters`` (name -> cents), ``lights``
(seat -> on) and ``prompt``. Fault injection: ``lamp_failed(seat)``, and the
pty device's ``unplug()``/``replug()``/``garbage()``.
"""

from __future__ import annotations

from typing import Any

from firmware_bridge import messages as wire
from hil.pty_device import PtyDevice


class SimulatedDisplay(PtyDevice):
    """Meter display and win-light board on a pseudo-terminal."""

    device_kind = wire.DeviceKind.DISPLAY

    def __init__(self, *, serial_number: str = "SIM-DISP-0001",
                 firmware_version: str = "display-sim 1.0", protocol_version: int | None = None,
                 **link: Any) -> None:
        super().__init__(serial_number=serial_number, firmware_version=firmware_version,
                         protocol_version=protocol_version, name="display", **link)
        self.meters: dict[str, int] = {}
        self.lights: dict[int, bool] = {}
        self.prompt = ""
        self.failed_lamps: set[int] = set()

    async def on_message(self, message: wire.Message) -> None:
        if isinstance(message, wire.ShowMeter):
            self.meters[message.level] = message.amount_cents
        elif isinstance(message, wire.WinLight):
            self.lights[message.seat] = message.on
        elif isinstance(message, wire.ShowPrompt):
            self.prompt = message.text

    def lit(self, seat: int) -> bool:
        """What the dealer sees: the light is on and its lamp works (631c.6(c)(5))."""
        return self.lights.get(seat, False) and seat not in self.failed_lamps

    async def lamp_failed(self, seat: int) -> None:
        """Fault injection: the seat's win-light lamp draws no current."""
        self.failed_lamps.add(seat)
        await self.fault(wire.FaultCode.DISPLAY_LAMP_FAILED, f"win light of seat {seat} draws no current")

    async def lamp_replaced(self, seat: int) -> None:
        self.failed_lamps.discard(seat)
        if not self.failed_lamps:
            await self.clear_fault(wire.FaultCode.DISPLAY_LAMP_FAILED)
