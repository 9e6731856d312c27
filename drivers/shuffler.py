"""The automated two-batch card shuffler on USB (``drivers.protocols.Shuffler``).

Found with pyusb by vendor/product id on the backend the configuration names
(``""``: pyusb's default, libusb; ``"module:attr"``: a backend object or a
zero-argument factory, e.g. ``hil.usb_shuffler:get_backend``), spoken to with
firmware_bridge as HOST over its bulk endpoints.

``shuffle(back, expected_cards)`` starts a shuffle; the result arrives as
``ShuffleProgress`` and ``ShuffleComplete`` events. A batch that does not count
out exactly (missing, extra or duplicate cards) is a ``DeviceFault``, and so is
a jam or a cycle that does not complete, reported by the shuffler, detected by
this driver's cycle timeout, or cut short by the link failing (681a.9(c): the
cards are reshuffled). ``BatchHeld`` says which batch (back colour) it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from cards import BackColour
from drivers import protocols as events
from drivers.errors import DriverConfigError, ShufflerBusyError, ShufflerNotConnectedError
from drivers.link_device import COMMON_FAULT_ACTIONS, LinkedDevice, host_hello
from drivers.reconnect import ReconnectPolicy
from drivers.timers import Deadline, Schedule, loop_schedule
from firmware_bridge import messages as wire

log = structlog.get_logger()

SHUFFLE_STALL_TIMEOUT_S = 30.0
"""No progress for this long during a shuffle = the cycle did not complete (681a.9(c)).
The shuffler reports progress every deck (~5 s on real mechanisms); six missed reports."""

_REDO = "681a.9(c): the batch must be reshuffled."
SHUFFLER_FAULT_ACTIONS: Mapping[wire.FaultCode, str] = {
    **COMMON_FAULT_ACTIONS,
    wire.FaultCode.SHUFFLER_JAM: f"Clear the jam in the shuffler. {_REDO}",
    wire.FaultCode.SHUFFLER_MISCOUNT:
        "Do not deal this batch: count it by hand, replace missing or foreign cards, reshuffle.",
    wire.FaultCode.SHUFFLER_CYCLE_INCOMPLETE: f"The shuffle did not complete its cycle. {_REDO}",
    wire.FaultCode.SHUFFLER_DOOR_OPEN: "Close the shuffler's door.",
    wire.FaultCode.SHUFFLER_BATCH_MISSING:
        "The batch to shuffle is not in the shuffler: load the right batch (681a.3(b)).",
}


@dataclass(frozen=True, eq=False)
class ShuffleJob:
    """One shuffle request; compared by identity, so a timer for an earlier job never
    matches a later one asking for the same batch."""

    back: BackColour
    expected_cards: int


def resolve_backend(spec: str) -> Any:
    """The pyusb backend named by ``[shuffler] backend``: None for pyusb's default."""
    if not spec:
        return None
    import importlib

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise DriverConfigError(
            f"shuffler.backend = {spec!r}: expected '' (libusb) or an import path 'module:attr'")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise DriverConfigError(f"shuffler.backend = {spec!r}: cannot import it ({exc})") from exc
    import usb.backend

    if isinstance(target, usb.backend.IBackend):
        return target
    if callable(target):
        made = target()
        if isinstance(made, usb.backend.IBackend):
            return made
        raise DriverConfigError(f"shuffler.backend = {spec!r}: {attr}() returned {made!r}, "
                                "not a pyusb backend")
    raise DriverConfigError(f"shuffler.backend = {spec!r}: {target!r} is not a pyusb backend")


