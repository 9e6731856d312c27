"""The checks of the device conformance suite, and the scenarios that judge them.

Every check names the rule of docs/protocol.md 1.2 it enforces (docs/conformance.md maps
each requirement id of the spec to its checks).  A scenario is
one scripted exchange (prober.Prober) that yields verdicts for one or more
checks; the suite runs them in ``SCENARIOS`` order, each on a fresh session of
its own (a RESET), so a device that breaks one rule fails that rule's check and
not the others (hil.misbehaviour proves this for every check).  Timing verdicts
use the constants both sides derive from the baud rate (5.9) and are never wider than
the requirement allows: a lower bound ("MUST NOT before") is the spec's value less only
what the wire itself explains (a small frame queued ahead), because latency can only
make a measured interval longer; an upper bound adds the wire time of the frames
involved and the wire's measurement slack (none on simulated time; ``--slack`` on a
real port, printed in the report).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from firmware_bridge.conformance.prober import PROBE_HELLO, Prober, ProbeError, Rx
from firmware_bridge.errors import MessageError
from firmware_bridge.frame import MAX_WIRE_FRAME, Frame, FrameKind
from firmware_bridge.link import BITS_PER_BYTE_8N1, REFUSE_REASON_BYTES, LinkTiming
from firmware_bridge.messages import (
    CAP_PROTOCOL_1_1,
    PROTOCOL_VERSION,
    VENDOR_MESSAGE_IDS,
    DeviceKind,
    Fault,
    Hello,
    Refuse,
    RefuseCode,
    ShowMeter,
    ShowPrompt,
    Status,
    StatusRequest,
    WinLight,
    decode_message,
)


@dataclass(frozen=True)
class Check:
    id: str
    section: str
    rule: str
    kinds: frozenset[DeviceKind] | None = None  # the device kinds it applies to (None: all)

    def applies_to(self, kind: DeviceKind) -> bool:
        return self.kinds is None or kind in self.kinds


CHECKS: dict[str, Check] = {c.id: c for c in [
    Check("framing.valid_output", "3.1-3.3",
          "every frame the device sends has a valid COBS encoding, length and CRC; seq is 0 "
          "in ACK/NAK/RESET/RESET_ACK and ack is 0 in RESET/RESET_ACK"),
    Check("framing.crc_rejected", "3.4", "a frame with a bad CRC is dropped, never acted on"),
    Check("framing.resync", "3.3, 3.4",
          "after an oversize run, bad COBS or '01 00' the next valid frame is received"),
    Check("framing.unused_fields_ignored", "3.1",
          "an ACK with a non-zero seq and a RESET with non-zero seq/ack are acted on as usual"),
    Check("framing.batched_reads", "5.10",
          "several DATA frames arriving in one read are all processed and answered"),
    Check("handshake.reset", "4.1",
          "RESET(id) is answered by RESET_ACK(id) and a new session; a repeated RESET(id) only "
          "by RESET_ACK(id)"),
    Check("handshake.session_zero", "4.1", "RESET(0) is ignored"),
    Check("handshake.hello", "4.2",
          "the device's first DATA of a session is Hello at seq 0, of protocol version 1 and "
          "the device's kind"),
    Check("handshake.stray_first", "4.2",
          "a first DATA that is not Hello is not acknowledged"),
    Check("handshake.hello_mid_session", "4.2",
          "a Hello in mid-session is acknowledged and ignored; the session goes on"),
    Check("version.announces_1_1", "7", "Hello sets capability bit 0 (CAP_PROTOCOL_1_1)"),
    Check("window.limit", "5.3", "at most 4 DATA frames are unacknowledged at a time"),
    Check("data.duplicate", "5.4", "a duplicate DATA frame is not delivered twice"),
    Check("data.duplicate_acked", "5.4",
          "each copy of a duplicate DATA frame, sent on its own, gets its own acknowledgement"),
    Check("data.out_of_order", "5.4",
          "a DATA frame ahead of the expected one is dropped and NAKed (ack = expected)"),
    Check("retransmission.timeout", "5.5, 5.9",
          "an unacknowledged DATA frame is resent after a timeout within [MIN_RTO, MAX_RTO], "
          "backing off"),
    Check("retransmission.limit", "5.5",
          "after 5 timer retransmissions of a frame the device gives up"),
    Check("retransmission.nak", "5.5", "a NAK makes the device resend at once"),
    Check("retransmission.nak_not_counted", "5.5",
          "resends triggered by NAK do not count toward the retry limit"),
    Check("timing.keepalive", "5.6, 5.9",
          "an idle UP device sends a frame at least every KEEPALIVE_IDLE (1.0 s) at its baud"),
    Check("timing.silence", "5.6, 5.9",
          "the device declares a silent host only after SILENCE_TIMEOUT at its baud"),
    Check("timing.ack_latency", "5.9, 2.2",
          "every DATA frame is acknowledged within MIN_RTO of its end at the device's baud"),
    Check("link.restart_after_failure", "4.4",
          "a device that failed goes straight back to RESETTING: RESET every 0.5 s"),
    Check("faults.rereport_order", "4.3",
          "after a handshake every active fault is re-sent first, before any other message, "
          "even a Status requested in the same read"),
    Check("messages.fields", "6.1, 6.2",
          "every message the device sends decodes, has allowed values and is one its kind may "
          "send"),
    Check("messages.vendor_tolerated", "6.1",
          "an unknown vendor message (0xE0-0xFE) is acknowledged and ignored"),
    Check("messages.requests_answered", "6.2",
          "StatusRequest gets Status, SelfTestRequest SelfTestResult, and a shuffler's "
          "StartShuffle ShuffleComplete (or a Fault saying why not)"),
    Check("events.card_drawn", "6.2",
          "a card the operator deals out of the shoe is reported by CardDrawn",
          frozenset({DeviceKind.SHOE})),
    Check("events.card_replayed", "6.6",
          "a shoe announcing CAP_CARD_COMMIT sends a card the host acknowledged but never "
          "committed again after the next handshake, right after its fault re-reports",
          frozenset({DeviceKind.SHOE})),
    Check("events.cover_card_replayed", "6.6",
          "a shoe announcing CAP_CARD_COMMIT sends a cover card the host acknowledged, with no "
          "card after it committed, again after the next handshake with its kept cards",
          frozenset({DeviceKind.SHOE})),
    Check("refusal.numbering", "4.2",
          "the refusing device sends its Hello before Refuse, and nothing acknowledges the "
          "host's Hello before the Refuse does"),
    Check("refusal.reason_utf8", "4.2",
          "Refuse has code INCOMPATIBLE_VERSION for another version and a reason of valid "
          "UTF-8 of at most 200 bytes"),
    Check("refusal.state", "4.5",
          "a refused device acknowledges DATA, delivers nothing, sends no keepalive and does "
          "not restart by itself"),
    Check("refusal.revive", "4.5", "a RESET revives a refused device"),
    Check("refusal.accepts_1_0", "4.2",
          "a 1.0 host's Refuse at seq 0 (in place of its Hello) is acknowledged and ends in "
          "REFUSED"),
]}

Verdicts = Iterator[tuple[str, bool | None, str]]  # check id, passed (None: not run), detail


@dataclass
class Context:
    prober: Prober
    kind: DeviceKind
    baudrate: int
    notes: dict[str, object] = field(default_factory=dict)

    @property
    def timing(self) -> LinkTiming:
        return self.prober.timing

    @property
    def frame_time(self) -> float:
        """Wire time of one maximum frame at this baud rate."""
        return self.wire_time(MAX_WIRE_FRAME)

    def wire_time(self, wire_bytes: int) -> float:
        return wire_bytes * BITS_PER_BYTE_8N1 / self.baudrate

    def late(self, expected: float) -> float:
        """Upper bound for an interval that may include two maximum frames of wire time."""
        return expected + self.prober.wire.slack + 2 * self.frame_time

    def early(self, expected: float) -> float:
        """Lower bound: an ACK queued ahead of a frame can make its first copy arrive up to
        two small frames' wire time late, which shortens the gap seen to its resend; no
        other allowance (latency only lengthens what is measured)."""
        small_frames = self.wire_time(32)
        return max(0.0, expected - small_frames - self.prober.wire.timestamp_error)

    @property
    def keepalive_limit(self) -> float:
        """5.6: idle for KEEPALIVE_IDLE after its last frame, then one ACK's wire time."""
        return self.timing.keepalive_idle + self.wire_time(ACK_WIRE_BYTES) + self.prober.wire.slack

    @property
    def ack_limit(self) -> float:
        """5.9: MIN_RTO from the end of our frame, plus an ACK of ours queued ahead of it and
        one of the device's frames it may be finishing (both keepalive-sized)."""
        return (self.timing.min_rto + 2 * self.wire_time(ACK_WIRE_BYTES)
                + self.prober.wire.slack)


