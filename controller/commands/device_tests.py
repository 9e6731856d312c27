"""The technician's device tests: a device's own self-test, and the light test a
technician watches (every seat LED, every win light)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from controller.commands.host import CommandHost
from controller.control import ControlError
from controller.events.system_records import LightTest
from controller.table.machine import TableState
from drivers.protocols import LedState, LinkState

LIGHT_TEST_STEP_S = 0.3  # long enough for a technician to see each seat light in turn
LIGHT_TEST_ALL_ON_S = 1.5
# In the order the refusal names them.
LIGHT_TEST_STATES = (TableState.CLOSED, TableState.END_OF_SHOE, TableState.DEVICE_FAULT,
                     TableState.OUT_OF_ORDER)


class DeviceTests:
    def __init__(self, daemon: CommandHost) -> None:
        self._daemon = daemon

    async def self_test(self, args: Mapping[str, Any]) -> Any:
        devices = self._daemon.devices
        device = devices.get(args["device"])
        if device is None:
            raise ControlError(f"no device {args['device']!r}; allowed: "
                               f"{', '.join(devices)}", "bad_request")
        result = await device.self_test()
        return {"device": result.device, "passed": result.passed, "detail": result.detail}

    async def light_test(self, args: Mapping[str, Any]) -> Any:
        """Each seat's LED, then its win light, in turn, slowly enough to watch; then all at
        once. Only outside a round, so no player reads a test pattern as a win."""
        daemon = self._daemon
        if daemon.table.state not in LIGHT_TEST_STATES:
            # Name the states that allow it: "no round in play" is true of the cut too, where
            # the test is still refused (the dealer is preparing the shoe at the table).
            allowed = ", ".join(state.value for state in LIGHT_TEST_STATES)
            raise ControlError(f"the light test runs only when the table is {allowed}; the "
                               f"table is {daemon.table.state.value}: run it at the end of the "
                               "shoe or with the table closed")
        seats, display = daemon.seats, daemon.display
        if seats is None and display is None:
            raise ControlError("this table has no seat LEDs or display configured")
        unlit = ""  # why the seat LEDs could not be driven: then the test cannot pass
        if seats is not None and (health := seats.health()).link is not LinkState.UP:
            unlit = f"seat LEDs not driven: GPIO not available: {health.last_error or 'stopped'}"
            if display is None:
                raise ControlError(f"{unlit}; fix the seats' wiring or gpio.pin_factory and "
                                   "restart the table service (docs/faults.md gpio_unavailable)")
            seats = None
        numbers = [w.seat for w in daemon.config.gpio.seats]
        before = {n: seats.led(n) for n in numbers} if seats is not None else {}
        try:
            for seat in numbers:
                if seats is not None:
                    seats.set_led(seat, LedState.WON)
                if display is not None:
                    display.win_light(seat, True)
                await asyncio.sleep(LIGHT_TEST_STEP_S)
                if display is not None:
                    display.win_light(seat, False)
                if seats is not None:
                    seats.set_led(seat, LedState.OFF)
            for seat in numbers:
                if seats is not None:
                    seats.set_led(seat, LedState.ACCEPTED)
            await asyncio.sleep(LIGHT_TEST_ALL_ON_S)
        finally:
            for seat, state in before.items():
                if seats is not None:
                    seats.set_led(seat, state)
        with daemon.store.transaction():
            daemon.store.append_event(LightTest(tuple(numbers), display is not None))
        if unlit:
            return {"device": "lights", "passed": False,
                    "detail": f"{unlit}; {len(numbers)} win lights chased one by one"}
        return {"device": "lights", "passed": True,
                "detail": f"{len(numbers)} seat LEDs chased one by one, then all lit"
                          + ("; win lights with them" if display is not None else "")}
