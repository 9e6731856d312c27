"""The link layer as a sans-I/O state machine: bytes and time in, bytes and events out.

One ``LinkEndpoint`` class serves both ends (the host daemon and the device
firmware or its simulator).  It owns no socket, no thread and no clock: the
caller feeds received bytes with ``receive(data, now)``, calls ``poll(now)`` at
or after ``next_deadline()``, writes whatever ``outgoing()`` returns, and acts
on ``events()``.  ``now`` is any monotonic clock in seconds; tests use a fake.

Rules (docs/protocol.md, "Link layer"), in brief:

* RESET(session id) / RESET_ACK(same id) start a session; sequence numbers
  restart at 0.  A RESET with the session id already in use is a retransmission
  and is only re-acknowledged; a new id means the peer restarted.
* DATA frames carry ``seq``; every DATA/ACK/NAK carries ``ack`` = next seq
  expected (cumulative).  Up to ``window`` DATA frames are in flight; lost
  frames are resent go-back-N after an adaptive timeout (RFC 6298) or at once
  on NAK; after ``max_retries`` resends the link FAILS.
* Duplicates (seq already delivered) are re-acknowledged and dropped; a seq
  ahead of the expected one is dropped and NAKed once.
* Handshake: each side's first DATA is Hello; UP when the peer's Hello was
  accepted and ours acknowledged.  An incompatible peer gets Refuse -> REFUSED.
* Keepalive: an ACK after ``keepalive_idle`` without sending; a peer heard
  from for ``silence_timeout`` is declared silent and the link FAILS.
* Received frames are processed one at a time (5.10): after each, queued DATA goes
  out carrying the ack, and a bare ACK follows only if nothing did.  The bare ACK
  waits until ``outgoing()`` (or the next frame), so an answer the application
  queues on the frame's event carries the acknowledgement instead.
* Messages unacknowledged when a session ends are reported in
  ``LinkDown.unconfirmed`` and never resent in a later session, so nothing is
  silently duplicated.
"""

from __future__ import annotations

import enum
import secrets
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass

from firmware_bridge.errors import (
    CrcError,
    FrameError,
    IncompatibleVersionError,
    LinkBusyError,
    LinkDownError,
    LinkError,
    LinkRefusedError,
    LinkTimeoutError,
    MessageError,
)
from firmware_bridge.frame import Frame, FrameDecoder, FrameKind
from firmware_bridge.messages import (
    PROTOCOL_VERSION,
    VENDOR_MESSAGE_IDS,
    DeviceKind,
    Hello,
    Message,
    Refuse,
    RefuseCode,
    decode_message,
    encode_message,
    protocol_revision,
)

# --- timing: every value says where it comes from -----------------------------------------

BAUD_DEFAULT = 115200
BITS_PER_BYTE_8N1 = 10  # start + 8 data + stop
MAX_FRAME_WIRE_TIME = 249 * BITS_PER_BYTE_8N1 / BAUD_DEFAULT  # 21.6 ms: one max frame at 115200

WINDOW = 4
"""DATA frames in flight: 4 max frames are 86 ms of wire time at 115200, longer than a
round trip, so the link streams; small enough for a microcontroller's 1 KiB of buffers."""

INITIAL_RTO = 0.25
"""Retransmission timeout before any RTT sample.  RFC 6298 uses 1 s for an unknown
Internet path; this is a known point-to-point link whose worst round trip (a full
window out, an ACK back, at 115200) is ~90 ms, plus ~50 ms of firmware/USB latency."""

MIN_RTO = 0.05
"""Floor of the adaptive timeout: two max frames of wire time at 115200 (43 ms) plus
margin, so a busy but healthy link never retransmits spuriously.  Scaled by
``LinkTiming.for_baudrate`` for slower links."""

MAX_RTO = 2.0
"""Cap of the backed-off timeout: below SILENCE_TIMEOUT so a lost frame is resent before
the peer could be declared silent (RFC 6298 allows >= 60 s; a table must notice a dead
device within seconds)."""

MAX_RETRIES = 5
"""Resends of one DATA frame before the link FAILS: with backoff 0.25+0.5+1+2+2 s the
link gives up ~6 s after a frame stops getting through (bellows' ASH gives up after
a similar handful of ACK timeouts)."""

QUIET_LINE = 0.010
"""A line quiet this long (at 115200 baud; longer on slower lines, as the timeouts are)
when a frame is sent: the frame opens with a delimiter (3.3). About 115 bytes' time at
115200: the frames of one burst (a window of cards, a DATA and the ACK it carries) are
queued well within it and share their delimiters as before."""
KEEPALIVE_IDLE = 1.0
"""Send an ACK as keepalive after this long without sending, at EVERY baud rate (protocol
1.1, 5.9): an ACK is 9 bytes on the wire, 1 % of a 9600-baud line, so it never needs
stretching, and a peer's silence timeout can always count on it."""

