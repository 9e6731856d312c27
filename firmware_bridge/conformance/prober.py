"""The scripted host of the conformance suite: exact bytes out, timestamped frames in.

Unlike the reference LinkEndpoint, the prober does only what a check tells it:
it can withhold acknowledgements, send frames out of order, with bad CRCs or
garbage, stay silent, or refuse.  By default it is a well-behaved host: it
acknowledges every in-order DATA frame at once and sends an ACK keepalive every
0.5 s (half the protocol's keepalive), so a device never sees it as silent.
Everything the device sends during the whole run is kept in ``log`` for the
checks that judge all of it (framing, message fields).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from dataclasses import dataclass

from firmware_bridge.conformance.wire import Wire
from firmware_bridge.errors import FrameError
from firmware_bridge.frame import Frame, FrameDecoder, FrameKind
from firmware_bridge.link import LinkTiming
from firmware_bridge.messages import (
    CAP_PROTOCOL_1_1,
    PROTOCOL_VERSION,
    DeviceKind,
    Hello,
    Message,
    encode_message,
)

PROBER_KEEPALIVE_S = 0.5
"""The prober's own keepalive: half of KEEPALIVE_IDLE, so it is never the silent one."""

PROBE_HELLO = Hello(PROTOCOL_VERSION, DeviceKind.HOST, "CONFORMANCE", "tablectl conformance 1.1",
                    CAP_PROTOCOL_1_1)


class ProbeError(Exception):
    """The device did not do what the scenario needs in order to go on (the check fails)."""


@dataclass(frozen=True)
class Rx:
    """One thing received: a frame or a frame error, when (wire clock), in which session."""

    time: float
    frame: Frame | None
    error: FrameError | None
    session: int

    @property
    def is_data(self) -> bool:
        return self.frame is not None and self.frame.kind is FrameKind.DATA

    def kind(self) -> FrameKind | None:
        return self.frame.kind if self.frame is not None else None

    def describe(self) -> str:
        """What arrived, for a report: the frame kind, or "a bad frame"."""
        return self.frame.kind.name if self.frame is not None else "a bad frame"


_SESSION = struct.Struct("<I")


