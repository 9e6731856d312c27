"""A simulated two-batch card shuffler behind a pyusb backend of this project's own.

``SimulatedUsbBackend`` implements the ``usb.backend.IBackend`` methods pyusb
needs (enumeration, descriptors, open/close, configuration, interface claims,
bulk transfers, string descriptors through control transfers) for simulated
devices. The daemon is configured with::

    [shuffler]
    vendor_id = 0x1209
    product_id = 0x0001
    backend = "hil.usb_shuffler:get_backend"

and finds the device with ``usb.core.find(..., backend=get_backend())`` as it
would find the real one through libusb. The simulated shuffler speaks
firmware_bridge as DEVICE over its bulk endpoints (OUT 0x01, IN 0x81), from a
thread of its own, so it works under any caller (asyncio or not).

It holds the table's two batches of different back colours (681a.3(b)(2)) as
physical cards, counts and verifies a batch against the decks it should hold,
and has fault injection: ``jam_next``, ``incomplete_next``, ``stall_next``,
``remove_card`` / ``add_duplicate`` / ``add_foreign_card`` (missing, duplicate,
extra), ``set_door``, ``unplug`` / ``replug``. Tests reach the device through
``get_backend().devices`` or the ``SimulatedShuffler`` they ``add_shuffler()``-ed.
"""

from __future__ import annotations

import array
import collections
import contextlib
import errno
import os
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
import usb.backend
import usb.core

from cards import BackColour, Card, shoe_of
from firmware_bridge import messages as wire
from hil.os_threads import os_named
from firmware_bridge.link import LinkEndpoint, LinkUp, LinkDown, MessageReceived, PeerRefused, Role

log = structlog.get_logger()

SIM_VENDOR_ID = 0x1209
"""pid.codes, the open-source USB vendor id."""
SIM_PRODUCT_ID = 0x0001
"""pid.codes' test product id: never a real product, so the simulator cannot shadow one."""
EP_OUT, EP_IN = 0x01, 0x81
MAX_PACKET = 64
"""Full-speed bulk endpoint packet size (USB 2.0 5.8.3)."""
CARD_TIME_S = 0.0005
"""Simulated time to count one card; real shufflers take ~0.1 s, tests want a batch in ~0.2 s."""
PROGRESS_EVERY = 52
"""A ShuffleProgress per deck counted."""
DEVICE_TICK_S = 0.1
"""The device thread's longest sleep: a safety net only, since host writes, fault injection and
the link's own deadlines all wake it."""
CONTROL_LINE_MAX = 256
"""Longest control request line; the longest legal one is ~30 bytes."""
IN_BUFFER_LIMIT = 64 * 1024
"""Bytes queued for the host before the device drops output (a host that stopped reading)."""

_LANGID_EN_US = 0x0409
_GET_DESCRIPTOR = 0x06
_DESC_STRING = 0x03


def full_batch(back: BackColour, decks: int) -> list[tuple[Card, BackColour]]:
    """``decks`` complete decks with ``back`` backs."""
    return [(card, back) for card in shoe_of(decks)]


@dataclass
class _Plan:
    """What goes wrong in the next shuffle (fault injection)."""

    jam_after: int | None = None
    incomplete_after: int | None = None
    stall_after: int | None = None


@dataclass
class _Shuffle:
    back: BackColour
    expected: int
    counted: int = 0
    next_card_at: float = 0.0
    plan: _Plan = field(default_factory=_Plan)


