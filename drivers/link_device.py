"""What every device on a firmware_bridge link has in common: connect, handshake, reconnect, faults.

``LinkedDevice`` runs one background task per device. It opens the transport
(the subclass says how: a serial URL or a USB device), waits for the
handshake, then reads messages until the link fails, and starts again after
the delay ``drivers.reconnect.Reconnector`` gives. It follows the host rules of
docs/protocol.md 4.4: a device that reboots is handshaken again on the open
port (H1: one session per reboot, no reopen on top of its handshake), and a
refused device keeps its port open so its RESET revives the link at once (H2). Every state goes out as a
``LinkChanged``; losing the link is a ``DeviceFault`` ("link_down") until the
device is back; an incompatible device is REFUSED with a ``DeviceFault`` whose
action tells the technician what to do.

Device faults (firmware_bridge ``Fault``/``FaultCleared``) become
``DeviceFault``/``DeviceFaultCleared`` with the fault code's lower-case name.
A device re-sends its active faults after every handshake, before anything else
(4.3); a re-sent fault the host kept active is not reported again, and a fault
that was active before an outage and is not re-sent by the time the device
answers the ``StatusRequest`` sent at connect is cleared then (H3).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import structlog

from cards import BackColour
from drivers.errors import DeviceNotConnectedError
from drivers.protocols import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealth,
    Emit,
    LinkChanged,
    LinkState,
    SelfTestResult,
)
from drivers.reconnect import ReconnectPolicy, Reconnector
from firmware_bridge import messages as wire
from firmware_bridge.errors import BridgeError, LinkDownError, LinkRefusedError

log = structlog.get_logger()

HANDSHAKE_TIMEOUT_S = 5.0
"""Wait for the peer's Hello: firmware_bridge's own handshake timeout (link.HANDSHAKE_TIMEOUT)."""
SELF_TEST_TIMEOUT_S = 15.0
"""A device's self-test: our choice, long enough for a shuffler to cycle its mechanism once,
short enough for a technician waiting at tablectl; never shorter than the handshake timeout
at the link's baud rate, which docs/protocol.md 6.2 gives a device to answer (22 s at 9600)."""
HOST_SOFTWARE_VERSION = "0.1.0"
"""What the host says it runs in its Hello (pyproject's version)."""

LINK_DOWN = "link_down"
INCOMPATIBLE = "incompatible_device"

# Faults every device can report; the device-specific drivers add their own.
COMMON_FAULT_ACTIONS: Mapping[wire.FaultCode, str] = {
    wire.FaultCode.DEVICE_OVERTEMP:
        "The device is too hot: check its fan and vents; it resumes when it has cooled.",
    wire.FaultCode.DEVICE_INTERNAL_ERROR:
        "The device's firmware failed: power-cycle it; if it repeats, replace the unit.",
}


def host_hello(capabilities: int = wire.CAP_PROTOCOL_1_1) -> wire.Hello:
    """The Hello this host sends to a device (the shoe's driver adds CAP_CARD_COMMIT)."""
    return wire.Hello(protocol_version=wire.PROTOCOL_VERSION, device_kind=wire.DeviceKind.HOST,
                      serial_number="", firmware_version=HOST_SOFTWARE_VERSION,
                      capabilities=capabilities)


def back_colour(value: int) -> BackColour:
    return BackColour(value)