SILENCE_TIMEOUT = 3.0
"""Peer declared silent after three keepalive periods with nothing valid heard (the
'three missed heartbeats' rule of aioesphomeapi and most fieldbuses)."""

RESET_INTERVAL = 0.5
"""Repeat RESET this often while waiting for RESET_ACK: twice per second finds a device
quickly after it powers up without flooding a port nobody listens on."""

HANDSHAKE_TIMEOUT = 5.0
"""From RESET_ACK to UP at 115200: Hello needs one round trip; 5 s covers four
retransmissions of a lost Hello (0.25+0.5+1+2 s) before giving up.  Slower links get
the same four retransmissions by formula (``handshake_budget``)."""

HANDSHAKE_RETRANSMISSIONS = 4
"""Retransmissions of a lost Hello that every baud rate's handshake timeout leaves room for."""

HANDSHAKE_MARGIN = 1.0
"""Added to the four retransmission timeouts: time for the last Hello's acknowledgement."""

SLOW_LINK_BAUD = 28800
"""Below this, the silence timeout stretches with the wire time (protocol 1.1, 5.9)."""

SEND_QUEUE_LIMIT = 64
"""Messages accepted by send() but not yet in flight; beyond it send() raises
LinkBusyError (a burst of 8 decks' CardDrawn would be 416, but the shoe sends one
per card at dealing speed)."""

EVENT_LIMIT = 1024  # events kept for a caller that does not drain; oldest dropped, counted
OUTGOING_LIMIT = 64 * 1024  # bytes kept for a caller that does not drain; dropped, counted

_RTT_ALPHA = 1 / 8  # RFC 6298 section 2.3
_RTT_BETA = 1 / 4  # RFC 6298 section 2.3
_RTT_K = 4  # RFC 6298 section 2.3
_CLOCK_GRANULARITY = 0.001  # G in RFC 6298: the loop clock's resolution is far finer

_SEQ_MODULUS = 256
REFUSE_REASON_BYTES = 200  # Refuse payload: id, code, length byte, reason <= 240 bytes
_SESSION = struct.Struct("<I")
NO_SESSION = 0
"""Session id 0 is reserved (protocol 1.1, 4.1): never sent, and a RESET/RESET_ACK carrying
it is ignored, so firmware may use 0 as "no session"."""


def cut_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes on a character boundary (protocol 1.1, 4.2)."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


def baud_scale(baudrate: int) -> float:
    """How much slower than 115200 a line is (1.0 at 115200 and above)."""
    if baudrate <= 0:
        raise ValueError(f"baud rate {baudrate} must be positive")
    return max(1.0, BAUD_DEFAULT / baudrate)


def handshake_budget(initial_rto: float, max_rto: float) -> float:
    """Handshake timeout that leaves room for HANDSHAKE_RETRANSMISSIONS of a lost Hello:
    four backed-off timeouts plus a margin; never below 5 s."""
    total, rto = 0.0, initial_rto
    for _ in range(HANDSHAKE_RETRANSMISSIONS):
        total += rto
        rto = min(max_rto, rto * 2)
    return max(HANDSHAKE_TIMEOUT, total + HANDSHAKE_MARGIN)


@dataclass(frozen=True)
class LinkTiming:
    """Timing and sizing of one endpoint; defaults are the protocol's (docs/protocol.md)."""

    window: int = WINDOW
    initial_rto: float = INITIAL_RTO
    min_rto: float = MIN_RTO
    max_rto: float = MAX_RTO
    max_retries: int = MAX_RETRIES
    keepalive_idle: float = KEEPALIVE_IDLE
    silence_timeout: float = SILENCE_TIMEOUT
    reset_interval: float = RESET_INTERVAL
    handshake_timeout: float = HANDSHAKE_TIMEOUT
    send_queue_limit: int = SEND_QUEUE_LIMIT

    def __post_init__(self) -> None:
        if not 1 <= self.window <= 127:  # go-back-N needs window < modulus / 2 for dup detection
            raise ValueError(f"window {self.window} must be 1..127")
        if not 0 < self.min_rto <= self.initial_rto <= self.max_rto:
            raise ValueError("need 0 < min_rto <= initial_rto <= max_rto")
        if self.keepalive_idle >= self.silence_timeout:
            raise ValueError("keepalive_idle must be shorter than silence_timeout")

    @classmethod
    def for_baudrate(cls, baudrate: int) -> LinkTiming:
        """The timing both ends MUST use at ``baudrate`` (docs/protocol.md 5.9, one formula).

        s = max(1, 115200 / baud): the retransmission timeouts scale with the wire time;
        the keepalive stays 1.0 s at every rate; the silence timeout is 3.0 s x
        max(1, 28800 / baud); the handshake timeout leaves room for four Hello
        retransmissions.  (1.0 stretched the keepalive too, so a 9600-baud host sent one
        every 3 s to a device that, using the 115200 constants, timed out after 3 s.)"""
        scale = baud_scale(baudrate)
        initial_rto = INITIAL_RTO * scale
        max_rto = max(MAX_RTO, 2 * initial_rto)
        return cls(
            initial_rto=initial_rto,
            min_rto=MIN_RTO * scale,
            max_rto=max_rto,
            keepalive_idle=KEEPALIVE_IDLE,
            silence_timeout=SILENCE_TIMEOUT * max(1.0, SLOW_LINK_BAUD / baudrate),
            handshake_timeout=handshake_budget(initial_rto, max_rto),
        )


