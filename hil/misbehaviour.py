"""Deliberately broken simulators: one small misbehaviour injected into the sans-I/O link core.

Each entry of ``MISBEHAVIOURS`` breaks one requirement of docs/protocol.md 1.2 (by its id,
``[M-...]``) and names the conformance check (firmware_bridge.conformance) that must catch
it; ``broken_endpoint(name)`` is an endpoint factory for hil.sim_firmware (the
simulated shoe, shuffler and display all run on it).  The CI test runs the suite against
every one of them at 9600 and 115200 baud and requires that the named check fails and no
check docs/conformance.md does not link to the broken requirement, which shows each check
can fail and that it fails for its own rule only.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass

from firmware_bridge import messages as wire
from firmware_bridge.cobs import cobs_decode, cobs_encode
from firmware_bridge.crc import crc16
from firmware_bridge.errors import CobsError
from firmware_bridge.frame import Frame, FrameKind
from firmware_bridge.link import (
    VENDOR_MESSAGE_IDS,
    LinkEndpoint,
    LinkState,
    LinkTiming,
    Role,
    _Queued,
)


@dataclass(frozen=True)
class Misbehaviour:
    musts: tuple[str, ...]  # the requirement ids of docs/protocol.md it breaks
    check: str  # the conformance check that must fail (docs/conformance.md links it to musts)
    timing: Callable[[LinkTiming], LinkTiming] | None = None  # a changed constant
    kinds: frozenset[wire.DeviceKind] | None = None  # the simulators it applies to (None: all)


def _replace(**changes: float | int) -> Callable[[LinkTiming], LinkTiming]:
    return lambda timing: dataclasses.replace(timing, **changes)  # type: ignore[arg-type]


def _scale(name: str, factor: float) -> Callable[[LinkTiming], LinkTiming]:
    """One constant off by ``factor`` at whatever baud rate the simulator runs."""
    return lambda timing: dataclasses.replace(timing, **{name: getattr(timing, name) * factor})


def _early_retransmit(factor: float) -> Callable[[LinkTiming], LinkTiming]:
    return lambda t: dataclasses.replace(t, min_rto=t.min_rto * factor,
                                         initial_rto=t.min_rto * factor, max_rto=t.max_rto)


_SHOE = frozenset({wire.DeviceKind.SHOE})
_SHUFFLER = frozenset({wire.DeviceKind.SHUFFLER})
SLOW_ACK_FACTOR = 1.5
"""slow_ack acknowledges 1.5 x INITIAL_RTO after a frame: the vendor's broken build of issue 28."""

