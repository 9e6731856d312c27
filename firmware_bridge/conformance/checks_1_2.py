"""The scenarios protocol 1.2 added to the conformance suite (their checks are in checks.CHECKS).

They close what a vendor's broken builds of a 1.1 device slipped past: how fast a
device acknowledges (5.9, measured, not inferred), that each copy of a duplicate
frame gets its own acknowledgement (5.4), that unused header fields are ignored
(3.1), that frames batched in one read all count (5.10), that a 1.0 host's Refuse
at seq 0 is honoured (4.2), that every request is answered (6.2) and that a card the
operator deals is reported (6.2), and that a shoe with the card commit acknowledgement
sends an uncommitted card, and its cover card, again after a handshake (6.6).  Each runs on
a fresh session (a RESET).
"""

from __future__ import annotations

from dataclasses import dataclass

from firmware_bridge.conformance.checks import (
    _SESSION,
    Context,
    Verdicts,
    _payload_id,
    _status_answers,
    _unacknowledged_status,
    _wait_reply,
)
from firmware_bridge.conformance.prober import PROBE_HELLO, Prober, ProbeError, Rx
from firmware_bridge.frame import Frame, FrameKind
from firmware_bridge.messages import (
    CAP_CARD_COMMIT,
    NO_BACK_COLOUR,
    BatchStatus,
    CardDrawn,
    CardsCommitted,
    CoverCardDrawn,
    DeviceKind,
    Fault,
    Hello,
    Refuse,
    RefuseCode,
    SelfTestRequest,
    SelfTestResult,
    ShuffleComplete,
    ShuffleProgress,
    StartShuffle,
    Status,
    StatusRequest,
    decode_message,
)

VENDOR_PROBE = bytes([0xE7, 0x01, 0x02])
"""A vendor message nobody defined: acknowledged and never answered (6.1), so the frame that
acknowledges it is the device's own choice of when to acknowledge."""

SHUFFLE_PROGRESS_S = 30.0
"""6.2: the host treats 30 s without progress during a shuffle as SHUFFLER_CYCLE_INCOMPLETE."""


def _verdict(check: str, ok: bool, passed: str, failed: str) -> tuple[str, bool, str]:
    return check, ok, passed if ok else failed


def _settled_session(ctx: Context) -> Prober:
    """A fresh session, with the messages that open it (fault re-reports) let through."""
    ctx.prober.open_session()
    ctx.prober.pump(0.2)
    return ctx.prober


def _acknowledgement(p: Prober, seq: int, since: int, seconds: float) -> Rx | None:
    """The first frame after log index ``since`` whose ack covers our DATA ``seq``."""
    want = (seq + 1) % 256
    try:
        return p.wait_for(f"acknowledgement of seq {seq}", lambda rx: rx.frame is not None
                          and rx.session == p.session
                          and rx.kind() in (FrameKind.ACK, FrameKind.DATA)
                          and (rx.frame.ack - want) % 256 < 128, seconds, since=since)
    except ProbeError:
        return None


def _ack_delay(ctx: Context, payload: bytes) -> float | None:
    """Send one DATA frame of ``payload``; how long after its end its acknowledgement's
    frame began to arrive (None: none within a second past the limit)."""
    p = ctx.prober
    frame = p.data_frame(payload)
    mark = p.mark()
    p.send_frame(frame)
    sent_end = p.now() + ctx.wire_time(len(frame.encode()))
    rx = _acknowledgement(p, frame.seq, mark, ctx.ack_limit + 1.0)
    if rx is None or rx.frame is None:
        return None
    return rx.time - ctx.wire_time(len(rx.frame.encode())) - sent_end


def ack_latency(ctx: Context) -> Verdicts:
    p = _settled_session(ctx)
    delays = []
    for _ in range(3):  # an unanswered message: the device decides alone when to acknowledge
        delays.append(_ack_delay(ctx, VENDOR_PROBE))
        p.pump(0.1)
    worst = max((d for d in delays if d is not None), default=None)
    ok = None not in delays and worst is not None and worst <= ctx.ack_limit
    shown = ", ".join("none" if d is None else f"{d:.3f}" for d in delays)
    yield "timing.ack_latency", ok, (
        f"acknowledged {shown} s after each frame ended (allowed {ctx.ack_limit:.3f} s: MIN_RTO "
        f"{ctx.timing.min_rto:.3f} s at {ctx.baudrate} baud)")