class Role(enum.Enum):
    HOST = "host"
    DEVICE = "device"


class LinkState(enum.Enum):
    IDLE = "idle"  # not started
    RESETTING = "resetting"  # sent RESET, waiting for RESET_ACK
    HANDSHAKING = "handshaking"  # session started, exchanging Hello
    UP = "up"
    FAILED = "failed"  # gave up (timeouts); connect() again, or a peer RESET revives it
    REFUSED = "refused"  # handshake refused by either side; needs a technician


# --- events -------------------------------------------------------------------


@dataclass(frozen=True)
class Unconfirmed:
    """A message whose delivery is unknown because its session ended before it was acknowledged."""

    ticket: int
    message: Message


@dataclass(frozen=True)
class LinkUp:
    peer: Hello


@dataclass(frozen=True)
class MessageReceived:
    message: Message


@dataclass(frozen=True)
class MessageAcked:
    """The peer acknowledged the message that ``send()`` returned ``ticket`` for."""

    ticket: int
    message: Message


@dataclass(frozen=True)
class LinkDown:
    """The session ended.  ``unconfirmed`` were sent or queued but not acknowledged: the
    peer may or may not have them, and they will not be resent."""

    reason: str
    error: LinkError
    unconfirmed: tuple[Unconfirmed, ...] = ()


@dataclass(frozen=True)
class PeerRefused:
    """The handshake was refused; ``local`` is True if this side refused the peer."""

    reason: str
    local: bool
    error: LinkRefusedError


@dataclass(frozen=True)
class BadMessage:
    """A DATA frame arrived intact but its payload is not a valid message (counted, dropped)."""

    error: MessageError
    payload: bytes


@dataclass(frozen=True)
class VendorMessage:
    """A message id of the vendor extension range (6.1) that the catalogue does not know:
    acknowledged, counted, handed to the application, never an error (protocol 1.1)."""

    payload: bytes


LinkEvent = (LinkUp | MessageReceived | MessageAcked | LinkDown | PeerRefused | BadMessage
             | VendorMessage)


@dataclass
class LinkCounters:
    """Diagnostics of one endpoint; ``as_dict()`` is what health reports show."""

    bytes_in: int = 0
    bytes_out: int = 0
    frames_in: int = 0
    frames_out: int = 0
    messages_in: int = 0
    messages_out: int = 0
    crc_errors: int = 0
    framing_errors: int = 0
    oversize: int = 0
    resyncs: int = 0
    retransmits: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    naks_sent: int = 0
    naks_received: int = 0
    timeouts: int = 0
    keepalives_sent: int = 0
    resets_sent: int = 0
    resets_received: int = 0
    bad_messages: int = 0
    vendor_messages: int = 0
    ignored_frames: int = 0  # well-formed but meaningless here (session id 0, non-Hello first)
    link_failures: int = 0
    dropped_events: int = 0
    dropped_output: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class _InFlight:
    seq: int
    payload: bytes
    ticket: int | None  # None: the link's own Hello / Refuse
    message: Message
    first_sent: float
    tx_count: int = 1
    timer_resends: int = 0  # resends after a timeout: only these count toward max_retries (5.5)


@dataclass
class _Queued:
    ticket: int | None
    message: Message
    payload: bytes


def _seq_distance(later: int, earlier: int) -> int:
    return (later - earlier) % _SEQ_MODULUS


@dataclass
class _Rtt:
    """RFC 6298 estimator."""

    timing: LinkTiming
    srtt: float | None = None
    rttvar: float = 0.0
    rto: float = 0.0

    def __post_init__(self) -> None:
        self.rto = self.timing.initial_rto

    def sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = (1 - _RTT_BETA) * self.rttvar + _RTT_BETA * abs(self.srtt - rtt)
            self.srtt = (1 - _RTT_ALPHA) * self.srtt + _RTT_ALPHA * rtt
        rto = self.srtt + max(_CLOCK_GRANULARITY, _RTT_K * self.rttvar)
        self.rto = min(self.timing.max_rto, max(self.timing.min_rto, rto))

    def back_off(self) -> None:
        self.rto = min(self.timing.max_rto, self.rto * 2)