class Prober:
    """A host that does exactly what the check says (see the module docstring)."""

    def __init__(self, wire: Wire, timing: LinkTiming, kind: DeviceKind) -> None:
        self.wire = wire
        self.timing = timing
        self.kind = kind
        self.log: list[Rx] = []
        self._decoder = FrameDecoder()
        self._ids = itertools.count(0x5EED_0001)
        self.session = 0
        self.tx_seq = 0
        self.rx_expected = 0
        self.auto_ack = True
        self.hold_acks = False  # True: rx_expected frozen, so no frame of ours acknowledges new DATA
        self.keepalive = True
        self.last_tx = wire.now()
        self.device_hello: Hello | None = None
        self.bytes_in = 0  # every byte the device sent, framed or not

    # --- sending -----------------------------------------------------------------------

    def now(self) -> float:
        return self.wire.now()

    def send_raw(self, data: bytes) -> None:
        self.wire.write(data)
        self.last_tx = self.wire.now()

    def send_frame(self, frame: Frame) -> None:
        self.send_raw(frame.encode())

    def data_frame(self, message: Message | bytes, *, seq: int | None = None,
                   ack: int | None = None) -> Frame:
        """A DATA frame of ``message`` (or raw payload); takes the next seq unless given."""
        payload = message if isinstance(message, bytes) else encode_message(message)
        if seq is None:
            seq, self.tx_seq = self.tx_seq, (self.tx_seq + 1) % 256
        return Frame(FrameKind.DATA, seq, self.rx_expected if ack is None else ack, payload)

    def send_data(self, message: Message | bytes, **kw: int) -> Frame:
        frame = self.data_frame(message, **kw)
        self.send_frame(frame)
        return frame

    def ack(self) -> None:
        self.send_frame(Frame(FrameKind.ACK, 0, self.rx_expected))

    # --- receiving -------------------------------------------------------------------------

    def pump(self, seconds: float, stop: Callable[[list[Rx]], bool] | None = None) -> list[Rx]:
        """Listen for ``seconds`` (or until ``stop(received so far)``), acknowledging and
        keeping alive as configured; returns what arrived."""
        until = self.wire.now() + seconds
        new: list[Rx] = []
        while True:
            if stop is not None and stop(new):
                return new
            now = self.wire.now()
            if now >= until:
                return new
            wake = until
            if self.keepalive:
                wake = min(wake, self.last_tx + PROBER_KEEPALIVE_S)
            data = self.wire.read(wake)
            self.bytes_in += len(data)
            for item in self._decoder.feed(data) if data else ():
                rx = Rx(self.wire.now(), item if isinstance(item, Frame) else None,
                        item if isinstance(item, FrameError) else None, self.session)
                self.log.append(rx)
                new.append(rx)
                self._on_rx(rx)
            if self.keepalive and self.wire.now() >= self.last_tx + PROBER_KEEPALIVE_S:
                self.ack()

    def _on_rx(self, rx: Rx) -> None:
        frame = rx.frame
        if frame is None or frame.kind is not FrameKind.DATA:
            return
        distance = (frame.seq - self.rx_expected) % 256
        if self.hold_acks:
            return
        if distance == 0:
            self.rx_expected = (self.rx_expected + 1) % 256
        if self.auto_ack and (distance == 0 or distance >= 128):  # in order, or a duplicate
            self.ack()

    # --- sessions ------------------------------------------------------------------------

    def new_session_id(self) -> int:
        return next(self._ids) & 0xFFFFFFFF

    def reset(self, session: int | None = None, *, then: Callable[[], bytes] | None = None) -> int:
        """Send 0x00 + RESET(new id) (and ``then()``'s bytes in the same write); the prober's
        sequence numbers restart."""
        self.session = self.new_session_id() if session is None else session
        self.tx_seq = self.rx_expected = 0
        self.auto_ack, self.hold_acks, self.keepalive = True, False, True
        extra = then() if then is not None else b""
        self.send_raw(b"\x00" + Frame(FrameKind.RESET, 0, 0, _SESSION.pack(self.session)).encode()
                      + extra)
        return self.session

    def mark(self) -> int:
        """A position in ``log``: wait_for(since=mark) also sees what arrived after it."""
        return len(self.log)

    def wait_for(self, what: str, predicate: Callable[[Rx], bool], seconds: float, *,
                 since: int | None = None) -> Rx:
        """The first frame matching ``predicate`` received after ``since`` (default: from now
        on), waiting up to ``seconds``; ProbeError if none comes."""
        found = [rx for rx in self.log[since:] if predicate(rx)] if since is not None else []

        def stop(new: list[Rx]) -> bool:
            found.extend(rx for rx in new if predicate(rx))
            return bool(found)

        if not found:
            self.pump(seconds, stop)
        if not found:
            raise ProbeError(f"no {what} within {seconds:.2f} s")
        return found[0]

    def open_session(self, *, hello: Hello = PROBE_HELLO, after_hello: list[Message] | None = None,
                     want_up: bool = True) -> Rx:
        """RESET, RESET_ACK, the device's Hello, then ours (with ``after_hello`` in the same
        write, acknowledging the device's Hello); returns the device's Hello frame."""
        mark = self.mark()
        session = self.reset()
        self.auto_ack = False  # our Hello carries the acknowledgement of the device's Hello
        try:
            response = self.reset_response_s()
            self.wait_for("RESET_ACK", lambda rx: rx.kind() is FrameKind.RESET_ACK
                          and rx.frame is not None and rx.frame.payload == _SESSION.pack(session),
                          response, since=mark)
            device_hello = self.wait_for(
                "Hello from the device", lambda rx: rx.is_data and rx.frame is not None
                and rx.session == session and rx.frame.payload[0] == Hello.ID,
                self.timing.handshake_timeout, since=mark)
            frames = [self.data_frame(hello)]
            frames += [self.data_frame(message) for message in after_hello or []]
            sent = self.mark()
            self.send_raw(b"".join(frame.encode() for frame in frames))
        finally:
            self.auto_ack = True
        if want_up:
            self.wait_for("acknowledgement of our Hello",
                          lambda rx: rx.frame is not None and rx.session == session
                          and rx.frame.kind in (FrameKind.ACK, FrameKind.DATA)
                          and rx.frame.ack >= 1, self.reset_response_s(), since=sent)
        return device_hello

    def reset_response_s(self) -> float:
        """How long a device may take to answer a frame: generously, eight MIN_RTO at its
        baud rate (a few max frames of wire time) and at least one second, plus slack."""
        return max(1.0, 8 * self.timing.min_rto) + self.wire.slack

    def data_since(self, start: int, session: int | None = None) -> list[Rx]:
        """DATA frames logged from index ``start`` (of this session by default)."""
        want = self.session if session is None else session
        return [rx for rx in self.log[start:] if rx.is_data and rx.session == want]
