"""Timed byte transcripts of scripted exchanges: the golden vectors of docs/protocol.md 8.3-8.6.

Each scenario runs a host and a device ``LinkEndpoint`` on a fake clock with no
line delay and writes down every frame each side sends, when, with a decoded
comment.  The document shows the output; tests/firmware_bridge/test_vectors_1_1.py
re-runs the scenarios and requires the document to show exactly these lines, so
a firmware author can replay the bytes and compare timings.

Run ``python -m firmware_bridge.transcript`` to print every scenario.
"""

from __future__ import annotations

import argparse
import enum
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from firmware_bridge.frame import Frame, FrameKind, decode_frame
from firmware_bridge.link import LinkEndpoint, LinkEvent, LinkTiming, LinkUp, MessageReceived, Role
from firmware_bridge.messages import (
    CAP_PROTOCOL_1_1,
    PROTOCOL_VERSION,
    DeviceKind,
    DeviceState,
    Fault,
    FaultCode,
    Hello,
    Message,
    Status,
    StatusRequest,
    decode_message,
)

HOST_HELLO_1_0 = Hello(PROTOCOL_VERSION, DeviceKind.HOST, "PI-0001", "tabled 0.1", 0)
SHOE_HELLO_1_0 = Hello(PROTOCOL_VERSION, DeviceKind.SHOE, "SHOE-42", "2.3.1", 0)
HOST_HELLO = Hello(PROTOCOL_VERSION, DeviceKind.HOST, "PI-0001", "tabled 1.1", CAP_PROTOCOL_1_1)
SHOE_HELLO = Hello(PROTOCOL_VERSION, DeviceKind.SHOE, "SHOE-42", "2.4.0", CAP_PROTOCOL_1_1)
DISPLAY_HELLO = Hello(PROTOCOL_VERSION, DeviceKind.DISPLAY, "DISP-7", "1.0", CAP_PROTOCOL_1_1)
HOST_SESSION = 0x12345678
DEVICE_SESSION = 0x0BADF00D


@dataclass(frozen=True)
class Line:
    time: float
    sender: str
    receiver: str
    wire: bytes
    comment: str

    def render(self) -> str:
        return (f"t={self.time:7.3f}  {self.sender:>4} -> {self.receiver:<4}  "
                f"{self.wire.hex(' ')}   {self.comment}")


def describe(frame: Frame) -> str:
    if frame.kind is FrameKind.DATA:
        message: Message = decode_message(frame.payload)
        return f"DATA seq {frame.seq} ack {frame.ack}: {_short(message)}"
    if frame.kind in (FrameKind.RESET, FrameKind.RESET_ACK):
        return f"{frame.kind.name}(0x{int.from_bytes(frame.payload, 'little'):08X})"
    return f"{frame.kind.name} ack {frame.ack}"


def _short(message: Message) -> str:
    if isinstance(message, Hello):
        return (f"Hello({DeviceKind(message.device_kind).name}, v{message.protocol_version}, "
                f"caps 0x{message.capabilities:X})")
    fields = ", ".join(
        f"{spec.name}={_value(getattr(message, spec.name))}" for spec in type(message).FIELDS)
    return f"{type(message).__name__}({fields})"


def _value(value: object) -> str:
    if isinstance(value, enum.IntEnum):
        return value.name
    return repr(value)


def split_frames(data: bytes) -> Iterator[bytes]:
    """Wire bytes -> one chunk per frame (a leading idle 0x00 stays with the frame after it)."""
    start = 0
    while start < len(data):
        end = data.index(0, start + (1 if data[start] == 0 else 0)) + 1
        yield data[start:end]
        start = end


class _Run:
    """Host and device endpoints on a fake clock; every write becomes transcript lines."""

    def __init__(self, device_hello: Hello, *, baudrate: int = 115200,
                 host_hello: Hello = HOST_HELLO,
                 device_app: Callable[[LinkEndpoint, LinkEvent, float], None] | None = None,
                 host_app: Callable[[LinkEndpoint, LinkEvent, float], None] | None = None,
                 accept: Callable[[Hello], str | None] | None = None) -> None:
        timing = LinkTiming.for_baudrate(baudrate)
        host_ids = itertools.chain([HOST_SESSION], itertools.count(0x1000))
        device_ids = itertools.chain([DEVICE_SESSION], itertools.count(0x2000))
        self.host = LinkEndpoint(Role.HOST, host_hello, timing=timing, accept_peer=accept,
                                 session_ids=lambda: next(host_ids))
        self.device = LinkEndpoint(Role.DEVICE, device_hello, timing=timing,
                                   session_ids=lambda: next(device_ids))
        self.device_name = DeviceKind(device_hello.device_kind).name.lower()
        self.device_app, self.host_app = device_app, host_app
        self.lines: list[Line] = []
        self.host_events: list[LinkEvent] = []
        self.device_events: list[LinkEvent] = []
        self.now = 0.0

    def settle(self) -> None:
        """Deliver everything written, instantly, until both sides are quiet."""
        while True:
            moved = False
            for sender, receiver, name, other in (
                (self.host, self.device, "host", self.device_name),
                (self.device, self.host, self.device_name, "host"),
            ):
                self._run_apps()
                data = sender.outgoing()
                if data:
                    moved = True
                    for chunk in split_frames(data):
                        frame = decode_frame(chunk.lstrip(b"\x00"))
                        self.lines.append(Line(self.now, name, other, chunk, describe(frame)))
                        # 5.10: the receiver handles each frame completely (its firmware's
                        # answer included) before it looks at the next one
                        receiver.receive(chunk, self.now)
                        self._run_apps()
            self._run_apps()
            if not moved:
                return

    def _run_apps(self) -> None:
        for endpoint, app, sink in ((self.host, self.host_app, self.host_events),
                                    (self.device, self.device_app, self.device_events)):
            for event in endpoint.events():
                sink.append(event)
                if app is not None:
                    app(endpoint, event, self.now)

    def advance(self, until: float) -> None:
        """Run both sides' timers up to ``until``."""
        while True:
            deadlines = [d for d in (self.host.next_deadline(), self.device.next_deadline())
                         if d is not None and d <= until]
            if not deadlines:
                break
            self.now = max(self.now, min(deadlines))
            self.host.poll(self.now)
            self.device.poll(self.now)
            self.settle()
        self.now = until


