"""A simulated serial device on a pseudo-terminal, speaking firmware_bridge as DEVICE.

The simulator owns the pty master; the daemon opens ``.port`` (a stable symlink
to the pty's slave, in a private temporary folder) with pyserial exactly as it
would open ``/dev/ttyUSB0``. Unplugging closes the pty (the daemon's reads fail,
and opening ``.port`` fails until the replug); replugging opens a fresh pty and
points the same symlink at it, as udev's ``/dev/serial/by-id`` links do.

Everything the device sends goes through one ordered outbox, so a message
queued without waiting (``ShoeLoaded`` from the synchronous ``load()``) is still
sent before the next card.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
import tty
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from firmware_bridge import messages as wire
from firmware_bridge.errors import BridgeError
from firmware_bridge.link import LinkEndpoint, LinkTiming

log = structlog.get_logger()

UP_TIMEOUT_S = 30.0
"""How long ``wait_host()`` waits by default for the daemon to connect and shake hands."""


RESEND_PAUSE_S = 0.01
"""Pause before resending a message whose link failed; _serve notices the failure meanwhile."""


REVIVE_POLL_S = 0.02
"""How often a refused simulator looks whether the host started a new session."""


class SimulatorError(RuntimeError):
    """The simulator was used in a way its device could not be (e.g. drawing from an empty shoe)."""


class PtyDevice:
    """Base of the pty simulators (shoe, display)."""

    device_kind = wire.DeviceKind.SHOE

    def __init__(self, *, serial_number: str, firmware_version: str,
                 protocol_version: int | None = None, name: str = "device",
                 endpoint_factory: Callable[[wire.Hello, LinkTiming], LinkEndpoint] | None = None,
                 baudrate: int = 115200) -> None:
        """``endpoint_factory`` builds the firmware's link core (hil.misbehaviour: a broken
        one, or ``legacy_endpoint`` for a protocol 1.0 device); ``baudrate`` sets its timing."""
        self._endpoint_factory = endpoint_factory
        self.timing = LinkTiming.for_baudrate(baudrate)
        self.serial_number = serial_number
        self.firmware_version = firmware_version
        self.protocol_version = wire.PROTOCOL_VERSION if protocol_version is None else protocol_version
        self._dir = tempfile.mkdtemp(prefix=f"sim-{name}-")
        # Removed by stop(); this also removes it for a simulator that is never stopped.
        weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._symlink = os.path.join(self._dir, "tty")
        self._master: int | None = None
        self._slave: int | None = None
        self._link: Any = None
        self._task: asyncio.Task[None] | None = None
        self._outbox: asyncio.Queue[tuple[wire.Message, asyncio.Future[None]]] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._up = asyncio.Event()
        self._started_at = time.monotonic()
        self.active_faults: dict[wire.FaultCode, str] = {}
        self.received: list[wire.Message] = []
        self.handshakes = 0
        self.capabilities = wire.CAP_PROTOCOL_1_1
        """Hello.capabilities (a 1.2 shoe adds CAP_CARD_COMMIT)."""

    # --- lifecycle --------------------------------------------------------------

    @property
    def port(self) -> str:
        """The path the daemon opens (stable across unplug/replug)."""
        return self._symlink

    @property
    def plugged_in(self) -> bool:
        return self._master is not None

    @property
    def link(self) -> Any:
        """The device-side ``AsyncLink`` (counters, state) while plugged in."""
        return self._link

    async def start(self) -> None:
        """Plug the device in: open the pty and begin answering the host."""
        if self._master is not None:
            return
        self._outbox = asyncio.Queue()
        self._sender = asyncio.create_task(self._send_forever(), name="sim-outbox")
        await self._plug()

    async def stop(self) -> None:
        """Unplug and release everything (the temporary folder included)."""
        await self._unplug()
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
            self._sender = None
        shutil.rmtree(self._dir, ignore_errors=True)

    async def unplug(self) -> None:
        """Fault injection: the cable is pulled (the pty disappears)."""
        await self._unplug()

    async def replug(self) -> None:
        """The cable is plugged back in (a fresh pty behind the same ``.port``)."""
        await self._plug()

    async def stop_answering(self) -> None:
        """Fault injection: the firmware hangs. The port stays open but nothing is read or
        sent, so the host only notices through its keepalive silence timeout."""
        task, self._task = self._task, None
        self._up.clear()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        link, self._link = self._link, None
        if link is not None:
            with contextlib.suppress(Exception):
                await link.close()  # over_fd without close_fd: the pty stays open

    async def resume_answering(self) -> None:
        """The firmware recovers (a watchdog reset): a fresh link on the same port."""
        from firmware_bridge.aio import AsyncLink

        if self._master is None or self._link is not None:
            return
        self._link = self._new_link(AsyncLink, self._master)
        self._task = asyncio.create_task(self._serve(self._link), name="sim-device")

    def _new_link(self, link_class: Any, fd: int) -> Any:
        from firmware_bridge.link import Role

        hello = self.hello()
        endpoint = (self._endpoint_factory(hello, self.timing)
                    if self._endpoint_factory is not None else None)
        return link_class.over_fd(fd, Role.DEVICE, hello, timing=self.timing, endpoint=endpoint)

    async def wait_host(self, timeout: float = UP_TIMEOUT_S) -> None:
        """Wait until the host has connected and the handshake is done."""
        await asyncio.wait_for(self._up.wait(), timeout)

    @property
    def host_connected(self) -> bool:
        return self._up.is_set()

    def garbage(self, data: bytes | None = None) -> None:
        """Fault injection: write raw bytes (line noise) into the line between frames."""
        if self._master is None:
            raise SimulatorError("cannot write garbage: the device is unplugged")
        os.write(self._master, data if data is not None else bytes(range(1, 200)) * 2)

    # --- sending ------------------------------------------------------------------

    def post(self, message: wire.Message) -> asyncio.Future[None]:
        """Queue ``message`` for the host; the future completes when the host acknowledged it."""
        if self._outbox is None:
            raise SimulatorError("start() the simulator first")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outbox.put_nowait((message, done))
        return done

    async def send(self, message: wire.Message) -> None:
        """Send ``message`` and wait for the host's acknowledgement."""
        await self.post(message)

    async def fault(self, code: wire.FaultCode, detail: str) -> None:
        """Report a fault (kept active and re-sent after every handshake until cleared)."""
        self.active_faults[code] = detail
        await self.send(wire.Fault(code, detail))

    async def clear_fault(self, code: wire.FaultCode) -> None:
        self.active_faults.pop(code, None)
        await self.send(wire.FaultCleared(code))

    async def _send_forever(self) -> None:
        assert self._outbox is not None
        while True:
            message, done = await self._outbox.get()
            while True:
                await self._up.wait()
                link = self._link
                try:
                    await link.send(message)
                except (BridgeError, AttributeError) as exc:
                    # The link went down under us: wait for the host to come back and resend;
                    # a real device's firmware keeps its events queued across a reconnect too.
                    log.debug("simulator resend after link loss", error=str(exc))
                    await asyncio.sleep(RESEND_PAUSE_S)
                    continue
                break
            if not done.done():
                done.set_result(None)

    # --- the device side of the link -------------------------------------------------

    def hello(self) -> wire.Hello:
        return wire.Hello(protocol_version=self.protocol_version, device_kind=self.device_kind,
                          serial_number=self.serial_number, firmware_version=self.firmware_version,
                          capabilities=self.capabilities)

    async def _plug(self) -> None:
        if self._master is not None:
            return
        from firmware_bridge.aio import AsyncLink

        master, slave = os.openpty()
        # Raw mode at once: with the default line discipline the slave would echo the
        # device's own frames back to it before the daemon has opened the port.
        tty.setraw(slave)
        self._master, self._slave = master, slave
        tmp = self._symlink + ".new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        os.symlink(os.ttyname(slave), tmp)
        os.replace(tmp, self._symlink)
        self._link = self._new_link(AsyncLink, master)
        self._task = asyncio.create_task(self._serve(self._link), name="sim-device")

    async def _unplug(self) -> None:
        task, self._task = self._task, None
        self._up.clear()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        link, self._link = self._link, None
        if link is not None:
            with contextlib.suppress(Exception):
                await link.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._symlink)
        for fd in (self._master, self._slave):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = None

    async def _serve(self, link: Any) -> None:
        while True:
            try:
                await link.wait_up(None)
            except BridgeError as exc:
                log.info("simulated device: handshake ended", error=str(exc))
                await self._revive(link)
                continue
            self.handshakes += 1
            # Active faults are re-sent after every handshake, ahead of anything queued (4.3),
            # then whatever else the device re-sends at a session's start (a shoe's kept cards).
            for message in self.session_start_messages(link.peer):
                with contextlib.suppress(BridgeError):
                    await link.send(message)
            self._up.set()
            try:
                while True:
                    message = await link.receive()
                    self.received.append(message)
                    await self._handle(link, message)
            except BridgeError as exc:
                log.info("simulated device: link down", error=str(exc))
                self._up.clear()

    def session_start_messages(self, peer: wire.Hello | None) -> list[wire.Message]:
        """What the device sends after each handshake before anything queued: a Fault for
        every active fault (4.3); subclasses add theirs after them."""
        return [wire.Fault(code, detail) for code, detail in self.active_faults.items()]

    async def _revive(self, link: Any) -> None:
        from firmware_bridge.link import LinkState

        if link.state is LinkState.FAILED:
            # Firmware restarts the session itself (RESET repeats until a host answers).
            link.reconnect()
            return
        # REFUSED: only the host's next RESET (a re-probe) starts a new session.
        while link.state is LinkState.REFUSED:
            await asyncio.sleep(REVIVE_POLL_S)

    async def _handle(self, link: Any, message: wire.Message) -> None:
        from hil.sim_firmware import reply_to

        reply = reply_to(message, active_faults=self.active_faults,
                         uptime_s=time.monotonic() - self._started_at, self_test=self.self_test())
        if reply is not None:
            self.post(reply)
        else:
            await self.on_message(message)

    def self_test(self) -> tuple[bool, str]:
        """The device's self-test verdict (subclasses add their checks)."""
        if self.active_faults:
            return False, "active faults: " + ", ".join(code.name for code in self.active_faults)
        return True, "all checks passed"

    async def on_message(self, message: wire.Message) -> None:
        """A host message other than status/self-test (subclasses handle theirs)."""


def message_names(messages: Iterable[wire.Message]) -> list[str]:
    return [type(m).__name__ for m in messages]