MISBEHAVIOURS: dict[str, Misbehaviour] = {
    "nonzero_seq_in_ack": Misbehaviour(("M-3.1a",), "framing.valid_output"),
    "drops_nonzero_unused": Misbehaviour(("M-3.1b",), "framing.unused_fields_ignored"),
    "lost_after_01_00": Misbehaviour(("M-3.3",), "framing.resync"),
    "ignore_crc": Misbehaviour(("M-3.4",), "framing.crc_rejected"),
    "no_resync": Misbehaviour(("M-3.4",), "framing.resync"),
    "sends_reset_zero": Misbehaviour(("M-4.1a",), "link.restart_after_failure"),
    "accepts_session_zero": Misbehaviour(("M-4.1b",), "handshake.session_zero"),
    "restarts_on_repeated_reset": Misbehaviour(("M-4.1c",), "handshake.reset"),
    "reason_cut_mid_char": Misbehaviour(("M-4.2a",), "refusal.reason_utf8"),
    "acks_hello_before_refuse": Misbehaviour(("M-4.2b",), "refusal.numbering"),
    "ignores_1_0_refuse": Misbehaviour(("M-4.2c",), "refusal.accepts_1_0"),
    "status_before_hello": Misbehaviour(("M-4.2d",), "handshake.hello"),
    "refuse_at_seq0": Misbehaviour(("M-4.2d",), "refusal.numbering"),
    "acks_stray_first": Misbehaviour(("M-4.2e",), "handshake.stray_first"),
    "restart_on_hello": Misbehaviour(("M-4.2f",), "handshake.hello_mid_session"),
    "status_before_faults": Misbehaviour(("M-4.3a",), "faults.rereport_order"),
    "stays_failed": Misbehaviour(("M-4.4a",), "link.restart_after_failure"),
    "keepalive_when_refused": Misbehaviour(("M-4.5a",), "refusal.state"),
    "restart_when_refused": Misbehaviour(("M-4.5b",), "refusal.state"),
    "deaf_when_refused": Misbehaviour(("M-4.5c",), "refusal.revive"),
    "window_8": Misbehaviour(("M-5.3",), "window.limit", _replace(window=8)),
    "delivers_duplicates": Misbehaviour(("M-5.4a",), "data.duplicate"),
    "no_ack_for_duplicate": Misbehaviour(("M-5.4b",), "data.duplicate_acked"),
    "no_nak_on_gap": Misbehaviour(("M-5.4c",), "data.out_of_order"),
    "ignores_nak": Misbehaviour(("M-5.5a",), "retransmission.nak"),
    "retry_limit_8": Misbehaviour(("M-5.5b",), "retransmission.limit", _replace(max_retries=8)),
    "nak_counts": Misbehaviour(("M-5.5c",), "retransmission.nak_not_counted"),
    "slow_keepalive": Misbehaviour(("M-5.6a",), "timing.keepalive", _scale("keepalive_idle", 2.5)),
    "keepalive_25_percent_late": Misbehaviour(("M-5.6a",), "timing.keepalive",
                                              _scale("keepalive_idle", 1.25)),
    "early_silence": Misbehaviour(("M-5.6b",), "timing.silence", _scale("silence_timeout", 0.5)),
    "silence_10_percent_early": Misbehaviour(("M-5.6b",), "timing.silence",
                                             _scale("silence_timeout", 0.9)),
    "retransmit_too_early": Misbehaviour(("M-5.9a",), "retransmission.timeout",
                                         _early_retransmit(0.08)),
    "retransmit_at_40_percent_of_min_rto": Misbehaviour(("M-5.9a",), "retransmission.timeout",
                                                        _early_retransmit(0.4)),
    "slow_ack": Misbehaviour(("M-5.9b", "M-2.2"), "timing.ack_latency"),
    "drops_batched_data": Misbehaviour(("M-5.10",), "framing.batched_reads"),
    "oversize_frame": Misbehaviour(("M-6.1a",), "framing.valid_output"),
    "reset_on_vendor_message": Misbehaviour(("M-6.1b",), "messages.vendor_tolerated"),
    "ignores_self_test": Misbehaviour(("M-6.2a",), "messages.requests_answered"),
    "ignores_start_shuffle": Misbehaviour(("M-6.2a",), "messages.requests_answered",
                                          kinds=_SHUFFLER),
    "bad_status_state": Misbehaviour(("M-6.2b",), "messages.fields"),
    "drops_card_drawn": Misbehaviour(("M-6.2c",), "events.card_drawn", kinds=_SHOE),
    "forgets_acknowledged_cards": Misbehaviour(("M-6.6b", "M-6.6c"), "events.card_replayed",
                                               kinds=_SHOE),
    "forgets_cover_card": Misbehaviour(("M-6.6e",), "events.cover_card_replayed", kinds=_SHOE),
    "caps_without_1_1": Misbehaviour(("M-7",), "version.announces_1_1"),
}
"""One broken simulator build per way of breaking a requirement (at least one per MUST the kit
tests; the issue-28 vendor's builds among them: 1.25 s keepalive, silence at 90 %, a resend at
40 % of MIN_RTO, acknowledgements 1.5 x INITIAL_RTO late, a duplicate never acknowledged,
StartShuffle never answered, a dealt card never reported); and 1.2 shoes that announce the
card commit acknowledgement and still forget an acknowledged card, or their cover card."""


LEGACY_1_0 = frozenset({"caps_without_1_1", "refuse_at_seq0", "acks_stray_first", "nak_counts"})
"""What the 1.0 reference device did differently from 1.1 (with its stretched keepalive)."""


def legacy_timing_1_0(timing: LinkTiming) -> LinkTiming:
    """The 1.0 host formula, which 1.0 devices copied: keepalive, silence and handshake
    stretched by max(1, s/4), s = 115200/baud (recovered from the 1.1 INITIAL_RTO)."""
    slow = max(1.0, timing.initial_rto / 0.25 / 4)
    return dataclasses.replace(timing, keepalive_idle=1.0 * slow, silence_timeout=3.0 * slow,
                               handshake_timeout=5.0 * slow)