def _fault_rereporting_shoe(active: dict[FaultCode, str]) -> Callable[[LinkEndpoint, LinkEvent, float], None]:
    """A shoe's firmware: 4.3 re-report of active faults first, then answers StatusRequest."""
    def app(endpoint: LinkEndpoint, event: LinkEvent, now: float) -> None:
        if isinstance(event, LinkUp):
            for code, detail in active.items():
                endpoint.send(Fault(code, detail), now)
        elif isinstance(event, MessageReceived) and isinstance(event.message, StatusRequest):
            endpoint.send(Status(3600, DeviceState.FAULTED, "SHOE_LID_OPEN"), now)
    return app


def _status_request_on_up(endpoint: LinkEndpoint, event: LinkEvent, now: float) -> None:
    if isinstance(event, LinkUp):
        endpoint.send(StatusRequest(), now)


def complete_exchange() -> list[Line]:
    """8.3: the host opens the shoe's port; both sides 1.0 Hellos (capabilities 0)."""
    run = _Run(SHOE_HELLO_1_0, host_hello=HOST_HELLO_1_0)
    run.host.connect(0.0)
    run.settle()
    return run.lines


def refusal_and_revival() -> list[Line]:
    """8.4: the host finds a display on the shoe's port, refuses it, and the re-flashed
    (now correct) device revives the link with its own RESET, without any re-probe."""
    expected_kind = [DeviceKind.SHOE]

    def accept(peer: Hello) -> str | None:
        if peer.device_kind != expected_kind[0]:
            return "wrong device: found a display, expected a shoe"
        return None

    run = _Run(DISPLAY_HELLO, accept=accept)
    run.host.connect(0.0)
    run.settle()
    run.advance(2.0)  # REFUSED: no keepalives, no silence timer, nothing on the wire
    # the technician installs shoe firmware; the device boots and announces itself
    run.device = LinkEndpoint(Role.DEVICE, SHOE_HELLO, timing=run.device.timing,
                              session_ids=lambda: DEVICE_SESSION)
    run.device_name = "shoe"
    run.device.connect(run.now)
    run.settle()
    return run.lines


def fault_rereport_after_reconnect() -> list[Line]:
    """8.5: a shoe with its lid open reboots (watchdog); after the new handshake it re-sends
    the active Fault before the Status that answers the host's StatusRequest."""
    run = _Run(SHOE_HELLO, device_app=_fault_rereporting_shoe({FaultCode.SHOE_LID_OPEN: "lid open"}),
               host_app=_status_request_on_up)
    # the rebooted shoe's RESET; whether the host was UP in an older session or idle, its
    # bytes are the same: the old session ends (4.4) and this one starts
    run.device.connect(0.0)
    run.settle()
    return run.lines


def idle_link_9600() -> list[Line]:
    """8.6: an idle link at 9600 baud: both sides send an ACK keepalive every 1.0 s and
    neither declares silence (9.0 s at 9600)."""
    run = _Run(SHOE_HELLO, baudrate=9600)
    run.host.connect(0.0)
    run.settle()
    run.advance(3.5)
    return run.lines


SCENARIOS: dict[str, Callable[[], list[Line]]] = {
    "8.3": complete_exchange,
    "8.4": refusal_and_revival,
    "8.5": fault_rereport_after_reconnect,
    "8.6": idle_link_9600,
}


def main() -> None:
    # No options: --help says what it does, an argument it does not take is refused.
    argparse.ArgumentParser(prog="python -m firmware_bridge.transcript",
                            description=__doc__.splitlines()[0]).parse_args()
    for section, scenario in SCENARIOS.items():
        print(f"### {section}")
        for line in scenario():
            print(line.render())
        print()


if __name__ == "__main__":
    main()
