"""The progressive meter display and the seats' win lights on a serial link
(``drivers.protocols.ProgressiveDisplay``).

The controller's calls never block: ``show_meters``, ``win_light`` and
``show_prompt`` record what the display should show and wake a background
sender, which sends only what differs from what the display has acknowledged.
After a reconnect everything is sent again (the display may have rebooted), so
the host is the single source of truth, as Klipper's host is for its MCUs.

631c.6(c)(5): the dealer verifies the win light before paying a Must-Hit-By
Mystery bonus. ``win_light_confirmed(seat)`` is True only once the display has
acknowledged the light's current state, and a failed lamp is a ``DeviceFault``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import structlog

from drivers.errors import DisplayError
from drivers.link_device import COMMON_FAULT_ACTIONS, LinkedDevice, host_hello
from drivers.protocols import LinkState
from drivers.reconnect import ReconnectPolicy
from firmware_bridge import messages as wire
from firmware_bridge.errors import BridgeError

log = structlog.get_logger()

WIN_LIGHT_SEATS = range(1, 15)
"""631a.2(a): seats are numbered 1 to 14 at most."""

DISPLAY_FAULT_ACTIONS: Mapping[wire.FaultCode, str] = {
    **COMMON_FAULT_ACTIONS,
    wire.FaultCode.DISPLAY_LAMP_FAILED:
        "A win light or meter lamp failed: 631c.6(c)(5) payouts need the light; a floorperson "
        "verifies the win another way before paying, and the lamp is replaced.",
}


class SerialDisplay(LinkedDevice):
    """Progressive meter display and win lights on a serial port."""

    kind = "display"
    device_kind = wire.DeviceKind.DISPLAY
    fault_actions = DISPLAY_FAULT_ACTIONS

    def __init__(self, name: str, url: str, *, baudrate: int = 115200,
                 reconnect: ReconnectPolicy | None = None,
                 firmware_versions: Collection[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(name, url, reconnect=reconnect, firmware_versions=firmware_versions,
                         clock=clock)
        self.url = url
        self.baudrate = baudrate
        # Desired state (any thread writes, under _lock) and what the display acknowledged.
        self._lock = threading.Lock()
        self._want_meters: dict[str, int] = {}
        self._want_lights: dict[int, bool] = {}
        self._want_prompt: str | None = None
        self._shown_meters: dict[str, int] = {}
        self._shown_lights: dict[int, bool] = {}
        self._shown_prompt: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._dirty: asyncio.Event | None = None
        self._sender: asyncio.Task[None] | None = None
        self._synced: asyncio.Event | None = None

    # --- ProgressiveDisplay (never blocks) -----------------------------------------

    def show_meters(self, meters_cents: Mapping[str, int]) -> None:
        """Show these meters (name -> integer cents); other meters keep their last amount."""
        for level, cents in meters_cents.items():
            if not isinstance(cents, int) or isinstance(cents, bool) or cents < 0:
                raise DisplayError(f"meter {level!r} = {cents!r}: must be a non-negative int of cents")
        with self._lock:
            self._want_meters.update(meters_cents)
        self._wake()

    def win_light(self, seat: int, on: bool) -> None:
        """Switch a seat's win light (631c.6(c)(5))."""
        if seat not in WIN_LIGHT_SEATS:
            raise DisplayError(f"win light seat {seat}: seats are 1..14 (631a.2(a))")
        with self._lock:
            self._want_lights[seat] = bool(on)
        self._wake()

    def show_prompt(self, text: str) -> None:
        """Show a prompt line for the dealer ("" clears it)."""
        with self._lock:
            self._want_prompt = text
        self._wake()

    def win_light_confirmed(self, seat: int) -> bool:
        """True when the display acknowledged the seat's light in its current wanted state."""
        with self._lock:
            want = self._want_lights.get(seat, False)
            return self._state is LinkState.UP and self._shown_lights.get(seat) == want

    async def wait_synced(self, timeout: float) -> None:
        """Wait until the display shows everything asked so far (tests, diagnostics)."""
        async def until() -> None:
            while not self._in_sync():
                assert self._synced is not None
                self._synced.clear()
                await self._synced.wait()
        async with asyncio.timeout(timeout):  # not wait_for: see drivers/timers.py (3.11)
            await until()

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self, emit: Any) -> None:
        self._loop = asyncio.get_running_loop()
        self._dirty = asyncio.Event()
        self._synced = asyncio.Event()
        await super().start(emit)

    async def stop(self) -> None:
        await self._stop_sender()
        await super().stop()

    async def _open(self) -> Any:
        from firmware_bridge.aio import AsyncLink
        from firmware_bridge.link import Role

        return await AsyncLink.open_serial(self.url, Role.HOST, host_hello(), baudrate=self.baudrate,
                                           accept_peer=self._accept_peer)

    async def _on_up(self, link: Any) -> None:
        with self._lock:
            # The display may have restarted: nothing counts as shown until acknowledged again.
            self._shown_meters.clear()
            self._shown_lights.clear()
            self._shown_prompt = None
        await self._stop_sender()
        self._sender = asyncio.create_task(self._send_forever(link), name=f"{self.name}-sender")
        self._wake()

    async def _on_down(self, reason: str) -> None:
        await self._stop_sender()

    async def _on_message(self, message: wire.Message) -> None:
        self._counters["unexpected_messages"] += 1

    # --- the sender ------------------------------------------------------------------------

    def _wake(self) -> None:
        loop, dirty = self._loop, self._dirty
        if loop is None or dirty is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            dirty.set()
        else:
            with contextlib.suppress(RuntimeError):  # loop closed at shutdown
                loop.call_soon_threadsafe(dirty.set)

    def _in_sync(self) -> bool:
        with self._lock:
            return (self._state is LinkState.UP and self._want_meters == self._shown_meters
                    and all(self._shown_lights.get(s) == on for s, on in self._want_lights.items())
                    and (self._want_prompt is None or self._want_prompt == self._shown_prompt))

    def _next_message(self) -> tuple[wire.Message, Callable[[], None]] | None:
        with self._lock:
            # Win lights first: they gate a payout (631c.6(c)(5)); meters and prompt after.
            for seat, on in sorted(self._want_lights.items()):
                if self._shown_lights.get(seat) != on:
                    return wire.WinLight(seat, on), lambda s=seat, o=on: self._shown_lights.__setitem__(s, o)
            for level, cents in sorted(self._want_meters.items()):
                if self._shown_meters.get(level) != cents:
                    return (wire.ShowMeter(level, cents),
                            lambda lv=level, c=cents: self._shown_meters.__setitem__(lv, c))
            if self._want_prompt is not None and self._want_prompt != self._shown_prompt:
                text = self._want_prompt
                return wire.ShowPrompt(text), lambda t=text: setattr(self, "_shown_prompt", t)
        return None

    async def _send_forever(self, link: Any) -> None:
        assert self._dirty is not None and self._synced is not None
        while True:
            item = self._next_message()
            if item is None:
                self._synced.set()
                self._dirty.clear()
                if self._next_message() is None:
                    await self._dirty.wait()
                continue
            message, mark_shown = item
            try:
                await link.send(message)
            except BridgeError as exc:
                # The connection task sees the link fail too and restarts us after the reconnect.
                log.info("display send failed", device=self.name, error=str(exc))
                return
            with self._lock:
                mark_shown()
            self._counters["sent"] += 1

    async def _stop_sender(self) -> None:
        task, self._sender = self._sender, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