class MisbehavingEndpoint(LinkEndpoint):
    """A device LinkEndpoint with misbehaviours of MISBEHAVIOURS switched on (one, for a
    broken simulator; LEGACY_1_0 for a device built to protocol 1.0)."""

    def __init__(self, names: str | frozenset[str], hello: wire.Hello, timing: LinkTiming) -> None:
        chosen = frozenset([names]) if isinstance(names, str) else names
        for name in chosen:
            change = MISBEHAVIOURS[name].timing
            if change is not None:
                timing = change(timing)
        if "caps_without_1_1" in chosen:
            hello = dataclasses.replace(hello, capabilities=0)
        super().__init__(Role.DEVICE, hello, timing=timing,
                         restart_after_failure="stays_failed" not in chosen)
        self.misbehaviours = chosen
        self._refused_at: float | None = None
        self._drop_next_frame = False
        self._held_faults: list[wire.Message] = []
        self._sent_other = False
        self._deferred_hello: _Queued | None = None
        self._late_ack_at: float | None = None
        self._oversize_sent = False
        self._cards_sent: set[int] = set()
        self._covers_sent: set[int] = set()

    # --- receiving ---------------------------------------------------------------------

    def receive(self, data: bytes, now: float) -> None:
        if "ignore_crc" in self.misbehaviours:
            data = _fix_crcs(data)
        if "no_resync" in self.misbehaviours:
            data = self._drop_frame_after(data, lambda piece: len(piece) > 248)
        if "lost_after_01_00" in self.misbehaviours:
            data = self._drop_frame_after(data, lambda piece: piece == b"\x01")
        if "drops_batched_data" in self.misbehaviours:
            data = _first_data_frame_only(data)
        super().receive(data, now)
        if self._deferred_hello is not None:
            if self.state is LinkState.HANDSHAKING:
                self._pending.appendleft(self._deferred_hello)
                self._pump(now)
            self._deferred_hello = None

    def _drop_frame_after(self, data: bytes, trigger: Callable[[bytes], bool]) -> bytes:
        """Lose the frame that follows a piece ``trigger`` picks (its decoder left astray)."""
        pieces = data.split(b"\x00")
        kept = []
        for piece in pieces[:-1]:
            if trigger(piece):
                self._drop_next_frame = True
            elif self._drop_next_frame and piece:
                self._drop_next_frame = False
                piece = b""  # the frame after the garbage is lost too
            kept.append(piece)
        kept.append(pieces[-1])
        return b"\x00".join(kept)

    def _on_frame(self, frame: Frame, now: float) -> None:
        if "drops_nonzero_unused" in self.misbehaviours and frame.unused_fields_set:
            return  # 3.1: these fields are to be ignored, not checked
        if ("accepts_session_zero" in self.misbehaviours and frame.kind is FrameKind.RESET
                and frame.payload == b"\x00\x00\x00\x00"):
            self.counters.resets_received += 1
            self._end_session("peer reset", _down("peer reset"))
            self._peer_session = 0
            self._own_session = None
            self._send_frame(Frame(FrameKind.RESET_ACK, 0, 0, frame.payload), now)
            self._start_session(now)
            return
        if ("restarts_on_repeated_reset" in self.misbehaviours and frame.kind is FrameKind.RESET
                and frame.payload == _SESSION.pack(self._peer_session or 0)):
            self._peer_session = None  # forget it: the repeat looks like a new session
        if ("deaf_when_refused" in self.misbehaviours and self.state is LinkState.REFUSED
                and frame.kind is FrameKind.RESET):
            return
        if "ignores_nak" in self.misbehaviours and frame.kind is FrameKind.NAK:
            frame = Frame(FrameKind.ACK, 0, frame.ack)
        if "nak_counts" in self.misbehaviours and frame.kind is FrameKind.NAK:
            for item in self._unacked:
                item.timer_resends += 1
        super()._on_frame(frame, now)

    def _on_data(self, frame: Frame, now: float) -> None:
        behind = (frame.seq - self._rx_expected) % 256 >= 128
        super()._on_data(frame, now)
        if "delivers_duplicates" in self.misbehaviours and behind and self.state is LinkState.UP:
            self._deliver(frame.payload, now)
        if "no_ack_for_duplicate" in self.misbehaviours and behind:
            self._ack_due = False  # "already acknowledged once": the lost ACK is never repeated

    def _is_stray_first(self, payload: bytes) -> bool:
        if "acks_stray_first" in self.misbehaviours:
            return False
        if ("ignores_1_0_refuse" in self.misbehaviours and payload[0] == wire.Refuse.ID
                and self.state is LinkState.HANDSHAKING and self._rx_expected == 0):
            return True  # a Refuse at seq 0 taken for a stray first message
        return super()._is_stray_first(payload)

    def _maybe_nak(self) -> None:
        if "no_nak_on_gap" not in self.misbehaviours:
            super()._maybe_nak()

    def _deliver(self, payload: bytes, now: float) -> None:
        if self.state is LinkState.UP:
            if "restart_on_hello" in self.misbehaviours and payload[:1] == bytes([wire.Hello.ID]):
                self.connect(now)
                return
            if "reset_on_vendor_message" in self.misbehaviours and payload[0] in VENDOR_MESSAGE_IDS:
                self.connect(now)
                return
            if "ignores_self_test" in self.misbehaviours and payload[0] == wire.SelfTestRequest.ID:
                return
            if "ignores_start_shuffle" in self.misbehaviours and payload[0] == wire.StartShuffle.ID:
                return
        super()._deliver(payload, now)

    # --- the handshake ---------------------------------------------------------------------

    def _start_session(self, now: float) -> None:
        super()._start_session(now)
        self._sent_other = False
        self._held_faults = []
        if "refuse_at_seq0" in self.misbehaviours:
            # 1.0 firmware handled a whole read before sending anything: its Hello waits
            # until the read's other frames (the peer's Hello) were processed
            self._deferred_hello = self._pending.popleft()
        if "status_before_hello" in self.misbehaviours:
            status = wire.Status(0, wire.DeviceState.READY, "early")
            self._pending.appendleft(_Queued(None, status, wire.encode_message(status)))

    def _refuse(self, code: wire.RefuseCode, reason: str, error: Exception) -> None:  # type: ignore[override]
        if "refuse_at_seq0" in self.misbehaviours:  # the 1.0 reference: Refuse replaces Hello
            self.state = LinkState.REFUSED
            self.refusal = error  # type: ignore[assignment]
            self._pending.clear()
            self._deferred_hello = None
            refuse = wire.Refuse(code, reason[:200])
            self._pending.appendleft(_Queued(None, refuse, wire.encode_message(refuse)))
            return
        if "acks_hello_before_refuse" in self.misbehaviours:
            self._send_frame(Frame(FrameKind.ACK, 0, self._rx_expected), self._last_rx)
        super()._refuse(code, reason, error)  # type: ignore[arg-type]
        self._refused_at = None
        if "reason_cut_mid_char" in self.misbehaviours:
            raw = (reason + " " + "é" * 120).encode("utf-8")[:201]  # ends inside a character
            for index, item in enumerate(self._pending):
                if isinstance(item.message, wire.Refuse):
                    payload = bytes([wire.Refuse.ID, int(code), len(raw)]) + raw
                    self._pending[index] = _Queued(None, item.message, payload)

    def poll(self, now: float) -> None:
        if self._late_ack_at is not None and now >= self._late_ack_at:
            self._late_ack_at = None
            self._send_frame(Frame(FrameKind.ACK, 0, self._rx_expected), now)
        if ("keepalive_when_refused" in self.misbehaviours and self.state is LinkState.REFUSED
                and now >= self._last_tx + self.timing.keepalive_idle):
            self._send_frame(Frame(FrameKind.ACK, 0, self._rx_expected), now)
        if "restart_when_refused" in self.misbehaviours and self.state is LinkState.REFUSED:
            if self._refused_at is None:
                self._refused_at = now
            elif now >= self._refused_at + 2.0:
                self._refused_at = None
                self.connect(now)
                return
        super().poll(now)

    def next_deadline(self) -> float | None:
        due = [super().next_deadline(), self._late_ack_at]
        if self.state is LinkState.REFUSED:
            if "keepalive_when_refused" in self.misbehaviours:
                due.append(self._last_tx + self.timing.keepalive_idle)
            if "restart_when_refused" in self.misbehaviours:
                due.append((self._refused_at + 2.0) if self._refused_at is not None else 0.0)
        return min((t for t in due if t is not None), default=None)

    # --- sending ---------------------------------------------------------------------------

    def send(self, message: wire.Message, now: float) -> int:
        if "drops_card_drawn" in self.misbehaviours and isinstance(message, wire.CardDrawn):
            return 0  # the card left the shoe; the host never hears of it
        if "forgets_acknowledged_cards" in self.misbehaviours and isinstance(message, wire.CardDrawn):
            if message.index in self._cards_sent:
                return 0  # 6.6: announces CAP_CARD_COMMIT, forgets a card once acknowledged
            self._cards_sent.add(message.index)
        if "forgets_cover_card" in self.misbehaviours and isinstance(message, wire.CoverCardDrawn):
            if message.index in self._covers_sent:
                return 0  # 6.6: keeps its cards, forgets its cover card once acknowledged
            self._covers_sent.add(message.index)
        if "status_before_faults" in self.misbehaviours:
            if isinstance(message, wire.Fault) and not self._sent_other:
                self._held_faults.append(message)
                return 0
            if not isinstance(message, wire.Fault) and not self._sent_other:
                self._sent_other = True
                ticket = super().send(message, now)
                for fault in self._held_faults:
                    super().send(fault, now)
                self._held_faults = []
                return ticket
        return super().send(message, now)

    def _pump(self, now: float) -> None:
        if "bad_status_state" in self.misbehaviours:
            for index, queued in enumerate(self._pending):
                if isinstance(queued.message, wire.Status) and queued.payload[5] != 7:
                    payload = queued.payload[:5] + b"\x07" + queued.payload[6:]  # not a DeviceState
                    self._pending[index] = _Queued(queued.ticket, queued.message, payload)
        sends_status = any(isinstance(q.message, wire.Status) for q in self._pending)
        super()._pump(now)
        if "oversize_frame" in self.misbehaviours and sends_status and not self._oversize_sent:
            self._oversize_sent = True
            self._out += _oversize_data_frame((self._tx_next + 100) % 256, self._rx_expected)

    def _flush_ack(self, now: float) -> None:
        if "slow_ack" in self.misbehaviours and self._ack_due:
            self._ack_due = False
            if self._late_ack_at is None:
                self._late_ack_at = now + SLOW_ACK_FACTOR * self.timing.initial_rto
            return
        super()._flush_ack(now)

    def _new_session_id(self) -> int:
        if "sends_reset_zero" in self.misbehaviours:
            return 0  # "no session" used as an id
        return super()._new_session_id()

    def _send_frame(self, frame: Frame, now: float) -> None:
        if "nonzero_seq_in_ack" in self.misbehaviours and frame.kind is FrameKind.ACK:
            frame = Frame(FrameKind.ACK, 1, frame.ack)
        super()._send_frame(frame, now)