_SESSION = struct.Struct("<I")
ACK_WIRE_BYTES = len(Frame(FrameKind.ACK).encode())  # 7 bytes, COBS overhead, delimiter: 9


def _payload_id(rx: Rx) -> int:
    assert rx.frame is not None
    return rx.frame.payload[0]


def _wait_reply(p: Prober, message_id: int, what: str, since: int,
                seconds: float | None = None) -> Rx:
    """The first DATA of this session carrying ``message_id`` received after log index
    ``since``, within ``seconds`` (default ``reset_response_s()``)."""
    return p.wait_for(what, lambda rx: rx.is_data and rx.session == p.session
                      and _payload_id(rx) == message_id,
                      p.reset_response_s() if seconds is None else seconds, since=since)


def _sent_status_request(p: Prober) -> int:
    """Send a StatusRequest; returns the log index to look for its answer from."""
    mark = p.mark()
    p.send_data(StatusRequest())
    return mark


def _status_answers(p: Prober, since: int, wanted: int) -> int:
    """Wait for ``wanted`` Status frames after log index ``since``; how many distinct
    answers (by seq, a resend counting once) came."""
    p.pump(p.reset_response_s(), lambda new: len(
        [rx for rx in p.data_since(since) if _payload_id(rx) == Status.ID]) >= wanted)
    return len({rx.frame.seq for rx in p.data_since(since)
                if rx.frame is not None and _payload_id(rx) == Status.ID})