def default_accept(role: Role) -> Callable[[Hello], tuple[RefuseCode, str] | None]:
    """A host talks to devices only; a device talks to a host only."""

    def accept(peer: Hello) -> tuple[RefuseCode, str] | None:
        is_host = peer.device_kind == DeviceKind.HOST
        if role is Role.HOST and is_host:
            return RefuseCode.WRONG_DEVICE_KIND, "peer is a host, expected a device"
        if role is Role.DEVICE and not is_host:
            return (
                RefuseCode.WRONG_DEVICE_KIND,
                f"peer is a {DeviceKind(peer.device_kind).name.lower()}, expected the host",
            )
        return None

    return accept


class LinkEndpoint:
    """One end of a link: host or device, sans-I/O (see the module docstring)."""

    def __init__(
        self,
        role: Role,
        hello: Hello,
        *,
        timing: LinkTiming | None = None,
        accept_peer: Callable[[Hello], str | None] | None = None,
        session_ids: Callable[[], int] | None = None,
        restart_after_failure: bool | None = None,
    ) -> None:
        """``accept_peer(peer_hello)`` returns None to accept or a reason to refuse;
        ``session_ids`` gives fresh u32 session ids (random by default; tests inject);
        ``restart_after_failure`` (default: devices yes, host no) goes straight back to
        RESETTING after a failure, as firmware does, instead of waiting in FAILED for a
        driver to call connect()."""
        self.role = role
        self.hello = hello
        self.timing = timing or LinkTiming()
        self._accept_peer = accept_peer
        self._session_ids = session_ids or (lambda: secrets.randbits(32))
        self._restart_after_failure = (
            role is Role.DEVICE if restart_after_failure is None else restart_after_failure
        )
        self.counters = LinkCounters()
        self.state = LinkState.IDLE
        self.peer: Hello | None = None
        self.refusal: LinkRefusedError | None = None
        self.last_down: LinkDown | None = None
        self._decoder = FrameDecoder()
        self._out = bytearray()
        self._quiet_line = QUIET_LINE * (self.timing.min_rto / MIN_RTO)  # scaled by the baud
        self._events: deque[LinkEvent] = deque()
        self._next_ticket = 1
        self._own_session: int | None = None  # id of the RESET we sent
        self._peer_session: int | None = None  # id of the session we are in, if the peer began it
        self._clear_session(0.0)

    # --- public API ----------------------------------------------------------------

    def connect(self, now: float) -> None:
        """Start (or restart) a session: send RESET and repeat it until RESET_ACK."""
        self._end_session("local reset", LinkDownError("link reset by this side"))
        self._clear_session(now)  # the old session's queue was reported, never resent
        self.state = LinkState.RESETTING
        self._own_session = self._new_session_id()
        self._peer_session = None
        self._decoder.reset()
        self._send_reset(now)

    def _new_session_id(self) -> int:
        # 4.1: 0 is reserved; a generator that yields it is asked again
        for _ in range(8):
            session = self._session_ids() & 0xFFFFFFFF
            if session != NO_SESSION:
                return session
        raise ValueError("session_ids keeps returning 0, which protocol 1.1 reserves")

    @property
    def peer_revision(self) -> tuple[int, int] | None:
        """The peer's protocol version as (major, minor), from its Hello (section 7)."""
        if self.peer is None:
            return None
        return protocol_revision(self.peer)

    def receive(self, data: bytes, now: float) -> None:
        """Feed bytes read from the transport, in any split."""
        self.counters.bytes_in += len(data)
        for item in self._decoder.feed(data):
            # 5.10 (1.2): one frame at a time, each with its own transmit step, so what is
            # sent never depends on how the bytes were split into reads
            self._flush_ack(now)
            if isinstance(item, Frame):
                self.counters.frames_in += 1
                self._on_frame(item, now)
            else:
                self._on_bad_frame(item)
            self._pump(now)
        self._sync_decoder_counters()
        self._ack_owed_at = now

    def send(self, message: Message, now: float) -> int:
        """Queue ``message``; returns a ticket that a later MessageAcked names.

        Raises LinkDownError unless UP, LinkBusyError if the send queue is full,
        MessageError if the message cannot be encoded."""
        if self.state is not LinkState.UP:
            raise LinkDownError(f"cannot send {type(message).__name__}: link is {self.state.value}")
        if len(self._pending) >= self.timing.send_queue_limit:
            raise LinkBusyError(f"send queue full ({self.timing.send_queue_limit} messages)")
        payload = encode_message(message)
        ticket = self._next_ticket
        self._next_ticket += 1
        self._pending.append(_Queued(ticket, message, payload))
        self._pump(now)
        return ticket

    def poll(self, now: float) -> None:
        """Run timers due at ``now``: RESET repeat, retransmission, keepalive, silence."""
        self._flush_ack(now)
        state = self.state
        if state is LinkState.RESETTING:
            if now >= self._next_reset:
                self._send_reset(now)
            return
        if state not in (LinkState.HANDSHAKING, LinkState.UP, LinkState.REFUSED):
            return
        if state is LinkState.HANDSHAKING and now >= self._handshake_deadline:
            self._fail(
                f"handshake timed out: no Hello exchanged within {self.timing.handshake_timeout} s",
                now,
            )
            return
        if state is LinkState.UP and now >= self._last_rx + self.timing.silence_timeout:
            self._fail(f"peer silent for {now - self._last_rx:.1f} s", now)
            return
        if self._rtx_deadline is not None and now >= self._rtx_deadline:
            self._on_retransmit_timeout(now)
            if self.state is LinkState.FAILED:
                return
        if state is LinkState.UP and now >= self._last_tx + self.timing.keepalive_idle:
            self.counters.keepalives_sent += 1
            self._send_frame(Frame(FrameKind.ACK, 0, self._rx_expected), now)
        self._pump(now)

    def outgoing(self) -> bytes:
        """Bytes to write to the transport now (drains).

        An ACK owed for the last frame received goes out here unless a DATA frame sent
        since (an answer the application queued on the frame's event) carried it (5.10)."""
        self._flush_ack(self._ack_owed_at)
        data = bytes(self._out)
        self._out.clear()
        return data

    def events(self) -> list[LinkEvent]:
        """Events since the last call (drains)."""
        drained = list(self._events)
        self._events.clear()
        return drained

    def next_deadline(self) -> float | None:
        """When ``poll`` next has something to do, or None if only received bytes matter."""
        state = self.state
        if state is LinkState.RESETTING:
            return self._next_reset
        candidates: list[float] = []
        if self._rtx_deadline is not None and state in (
            LinkState.HANDSHAKING, LinkState.UP, LinkState.REFUSED,
        ):
            candidates.append(self._rtx_deadline)
        if state is LinkState.HANDSHAKING:
            candidates.append(self._handshake_deadline)
        if state is LinkState.UP:
            candidates.append(self._last_rx + self.timing.silence_timeout)
            candidates.append(self._last_tx + self.timing.keepalive_idle)
        return min(candidates) if candidates else None

    @property
    def rto(self) -> float:
        """Current retransmission timeout (diagnostics)."""
        return self._rtt.rto

    def unconfirmed(self) -> tuple[Unconfirmed, ...]:
        """Messages sent or queued but not yet acknowledged."""
        items: list[_InFlight | _Queued] = [*self._unacked, *self._pending]
        return tuple(Unconfirmed(i.ticket, i.message) for i in items if i.ticket is not None)

    # --- session lifecycle ------------------------------------------------------------

    def _clear_session(self, now: float) -> None:
        self._tx_next = 0
        self._tx_base = 0
        self._rx_expected = 0
        self._unacked: deque[_InFlight] = deque()
        self._pending: deque[_Queued] = deque()
        self._ack_due = False
        self._ack_owed_at = now
        self._nak_sent_for: int | None = None
        self._nak_due = False
        self._rtx_deadline: float | None = None
        self._rtt = _Rtt(self.timing)
        self._hello_acked = False
        self._hello_ack_withheld = False  # we refused: our Hello's copies carry ack 0 (_refuse)
        self._last_rx = now
        self._last_tx = now
        self._next_reset = now
        self._handshake_deadline = now + self.timing.handshake_timeout

    def _end_session(self, reason: str, error: LinkError) -> None:
        """Report the end of an UP session (with its unconfirmed messages)."""
        if self.state is LinkState.UP:
            down = LinkDown(reason, error, self.unconfirmed())
            self.last_down = down
            self._emit(down)

    def _start_session(self, now: float) -> None:
        self._clear_session(now)
        self.state = LinkState.HANDSHAKING
        self.peer = None
        self.refusal = None
        self._queue_internal(self.hello, front=False)

    def _fail(self, reason: str, now: float) -> None:
        error = LinkTimeoutError(reason)
        down = LinkDown(reason, error, self.unconfirmed())
        self.counters.link_failures += 1
        self.state = LinkState.FAILED
        self.last_down = down
        self._emit(down)
        self._clear_session(now)
        if self._restart_after_failure:
            self.connect(now)  # announce ourselves again, as after a reboot

    def _send_reset(self, now: float) -> None:
        assert self._own_session is not None
        self.counters.resets_sent += 1
        # a leading delimiter ends any garbage the peer's decoder holds, so this RESET parses
        self._out += b"\x00"
        self._send_frame(Frame(FrameKind.RESET, 0, 0, _SESSION.pack(self._own_session)), now)
        self._next_reset = now + self.timing.reset_interval

    # --- receiving ----------------------------------------------------------------------

    def _on_bad_frame(self, error: FrameError) -> None:
        # A corrupt frame may have been DATA we need: ask for a resend once per gap.
        if isinstance(error, CrcError) and self.state in (LinkState.HANDSHAKING, LinkState.UP):
            self._maybe_nak()

    def _sync_decoder_counters(self) -> None:
        decoder = self._decoder.counters
        self.counters.crc_errors = decoder.crc_errors
        self.counters.framing_errors = decoder.framing_errors
        self.counters.oversize = decoder.oversize
        self.counters.resyncs = decoder.resyncs

    def _on_frame(self, frame: Frame, now: float) -> None:
        kind = frame.kind
        if kind in (FrameKind.RESET, FrameKind.RESET_ACK):
            (session,) = _SESSION.unpack(frame.payload)
            if session == NO_SESSION:
                self.counters.ignored_frames += 1  # 4.1: id 0 is reserved, never a session
                return
        if kind is FrameKind.RESET:
            self._on_reset(session, now)
            return
        if kind is FrameKind.RESET_ACK:
            if self.state is LinkState.RESETTING and session == self._own_session:
                self._last_rx = now
                self._start_session(now)
            return  # a stale or repeated RESET_ACK: the session already started
        if self.state not in (LinkState.HANDSHAKING, LinkState.UP, LinkState.REFUSED):
            return  # no session: nothing to acknowledge against
        self._last_rx = now
        if kind is FrameKind.ACK:
            self._on_ack(frame.ack, now)
        elif kind is FrameKind.NAK:
            self.counters.naks_received += 1
            self._on_ack(frame.ack, now)
            self._retransmit_all(now, by_timer=False)
        else:
            self._on_data(frame, now)
        # After the payload, not before: a Refuse carries the ack of our Hello, and
        # must not be preceded by a LinkUp.
        self._maybe_up(now)

    def _on_reset(self, session: int, now: float) -> None:
        self.counters.resets_received += 1
        if session == self._own_session:
            return  # our own RESET echoed back (e.g. a pty not yet in raw mode)
        reply = Frame(FrameKind.RESET_ACK, 0, 0, _SESSION.pack(session))
        if session == self._peer_session and self.state in (
            LinkState.HANDSHAKING, LinkState.UP, LinkState.REFUSED,
        ):
            self._send_frame(reply, now)  # a repeat of the RESET that began this session
            return
        self._end_session("peer reset", LinkDownError("peer restarted the link (device reset?)"))
        self._peer_session = session
        self._own_session = None
        self._send_frame(reply, now)
        self._start_session(now)
        self._last_rx = now

    def _on_ack(self, ack: int, now: float) -> None:
        count = _seq_distance(ack, self._tx_base)
        if count == 0 or count > len(self._unacked):
            return  # nothing new, or an ack for frames never sent (stale): ignore
        newest_clean: _InFlight | None = None
        for _ in range(count):
            item = self._unacked.popleft()
            if item.tx_count == 1:
                newest_clean = item  # Karn: only frames sent once give a valid RTT sample
            if item.ticket is None:
                if isinstance(item.message, Hello):
                    self._hello_acked = True
            else:
                self._emit(MessageAcked(item.ticket, item.message))
        if newest_clean is not None:
            self._rtt.sample(now - newest_clean.first_sent)
        self._tx_base = ack
        self._rtx_deadline = now + self._rtt.rto if self._unacked else None

    def _on_data(self, frame: Frame, now: float) -> None:
        self._on_ack(frame.ack, now)  # 5.2: a frame's ack is processed before its payload
        distance = _seq_distance(frame.seq, self._rx_expected)
        if distance == 0 and self._is_stray_first(frame.payload):
            # 4.2: the first DATA of a session is Hello (or a 1.0 peer's Refuse); anything
            # else is not acknowledged, so the peer cannot mistake it for delivered
            self.counters.ignored_frames += 1
            self._bad_message(f"first message of the session has id 0x{frame.payload[0]:02X}, "
                              "expected Hello", frame.payload)
            return
        if distance == 0:
            self._rx_expected = (self._rx_expected + 1) % _SEQ_MODULUS
            self._nak_sent_for = None
            self._ack_due = True
            self._deliver(frame.payload, now)
        elif distance >= _SEQ_MODULUS // 2:
            self.counters.duplicates += 1  # already delivered: our ACK was lost, repeat it
            self._ack_due = True
        else:
            self.counters.out_of_order += 1  # a frame before it was lost: go-back-N
            self._maybe_nak()

    def _is_stray_first(self, payload: bytes) -> bool:
        return (self.state is LinkState.HANDSHAKING and self._rx_expected == 0
                and payload[0] not in (Hello.ID, Refuse.ID))

    def _maybe_nak(self) -> None:
        if self._nak_sent_for != self._rx_expected:
            self._nak_sent_for = self._rx_expected
            self.counters.naks_sent += 1
            self._nak_due = True

    def _bad_message(self, detail: str, payload: bytes) -> None:
        """A message that cannot be used: counted and reported, never delivered."""
        self.counters.bad_messages += 1
        self._emit(BadMessage(MessageError(detail), payload))

    def _deliver(self, payload: bytes, now: float) -> None:
        try:
            message = decode_message(payload)
        except MessageError as exc:
            if payload[0] in VENDOR_MESSAGE_IDS:
                # 6.1: a vendor extension this side does not know: tolerated, not an error
                self.counters.vendor_messages += 1
                if self.state is LinkState.UP:
                    self._emit(VendorMessage(payload))
                return
            self.counters.bad_messages += 1
            awaiting_hello = self.state is LinkState.HANDSHAKING and self.peer is None
            if awaiting_hello and self._is_foreign_hello(payload):
                self._refuse_version(payload[1], None)
                return
            self._emit(BadMessage(exc, payload))
            if awaiting_hello and payload[:1] == bytes([Hello.ID]):
                # our version, but not a valid Hello (e.g. an unknown device kind): the
                # handshake cannot succeed, so say why now instead of timing out
                reason = f"malformed Hello: {exc}"
                self._refuse(RefuseCode.NOT_ACCEPTED, reason,
                             LinkRefusedError(f"refused peer: {reason}"))
            return
        self.counters.messages_in += 1
        if self.state is LinkState.REFUSED:
            return  # nothing is delivered after a refusal
        if isinstance(message, Refuse):
            self._refused_by_peer(message)
            return
        if self.state is LinkState.HANDSHAKING:
            if self.peer is None:
                if isinstance(message, Hello):
                    self._on_hello(message, now)
                else:
                    self._bad_message(f"expected Hello first, got {type(message).__name__}",
                                      payload)
                return
            self._maybe_up(now)
            if not self._is_up():  # 4.2 (1.2): acknowledged, never delivered
                self._bad_message(f"{type(message).__name__} before the handshake finished",
                                  payload)
                return
        if isinstance(message, Hello):
            # 4.2: only RESET starts a session; a repeated Hello changes nothing
            self._bad_message("second Hello in one session", payload)
            return
        sender = self.peer.device_kind if self.peer is not None else None
        if sender not in type(message).SENDERS:
            kind = DeviceKind(sender).name.lower() if sender is not None else "unknown peer"
            self._bad_message(f"{type(message).__name__} may not be sent by a {kind}", payload)
            return
        self._emit(MessageReceived(message))

    @staticmethod
    def _is_foreign_hello(payload: bytes) -> bool:
        # Hello's id and first field (protocol_version) are fixed in every version,
        # so a Hello of another layout still tells us which version it speaks.
        return len(payload) >= 2 and payload[0] == Hello.ID and payload[1] != PROTOCOL_VERSION

    def _on_hello(self, peer: Hello, now: float) -> None:
        self.peer = peer
        if peer.protocol_version != PROTOCOL_VERSION:
            self._refuse_version(peer.protocol_version, peer)
            return
        refusal = default_accept(self.role)(peer)
        if refusal is None and self._accept_peer is not None:
            try:
                reason = self._accept_peer(peer)
            except Exception as exc:  # noqa: BLE001 - an application bug must not crash the link
                reason = f"accept_peer failed: {exc!r}"
            if reason is not None:
                refusal = (RefuseCode.NOT_ACCEPTED, reason)
        if refusal is not None:
            code, reason = refusal
            self._refuse(code, reason, LinkRefusedError(f"refused peer: {reason}"))
            return
        self._maybe_up(now)

    def _refuse_version(self, version: int, peer: Hello | None) -> None:
        kind = DeviceKind(peer.device_kind).name.lower() if peer is not None else "peer"
        reason = (
            f"incompatible protocol version: {kind} speaks version {version}, "
            f"this {self.role.value} speaks version {PROTOCOL_VERSION}"
        )
        self._refuse(RefuseCode.INCOMPATIBLE_VERSION, reason, IncompatibleVersionError(reason))

    def _refuse(self, code: RefuseCode, reason: str, error: LinkRefusedError) -> None:
        self.state = LinkState.REFUSED
        self.refusal = error
        # 4.2 (1.1): Hello is always seq 0, so an own Hello not yet sent goes first and the
        # Refuse follows it; only the Refuse acknowledges the peer's Hello
        own_hello_unsent = any(item.ticket is None and isinstance(item.message, Hello)
                               for item in self._pending)
        self._pending.clear()
        if own_hello_unsent:
            self._queue_internal(self.hello, front=False)
        # [M-4.2b]: every copy of our Hello keeps ack 0, a resend of one already in flight
        # too, so no frame acknowledges the peer's Hello ahead of the Refuse
        self._hello_ack_withheld = not self._hello_acked
        # the reason may quote peer-supplied text: cut it on a character boundary
        self._queue_internal(Refuse(code, cut_utf8(reason, REFUSE_REASON_BYTES)), front=False)
        self._emit(PeerRefused(reason, True, error))

    def _refused_by_peer(self, refuse: Refuse) -> None:
        reason = f"refused by peer: {refuse.reason}"
        error: LinkRefusedError = (
            IncompatibleVersionError(reason)
            if refuse.code == RefuseCode.INCOMPATIBLE_VERSION
            else LinkRefusedError(reason)
        )
        was_up = self.state is LinkState.UP
        self.state = LinkState.REFUSED
        self.refusal = error
        if was_up:
            self._emit(LinkDown(reason, LinkDownError(reason), self.unconfirmed()))
        self._pending.clear()
        self._emit(PeerRefused(reason, False, error))

    def _is_up(self) -> bool:
        return self.state is LinkState.UP

    def _maybe_up(self, now: float) -> None:
        if self.state is LinkState.HANDSHAKING and self.peer is not None and self._hello_acked:
            self.state = LinkState.UP
            self._last_rx = now
            self._emit(LinkUp(self.peer))

    # --- sending ------------------------------------------------------------------------

    def _queue_internal(self, message: Message, *, front: bool) -> None:
        item = _Queued(None, message, encode_message(message))
        if front:
            self._pending.appendleft(item)
        else:
            self._pending.append(item)

    def _pump(self, now: float) -> None:
        """Send an owed NAK, then fill the window from the queue (every DATA frame carries the
        current ack; a bare ACK still owed waits for ``_flush_ack``)."""
        if self.state in (LinkState.HANDSHAKING, LinkState.UP, LinkState.REFUSED):
            if self._nak_due:
                self._nak_due = False
                self._send_frame(Frame(FrameKind.NAK, 0, self._rx_expected), now)
            while self._pending and len(self._unacked) < self.timing.window:
                queued = self._pending.popleft()
                seq = self._tx_next
                self._tx_next = (seq + 1) % _SEQ_MODULUS
                self._unacked.append(
                    _InFlight(seq, queued.payload, queued.ticket, queued.message, now)
                )
                if queued.ticket is not None:
                    self.counters.messages_out += 1
                self._send_frame(Frame(FrameKind.DATA, seq, self._data_ack(seq), queued.payload), now)
                if self._rtx_deadline is None:
                    self._rtx_deadline = now + self._rtt.rto

    def _flush_ack(self, now: float) -> None:
        """Send the ACK still owed for the frame processed last (5.10 transmit step)."""
        if self._ack_due and self.state in (LinkState.HANDSHAKING, LinkState.UP,
                                            LinkState.REFUSED):
            self._send_frame(Frame(FrameKind.ACK, 0, self._rx_expected), now)
        self._ack_due = False

    def _data_ack(self, seq: int) -> int:
        if self._hello_ack_withheld and seq == 0:
            return 0  # our Hello ahead of our Refuse: the ack before the peer's Hello (4.2)
        return self._rx_expected

    def _retransmit_all(self, now: float, *, by_timer: bool) -> None:
        for item in self._unacked:
            item.tx_count += 1
            if by_timer:
                item.timer_resends += 1
            self.counters.retransmits += 1
            self._send_frame(Frame(FrameKind.DATA, item.seq, self._data_ack(item.seq),
                                   item.payload), now)
        if self._unacked:
            self._rtx_deadline = now + self._rtt.rto

    def _on_retransmit_timeout(self, now: float) -> None:
        self.counters.timeouts += 1
        oldest = self._unacked[0] if self._unacked else None
        if oldest is None:
            self._rtx_deadline = None
            return
        # 5.5 (1.1): only timer expiries count; a NAK proves the peer alive and listening
        if oldest.timer_resends >= self.timing.max_retries:
            if self.state is LinkState.REFUSED:
                self._unacked.clear()  # the refused peer never acknowledged our Refuse
                self._rtx_deadline = None
                return
            self._fail(
                f"no acknowledgement for {type(oldest.message).__name__} (seq {oldest.seq}) "
                f"after {self.timing.max_retries} retransmissions",
                now,
            )
            return
        self._rtt.back_off()
        self._retransmit_all(now, by_timer=True)

    def _send_frame(self, frame: Frame, now: float) -> None:
        if frame.kind in (FrameKind.DATA, FrameKind.ACK, FrameKind.NAK):
            self._ack_due = False  # every one of these carries the current ack
        wire = frame.encode()
        if not self._out and now - self._last_tx >= self._quiet_line:
            # The first frame after a quiet line opens with a delimiter (3.3 allows extra
            # ones): noise on the idle line, or a closing delimiter the line corrupted,
            # would otherwise join the peer's partial frame to this one and lose both.
            self._out += b"\x00"
        if len(self._out) + len(wire) > OUTGOING_LIMIT:
            self.counters.dropped_output += len(self._out)
            self._out.clear()  # nobody is writing: old bytes are worthless, retransmission recovers
        self._out += wire
        self.counters.frames_out += 1
        self.counters.bytes_out += len(wire)
        self._last_tx = now

    def _emit(self, event: LinkEvent) -> None:
        if len(self._events) >= EVENT_LIMIT:
            self._events.popleft()
            self.counters.dropped_events += 1
        self._events.append(event)