_SESSION = struct.Struct("<I")


def _down(reason: str) -> Exception:
    from firmware_bridge.errors import LinkDownError

    return LinkDownError(reason)


def _first_data_frame_only(data: bytes) -> bytes:
    """A firmware that takes one DATA frame per read: the rest of the read is lost."""
    pieces = data.split(b"\x00")
    seen_data = False
    for index, piece in enumerate(pieces[:-1]):
        try:
            kind = cobs_decode(piece)[:1] if piece else b""
        except CobsError:
            continue
        if kind == bytes([FrameKind.DATA]):
            if seen_data:
                pieces[index] = b""
            seen_data = True
    return b"\x00".join(pieces)


def _oversize_data_frame(seq: int, ack: int) -> bytes:
    """A DATA frame with a 250-byte payload (a vendor message), over 6.1's 240, on the wire."""
    payload = bytes([0xE5]) + b"x" * 249
    body = bytes([FrameKind.DATA, seq, ack]) + len(payload).to_bytes(2, "little") + payload
    return cobs_encode(body + crc16(body).to_bytes(2, "big")) + b"\x00"


def _fix_crcs(data: bytes) -> bytes:
    """Rewrite every frame's CRC to the right value: the receiver then ignores CRC errors."""
    out = []
    pieces = data.split(b"\x00")
    for piece in pieces[:-1]:
        try:
            raw = cobs_decode(piece) if piece else b""
        except CobsError:
            out.append(piece)
            continue
        if len(raw) >= 7:
            body = raw[:-2]
            raw = body + crc16(body).to_bytes(2, "big")
            piece = cobs_encode(raw)
        out.append(piece)
    out.append(pieces[-1])
    return b"\x00".join(out)


def legacy_endpoint(hello: wire.Hello, timing: LinkTiming) -> LinkEndpoint:
    """A device as built to protocol 1.0 (before the 1.1 clarifications)."""
    return MisbehavingEndpoint(LEGACY_1_0, hello, legacy_timing_1_0(timing))


def broken_endpoint(name: str) -> Callable[[wire.Hello, LinkTiming], LinkEndpoint]:
    """An endpoint factory for hil.sim_firmware: the simulator with misbehaviour ``name``."""
    if name not in MISBEHAVIOURS:
        raise ValueError(f"unknown misbehaviour {name!r}; known: {', '.join(sorted(MISBEHAVIOURS))}")
    return lambda hello, timing: MisbehavingEndpoint(name, hello, timing)