def _answers_status(p: Prober) -> bool:
    mark = _sent_status_request(p)
    try:
        _wait_reply(p, Status.ID, "Status", mark)
    except ProbeError:
        return False
    return True


# --- scenarios ---------------------------------------------------------------------------


def basic(ctx: Context) -> Verdicts:
    p = ctx.prober
    start = len(p.log)
    hello_rx = p.open_session()
    first = p.data_since(start)[0]
    problems = []
    if first is not hello_rx or first.frame is None or first.frame.seq != 0:
        problems.append(f"first DATA is id 0x{_payload_id(first):02X} at seq "
                        f"{first.frame.seq if first.frame else '?'}, not Hello at seq 0")
    assert hello_rx.frame is not None
    try:
        hello = decode_message(hello_rx.frame.payload)
    except MessageError as exc:
        yield "handshake.hello", False, f"Hello does not decode: {exc}"
        return
    assert isinstance(hello, Hello)
    p.device_hello = hello
    if hello.protocol_version != PROTOCOL_VERSION:
        problems.append(f"protocol_version {hello.protocol_version}, expected {PROTOCOL_VERSION}")
    if hello.device_kind != ctx.kind:
        problems.append(f"device_kind {DeviceKind(hello.device_kind).name}, expected {ctx.kind.name}")
    yield "handshake.hello", not problems, "; ".join(problems) or (
        f"Hello seq 0: {hello.serial_number!r} firmware {hello.firmware_version!r}")
    yield ("version.announces_1_1", bool(hello.capabilities & CAP_PROTOCOL_1_1),
           f"capabilities 0x{hello.capabilities:08X}"
           + ("" if hello.capabilities & CAP_PROTOCOL_1_1 else ": a 1.0 device"))
    # 4.1: the same RESET again is only re-acknowledged
    start = len(p.log)
    p.send_raw(b"\x00" + Frame(FrameKind.RESET, 0, 0, _SESSION.pack(p.session)).encode())
    p.pump(p.reset_response_s())
    seen = p.log[start:]
    acked = any(rx.kind() is FrameKind.RESET_ACK and rx.frame is not None
                and rx.frame.payload == _SESSION.pack(p.session) for rx in seen)
    new_hello = any(rx.is_data and _payload_id(rx) == Hello.ID for rx in seen)
    alive = _answers_status(p)
    ok = acked and not new_hello and alive
    yield "handshake.reset", ok, (
        "RESET_ACK echoed the id; the repeated RESET was only re-acknowledged" if ok else
        f"repeated RESET: RESET_ACK {'seen' if acked else 'missing'}, "
        f"new Hello {'sent' if new_hello else 'not sent'}, session {'alive' if alive else 'lost'}")