def duplicate_acked(ctx: Context) -> Verdicts:
    p = _settled_session(ctx)
    frame = p.data_frame(VENDOR_PROBE)
    results = []
    for copy in range(3):  # the original and two duplicates, each sent on its own
        mark = p.mark()
        p.send_frame(frame)
        rx = _acknowledgement(p, frame.seq, mark, ctx.ack_limit)
        results.append(rx is not None)
        if rx is not None:
            p.pump(0.05)
    ok = all(results)
    yield "data.duplicate_acked", ok, (
        "the frame and both duplicates were each acknowledged" if ok else
        "acknowledged: " + ", ".join(f"copy {n + 1} {'yes' if r else 'no'}"
                                     for n, r in enumerate(results))
        + f" (within {ctx.ack_limit:.3f} s each)")


def unused_fields(ctx: Context) -> Verdicts:
    p = ctx.prober
    start, first, seq = _unacknowledged_status(p)
    p.pump(0.01)
    mark = p.mark()
    p.send_frame(Frame(FrameKind.ACK, 0x5A, (seq + 1) % 256))  # seq MUST be ignored (3.1)
    p.rx_expected = (seq + 1) % 256
    p.hold_acks = False
    p.pump(ctx.late(ctx.timing.max_rto))
    resent = [rx for rx in p.data_since(mark) if rx.frame is not None and rx.frame.seq == seq]
    session = p.new_session_id()
    mark = p.mark()
    p.send_raw(b"\x00" + Frame(FrameKind.RESET, 0x44, 0x33, _SESSION.pack(session)).encode())
    p.session, p.tx_seq, p.rx_expected = session, 0, 0
    p.pump(p.reset_response_s(), lambda new: any(rx.kind() is FrameKind.RESET_ACK for rx in new))
    answered = any(rx.kind() is FrameKind.RESET_ACK and rx.frame is not None
                   and rx.frame.payload == _SESSION.pack(session) for rx in p.log[mark:])
    yield _verdict("framing.unused_fields_ignored", not resent and answered,
                   "ACK with seq 0x5A honoured; RESET with seq/ack 0x44/0x33 answered",
                   f"ACK with seq 0x5A {'ignored: the frame was resent' if resent else 'honoured'}"
                   f"; RESET with non-zero seq/ack {'answered' if answered else 'not answered'}")


def batched_reads(ctx: Context) -> Verdicts:
    p = _settled_session(ctx)
    mark = p.mark()
    frames = [p.data_frame(StatusRequest()), p.data_frame(VENDOR_PROBE),
              p.data_frame(StatusRequest())]
    p.send_raw(b"".join(f.encode() for f in frames))
    answers = _status_answers(p, mark, 2)
    acked = _acknowledgement(p, frames[-1].seq, mark, 0.0) is not None
    ok = answers == 2 and acked
    yield "framing.batched_reads", ok, (
        f"3 DATA frames in one write: {answers} of 2 StatusRequests answered, the last frame "
        f"{'acknowledged' if acked else 'never acknowledged'}")


def accepts_1_0_refuse(ctx: Context) -> Verdicts:
    p = ctx.prober
    mark = p.mark()
    session = p.reset()
    p.auto_ack = False
    try:
        p.wait_for("Hello", lambda rx: rx.is_data and rx.session == session
                   and _payload_id(rx) == Hello.ID, p.timing.handshake_timeout, since=mark)
    except ProbeError as exc:
        yield "refusal.accepts_1_0", False, str(exc)
        return
    p.rx_expected = 1
    refuse = p.data_frame(Refuse(RefuseCode.NOT_ACCEPTED, "1.0 host: not approved"))  # seq 0
    mark = p.mark()
    p.send_frame(refuse)
    acked = _acknowledgement(p, refuse.seq, mark, p.reset_response_s()) is not None
    p.keepalive = False
    request = p.mark()
    p.send_data(StatusRequest())
    p.pump(p.reset_response_s())
    answered = any(rx.is_data and _payload_id(rx) == Status.ID for rx in p.log[request:])
    yield _verdict("refusal.accepts_1_0", acked and not answered,
                   "Refuse at seq 0 acknowledged; REFUSED (a StatusRequest went unanswered)",
                   f"Refuse at seq 0 {'acknowledged' if acked else 'not acknowledged'}; the "
                   f"device {'answered a StatusRequest: not REFUSED' if answered else 'is silent'}")


