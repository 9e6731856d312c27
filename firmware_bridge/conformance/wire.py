"""What the conformance suite talks through: a byte pipe with a clock.

``SerialWire`` (pyserial: a UART, USB CDC-ACM, a pty, ``socket://``) and
``UsbWire`` (pyusb bulk endpoints, as the shuffler) run on real time.
``SimulatedWire`` hosts a sans-I/O device model (hil.sim_firmware) on simulated
time: ``read`` jumps the clock to the next thing that happens, and bytes take
their wire time (10 bits per byte at the baud rate) in each direction, FIFO.
So minutes of link time at 9600 baud cost milliseconds, and no verdict depends
on how loaded the machine is.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from firmware_bridge.link import BITS_PER_BYTE_8N1


class Wire(Protocol):
    """A byte pipe to the device under test, with the clock the verdicts use."""

    slack: float  # added to upper timing bounds only: scheduling, USB/UART latency jitter
    timestamp_error: float  # how much earlier than the truth an arrival may be stamped

    def now(self) -> float: ...

    def write(self, data: bytes) -> None: ...

    def read(self, until: float) -> bytes:
        """Bytes as soon as any arrive, or b"" once the clock reaches ``until``."""
        ...

    def stimulate(self, action: str) -> bool:
        """Make the device do ``action`` ("fault": raise and keep a fault active; "event": a
        spontaneous report such as a card drawn; "cover": a shoe's cover card drawn); False if
        it cannot be done here."""
        ...

    def close(self) -> None: ...


class SimDevice(Protocol):
    """A device model the SimulatedWire can host (hil.sim_firmware.FirmwareModel, ShufflerModel)."""

    def receive(self, data: bytes, now: float) -> None: ...

    def poll(self, now: float) -> None: ...

    def outgoing(self) -> bytes: ...

    def next_deadline(self) -> float | None: ...

    def stimulate(self, action: str, now: float) -> bool: ...


class SimulatedWire:
    """A device model on simulated time, behind a line of ``baudrate`` (None: no wire time)."""

    slack = 0.002  # one timer tick of the model: verdicts on simulated time are exact
    timestamp_error = 0.0

    def __init__(self, device: SimDevice, baudrate: int | None = 115200) -> None:
        self.device = device
        self._byte_time = BITS_PER_BYTE_8N1 / baudrate if baudrate else 0.0
        self._now = 0.0
        self._to_device: deque[tuple[float, bytes]] = deque()
        self._to_host: deque[tuple[float, bytes]] = deque()
        self._line_free = {"down": 0.0, "up": 0.0}

    def now(self) -> float:
        return self._now

    def _schedule(self, queue: deque[tuple[float, bytes]], direction: str, data: bytes) -> None:
        start = max(self._now, self._line_free[direction])
        due = start + len(data) * self._byte_time
        self._line_free[direction] = due
        queue.append((due, data))

    def write(self, data: bytes) -> None:
        if data:
            self._schedule(self._to_device, "down", data)

    def read(self, until: float) -> bytes:
        stuck = 0
        while True:
            self._collect()
            if self._to_host and self._to_host[0][0] <= self._now:
                out = bytearray()
                while self._to_host and self._to_host[0][0] <= self._now:
                    out += self._to_host.popleft()[1]
                return bytes(out)
            if self._now >= until:
                return b""
            candidates = [until]
            for queue in (self._to_device, self._to_host):
                if queue:
                    candidates.append(queue[0][0])
            deadline = self.device.next_deadline()
            if deadline is not None:
                candidates.append(max(deadline, self._now))
            target = max(self._now, min(candidates))
            stuck = stuck + 1 if target == self._now else 0
            if stuck > 10_000:  # a timer that poll() never moves: the model is broken
                raise RuntimeError(f"simulated device stuck at t={self._now:.3f}")
            self._now = target
            while self._to_device and self._to_device[0][0] <= self._now:
                self.device.receive(self._to_device.popleft()[1], self._now)
            self.device.poll(self._now)

    def _collect(self) -> None:
        out = self.device.outgoing()
        if out:
            self._schedule(self._to_host, "up", out)

    def stimulate(self, action: str) -> bool:
        done = self.device.stimulate(action, self._now)
        self._collect()
        return done

    def close(self) -> None:
        """Nothing to release: the model lives in memory."""


class SerialWire:
    """A real device on a pyserial URL (8N1, no flow control), on the monotonic clock."""

    slack = 0.05  # OS scheduling + USB-serial adapter latency jitter (~16 ms on FTDI)
    timestamp_error = 0.005  # the read loop's 2 ms poll plus the adapter's latency timer

    def __init__(self, url: str, baudrate: int, *,
                 operator: Callable[[str], bool] | None = None) -> None:
        import serial

        try:
            self._port: Any = serial.serial_for_url(
                url, baudrate=baudrate, bytesize=serial.EIGHTBITS, parity=serial.PARITY_NONE,
                stopbits=serial.STOPBITS_ONE, timeout=0, exclusive=("://" not in url) or None)
        except (OSError, ValueError) as exc:
            raise ConnectionError(f"cannot open serial port {url}: {exc}") from exc
        self._operator = operator

    def now(self) -> float:
        return time.monotonic()

    def write(self, data: bytes) -> None:
        self._port.write(data)

    def read(self, until: float) -> bytes:
        while True:
            waiting = self._port.in_waiting
            if waiting:
                return bytes(self._port.read(waiting))
            left = until - time.monotonic()
            if left <= 0:
                return b""
            time.sleep(min(left, 0.002))

    def stimulate(self, action: str) -> bool:
        return self._operator(action) if self._operator is not None else False

    def close(self) -> None:
        self._port.close()


class UsbWire:
    """A real device on USB bulk endpoints (docs/protocol.md 2.2), found by vendor/product id."""

    slack = 0.05  # host scheduling; a bulk IN read is re-issued every 50 ms at most
    timestamp_error = 0.005

    def __init__(self, vendor_id: int, product_id: int, *, ep_out: int = 0x01, ep_in: int = 0x81,
                 backend: Any = None, operator: Callable[[str], bool] | None = None) -> None:
        import usb.core

        device = usb.core.find(idVendor=vendor_id, idProduct=product_id, backend=backend)
        if device is None:
            raise ConnectionError(f"no USB device {vendor_id:04x}:{product_id:04x} found")
        device.set_configuration()
        self._device, self._out, self._in = device, ep_out, ep_in
        self._operator = operator

    def now(self) -> float:
        return time.monotonic()

    def write(self, data: bytes) -> None:
        self._device.write(self._out, data, timeout=1000)

    def read(self, until: float) -> bytes:
        import usb.core

        while True:
            left = until - time.monotonic()
            if left <= 0:
                return b""
            try:
                data = self._device.read(self._in, 512, timeout=max(1, int(min(left, 0.05) * 1000)))
            except usb.core.USBTimeoutError:
                continue
            if data:
                return bytes(data)

    def stimulate(self, action: str) -> bool:
        return self._operator(action) if self._operator is not None else False

    def close(self) -> None:
        import usb.util

        usb.util.dispose_resources(self._device)


class PacedWire(SimulatedWire):
    """A SimulatedWire that keeps pace with the wall clock: the same device model, but every
    interval really elapses, so the kit's verdicts meet OS scheduling as on a real port (the
    long real-time variant of the broken-device library, docs/conformance.md)."""

    slack = 0.05
    timestamp_error = 0.005

    def __init__(self, device: SimDevice, baudrate: int | None = 115200) -> None:
        super().__init__(device, baudrate)
        self._epoch = time.monotonic()

    def read(self, until: float) -> bytes:
        data = super().read(until)
        lag = self._now - (time.monotonic() - self._epoch)
        if lag > 0:
            time.sleep(lag)  # the simulated instant has not come yet on the wall clock
        return data