def session_zero(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    start = len(p.log)
    p.send_raw(b"\x00" + Frame(FrameKind.RESET, 0, 0, b"\x00\x00\x00\x00").encode())
    p.pump(p.reset_response_s())
    answered = [rx for rx in p.log[start:] if rx.kind() in (FrameKind.RESET_ACK, FrameKind.DATA)
                and rx.frame is not None and (rx.kind() is FrameKind.RESET_ACK
                                              or _payload_id(rx) == Hello.ID)]
    alive = _answers_status(p)
    yield "handshake.session_zero", not answered and alive, (
        "RESET(0) ignored, session unchanged" if not answered and alive else
        f"RESET(0) answered with {[rx.describe() for rx in answered]}; "
        f"session {'alive' if alive else 'lost'}")


def stray_first(ctx: Context) -> Verdicts:
    p = ctx.prober
    session = p.reset()
    p.auto_ack = False
    p.wait_for("Hello", lambda rx: rx.is_data and rx.session == session and _payload_id(rx) == Hello.ID,
               p.timing.handshake_timeout)
    start = len(p.log)
    p.send_data(StatusRequest())  # seq 0: not Hello
    p.pump(p.reset_response_s())
    acked = [rx for rx in p.log[start:] if rx.frame is not None and rx.session == session
             and rx.kind() in (FrameKind.ACK, FrameKind.DATA) and rx.frame.ack >= 1]
    yield "handshake.stray_first", not acked, (
        "StatusRequest at seq 0 not acknowledged" if not acked else
        f"acknowledged by a {acked[0].describe()} with ack "
        f"{acked[0].frame.ack if acked[0].frame else '?'}")


def hello_mid_session(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    start = len(p.log)
    p.send_data(PROBE_HELLO)
    p.pump(p.reset_response_s())
    restarted = [rx for rx in p.log[start:] if rx.kind() is FrameKind.RESET
                 or (rx.is_data and _payload_id(rx) == Hello.ID)]
    alive = _answers_status(p)
    ok = not restarted and alive
    yield "handshake.hello_mid_session", ok, (
        "second Hello acknowledged and ignored" if ok else
        f"{'restarted the session' if restarted else 'stopped answering'}")


def framing(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    frame = p.data_frame(StatusRequest())
    raw = bytearray(frame.to_bytes())
    raw[-1] ^= 0x5A  # a wrong CRC
    from firmware_bridge.cobs import cobs_encode

    start = len(p.log)
    p.send_raw(cobs_encode(bytes(raw)) + b"\x00")
    p.pump(p.reset_response_s())
    acted = [rx for rx in p.data_since(start) if _payload_id(rx) == Status.ID]
    acked = [rx for rx in p.log[start:] if rx.frame is not None and rx.frame.ack == (frame.seq + 1) % 256
             and rx.kind() in (FrameKind.ACK, FrameKind.DATA)]
    mark = p.mark()
    p.send_frame(frame)  # the intact frame: must work
    try:
        _wait_reply(p, Status.ID, "Status for the intact frame", mark)
        intact = True
    except ProbeError:
        intact = False
    ok = not acted and not acked and intact
    yield "framing.crc_rejected", ok, (
        "bad CRC dropped; the intact frame was answered" if ok else
        f"bad-CRC frame {'answered' if acted else 'acknowledged' if acked else 'dropped'}; "
        f"intact frame {'answered' if intact else 'not answered'}")
    results = []
    for label, junk in (("300 bytes without a delimiter", b"A" * 300 + b"\x00"),
                        ("bad COBS and '01 00'", b"\x05\x01\x00\x01\x00")):
        mark = p.mark()
        p.send_raw(junk + p.data_frame(StatusRequest()).encode())
        try:
            _wait_reply(p, Status.ID, f"Status after {label}", mark)
            results.append((label, True))
        except ProbeError:
            results.append((label, False))
    ok = all(good for _, good in results)
    yield "framing.resync", ok, "; ".join(
        f"after {label}: {'answered' if good else 'frame lost'}" for label, good in results)


def duplicate(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    start = len(p.log)
    frame = p.data_frame(StatusRequest())
    p.send_frame(frame)
    p.send_frame(frame)
    p.pump(p.reset_response_s())
    replies = {rx.frame.seq for rx in p.data_since(start)
               if rx.frame is not None and _payload_id(rx) == Status.ID}
    yield "data.duplicate", len(replies) == 1, f"{len(replies)} Status for one request sent twice"


def out_of_order(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    first, second = p.data_frame(StatusRequest()), p.data_frame(StatusRequest())
    start = len(p.log)
    p.send_frame(second)
    p.pump(p.reset_response_s())
    naks = [rx for rx in p.log[start:] if rx.kind() is FrameKind.NAK and rx.frame is not None]
    early_reply = [rx for rx in p.data_since(start) if _payload_id(rx) == Status.ID]
    mark = p.mark()
    p.send_raw(first.encode() + second.encode())
    recovered = _status_answers(p, mark, 2) >= 2
    nak_ok = bool(naks) and naks[0].frame is not None and naks[0].frame.ack == first.seq
    ok = nak_ok and not early_reply and recovered
    yield "data.out_of_order", ok, (
        f"NAK(ack={first.seq}) for the gap; both answered after the resend" if ok else
        f"NAK {'with ack ' + str(naks[0].frame.ack) if naks and naks[0].frame else 'missing'}, "
        f"frame ahead {'delivered' if early_reply else 'dropped'}, "
        f"{'recovered' if recovered else 'not recovered'}")


def window(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    p.hold_acks = True
    start = len(p.log)
    p.send_raw(b"".join(p.data_frame(StatusRequest()).encode() for _ in range(6)))
    p.pump(max(p.reset_response_s(), 2 * ctx.timing.initial_rto))
    seqs = sorted({rx.frame.seq for rx in p.data_since(start) if rx.frame is not None})
    ok = 1 <= len(seqs) <= ctx.timing.window
    yield "window.limit", ok, f"{len(seqs)} DATA frames in flight without acknowledgement: {seqs}"


def keepalive(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    p.pump(0.5)  # let the handshake's messages settle
    start_t = p.now()
    start = len(p.log)
    p.pump(4 * ctx.timing.keepalive_idle + 0.5)
    times = [start_t] + [rx.time for rx in p.log[start:]] + [p.now()]
    gap = max(b - a for a, b in zip(times, times[1:]))
    limit = ctx.keepalive_limit
    yield "timing.keepalive", gap <= limit, (
        f"longest gap between the device's frames while idle: {gap:.3f} s "
        f"(limit {limit:.3f} s at {ctx.baudrate} baud)")


def _unacknowledged_status(p: Prober) -> tuple[int, Rx, int]:
    """A fresh session, a StatusRequest, and the device's Status left unacknowledged:
    (log index before the request, the Status's first copy, its seq)."""
    p.open_session()
    # 4.3: a device with an active fault sends it first in a session, and it may come
    # after the Hello's acknowledgement. One request answered while acknowledgements still
    # go out has every such opening frame received and acknowledged first; held at once,
    # an unacknowledged fault report would fill the device's window and its Status would
    # never be sent (seen on a busy machine).
    _wait_reply(p, Status.ID, "Status", _sent_status_request(p))
    p.hold_acks = True
    start = _sent_status_request(p)
    first = _wait_reply(p, Status.ID, "Status", start)
    assert first.frame is not None
    return start, first, first.frame.seq


def retransmission(ctx: Context) -> Verdicts:
    p = ctx.prober
    start, first, seq = _unacknowledged_status(p)
    times = [first.time]
    limit = ctx.late(ctx.timing.max_rto)

    def sends() -> list[float]:
        return [rx.time for rx in p.data_since(start) if rx.frame is not None and rx.frame.seq == seq]

    while True:
        p.pump(limit, lambda new: any(rx.is_data and rx.frame is not None and rx.frame.seq == seq
                                      or rx.kind() is FrameKind.RESET for rx in new))
        now_sends = sends()
        gave_up = any(rx.kind() is FrameKind.RESET for rx in p.log[start:])
        if len(now_sends) == len(times) or gave_up or len(now_sends) > 20:
            times = now_sends
            break
        times = now_sends
    gaps = [b - a for a, b in zip(times, times[1:])]
    resends = len(times) - 1
    ctx.notes["timer_resends"] = resends
    bad = [g for g in gaps if not ctx.early(ctx.timing.min_rto) <= g <= limit]
    shrinking = [b for a, b in zip(gaps, gaps[1:]) if b < ctx.early(a)]
    ok = bool(gaps) and not bad and not shrinking
    yield "retransmission.timeout", ok, (
        f"resent after {', '.join(f'{g:.3f}' for g in gaps) or 'never'} s "
        f"(allowed {ctx.early(ctx.timing.min_rto):.3f}..{limit:.3f} s, non-decreasing)")
    ok = resends == ctx.timing.max_retries
    yield "retransmission.limit", ok, (
        f"{resends} timer retransmissions before giving up (expected {ctx.timing.max_retries})")


def nak(ctx: Context) -> Verdicts:
    p = ctx.prober
    start, first, seq = _unacknowledged_status(p)
    delays = []
    for _ in range(ctx.timing.max_retries + 1):
        sent_at = p.now()
        before = len(p.log)
        p.send_frame(Frame(FrameKind.NAK, 0, seq))
        p.pump(ctx.timing.min_rto, lambda new: any(rx.is_data and rx.frame is not None
                                                    and rx.frame.seq == seq for rx in new))
        resent = [rx for rx in p.log[before:] if rx.is_data and rx.frame is not None
                  and rx.frame.seq == seq]
        delays.append(resent[0].time - sent_at if resent else None)
    # at once: well before any timer (MIN_RTO), allowing the NAK's and the resend's wire time
    allowed = 0.5 * ctx.timing.min_rto + p.wire.slack + ctx.wire_time(64)
    ok = all(d is not None and d <= allowed for d in delays)
    by_nak = sum(d is not None and d <= allowed for d in delays)
    shown = ", ".join("none" if d is None else f"{d:.3f}" for d in delays)
    yield "retransmission.nak", ok, f"resend after each NAK: {shown} s (allowed {allowed:.3f} s)"
    # now silence from us except keepalives: the timer budget must be intact
    horizon = (ctx.timing.max_retries + 2) * ctx.late(ctx.timing.max_rto)
    p.pump(horizon, lambda new: any(rx.kind() is FrameKind.RESET for rx in new))
    resends = [rx for rx in p.log[start:] if rx.is_data and rx.frame is not None
               and rx.frame.seq == seq][1:]
    timer = len(resends) - by_nak
    expected = ctx.notes.get("timer_resends", ctx.timing.max_retries)
    yield "retransmission.nak_not_counted", timer == expected, (
        f"{timer} timer retransmissions besides {by_nak} answers to NAKs (the device's own "
        f"limit without NAKs: {expected})")


def silence(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    p.pump(0.2)
    p.keepalive = False
    p.auto_ack = False
    quiet_from = p.last_tx
    start = len(p.log)
    horizon = ctx.late(ctx.timing.silence_timeout) + 2 * ctx.timing.keepalive_idle + 1.0
    p.pump(horizon, lambda new: any(rx.kind() is FrameKind.RESET for rx in new))
    seen = p.log[start:]
    resets = [rx for rx in seen if rx.kind() is FrameKind.RESET]
    if resets:
        failed_at = resets[0].time
    else:
        others = [rx.time for rx in seen]
        failed_at = (others[-1] if others else quiet_from) + ctx.timing.keepalive_idle
        if p.now() - failed_at < ctx.timing.keepalive_idle:
            failed_at = float("inf")  # still sending keepalives: never declared silence
    waited = failed_at - quiet_from
    low = ctx.timing.silence_timeout  # measured from our last write: latency only adds
    high = ctx.late(ctx.timing.silence_timeout) + ctx.timing.keepalive_idle
    yield "timing.silence", low <= waited <= high, (
        f"declared the host silent after {waited:.3f} s (allowed {low:.3f}..{high:.3f} s at "
        f"{ctx.baudrate} baud)")
    if not resets:
        yield "link.restart_after_failure", False, "no RESET after the link failed"
        return
    p.pump(3 * ctx.timing.reset_interval)
    again = [rx for rx in p.log[start:] if rx.kind() is FrameKind.RESET and rx.frame is not None]
    ids = {rx.frame.payload for rx in again if rx.frame is not None}
    gaps = [b.time - a.time for a, b in zip(again, again[1:])]
    ok = (len(again) >= 2 and b"\x00\x00\x00\x00" not in ids
          and all(g <= ctx.late(ctx.timing.reset_interval) for g in gaps))
    yield "link.restart_after_failure", ok, (
        f"{len(again)} RESETs, every {', '.join(f'{g:.3f}' for g in gaps)} s")


def faults(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    mark = p.mark()
    if not p.wire.stimulate("fault"):
        yield ("faults.rereport_order", None,
               "needs a fault kept active (run with --interactive, or raise one and use "
               "--fault-active)")
        return
    try:  # the operator's step took: a Fault came, or the device's Status says FAULTED
        status = _wait_reply(p, Status.ID, "Status", _sent_status_request(p))
    except ProbeError:
        status = None
    faulted = status is not None and status.frame is not None and _status_state(status) == 2
    if not faulted and not any(rx.is_data and _payload_id(rx) == Fault.ID
                               for rx in p.data_since(mark)):
        yield ("faults.rereport_order", None,
               "the operator step was confirmed but the device reported no fault (no Fault, "
               "its Status not FAULTED): was the lid or door really opened? Not run")
        return
    mark = p.mark()
    hello = p.open_session(after_hello=[StatusRequest()])
    session = p.session
    _wait_reply(p, Status.ID, "Status", mark)
    data = sorted((rx for rx in p.log if rx.is_data and rx.session == session and rx.frame is not None
                   and rx.frame.seq >= (hello.frame.seq if hello.frame else 0)),
                  key=lambda rx: rx.frame.seq if rx.frame else 0)
    first_copies: dict[int, Rx] = {}
    for rx in data:  # a retransmitted frame counts once, where it first came
        if rx.frame is not None and rx.frame.seq not in first_copies:
            first_copies[rx.frame.seq] = rx
    hello_seq = hello.frame.seq if hello.frame else 0
    order = [_payload_id(rx) for seq, rx in first_copies.items() if seq != hello_seq]
    first_other = next((n for n, x in enumerate(order) if x != Fault.ID), len(order))
    ok = first_other > 0 and Fault.ID not in order[first_other:]
    names = [_name(i) for i in order]
    yield "faults.rereport_order", ok, f"after Hello the device sent: {', '.join(names)}"


def messages(ctx: Context) -> Verdicts:
    p = ctx.prober
    p.open_session()
    if ctx.kind is DeviceKind.DISPLAY:
        for message in (ShowMeter("major", 1234567), WinLight(7, True), ShowPrompt("conformance")):
            p.send_data(message)
        p.pump(p.reset_response_s())
    start = len(p.log)
    p.send_data(bytes([0xE7, 0x01, 0x02]))  # a vendor message nobody defined
    p.pump(p.reset_response_s())
    acked = any(rx.frame is not None and rx.frame.ack == p.tx_seq for rx in p.log[start:]
                if rx.kind() in (FrameKind.ACK, FrameKind.DATA))
    restarted = any(rx.kind() is FrameKind.RESET for rx in p.log[start:])
    alive = _answers_status(p)
    ok = acked and not restarted and alive
    yield "messages.vendor_tolerated", ok, (
        "vendor message 0xE7 acknowledged and ignored" if ok else
        f"vendor message {'acknowledged' if acked else 'not acknowledged'}, "
        f"{'session restarted' if restarted else 'session kept'}, "
        f"{'answers' if alive else 'no answer'} afterwards")


def refusal(ctx: Context) -> Verdicts:
    p = ctx.prober
    newer = Hello(PROTOCOL_VERSION + 1, DeviceKind.HOST, "CONFORMANCE", "version 2 host", 0)
    start = len(p.log)
    # RESET and the other version's Hello in one write: the device refuses before its own
    # Hello went out, the case 1.0 numbered wrongly (Refuse at seq 0 in place of Hello)
    session = p.reset(then=lambda: p.data_frame(newer).encode())
    p.auto_ack = False
    refuse_rx = p.wait_for("Refuse", lambda rx: rx.is_data and rx.session == session
                           and _payload_id(rx) == Refuse.ID, p.timing.handshake_timeout,
                           since=start)
    assert refuse_rx.frame is not None
    before = p.log[start:p.log.index(refuse_rx)]
    data_before = [rx for rx in before if rx.is_data and rx.frame is not None]
    hello_before = [rx for rx in data_before if _payload_id(rx) == Hello.ID]
    early_ack = [rx for rx in before if rx.frame is not None and rx.frame.ack >= 1
                 and rx.kind() in (FrameKind.ACK, FrameKind.DATA)]
    problems = []
    if not hello_before:
        problems.append("no Hello before the Refuse (1.0 numbering)")
    elif hello_before[-1].frame is not None and refuse_rx.frame.seq != (hello_before[-1].frame.seq + 1) % 256:
        problems.append(f"Refuse is seq {refuse_rx.frame.seq}, not right after Hello")
    if early_ack:
        problems.append("our Hello was acknowledged before the Refuse")
    if refuse_rx.frame.ack != 1:
        problems.append(f"Refuse carries ack {refuse_rx.frame.ack}, not 1")
    yield "refusal.numbering", not problems, "; ".join(problems) or (
        f"Hello seq {hello_before[-1].frame.seq if hello_before[-1].frame else '?'}, Refuse seq "
        f"{refuse_rx.frame.seq} with ack 1")
    payload = refuse_rx.frame.payload
    try:
        code, length = payload[1], payload[2]
        reason_bytes = payload[3:3 + length]
        reason = reason_bytes.decode("utf-8")
        ok = code == RefuseCode.INCOMPATIBLE_VERSION and len(reason_bytes) <= REFUSE_REASON_BYTES
        detail = f"code {code}, reason {reason!r} ({len(reason_bytes)} bytes)"
    except (IndexError, UnicodeDecodeError) as exc:
        ok, detail = False, f"reason is not valid UTF-8: {exc}"
    yield "refusal.reason_utf8", ok, detail
    # 4.5: acknowledge the Refuse; our DATA is acknowledged, nothing else happens
    p.rx_expected = (refuse_rx.frame.seq + 1) % 256
    p.ack()
    p.keepalive = False
    mark = len(p.log)
    p.send_data(StatusRequest())
    p.pump(p.reset_response_s())
    acked = any(rx.frame is not None and rx.frame.ack == 2 for rx in p.log[mark:])
    answered = any(rx.is_data and _payload_id(rx) == Status.ID for rx in p.log[mark:])
    quiet_mark = len(p.log)
    quiet_from = p.now()
    p.pump(ctx.late(ctx.timing.silence_timeout) + 2 * ctx.timing.keepalive_idle)
    spoke = [rx for rx in p.log[quiet_mark:]]
    problems = []
    if not acked:
        problems.append("our DATA was not acknowledged")
    if answered:
        problems.append("a message was delivered and answered")
    if spoke:
        problems.append(f"sent {spoke[0].describe()} "
                        f"{spoke[0].time - quiet_from:.2f} s into our silence")
    yield "refusal.state", not problems, "; ".join(problems) or (
        f"acknowledged our DATA, answered nothing, quiet for {p.now() - quiet_from:.1f} s")
    try:
        p.open_session()
        yield "refusal.revive", True, "a new RESET brought the refused device up"
    except ProbeError as exc:
        yield "refusal.revive", False, f"after our RESET: {exc}"


def _status_state(rx: Rx) -> int | None:
    """Status.state of a Status frame (u32 uptime, then the u8 state), None if cut short."""
    assert rx.frame is not None
    payload = rx.frame.payload
    return payload[5] if len(payload) > 5 else None


def _name(message_id: int) -> str:
    from firmware_bridge.messages import MESSAGES

    cls = MESSAGES.get(message_id)
    return cls.__name__ if cls else f"0x{message_id:02X}"


Scenario = Callable[[Context], Verdicts]
SCENARIOS: list[tuple[Scenario, tuple[str, ...]]] = [
    (basic, ("handshake.hello", "version.announces_1_1", "handshake.reset")),
    (session_zero, ("handshake.session_zero",)),
    (stray_first, ("handshake.stray_first",)),
    (hello_mid_session, ("handshake.hello_mid_session",)),
    (framing, ("framing.crc_rejected", "framing.resync")),
    (duplicate, ("data.duplicate",)),
    (out_of_order, ("data.out_of_order",)),
    (window, ("window.limit",)),
    (keepalive, ("timing.keepalive",)),
    (messages, ("messages.vendor_tolerated",)),
    (faults, ("faults.rereport_order",)),
    (retransmission, ("retransmission.timeout", "retransmission.limit")),
    (nak, ("retransmission.nak", "retransmission.nak_not_counted")),
    (silence, ("timing.silence", "link.restart_after_failure")),
    (refusal, ("refusal.numbering", "refusal.reason_utf8", "refusal.state", "refusal.revive")),
]


def judge_whole_run(ctx: Context) -> Verdicts:
    """Checks over everything the device sent in the run."""
    log = ctx.prober.log
    errors = [rx for rx in log if rx.error is not None]
    odd = [rx for rx in log if rx.frame is not None and rx.frame.unused_fields_set]
    problems = [f"{len(errors)} bad frames (first: {errors[0].error})"] if errors else []
    if odd and odd[0].frame is not None:
        problems.append(f"{len(odd)} frames with non-zero unused fields (first: "
                        f"{odd[0].frame.kind.name} seq {odd[0].frame.seq} ack {odd[0].frame.ack})")
    yield "framing.valid_output", not problems, "; ".join(problems) or (
        f"{len(log)} frames, all valid")
    invalid: list[str] = []
    kinds: dict[str, int] = {}
    for rx in log:
        if not rx.is_data or rx.frame is None:
            continue
        payload = rx.frame.payload
        if payload[0] in (Hello.ID, Refuse.ID) or payload[0] in VENDOR_MESSAGE_IDS:
            continue  # judged by the handshake and refusal checks; vendor messages are free
        try:
            message = decode_message(payload)
        except MessageError as exc:
            invalid.append(f"{payload.hex(' ')}: {exc}")
            continue
        if ctx.kind not in type(message).SENDERS:
            invalid.append(f"{type(message).__name__} may not be sent by a {ctx.kind.name.lower()}")
        kinds[type(message).__name__] = kinds.get(type(message).__name__, 0) + 1
    yield "messages.fields", not invalid, "; ".join(invalid[:3]) or (
        "all valid: " + ", ".join(f"{name} x{count}" for name, count in sorted(kinds.items())))
