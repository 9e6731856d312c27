"""Deliberately broken simulators: one small misbehaviour injected into the sans-I/O link core.

Each entry of ``MISBEHAVIOURS`` breaks exactly one MUST of docs/protocol.md 1.1
and names the conformance check (firmware_bridge.conformance) that must catch
it; ``broken_endpoint(name)`` is an endpoint factory for hil.sim_firmware (the
simulated shoe, shuffler and display all run on it).  The CI test runs the
suite against every one of them and requires that exactly the named check fails,
which shows each check can fail and that it fails for its own rule only.
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
    rule: str  # the MUST it breaks, by section
    check: str  # the conformance check that must fail
    timing: Callable[[LinkTiming], LinkTiming] | None = None  # a changed constant


def _replace(**changes: float | int) -> Callable[[LinkTiming], LinkTiming]:
    return lambda timing: dataclasses.replace(timing, **changes)  # type: ignore[arg-type]


MISBEHAVIOURS: dict[str, Misbehaviour] = {
    "nonzero_seq_in_ack": Misbehaviour("3.1 seq MUST be 0 in ACK", "framing.valid_output"),
    "ignore_crc": Misbehaviour("3.4 a frame with a bad CRC MUST be dropped", "framing.crc_rejected"),
    "no_resync": Misbehaviour("3.4 resynchronise at the next 0x00 after an oversize frame",
                              "framing.resync"),
    "restarts_on_repeated_reset": Misbehaviour(
        "4.1 a repeated RESET(id) of the current session is only re-acknowledged",
        "handshake.reset"),
    "accepts_session_zero": Misbehaviour("4.1 RESET(0) MUST be ignored", "handshake.session_zero"),
    "status_before_hello": Misbehaviour("4.2 the first DATA MUST be Hello", "handshake.hello"),
    "acks_stray_first": Misbehaviour("4.2 a first DATA that is not Hello is not acknowledged",
                                     "handshake.stray_first"),
    "restart_on_hello": Misbehaviour("4.2 a Hello in mid-session does not restart the session",
                                     "handshake.hello_mid_session"),
    "caps_without_1_1": Misbehaviour("7 a 1.1 device sets capability bit 0",
                                     "version.announces_1_1"),
    "refuse_at_seq0": Misbehaviour("4.2 Hello is seq 0; Refuse follows it", "refusal.numbering"),
    "reason_cut_mid_char": Misbehaviour("4.2 the Refuse reason is cut on a UTF-8 boundary",
                                        "refusal.reason_utf8"),
    "restart_when_refused": Misbehaviour("4.5 a refused device does not restart by itself",
                                         "refusal.state"),
    "deaf_when_refused": Misbehaviour("4.5 a RESET revives a refused device", "refusal.revive"),
    "retransmit_too_early": Misbehaviour(
        "5.5 / 5.9 retransmission timeout not below MIN_RTO", "retransmission.timeout",
        _replace(min_rto=0.004, initial_rto=0.004, max_rto=0.02)),
    "retry_limit_8": Misbehaviour("5.5 fail after 5 timer retransmissions",
                                  "retransmission.limit", _replace(max_retries=8)),
    "ignores_nak": Misbehaviour("5.5 a NAK resends at once", "retransmission.nak"),
    "nak_counts": Misbehaviour("5.5 NAK resends do not count toward the limit",
                               "retransmission.nak_not_counted"),
    "window_8": Misbehaviour("5.3 at most 4 DATA frames unacknowledged", "window.limit",
                             _replace(window=8)),
    "delivers_duplicates": Misbehaviour("5.4 a duplicate is not delivered", "data.duplicate"),
    "no_nak_on_gap": Misbehaviour("5.4 a gap is NAKed once", "data.out_of_order"),
    "slow_keepalive": Misbehaviour("5.6 keepalive after 1.0 s idle at every rate",
                                   "timing.keepalive", _replace(keepalive_idle=2.5)),
    "early_silence": Misbehaviour("5.6 silence not declared before SILENCE_TIMEOUT",
                                  "timing.silence", _replace(silence_timeout=1.5)),
    "stays_failed": Misbehaviour("4.4 a failed device goes straight back to RESETTING",
                                 "link.restart_after_failure"),
    "status_before_faults": Misbehaviour("4.3 fault re-reports before any other message",
                                         "faults.rereport_order"),
    "bad_status_state": Misbehaviour("6.1 values outside the allowed set are invalid",
                                     "messages.fields"),
    "reset_on_vendor_message": Misbehaviour("6.1 unknown vendor messages are acknowledged and "
                                            "ignored", "messages.vendor_tolerated"),
}


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

    # --- receiving ---------------------------------------------------------------------

    def receive(self, data: bytes, now: float) -> None:
        if "ignore_crc" in self.misbehaviours:
            data = _fix_crcs(data)
        if "no_resync" in self.misbehaviours:
            data = self._drop_after_oversize(data)
        super().receive(data, now)
        if self._deferred_hello is not None:
            if self.state is LinkState.HANDSHAKING:
                self._pending.appendleft(self._deferred_hello)
                self._pump(now)
            self._deferred_hello = None

    def _drop_after_oversize(self, data: bytes) -> bytes:
        pieces = data.split(b"\x00")
        kept = []
        for piece in pieces[:-1]:
            if len(piece) > 248:
                self._drop_next_frame = True
            elif self._drop_next_frame and piece:
                self._drop_next_frame = False
                piece = b""  # the frame after the garbage is lost too
            kept.append(piece)
        kept.append(pieces[-1])
        return b"\x00".join(kept)

    def _on_frame(self, frame: Frame, now: float) -> None:
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

    def _is_stray_first(self, payload: bytes) -> bool:
        if "acks_stray_first" in self.misbehaviours:
            return False
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
        super()._refuse(code, reason, error)  # type: ignore[arg-type]
        self._refused_at = None
        if "reason_cut_mid_char" in self.misbehaviours:
            raw = (reason + " " + "é" * 120).encode("utf-8")[:201]  # ends inside a character
            for index, item in enumerate(self._pending):
                if isinstance(item.message, wire.Refuse):
                    payload = bytes([wire.Refuse.ID, int(code), len(raw)]) + raw
                    self._pending[index] = _Queued(None, item.message, payload)

    def poll(self, now: float) -> None:
        if "restart_when_refused" in self.misbehaviours and self.state is LinkState.REFUSED:
            if self._refused_at is None:
                self._refused_at = now
            elif now >= self._refused_at + 2.0:
                self._refused_at = None
                self.connect(now)
                return
        super().poll(now)

    def next_deadline(self) -> float | None:
        deadline = super().next_deadline()
        if "restart_when_refused" in self.misbehaviours and self.state is LinkState.REFUSED:
            wake = (self._refused_at + 2.0) if self._refused_at is not None else 0.0
            return wake if deadline is None else min(deadline, wake)
        return deadline

    # --- sending ---------------------------------------------------------------------------

    def send(self, message: wire.Message, now: float) -> int:
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
        super()._pump(now)

    def _send_frame(self, frame: Frame, now: float) -> None:
        if "nonzero_seq_in_ack" in self.misbehaviours and frame.kind is FrameKind.ACK:
            frame = Frame(FrameKind.ACK, 1, frame.ack)
        super()._send_frame(frame, now)


_SESSION = struct.Struct("<I")


def _down(reason: str) -> Exception:
    from firmware_bridge.errors import LinkDownError

    return LinkDownError(reason)


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