class UsbShuffler(LinkedDevice):
    """Two-batch card shuffler on USB; events go to the ``emit`` given to ``start()``."""

    kind = "shuffler"
    device_kind = wire.DeviceKind.SHUFFLER
    fault_actions = SHUFFLER_FAULT_ACTIONS

    def __init__(self, name: str, vendor_id: int, product_id: int, *, backend: str = "",
                 reconnect: ReconnectPolicy | None = None,
                 firmware_versions: Collection[str] | None = None,
                 stall_timeout_s: float = SHUFFLE_STALL_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic,
                 schedule: Schedule = loop_schedule) -> None:
        """``backend``: "" for pyusb's default or "module:attr" (a backend or a factory of one).
        ``schedule``: how the stall deadline is timed (tests pass a fake clock's)."""
        for key, value in (("vendor_id", vendor_id), ("product_id", product_id)):
            if not 0 <= value <= 0xFFFF:
                raise DriverConfigError(f"shuffler.{key} = {value:#x}: must be 0x0000..0xFFFF")
        super().__init__(name, f"usb:{vendor_id:04x}:{product_id:04x}", reconnect=reconnect,
                         firmware_versions=firmware_versions, clock=clock)
        self.vendor_id, self.product_id = vendor_id, product_id
        self._backend_spec = backend
        self._backend = resolve_backend(backend)  # a bad import path fails at configuration time
        self._stall_timeout_s = stall_timeout_s
        self._held: BackColour | None = None
        self._held_known = False
        self._job: ShuffleJob | None = None
        # 681a.9(c): no progress for this long = the cycle did not complete. A timer object,
        # not a task: it is cancelled before _finish_job returns, on every Python (see
        # drivers/timers.py for the 3.11 wait_for bug that made the old task outlive its job).
        self._stall = Deadline[ShuffleJob](stall_timeout_s, self._on_stall, schedule=schedule)
        self._usb_device: Any = None

    # --- what the controller uses ---------------------------------------------------

    async def shuffle(self, back: BackColour, expected_cards: int) -> None:
        """Ask for a shuffle of the batch with this back colour; returns once the shuffler
        acknowledged the request. The result arrives as events."""
        if self._job is not None:
            raise ShufflerBusyError(
                f"{self.name}: still shuffling the {self._job.back.name} batch; wait for its result")
        job = self._job = ShuffleJob(BackColour(back), expected_cards)
        try:
            await self._send(wire.StartShuffle(int(back), expected_cards), ShufflerNotConnectedError)
        except BaseException:
            if self._job is job:
                self._job = None
            raise
        self._counters["shuffles_started"] += 1
        if self._job is job:  # a very fast shuffler may have finished already
            self._stall.arm(job)

    @property
    def held_batch(self) -> BackColour | None:
        """The batch the shuffler last said it holds (None: empty or not yet known)."""
        return self._held

    @property
    def shuffling(self) -> BackColour | None:
        """The batch being shuffled now, if any."""
        return self._job.back if self._job else None

    # --- link hooks -----------------------------------------------------------------

    async def _open(self) -> Any:
        import usb.core
        import usb.util

        from firmware_bridge.aio import AsyncLink
        from firmware_bridge.link import Role

        device = await asyncio.to_thread(usb.core.find, idVendor=self.vendor_id,
                                         idProduct=self.product_id, backend=self._backend)
        if device is None:
            raise FileNotFoundError(
                f"no USB device {self.vendor_id:04x}:{self.product_id:04x} on the bus")
        self._usb_device = device
        return await _over_usb(AsyncLink, device, Role.HOST, host_hello(), self._accept_peer)

    async def _close_link(self) -> None:
        await super()._close_link()
        device, self._usb_device = self._usb_device, None
        if device is not None:
            import usb.util

            # Release the claimed interface and the libusb handle, or the next attempt after a
            # replug could find the interface still busy.
            with contextlib.suppress(Exception):
                await asyncio.to_thread(usb.util.dispose_resources, device)

    async def _on_message(self, message: wire.Message) -> None:
        if isinstance(message, wire.ShuffleProgress):
            self._stall.extend()
            self._send_event(events.ShuffleProgress(self.name, message.cards_counted,
                                                    message.cards_expected))
        elif isinstance(message, wire.ShuffleComplete):
            self._finish_job()
            self._on_complete(message)
        elif isinstance(message, wire.BatchStatus):
            held = None if message.held_back_colour == wire.NO_BACK_COLOUR else BackColour(
                message.held_back_colour)
            if not self._held_known or held != self._held:
                self._held, self._held_known = held, True
                self._send_event(events.BatchHeld(self.name, held))
        else:
            self._counters["unexpected_messages"] += 1

    async def _dispatch(self, message: wire.Message) -> None:
        if isinstance(message, wire.Fault) and message.code in (
                wire.FaultCode.SHUFFLER_JAM, wire.FaultCode.SHUFFLER_CYCLE_INCOMPLETE,
                wire.FaultCode.SHUFFLER_BATCH_MISSING):
            self._finish_job()  # the shuffle is over, unsuccessfully
        await super()._dispatch(message)

    async def _on_down(self, reason: str) -> None:
        if self._job is not None:
            back = self._job.back
            self._finish_job()
            self._fault("shuffler_cycle_incomplete",
                        f"the link failed while the {back.name} batch was being shuffled: {reason}",
                        SHUFFLER_FAULT_ACTIONS[wire.FaultCode.SHUFFLER_CYCLE_INCOMPLETE])

    async def stop(self) -> None:
        self._finish_job()  # no result will be read any more: the job ends with the driver
        await super().stop()

    # --- internals ---------------------------------------------------------------------

    def _on_complete(self, message: wire.ShuffleComplete) -> None:
        back = BackColour(message.back_colour)
        event = events.ShuffleComplete(self.name, back, message.cards_counted, message.missing,
                                       message.extra, message.duplicates)
        self._counters["shuffles_completed"] += 1
        self._send_event(event)
        if not event.verified:
            self._counters["miscounts"] += 1
            self._fault("shuffler_miscount",
                        f"{back.name} batch: {message.cards_counted} cards counted, "
                        f"{message.missing} missing, {message.extra} extra, "
                        f"{message.duplicates} duplicate",
                        SHUFFLER_FAULT_ACTIONS[wire.FaultCode.SHUFFLER_MISCOUNT])
        else:
            self._clear("shuffler_miscount")
            self._clear("shuffler_cycle_incomplete")
            self._clear("shuffler_jam")

    def _finish_job(self) -> None:
        self._job = None
        self._stall.cancel()

    def _on_stall(self, job: ShuffleJob) -> None:
        if job is not self._job:
            return  # belt and braces: Deadline already drops callbacks of ended jobs
        self._job = None
        self._counters["stalls"] += 1
        self._fault("shuffler_cycle_incomplete",
                    f"no progress for {self._stall_timeout_s:g} s while shuffling the "
                    f"{job.back.name} batch",
                    SHUFFLER_FAULT_ACTIONS[wire.FaultCode.SHUFFLER_CYCLE_INCOMPLETE])