class SimulatedShuffler:
    """One simulated shuffler: its batches, its USB identity and its firmware's link endpoint."""

    def __init__(self, vendor_id: int = SIM_VENDOR_ID, product_id: int = SIM_PRODUCT_ID, *,
                 batches: Mapping[BackColour, int] | None = None,
                 held: BackColour | None = BackColour.BLUE,
                 serial_number: str = "SIM-SHUF-0001", firmware_version: str = "shuffler-sim 1.0",
                 protocol_version: int | None = None, card_time_s: float = CARD_TIME_S,
                 bus: int = 1, address: int = 7, threaded: bool = True,
                 endpoint_factory: Callable[[wire.Hello], LinkEndpoint] | None = None) -> None:
        """``batches``: decks per back colour (default RED and BLUE, 8 decks each); ``held``:
        the batch inside the shuffler at power-up.  ``threaded=False`` runs no device thread:
        the caller drives the firmware with ``step(now)`` on its own (e.g. simulated) clock,
        as the conformance suite does.  ``endpoint_factory`` builds the firmware's link
        endpoint from its Hello (a deliberately broken one, hil.misbehaviour)."""
        self.vendor_id, self.product_id = vendor_id, product_id
        self.serial_number, self.firmware_version = serial_number, firmware_version
        self.protocol_version = wire.PROTOCOL_VERSION if protocol_version is None else protocol_version
        self.card_time_s = card_time_s
        self.bus, self.address = bus, address
        self._endpoint_factory = endpoint_factory
        decks = dict(batches or {BackColour.RED: 8, BackColour.BLUE: 8})
        self.decks = decks
        # The physical cards of each batch; the shuffler holds at most one of them.
        self.cards: dict[BackColour, list[tuple[Card, BackColour]]] = {
            back: full_batch(back, n) for back, n in decks.items()}
        self.held = held
        self.plugged = True
        self.active_faults: dict[wire.FaultCode, str] = {}
        self.received: list[wire.Message] = []
        self.handshakes = 0
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._to_device = bytearray()
        self._to_host = bytearray()
        self._endpoint = self._new_endpoint()
        self._up = False
        self._outbox: collections.deque[wire.Message] = collections.deque()
        self._shuffle: _Shuffle | None = None
        self._plan = _Plan()
        self._stopping = False
        self._claimed_by: Any = None
        self._thread = threading.Thread(target=os_named("sim-shuffler", self._run),
                                        name=f"sim-shuffler-{serial_number}", daemon=True)
        if threaded:
            self._thread.start()

    # --- the dealer and the technician ------------------------------------------------

    def insert_batch(self, back: BackColour) -> None:
        """The dealer puts the batch with this back colour into the shuffler."""
        with self._lock:
            self.held = BackColour(back)
            self._post(wire.BatchStatus(int(back)))

    def remove_batch(self) -> BackColour | None:
        """The dealer takes the (shuffled) batch out, e.g. into the shoe."""
        with self._lock:
            held, self.held = self.held, None
            self._post(wire.BatchStatus(wire.NO_BACK_COLOUR))
            return held

    def remove_card(self, back: BackColour, count: int = 1) -> None:
        """Fault injection: ``count`` cards of the batch go missing."""
        with self._lock:
            del self.cards[back][:count]

    def add_duplicate(self, back: BackColour, count: int = 1) -> None:
        """Fault injection: a card of the batch appears twice."""
        with self._lock:
            self.cards[back].extend(self.cards[back][:count])

    def add_foreign_card(self, back: BackColour, foreign_back: BackColour, count: int = 1) -> None:
        """Fault injection: a card of another batch (different back) is mixed into this one."""
        with self._lock:
            self.cards[back].extend((card, foreign_back) for card in shoe_of(1)[:count])

    def restore_batch(self, back: BackColour) -> None:
        """The technician replaces the batch with complete decks."""
        with self._lock:
            self.cards[back] = full_batch(back, self.decks[back])

    def jam_next(self, after_cards: int = 100) -> None:
        """Fault injection: the next shuffle jams after this many cards (681a.9(c))."""
        with self._lock:
            self._plan.jam_after = after_cards

    def incomplete_next(self, after_cards: int = 100) -> None:
        """Fault injection: the next shuffle stops without finishing its cycle (681a.9(c))."""
        with self._lock:
            self._plan.incomplete_after = after_cards

    def stall_next(self, after_cards: int = 100) -> None:
        """Fault injection: the next shuffle silently stops (the driver's cycle timeout notices)."""
        with self._lock:
            self._plan.stall_after = after_cards

    def clear_jam(self) -> None:
        with self._lock:
            self._clear_fault(wire.FaultCode.SHUFFLER_JAM)

    def set_door(self, open_: bool) -> None:
        with self._lock:
            if open_:
                self._set_fault(wire.FaultCode.SHUFFLER_DOOR_OPEN, "door opened")
            else:
                self._clear_fault(wire.FaultCode.SHUFFLER_DOOR_OPEN)

    def unplug(self) -> None:
        """Fault injection: the USB cable is pulled (transfers fail with ENODEV, not enumerated)."""
        with self._lock:
            self.plugged = False
            self._up = False
            self._shuffle = None  # the mechanism stops with the power
            self._to_device.clear()
            self._to_host.clear()
            self._wake.notify_all()

    def replug(self) -> None:
        """The cable is back: the firmware restarts (new link endpoint; the batch is still inside)."""
        with self._lock:
            self._endpoint = self._new_endpoint()
            self._claimed_by = None  # a fresh enumeration; stale handles are dead
            self.plugged = True
            self._wake.notify_all()

    def restart_firmware(self) -> None:
        """Fault injection: the firmware's watchdog resets it; USB stays enumerated (no replug),
        so the host's old handle is still open when its link goes down."""
        with self._lock:
            self._endpoint = self._new_endpoint()
            self._endpoint.connect(time.monotonic())  # a restarted firmware starts a session
            self._up = False
            self._shuffle = None
            self._wake.notify_all()

    def close(self) -> None:
        """Stop the device thread."""
        with self._lock:
            self._stopping = True
            self._wake.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    @property
    def host_connected(self) -> bool:
        return self._up

    @property
    def shuffling(self) -> bool:
        return self._shuffle is not None

    @property
    def link_counters(self) -> dict[str, int]:
        return self._endpoint.counters.as_dict()

    def wait_host(self, timeout: float = 30.0) -> None:
        """Block until the host has connected (for tests outside the host's event loop)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self._up:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no host connected to {self.serial_number} within {timeout} s")
                self._wake.wait(left)

    # --- the USB side (called by the backend from the host's threads) ------------------

    def host_write(self, data: bytes) -> int:
        with self._lock:
            self._check_plugged()
            self._to_device += data
            self._wake.notify_all()
            return len(data)

    def host_read(self, size: int, timeout_s: float) -> bytes:
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                self._check_plugged()
                if self._to_host:
                    chunk = bytes(self._to_host[:size])
                    del self._to_host[:size]
                    return chunk
                left = deadline - time.monotonic()
                if left <= 0:
                    raise usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)
                self._wake.wait(left)

    def claim(self, handle: Any) -> None:
        """A host handle claims interface 0; a second live handle gets EBUSY, as with libusb."""
        with self._lock:
            self._check_plugged()
            if self._claimed_by is not None and self._claimed_by is not handle:
                raise usb.core.USBError("Resource busy: interface 0 is claimed by another handle",
                                        -6, errno.EBUSY)
            self._claimed_by = handle

    def release(self, handle: Any) -> None:
        with self._lock:
            if self._claimed_by is handle:
                self._claimed_by = None

    def _check_plugged(self) -> None:
        if not self.plugged:
            raise usb.core.USBError("No such device (it may have been disconnected)", -4, errno.ENODEV)

    # --- the firmware (device thread) ---------------------------------------------------

    def hello(self) -> wire.Hello:
        return wire.Hello(protocol_version=self.protocol_version,
                          device_kind=wire.DeviceKind.SHUFFLER, serial_number=self.serial_number,
                          firmware_version=self.firmware_version,
                          capabilities=wire.CAP_PROTOCOL_1_1)

    def _new_endpoint(self) -> LinkEndpoint:
        if self._endpoint_factory is not None:
            return self._endpoint_factory(self.hello())
        return LinkEndpoint(Role.DEVICE, self.hello())

    @property
    def endpoint(self) -> LinkEndpoint:
        """The firmware's link endpoint (the simulator's sans-I/O core)."""
        return self._endpoint

    def take_output(self) -> bytes:
        """Bytes the firmware queued for the host (unthreaded use: the caller is the host)."""
        with self._lock:
            out = bytes(self._to_host)
            self._to_host.clear()
            return out

    def next_deadline(self) -> float | None:
        """When ``step`` next has something to do (link timers, the next card counted)."""
        candidates = [t for t in (self._endpoint.next_deadline(), self._shuffle_due())
                      if t is not None]
        return min(candidates, default=None)

    def _shuffle_due(self) -> float | None:
        """When the shuffle next does something the host can see: the next card counted at
        which a progress report, the end or a planned fault falls. The cards between are
        counted then, all at once, at the times they were due (`_step_shuffle`): the same
        reports at the same instants as a wake-up a card, with one a deck (9 a batch, not
        416, each taking this process's GIL from the daemon's loop)."""
        job = self._shuffle
        if job is None:
            return None
        total = len(self.cards[job.back])
        marks = [total, (job.counted // PROGRESS_EVERY + 1) * PROGRESS_EVERY]
        marks += [mark for mark in (job.plan.jam_after, job.plan.incomplete_after,
                                    job.plan.stall_after) if mark is not None]
        ahead = min(mark for mark in marks if mark > job.counted) if any(
            mark > job.counted for mark in marks) else job.counted + 1
        return job.next_card_at + (ahead - job.counted - 1) * self.card_time_s

    def step(self, now: float) -> None:
        """Run the firmware once at ``now``: bytes from the host, timers, the mechanism, and
        the outbox; output goes to the host's side.  The device thread calls this in a loop."""
        with self._lock:
            endpoint = self._endpoint
            if self._to_device:
                data = bytes(self._to_device)
                self._to_device.clear()
                endpoint.receive(data, now)
            endpoint.poll(now)
            for event in endpoint.events():
                self._on_link_event(event, now)
            self._step_shuffle(now)
            if self._up:
                while self._outbox:
                    try:
                        endpoint.send(self._outbox[0], now)
                    except Exception:  # LinkBusyError: the window is full; next round
                        break
                    self._outbox.popleft()
            out = endpoint.outgoing()
            if out and len(self._to_host) + len(out) <= IN_BUFFER_LIMIT:
                self._to_host += out
                self._wake.notify_all()
            elif out:
                log.warning("simulated shuffler: host not reading, output dropped", bytes=len(out))

    def _post(self, message: wire.Message) -> None:
        self._outbox.append(message)
        self._wake.notify_all()

    def _set_fault(self, code: wire.FaultCode, detail: str) -> None:
        self.active_faults[code] = detail
        self._post(wire.Fault(code, detail))

    def _clear_fault(self, code: wire.FaultCode) -> None:
        if self.active_faults.pop(code, None) is not None:
            self._post(wire.FaultCleared(code))

    def _run(self) -> None:
        with self._lock:
            while not self._stopping:
                if not self.plugged:
                    self._wake.wait()
                    continue
                now = time.monotonic()
                self.step(now)
                waits = [DEVICE_TICK_S]
                deadline = self._endpoint.next_deadline()
                if deadline is not None:
                    waits.append(max(0.0, deadline - now))
                due = self._shuffle_due()
                if due is not None:
                    waits.append(max(0.0, due - now))
                if self._to_device or (self._outbox and self._up):
                    waits = [0.0]
                if waits and min(waits) > 0:
                    self._wake.wait(min(waits))

    def _on_link_event(self, event: Any, now: float) -> None:
        if isinstance(event, LinkUp):
            self._up = True
            self.handshakes += 1
            # After every handshake: the active faults, then which batch is held.
            for code, detail in self.active_faults.items():
                self._outbox.appendleft(wire.Fault(code, detail))
            self._outbox.append(wire.BatchStatus(
                wire.NO_BACK_COLOUR if self.held is None else int(self.held)))
            self._wake.notify_all()
        elif isinstance(event, LinkDown | PeerRefused):
            self._up = False
        elif isinstance(event, MessageReceived):
            self.received.append(event.message)
            self._on_message(event.message, now)

    def _on_message(self, message: wire.Message, now: float) -> None:
        if isinstance(message, wire.StatusRequest):
            state = (wire.DeviceState.BUSY if self._shuffle else
                     wire.DeviceState.FAULTED if self.active_faults else wire.DeviceState.READY)
            held = "none" if self.held is None else BackColour(self.held).name
            self._post(wire.Status(int(now) & 0xFFFFFFFF, state, f"holds {held}"))
        elif isinstance(message, wire.SelfTestRequest):
            faults = ", ".join(code.name for code in self.active_faults)
            self._post(wire.SelfTestResult(not faults, faults or "mechanism, counter and door ok"))
        elif isinstance(message, wire.StartShuffle):
            self._start_shuffle(BackColour(message.back_colour), message.expected_cards, now)

    def _start_shuffle(self, back: BackColour, expected: int, now: float) -> None:
        if self.held != back:
            held = "nothing" if self.held is None else f"the {BackColour(self.held).name} batch"
            self._set_fault(wire.FaultCode.SHUFFLER_BATCH_MISSING,
                            f"asked to shuffle the {back.name} batch; the shuffler holds {held}")
            return
        self._clear_fault(wire.FaultCode.SHUFFLER_BATCH_MISSING)
        self._shuffle = _Shuffle(back, expected, next_card_at=now + self.card_time_s,
                                 plan=self._plan)
        self._plan = _Plan()

    def _step_shuffle(self, now: float) -> None:
        job = self._shuffle
        if job is None or not self._up:
            return
        total = len(self.cards[job.back])
        while job.counted < total and now >= job.next_card_at:
            job.counted += 1
            job.next_card_at += self.card_time_s
            plan = job.plan
            if plan.jam_after is not None and job.counted >= plan.jam_after:
                self._set_fault(wire.FaultCode.SHUFFLER_JAM, f"jammed at card {job.counted}")
                self._shuffle = None
                return
            if plan.incomplete_after is not None and job.counted >= plan.incomplete_after:
                self._set_fault(wire.FaultCode.SHUFFLER_CYCLE_INCOMPLETE,
                                f"cycle stopped at card {job.counted} of {total}")
                self._shuffle = None
                return
            if plan.stall_after is not None and job.counted >= plan.stall_after:
                job.next_card_at = float("inf")  # silent: the mechanism just stopped
                return
            if job.counted % PROGRESS_EVERY == 0:
                self._post(wire.ShuffleProgress(job.counted, job.expected))
        if job.counted >= total:
            missing, extra, duplicates = verify(self.cards[job.back], job.back, job.expected)
            self._post(wire.ShuffleComplete(int(job.back), total, missing, extra, duplicates))
            self._shuffle = None