def requests_answered(ctx: Context) -> Verdicts:
    p = ctx.prober
    mark = p.mark()
    p.open_session()
    problems = []
    # [M-6.2a] gives each answer the handshake timeout at the device's baud (a self-test
    # may take seconds); the other checks only use a quick Status as a sign of life
    within = p.timing.handshake_timeout + p.wire.slack
    for request, answer in ((StatusRequest(), Status), (SelfTestRequest(), SelfTestResult)):
        since = p.mark()
        p.send_data(request)
        try:
            _wait_reply(p, answer.ID, answer.__name__, since, within)
        except ProbeError as exc:
            problems.append(f"{type(request).__name__}: {exc}")
    detail = "Status and SelfTestResult answered"
    if ctx.kind is DeviceKind.SHUFFLER:
        answered, shuffle = _shuffle(p, mark)
        if not answered:
            problems.append(shuffle)
        detail += f"; {shuffle}"
    yield "messages.requests_answered", not problems, "; ".join(problems) or detail


def _shuffle(p: Prober, mark: int) -> tuple[bool, str]:
    """StartShuffle for the batch BatchStatus names: whether it was answered, and what came."""
    held = [rx for rx in p.data_since(mark) if _payload_id(rx) == BatchStatus.ID]
    colour = held[-1].frame.payload[1] if held and held[-1].frame is not None else NO_BACK_COLOUR
    request = StartShuffle(0 if colour == NO_BACK_COLOUR else colour, 416)
    since = p.mark()
    p.send_data(request)
    answers = (ShuffleComplete.ID, Fault.ID)
    while True:  # 6.2: ShuffleProgress keeps a long shuffle alive
        before = p.mark()
        p.pump(SHUFFLE_PROGRESS_S + p.wire.slack, lambda new: any(
            rx.is_data and _payload_id(rx) in (*answers, ShuffleProgress.ID) for rx in new))
        got = [_payload_id(rx) for rx in p.data_since(before)]
        if any(i in answers for i in got):
            break
        if ShuffleProgress.ID not in got:
            return False, (f"StartShuffle: no ShuffleComplete or Fault, and no ShuffleProgress "
                           f"for {SHUFFLE_PROGRESS_S:.0f} s")
    got = [_payload_id(rx) for rx in p.data_since(since)]
    ended = "ShuffleComplete" if ShuffleComplete.ID in got else "a Fault"
    return True, (f"StartShuffle({request.back_colour}, 416) answered by {ended} after "
                  f"{got.count(ShuffleProgress.ID)} ShuffleProgress")


def card_drawn(ctx: Context) -> Verdicts:
    p = _settled_session(ctx)
    mark = p.mark()
    if not p.wire.stimulate("event"):
        yield ("events.card_drawn", None,
               "needs an operator to deal a card (run with --interactive): not run")
        return
    try:
        rx = _wait_reply(p, CardDrawn.ID, "CardDrawn", mark)
    except ProbeError:
        yield ("events.card_drawn", False,
               f"the operator dealt a card; no CardDrawn within {p.reset_response_s():.1f} s")
        return
    assert rx.frame is not None
    yield "events.card_drawn", True, f"CardDrawn {rx.frame.payload.hex(' ')}"


COMMIT_HELLO = Hello(PROBE_HELLO.protocol_version, PROBE_HELLO.device_kind,
                     PROBE_HELLO.serial_number, PROBE_HELLO.firmware_version,
                     PROBE_HELLO.capabilities | CAP_CARD_COMMIT)
"""The prober's Hello for 6.6: a host taking part in the card commit acknowledgement."""


def card_replayed(ctx: Context) -> Verdicts:
    """6.6 [M-6.6b, M-6.6c]: a card acknowledged by the link and never covered by
    CardsCommitted comes again in the next session, after the Faults and before the rest."""
    yield from _kept_report_replayed(ctx, "events.card_replayed", KeptReportCheck(
        "event", CardDrawn, "deal a card", "dealt a card", "not committed"))