class LinkedDevice:
    """Base of the shoe, shuffler and display drivers (not used by the controller directly)."""

    kind = "device"
    device_kind = wire.DeviceKind.SHOE
    fault_actions: Mapping[wire.FaultCode, str] = COMMON_FAULT_ACTIONS

    def __init__(self, name: str, port: str, *, reconnect: ReconnectPolicy | None = None,
                 firmware_versions: Collection[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``firmware_versions``: the approved firmware versions; None accepts any."""
        self.name = name
        self.port = port
        self._firmware_versions = frozenset(firmware_versions) if firmware_versions else None
        self._clock = clock
        self._reconnector = Reconnector(reconnect or ReconnectPolicy())
        self._emit: Emit | None = None
        self._task: asyncio.Task[None] | None = None
        self._link: Any = None
        self._peer: wire.Hello | None = None
        self._last_link_counters: dict[str, int] = {}
        self._counters: collections.Counter[str] = collections.Counter()
        self._last_error = ""
        self._state = LinkState.STOPPED
        self._reported: tuple[LinkState, str] = (LinkState.STOPPED, "")
        self._state_changed = asyncio.Event() if _has_loop() else None
        self._active_faults: set[str] = set()
        self._reported_since_up: set[str] = set()
        self._self_test: asyncio.Future[wire.SelfTestResult] | None = None
        self._status_pending = False

    # --- subclass hooks -------------------------------------------------------

    async def _open(self) -> Any:
        """Open the transport and return an ``AsyncLink`` (handshake not yet done)."""
        raise NotImplementedError

    async def _on_message(self, message: wire.Message) -> None:
        """A device-specific message arrived."""

    async def _on_up(self, link: Any) -> None:
        """The link came up (e.g. resend state to a display)."""

    async def _on_down(self, reason: str) -> None:
        """The link went down (e.g. an interrupted shuffle)."""

    # --- Device ---------------------------------------------------------------

    async def start(self, emit: Emit) -> None:
        """Begin connecting in a background task and return at once."""
        if self._task is not None:
            return
        self._emit = emit
        if self._state_changed is None:
            self._state_changed = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name=f"{self.name}-link")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._close_link()
        self._set_state(LinkState.STOPPED, "stopped")
        self._reconnector.stopped()

    def health(self) -> DeviceHealth:
        counters: dict[str, int] = dict(self._last_link_counters)
        if self._link is not None:
            counters.update(_link_counters(self._link))
        counters.update(self._counters)
        counters["reconnects"] = self._reconnector.reconnects
        peer = self._peer
        return DeviceHealth(
            device=self.name, kind=self.kind, link=self._state, port=self.port,
            serial_number=peer.serial_number if peer else "",
            firmware_version=peer.firmware_version if peer else "",
            protocol_version=peer.protocol_version if peer else None,
            connected_since_monotonic=self._reconnector.up_since,
            counters=counters, last_error=self._last_error)

    async def self_test(self) -> SelfTestResult:
        """Ask the device to test itself; a device that is not connected fails the test."""
        if self._state is not LinkState.UP or self._link is None:
            return SelfTestResult(self.name, False,
                                  f"link is {self._state.value}: {self._last_error or 'not connected'}")
        loop = asyncio.get_running_loop()
        self._self_test = loop.create_future()
        try:
            await self._link.send(wire.SelfTestRequest())
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation that
            # arrives with the result (drivers/timers.py), leaving the caller running on.
            async with asyncio.timeout(self._self_test_wait(self._link)):
                result = await asyncio.shield(self._self_test)
        except (TimeoutError, BridgeError) as exc:
            return SelfTestResult(self.name, False, f"no self-test result: {exc or 'timed out'}")
        finally:
            self._self_test = None
        return SelfTestResult(self.name, result.passed, result.detail)

    @property
    def state(self) -> LinkState:
        return self._state

    @property
    def peer(self) -> wire.Hello | None:
        """The device's Hello of the current (or last) session."""
        return self._peer

    async def wait_state(self, state: LinkState, timeout: float) -> None:
        """Wait until the link is in ``state`` (diagnostics and tests)."""
        async def until() -> None:
            while self._state is not state:
                assert self._state_changed is not None
                self._state_changed.clear()
                await self._state_changed.wait()
        async with asyncio.timeout(timeout):  # cancelled with the caller, on 3.11 too
            await until()

    # --- for subclasses ---------------------------------------------------------

    async def _send(self, message: wire.Message, error: type[DeviceNotConnectedError]) -> None:
        link = self._link
        if self._state is not LinkState.UP or link is None:
            raise error(f"{self.name}: cannot send {type(message).__name__}, link is "
                        f"{self._state.value} ({self._last_error or 'not connected'})")
        try:
            await link.send(message)
        except BridgeError as exc:
            raise error(f"{self.name}: {type(message).__name__} not delivered: {exc}") from exc

    def _send_event(self, event: Any) -> None:
        if self._emit is not None:
            self._emit(event)

    def _fault(self, code: str, detail: str, action: str) -> None:
        self._active_faults.add(code)
        self._reported_since_up.add(code)
        self._counters["faults"] += 1
        log.warning("device fault", device=self.name, code=code, detail=detail)
        self._send_event(DeviceFault(self.name, code, detail, action))

    def _clear(self, code: str) -> None:
        if code in self._active_faults:
            self._active_faults.discard(code)
            self._send_event(DeviceFaultCleared(self.name, code))

    # --- the connection task ----------------------------------------------------

    def _accept_peer(self, peer: wire.Hello) -> str | None:
        if peer.device_kind != self.device_kind:
            return (f"wrong device on {self.port}: found a {wire.DeviceKind(peer.device_kind).name.lower()}"
                    f", expected a {self.device_kind.name.lower()}")
        if self._firmware_versions is not None and peer.firmware_version not in self._firmware_versions:
            return (f"firmware {peer.firmware_version!r} of {peer.serial_number or 'the device'} is "
                    f"not an approved version ({', '.join(sorted(self._firmware_versions))})")
        return None

    def _set_state(self, state: LinkState, detail: str = "") -> None:
        if state is self._state:
            return
        self._state = state
        if self._state_changed is not None:
            self._state_changed.set()
        # A device that stays missing would otherwise report CONNECTING/RETRYING every few
        # seconds all night: each retry that ends as the last one did is not reported again.
        if state is LinkState.CONNECTING and self._reported == (LinkState.RETRYING, self._last_error):
            return
        if (state, detail) == self._reported:
            return
        self._reported = (state, detail)
        log.info("device link", device=self.name, state=state.value, detail=detail)
        self._send_event(LinkChanged(self.name, state, detail))

    async def _close_link(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            self._last_link_counters = _link_counters(link)
            with contextlib.suppress(Exception):
                await link.close()

    async def _run(self) -> None:
        rec = self._reconnector
        while True:
            try:
                delay = await self._attempt(rec)
            except Exception as exc:  # e.g. an unexpected error opening the port: retry, never die
                log.exception("device connection attempt failed", device=self.name)
                await self._close_link()
                delay = self._failed(rec, f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(delay)

    async def _attempt(self, rec: Reconnector) -> float:
        """One open port and every session on it; returns the delay before reopening.

        docs/protocol.md 4.4 host rules: a device that reboots restarts the session on the
        open port and is handshaken there (H1, one session per reboot); a refused device
        keeps the port open so its next RESET revives the link at once (H2)."""
        self._counters["connect_attempts"] += 1
        self._set_state(rec.connecting(), self.port)
        try:
            self._link = await self._open()
        except (OSError, BridgeError, TimeoutError, ValueError) as exc:
            await self._close_link()
            return self._failed(rec, f"{type(exc).__name__}: {exc}")
        while True:
            outcome = await self._session(rec)
            if outcome is not None:
                return outcome

    async def _session(self, rec: Reconnector) -> float | None:
        """Handshake and run one session on the open link; None: the next session has
        already begun on the same port (peer restart, refusal revived)."""
        link = self._link
        self._set_state(rec.handshaking(), self.port)
        try:
            self._peer = await link.wait_up(self._handshake_wait(link))
        except LinkRefusedError as exc:
            if getattr(link, "peer", None) is not None:
                self._peer = link.peer
            reprobe = self._refused(rec, str(exc))
            return await self._wait_while_refused(link, reprobe)
        except (OSError, BridgeError, TimeoutError, ValueError) as exc:
            await self._close_link()
            return self._failed(rec, f"{type(exc).__name__}: {exc}")

        self._set_state(rec.up(self._clock()),
                        f"{self._peer.serial_number} firmware {self._peer.firmware_version}")
        self._counters["connects"] += 1
        self._reported_since_up = set()
        self._clear(LINK_DOWN)
        self._clear(INCOMPATIBLE)
        restarted = False
        try:
            self._status_pending = True
            await link.send(wire.StatusRequest())
            await self._on_up(link)
            while True:
                message = await link.receive()
                await self._dispatch(message)
        except (LinkDownError, BridgeError, OSError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            restarted = self._session_restarted(link)
        except Exception as exc:  # a bug here must not silently end the device's task
            log.exception("driver failed handling the device", device=self.name)
            reason = f"driver error {type(exc).__name__}: {exc}"
        if not restarted:
            await self._close_link()
        await self._on_down(reason)
        if self._self_test is not None and not self._self_test.done():
            self._self_test.set_exception(LinkDownError(reason))
        delay = self._failed(rec, reason)
        if restarted:
            # H1: the device's RESET already began the next session on this port; closing
            # and reopening it would end that handshake and start a second session
            self._counters["peer_restarts"] += 1
            return None
        return delay

    @staticmethod
    def _session_restarted(link: Any) -> bool:
        """The session ended because the peer started a new one (its RESET), on a port that
        is still open: the core is already handshaking the new session."""
        from firmware_bridge.link import LinkState as CoreState

        try:
            state = link.state
        except Exception:  # noqa: BLE001 - a transport already gone: not a restart
            return False
        return state in (CoreState.HANDSHAKING, CoreState.UP) and not link.closed

    @staticmethod
    def _handshake_wait(link: Any) -> float:
        """How long to wait for UP: the core's own handshake timeout at this baud rate
        (docs/protocol.md 5.9) plus the RESET repeats that find a device powering up."""
        timing = getattr(getattr(link, "endpoint", None), "timing", None)
        if timing is None:
            return HANDSHAKE_TIMEOUT_S
        return max(HANDSHAKE_TIMEOUT_S, float(timing.handshake_timeout + timing.reset_interval))

    @staticmethod
    def _self_test_wait(link: Any) -> float:
        """How long a SelfTestResult may take: SELF_TEST_TIMEOUT_S, or the handshake timeout
        at this baud rate if longer (6.2 [M-6.2a]: a device answers within it)."""
        timing = getattr(getattr(link, "endpoint", None), "timing", None)
        if timing is None:
            return SELF_TEST_TIMEOUT_S
        return max(SELF_TEST_TIMEOUT_S, float(timing.handshake_timeout))

    async def _wait_while_refused(self, link: Any, reprobe_s: float) -> float | None:
        """H2: keep the port open; the refused device's next RESET (after re-flashing) starts
        a new session at once.  After ``reprobe_s`` without one, re-probe on the same port
        (for a device swapped while powered).  A lost port is reopened after ``reprobe_s``."""
        try:
            revived = await link.wait_revived(reprobe_s)
        except BridgeError:
            await self._close_link()
            return reprobe_s
        if not revived:
            self._counters["refused_reprobes"] += 1
            link.reconnect()
        return None

    def _failed(self, rec: Reconnector, reason: str) -> float:
        was = self._state
        delay = rec.failed(self._clock(), reason)
        self._last_error = reason
        self._set_state(rec.state, reason)
        # One link_down fault per outage: when an up link drops, or the first failed attempt.
        first_failure = LINK_DOWN not in self._active_faults and rec.state is LinkState.RETRYING
        if was is LinkState.UP or first_failure:
            self._fault(LINK_DOWN, f"{self.kind} on {self.port}: {reason}",
                        f"Check the {self.kind}'s cable and power; the table resumes by itself "
                        "when the device answers again.")
        return delay

    def _refused(self, rec: Reconnector, reason: str) -> float:
        delay = rec.refused(reason)
        self._last_error = reason
        self._counters["refusals"] += 1
        self._set_state(LinkState.REFUSED, reason)
        if INCOMPATIBLE not in self._active_faults:
            self._fault(INCOMPATIBLE, reason,
                        f"Install approved firmware speaking protocol version {wire.PROTOCOL_VERSION} "
                        f"on the {self.kind} (or connect the right device to {self.port}); the table "
                        f"connects as soon as the device restarts, and re-checks every "
                        f"{rec.policy.refused_reprobe_s:g} s.")
        # A device that restarted into firmware this host refuses (re-flashed on the open
        # port) first lost its session: that link_down is over, the device answers. Cleared
        # after the refusal is raised, so the table never sees a moment without a fault, and
        # the refusal, with its action, is what `tablectl status` shows.
        self._clear(LINK_DOWN)
        return delay

    async def _dispatch(self, message: wire.Message) -> None:
        if isinstance(message, wire.Fault):
            code = wire.fault_name(message.code)
            if code in self._active_faults:
                # docs/protocol.md 4.3 / H3: the re-report of a fault the host kept active
                # across the outage; reporting it again would be a second raise
                self._reported_since_up.add(code)
                self._counters["fault_rereports"] += 1
                return
            action = self.fault_actions.get(message.code) or COMMON_FAULT_ACTIONS.get(  # type: ignore[call-overload]
                message.code, "Call a technician: the device reported a fault.")
            self._fault(code, message.detail, action)
        elif isinstance(message, wire.FaultCleared):
            self._clear(wire.fault_name(message.code))
        elif isinstance(message, wire.SelfTestResult):
            if self._self_test is not None and not self._self_test.done():
                self._self_test.set_result(message)
        elif isinstance(message, wire.Status):
            self._counters["status_replies"] += 1
            if self._status_pending:
                # The device re-sent its active faults before this reply: the others are stale.
                self._status_pending = False
                for code in sorted(self._active_faults - self._reported_since_up - {LINK_DOWN, INCOMPATIBLE}):
                    self._clear(code)
        else:
            await self._on_message(message)


def _link_counters(link: Any) -> dict[str, int]:
    counters = getattr(link, "counters", {})
    if hasattr(counters, "as_dict"):
        counters = counters.as_dict()
    # Each named for the link once: the link's own `link_failures` stays `link_failures`.
    return {k if k.startswith("link_") else f"link_{k}": int(v)
            for k, v in dict(counters).items()}


def _has_loop() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False