def verify(cards: list[tuple[Card, BackColour]], back: BackColour, expected_cards: int) -> tuple[int, int, int]:
    """Count a batch against the complete decks it should hold: (missing, extra, duplicates)."""
    want = collections.Counter(shoe_of(max(0, expected_cards) // 52))
    seen = collections.Counter(card for card, card_back in cards if card_back == back)
    extra = sum(1 for _, card_back in cards if card_back != back)
    missing = sum(max(0, n - seen[card]) for card, n in want.items())
    duplicates = sum(max(0, n - want[card]) for card, n in seen.items() if card in want)
    extra += sum(n for card, n in seen.items() if card not in want)
    return missing, extra, duplicates


# --- the pyusb backend ---------------------------------------------------------------


@dataclass(frozen=True)
class _DeviceDescriptor:
    idVendor: int
    idProduct: int
    bus: int
    address: int
    bLength: int = 18
    bDescriptorType: int = 0x01
    bcdUSB: int = 0x0200
    bDeviceClass: int = 0xFF
    bDeviceSubClass: int = 0
    bDeviceProtocol: int = 0
    bMaxPacketSize0: int = 64
    bcdDevice: int = 0x0100
    iManufacturer: int = 1
    iProduct: int = 2
    iSerialNumber: int = 3
    bNumConfigurations: int = 1
    port_number: int | None = 1
    port_numbers: tuple[int, ...] | None = (1,)
    speed: int | None = 2  # full speed (libusb's LIBUSB_SPEED_FULL)


@dataclass(frozen=True)
class _ConfigDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x02
    wTotalLength: int = 9 + 9 + 7 + 7
    bNumInterfaces: int = 1
    bConfigurationValue: int = 1
    iConfiguration: int = 0
    bmAttributes: int = 0x80
    bMaxPower: int = 50
    extra_descriptors: tuple[int, ...] = ()


@dataclass(frozen=True)
class _InterfaceDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x04
    bInterfaceNumber: int = 0
    bAlternateSetting: int = 0
    bNumEndpoints: int = 2
    bInterfaceClass: int = 0xFF
    bInterfaceSubClass: int = 0
    bInterfaceProtocol: int = 0
    iInterface: int = 0
    extra_descriptors: tuple[int, ...] = ()


@dataclass(frozen=True)
class _EndpointDescriptor:
    bEndpointAddress: int
    bLength: int = 7
    bDescriptorType: int = 0x05
    bmAttributes: int = 0x02  # bulk
    wMaxPacketSize: int = MAX_PACKET
    bInterval: int = 0
    bRefresh: int = 0
    bSynchAddress: int = 0
    extra_descriptors: tuple[int, ...] = ()


_ENDPOINTS = (_EndpointDescriptor(EP_OUT), _EndpointDescriptor(EP_IN))


@dataclass(eq=False)
class _Handle:
    """One open of the device (libusb's device handle)."""

    device: SimulatedShuffler


class SimulatedUsbBackend(usb.backend.IBackend):  # type: ignore[misc]
    """A pyusb backend whose bus holds only simulated shufflers."""

    def __init__(self) -> None:
        self.devices: list[SimulatedShuffler] = []
        self._configuration: dict[int, int] = {}

    def add(self, device: SimulatedShuffler) -> SimulatedShuffler:
        self.devices.append(device)
        return device

    def remove(self, device: SimulatedShuffler) -> None:
        if device in self.devices:
            self.devices.remove(device)
        device.close()

    # enumeration and descriptors

    def enumerate_devices(self) -> Iterator[SimulatedShuffler]:
        return iter([d for d in self.devices if d.plugged])

    def get_device_descriptor(self, dev: SimulatedShuffler) -> _DeviceDescriptor:
        return _DeviceDescriptor(dev.vendor_id, dev.product_id, dev.bus, dev.address)

    def get_configuration_descriptor(self, dev: SimulatedShuffler, config: int) -> _ConfigDescriptor:
        if config != 0:
            raise IndexError(f"configuration {config}: the shuffler has one")
        return _ConfigDescriptor()

    def get_interface_descriptor(self, dev: SimulatedShuffler, intf: int, alt: int,
                                 config: int) -> _InterfaceDescriptor:
        if (intf, alt, config) != (0, 0, 0):
            raise IndexError(f"interface {intf} alt {alt}: the shuffler has one")
        return _InterfaceDescriptor()

    def get_endpoint_descriptor(self, dev: SimulatedShuffler, ep: int, intf: int, alt: int,
                                config: int) -> _EndpointDescriptor:
        if (intf, alt, config) != (0, 0, 0) or not 0 <= ep < len(_ENDPOINTS):
            raise IndexError(f"endpoint {ep}: the shuffler has two")
        return _ENDPOINTS[ep]

    # handles and configuration

    def open_device(self, dev: SimulatedShuffler) -> _Handle:
        dev._check_plugged()
        return _Handle(dev)

    def close_device(self, dev_handle: _Handle) -> None:
        dev_handle.device.release(dev_handle)

    def set_configuration(self, dev_handle: _Handle, config_value: int) -> None:
        dev_handle.device._check_plugged()
        self._configuration[id(dev_handle.device)] = config_value

    def get_configuration(self, dev_handle: _Handle) -> int:
        return self._configuration.get(id(dev_handle.device), 1)

    def set_interface_altsetting(self, dev_handle: _Handle, intf: int, altsetting: int) -> None:
        pass

    def claim_interface(self, dev_handle: _Handle, intf: int) -> None:
        dev_handle.device.claim(dev_handle)

    def release_interface(self, dev_handle: _Handle, intf: int) -> None:
        dev_handle.device.release(dev_handle)

    def is_kernel_driver_active(self, dev_handle: _Handle, intf: int) -> bool:
        return False

    def detach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        pass

    def attach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        pass

    def clear_halt(self, dev_handle: _Handle, ep: int) -> None:
        dev_handle.device._check_plugged()

    def reset_device(self, dev_handle: _Handle) -> None:
        dev_handle.device._check_plugged()

    # transfers

    def bulk_write(self, dev_handle: _Handle, ep: int, intf: int, data: Any, timeout: int) -> int:
        if ep != EP_OUT:
            raise usb.core.USBError(f"endpoint 0x{ep:02X} is not the bulk OUT endpoint", -2, errno.EINVAL)
        return dev_handle.device.host_write(bytes(data))

    def bulk_read(self, dev_handle: _Handle, ep: int, intf: int, buff: array.array,
                  timeout: int) -> int:
        if ep != EP_IN:
            raise usb.core.USBError(f"endpoint 0x{ep:02X} is not the bulk IN endpoint", -2, errno.EINVAL)
        size = len(buff) * buff.itemsize
        data = dev_handle.device.host_read(size, (timeout or 1000) / 1000)
        buff[:len(data)] = array.array("B", data)
        return len(data)

    def ctrl_transfer(self, dev_handle: _Handle, bmRequestType: int, bRequest: int,
                      wValue: int, wIndex: int, data: array.array, timeout: int) -> int:
        device = dev_handle.device
        device._check_plugged()
        if bmRequestType == 0x80 and bRequest == _GET_DESCRIPTOR and wValue >> 8 == _DESC_STRING:
            index = wValue & 0xFF
            if index == 0:
                payload = bytes([4, _DESC_STRING]) + _LANGID_EN_US.to_bytes(2, "little")
            else:
                text = {1: "Open Baccarat Table Project", 2: "Simulated batch shuffler",
                        3: device.serial_number}.get(index)
                if text is None:
                    raise usb.core.USBError(f"no string {index}", -9, errno.EPIPE)
                encoded = text.encode("utf-16-le")
                payload = bytes([2 + len(encoded), _DESC_STRING]) + encoded
            n = min(len(payload), len(data))
            data[:n] = array.array("B", payload[:n])
            return n
        if util_direction_out(bmRequestType):
            return len(data)
        raise usb.core.USBError("request not supported by the simulated shuffler", -9, errno.EPIPE)


def util_direction_out(bm_request_type: int) -> bool:
    return not bm_request_type & 0x80


_BACKEND: SimulatedUsbBackend | None = None
_CONTROL: ShufflerControlServer | None = None

CONTROL_SOCKET_ENV = "TABLE_SIM_SHUFFLER_SOCKET"
"""If set when ``get_backend()`` first runs, the simulated shuffler also listens for fault
injection on this Unix socket (the daemon owns the simulator; the HIL harness is elsewhere)."""


def get_backend() -> SimulatedUsbBackend:
    """The process-wide simulated USB bus (``[shuffler] backend = "hil.usb_shuffler:get_backend"``).

    If nothing has been plugged into it yet, one default shuffler
    (0x1209:0x0001, RED and BLUE batches, BLUE inside) is, so a daemon started
    on this backend alone finds a shuffler. With ``TABLE_SIM_SHUFFLER_SOCKET``
    set, a ``ShufflerControlClient`` in another process can inject its faults.
    """
    global _BACKEND, _CONTROL
    if _BACKEND is None:
        _BACKEND = SimulatedUsbBackend()
    if not _BACKEND.devices:
        _BACKEND.add(SimulatedShuffler())
    path = os.environ.get(CONTROL_SOCKET_ENV, "")
    if path and _CONTROL is None:
        _CONTROL = ShufflerControlServer(_BACKEND.devices[0], path)
    return _BACKEND


def add_shuffler(**kwargs: Any) -> SimulatedShuffler:
    """Plug a new simulated shuffler into the process-wide bus and return it (for tests)."""
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = SimulatedUsbBackend()
    return _BACKEND.add(SimulatedShuffler(**kwargs))


def reset_backend() -> None:
    """Unplug and stop every simulated device of the process-wide bus (test teardown)."""
    global _BACKEND, _CONTROL
    if _CONTROL is not None:
        _CONTROL.close()
        _CONTROL = None
    if _BACKEND is not None:
        for device in list(_BACKEND.devices):
            _BACKEND.remove(device)
    _BACKEND = None


# --- remote fault injection ------------------------------------------------------------------


def _colour(token: str) -> BackColour:
    return BackColour[token.upper()]


class _ControlHandler(socketserver.StreamRequestHandler):
    server: _ControlServer

    def handle(self) -> None:
        while line := self.rfile.readline(CONTROL_LINE_MAX + 1):
            reply = self.server.control.command(line.decode("ascii", "replace").strip())
            self.wfile.write(reply.encode("ascii") + b"\n")


class _ControlServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, control: ShufflerControlServer) -> None:
        self.control = control
        super().__init__(path, _ControlHandler)


class ShufflerControlServer:
    """Line protocol to a ``SimulatedShuffler`` from another process (``ShufflerControlClient``).

    ``PING``, ``STATUS``, ``JAM <after>``, ``INCOMPLETE <after>``, ``STALL <after>``,
    ``CLEAR_JAM``, ``REMOVE_CARD <colour> [n]``, ``ADD_DUPLICATE <colour> [n]``,
    ``ADD_FOREIGN <colour> <foreign colour> [n]``, ``RESTORE <colour>``, ``INSERT <colour>``,
    ``REMOVE_BATCH``, ``DOOR <0|1>``, ``UNPLUG``, ``REPLUG``; replies ``OK [...]`` or ``ERR <reason>``.
    """

    def __init__(self, device: SimulatedShuffler, path: str) -> None:
        self.device = device
        self.path = path
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self._server = _ControlServer(path, self)
        self._thread = threading.Thread(
            target=os_named("sim-shuffler-ctl", self._server.serve_forever), args=(0.05,),
            name="sim-shuffler-control", daemon=True)
        self._thread.start()

    def command(self, line: str) -> str:
        words = line.split()
        if not words:
            return "ERR empty request"
        verb, args = words[0].upper(), words[1:]
        d = self.device
        try:
            n = [int(a) for a in args if a.isdecimal()]
            colours = [_colour(a) for a in args if not a.isdecimal()]
            if verb == "PING":
                return "OK"
            if verb == "STATUS":
                held = "NONE" if d.held is None else BackColour(d.held).name
                return (f"OK held={held} plugged={int(d.plugged)} host={int(d.host_connected)} "
                        f"shuffling={int(d.shuffling)}")
            actions = {
                "JAM": lambda: d.jam_next(n[0]),
                "INCOMPLETE": lambda: d.incomplete_next(n[0]),
                "STALL": lambda: d.stall_next(n[0]),
                "CLEAR_JAM": d.clear_jam,
                "REMOVE_CARD": lambda: d.remove_card(colours[0], n[0] if n else 1),
                "ADD_DUPLICATE": lambda: d.add_duplicate(colours[0], n[0] if n else 1),
                "ADD_FOREIGN": lambda: d.add_foreign_card(colours[0], colours[1], n[0] if n else 1),
                "RESTORE": lambda: d.restore_batch(colours[0]),
                "INSERT": lambda: d.insert_batch(colours[0]),
                "REMOVE_BATCH": d.remove_batch,
                "DOOR": lambda: d.set_door(bool(n[0])),
                "UNPLUG": d.unplug,
                "REPLUG": d.replug,
            }
            if verb not in actions:
                return f"ERR unknown request {verb!r}"
            actions[verb]()
            return "OK"
        except (IndexError, KeyError, ValueError) as exc:
            return f"ERR {verb}: bad arguments {args} ({type(exc).__name__}: {exc})"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class ShufflerControlClient:
    """Talks to ``ShufflerControlServer``: ``client.request("JAM 20")`` -> reply text after OK."""

    def __init__(self, socket_path: str, *, timeout: float = 5.0) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(socket_path)
        self._reader = self._sock.makefile("rb")

    def request(self, line: str) -> str:
        self._sock.sendall(line.encode("ascii") + b"\n")
        reply = self._reader.readline().decode("ascii").strip()
        if not reply.startswith("OK"):
            raise RuntimeError(f"simulated shuffler: {line!r} -> {reply or 'closed'}")
        return reply[2:].strip()

    def close(self) -> None:
        self._reader.close()
        self._sock.close()