async def _over_usb(async_link: Any, device: Any, role: Any, hello: wire.Hello,
                    accept_peer: Callable[[wire.Hello], str | None]) -> Any:
    """Open the link on the device's bulk endpoints (configuration 1, interface 0)."""
    import usb.util

    def endpoints() -> tuple[Any, Any]:
        with contextlib.suppress(Exception):
            if device.is_kernel_driver_active(0):
                device.detach_kernel_driver(0)
        device.set_configuration()
        interface = device.get_active_configuration()[(0, 0)]
        ep_out = usb.util.find_descriptor(interface, custom_match=lambda e: usb.util.endpoint_direction(
            e.bEndpointAddress) == usb.util.ENDPOINT_OUT)
        ep_in = usb.util.find_descriptor(interface, custom_match=lambda e: usb.util.endpoint_direction(
            e.bEndpointAddress) == usb.util.ENDPOINT_IN)
        if ep_out is None or ep_in is None:
            raise FileNotFoundError("the shuffler's interface 0 has no bulk OUT/IN endpoint pair")
        return ep_out, ep_in

    ep_out, ep_in = await asyncio.to_thread(endpoints)
    return async_link.over_usb(device, ep_out=ep_out, ep_in=ep_in, role=role, hello=hello,
                               accept_peer=accept_peer)