def cover_card_replayed(ctx: Context) -> Verdicts:
    """6.6 [M-6.6e]: a cover card acknowledged by the link, with no card after it committed,
    comes again in the next session, among the kept reports."""
    yield from _kept_report_replayed(ctx, "events.cover_card_replayed", KeptReportCheck(
        "cover", CoverCardDrawn, "draw the cover card", "drew the cover card",
        "no card after it committed"))


@dataclass(frozen=True)
class KeptReportCheck:
    """A report a 1.2 shoe keeps until a CardsCommitted covers it (6.6), as a check asks for it."""

    stimulus: str  # the operator's action (Wire.stimulate)
    message: type[CardDrawn] | type[CoverCardDrawn]
    asked: str  # "needs an operator to ..."
    done: str  # "the operator ..."
    uncovered: str  # why the shoe still keeps it


def _kept_report_replayed(ctx: Context, check: str, kept: KeptReportCheck) -> Verdicts:
    """The report ``kept`` describes, acknowledged at the link only, must come again in the
    next session [M-6.6c], with nothing but fault re-reports and other kept reports before it;
    a CardsCommitted above its index then lets the shoe forget it."""
    p = ctx.prober
    first = p.open_session(hello=COMMIT_HELLO)
    assert first.frame is not None
    hello = decode_message(first.frame.payload)
    if not isinstance(hello, Hello) or not hello.capabilities & CAP_CARD_COMMIT:
        yield check, True, "the shoe does not announce CAP_CARD_COMMIT (optional, 6.6): nothing kept"
        return
    p.pump(0.2)
    mark = p.mark()
    name = kept.message.__name__
    if not p.wire.stimulate(kept.stimulus):
        yield check, None, f"needs an operator to {kept.asked} (run with --interactive): not run"
        return
    try:
        reported = _wait_reply(p, kept.message.ID, name, mark)
    except ProbeError:  # 6.2 broken too (docs/conformance.md links card_replayed to M-6.2c)
        yield check, False, (f"the operator {kept.done}; no {name} within "
                             f"{p.reset_response_s():.1f} s")
        return
    assert reported.frame is not None
    payload = reported.frame.payload
    p.pump(0.2)  # acknowledged by the link, never by CardsCommitted
    since = p.mark()
    p.open_session(hello=COMMIT_HELLO)
    p.pump(p.reset_response_s(), lambda new: any(rx.is_data and rx.frame is not None
                                                 and rx.frame.payload == payload for rx in new))
    session = [rx.frame.payload for rx in p.data_since(since) if rx.frame is not None]
    # What the device sent after its Hello, its Hello's copies left out (4.2 and 5.5 judge
    # anything before it and every resend).
    ids = [message[0] for message in session]
    after = session[ids.index(Hello.ID) + 1:] if Hello.ID in ids else session
    sent = [message for message in after if message[0] != Hello.ID]
    if payload not in sent:
        yield check, False, (f"{name} {payload.hex(' ')} was acknowledged but {kept.uncovered}; "
                             f"the next session did not send it again within "
                             f"{p.reset_response_s():.1f} s")
        return
    # Only Faults and other kept reports may come first.
    early = {message[0] for message in sent[:sent.index(payload)]}
    late = sorted(early - {Fault.ID, CardDrawn.ID, CoverCardDrawn.ID})
    if late:
        yield check, False, (f"the kept {name} came after message id(s) "
                             f"{', '.join(f'0x{i:02X}' for i in late)}: it goes right after the "
                             "fault re-reports")
        return
    index = int.from_bytes(payload[1:3], "little")
    p.send_data(CardsCommitted(index + 1))  # above its index: the shoe may forget it now
    p.pump(0.2)
    yield check, True, f"{name} {payload.hex(' ')} sent again after the handshake"


SCENARIOS_1_2 = [
    (ack_latency, ("timing.ack_latency",)),
    (duplicate_acked, ("data.duplicate_acked",)),
    (batched_reads, ("framing.batched_reads",)),
    (requests_answered, ("messages.requests_answered",)),
    (card_drawn, ("events.card_drawn",)),
    (card_replayed, ("events.card_replayed",)),
    (cover_card_replayed, ("events.cover_card_replayed",)),
    (unused_fields, ("framing.unused_fields_ignored",)),
]
"""Run after checks.SCENARIOS' handshake, framing and message scenarios (report.run_suite)."""

LAST_1_2 = [(accepts_1_0_refuse, ("refusal.accepts_1_0",))]
"""Run last of all: it leaves the device REFUSED."""
