"""Protocol 1.1 rules of docs/protocol.md, one test per point settled (issue 16, points 1-6).

Each test names the section it checks.  Findings of the 1.0 review are reproduced
first where the old behaviour can still be built (the 1.0 timing formula)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from firmware_bridge.frame import Frame, FrameDecoder, FrameKind, decode_frame
from firmware_bridge.impairment import ImpairedChannel, Impairments, LinkSimulation
from firmware_bridge.link import (
    MAX_RETRIES,
    REFUSE_REASON_BYTES,
    BadMessage,
    LinkDown,
    LinkEndpoint,
    LinkState,
    LinkTiming,
    LinkUp,
    MessageReceived,
    PeerRefused,
    Role,
    VendorMessage,
    cut_utf8,
)
from firmware_bridge.messages import (
    CAP_PROTOCOL_1_1,
    PROTOCOL_VERSION,
    DeviceKind,
    Fault,
    FaultCleared,
    FaultCode,
    Hello,
    Refuse,
    RefuseCode,
    StatusRequest,
    decode_message,
    encode_message,
    fault_name,
)

from .conftest import HOST_HELLO, SHOE_HELLO, make_pair

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
SESSION = b"\x78\x56\x34\x12"


def up(sim: LinkSimulation) -> LinkSimulation:
    sim.a.connect(sim.now)
    assert sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP,
                         timeout=30)
    return sim


def legacy_timing_1_0(baud: int) -> LinkTiming:
    """The 1.0 host formula (keepalive, silence and handshake all stretched by s/4)."""
    scale = max(1.0, 115200 / baud)
    slow = max(1.0, scale / 4)
    return LinkTiming(initial_rto=0.25 * scale, min_rto=0.05 * scale,
                      max_rto=max(2.0, 0.5 * scale), keepalive_idle=1.0 * slow,
                      silence_timeout=3.0 * slow, handshake_timeout=5.0 * slow)


def _pair(host_timing: LinkTiming, device_timing: LinkTiming) -> LinkSimulation:
    ids = itertools.count(0x100)
    host = LinkEndpoint(Role.HOST, HOST_HELLO, timing=host_timing, session_ids=lambda: next(ids))
    device = LinkEndpoint(Role.DEVICE, SHOE_HELLO, timing=device_timing,
                          session_ids=lambda: next(ids))
    import random
    return LinkSimulation(host, device, ImpairedChannel(Impairments(), random.Random(1)),
                          ImpairedChannel(Impairments(), random.Random(2)))


def _drops(sim: LinkSimulation, seconds: float) -> int:
    sim.run_until(lambda: False, timeout=seconds)
    return sum(isinstance(e, LinkDown) for e in sim.events_a + sim.events_b)


# --- 5.9: one timing formula ---------------------------------------------------------


def test_finding_1_reproduced_the_1_0_formula_drops_an_idle_9600_link() -> None:
    # issue 16 point 1: 1.0 host at 9600 (keepalive 3 s) + device on the 115200 constants
    sim = up(_pair(legacy_timing_1_0(9600), LinkTiming()))
    assert _drops(sim, 20.0) >= 5


@pytest.mark.parametrize("device_timing", ["1.1", "1.0 constants", "1.0 stretched"])
def test_1_1_host_at_9600_keeps_every_kind_of_device_up(device_timing: str) -> None:
    # 5.9: host keepalive 1.0 s at every rate, silence 9 s at 9600; 7 compatible with 1.0 devices
    timing = {"1.1": LinkTiming.for_baudrate(9600), "1.0 constants": LinkTiming(),
              "1.0 stretched": legacy_timing_1_0(9600)}[device_timing]
    sim = up(_pair(LinkTiming.for_baudrate(9600), timing))
    assert _drops(sim, 60.0) == 0


def test_timing_table_in_the_document_is_the_formula() -> None:
    doc = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+) s \| ([\d.]+) s \| "
                      r"([\d.]+) s \| ([\d.]+) s \|$", doc, re.M)
    assert [int(r[0]) for r in rows] == [9600, 19200, 38400, 57600, 115200]
    for baud, *values in rows:
        t = LinkTiming.for_baudrate(int(baud))
        assert [float(v) for v in values] == pytest.approx(
            [t.initial_rto, t.min_rto, t.max_rto, t.keepalive_idle, t.silence_timeout,
             t.handshake_timeout])


@pytest.mark.parametrize("baud", [9600, 19200, 57600, 115200])
def test_handshake_survives_four_lost_hellos_at_every_rate(baud: int) -> None:
    # 5.9 HANDSHAKE_TIMEOUT: four retransmissions of a lost Hello fit (1.0: two at 9600)
    timing = LinkTiming.for_baudrate(baud)
    sim = _pair(timing, timing)
    sim.a.connect(0.0)
    lost = 0
    while lost < 4:  # drop the device's first four Hello DATA frames (RESET_ACK goes through)
        sim.step()
        pending = sim.b_to_a._queue
        for i, (due, chunk) in enumerate(list(pending)):
            frames = [f for f in FrameDecoder().feed(chunk) if isinstance(f, Frame)]
            if any(f.kind is FrameKind.DATA and f.payload[0] == Hello.ID for f in frames):
                kept = b"".join(f.encode() for f in frames if f.kind is not FrameKind.DATA)
                pending[i] = (due, kept or b"\x00")
                lost += 1
        assert sim.now < 60
    assert sim.run_until(lambda: sim.a.state is LinkState.UP, timeout=timing.handshake_timeout)
    assert sim.b.counters.retransmits >= 4


# --- 4.2: refusal numbering, UTF-8 cut, first DATA, Hello mid-session -------------------


def test_refuse_follows_the_refusers_own_hello() -> None:
    host = LinkEndpoint(Role.HOST, HOST_HELLO, session_ids=lambda: 0x12345678,
                        accept_peer=lambda peer: "not this one")
    host.connect(0.0)
    host.outgoing()
    hello = Frame(FrameKind.DATA, 0, 0, encode_message(SHOE_HELLO)).encode()
    host.receive(Frame(FrameKind.RESET_ACK, 0, 0, SESSION).encode() + hello, 0.1)
    sent = [decode_frame(c + b"\x00") for c in host.outgoing().split(b"\x00") if c]
    assert [(f.kind, f.seq, f.ack, f.payload[0]) for f in sent] == [
        (FrameKind.DATA, 0, 0, Hello.ID), (FrameKind.DATA, 1, 1, Refuse.ID)]
    assert decode_message(sent[1].payload) == Refuse(RefuseCode.NOT_ACCEPTED, "not this one")


def test_a_1_0_peers_refuse_at_seq_0_is_still_honoured() -> None:
    # 4.2 / 7: compatibility with a 1.0 device that refuses instead of sending Hello
    host = LinkEndpoint(Role.HOST, HOST_HELLO, session_ids=lambda: 0x12345678)
    host.connect(0.0)
    refuse = encode_message(Refuse(RefuseCode.INCOMPATIBLE_VERSION, "host too new"))
    host.receive(Frame(FrameKind.RESET_ACK, 0, 0, SESSION).encode()
                 + Frame(FrameKind.DATA, 0, 0, refuse).encode(), 0.1)
    assert host.state is LinkState.REFUSED
    assert [e.reason for e in host.events() if isinstance(e, PeerRefused)] == [
        "refused by peer: host too new"]


def test_refuse_reason_is_cut_on_a_character_boundary() -> None:
    reason = "é" * 150  # 300 bytes of two-byte characters
    assert len(cut_utf8(reason, REFUSE_REASON_BYTES).encode()) == 200
    assert cut_utf8("a" + reason, REFUSE_REASON_BYTES) == "a" + "é" * 99  # 199 bytes, not 200
    sim = make_pair(accept_peer=lambda peer: "a" + reason)
    sim.a.connect(0.0)
    sim.run_until(lambda: sim.b.state is LinkState.REFUSED, timeout=5)
    refused = [e for e in sim.events_b if isinstance(e, PeerRefused)]
    assert refused[0].reason == "refused by peer: a" + "é" * 99


def test_first_data_that_is_not_hello_is_not_acknowledged() -> None:
    device = LinkEndpoint(Role.DEVICE, SHOE_HELLO, session_ids=lambda: 7)
    device.receive(Frame(FrameKind.RESET, 0, 0, SESSION).encode(), 0.0)
    device.outgoing()
    device.receive(Frame(FrameKind.DATA, 0, 0, encode_message(StatusRequest())).encode(), 0.1)
    out = [decode_frame(c + b"\x00") for c in device.outgoing().split(b"\x00") if c]
    assert all(f.ack == 0 for f in out)  # nothing acknowledged
    assert device.counters.bad_messages == 1
    bad = [e for e in device.events() if isinstance(e, BadMessage)]
    assert str(bad[0].error) == "first message of the session has id 0x03, expected Hello"
    assert device.state is LinkState.HANDSHAKING


def test_hello_in_mid_session_is_acknowledged_and_ignored() -> None:
    sim = up(make_pair())
    before = sim.b.peer
    sim.b.receive(Frame(FrameKind.DATA, 1, 1, encode_message(HOST_HELLO)).encode(), sim.now)
    out = [decode_frame(c + b"\x00") for c in sim.b.outgoing().split(b"\x00") if c]
    assert [(f.kind, f.ack) for f in out] == [(FrameKind.ACK, 2)]
    assert sim.b.state is LinkState.UP and sim.b.peer == before
    assert sim.b.counters.bad_messages == 1


# --- 4.1, 3.1, 3.3: session id 0, unused fields, 01 00 -------------------------------------


def test_session_id_zero_is_never_sent_and_ignored_when_received() -> None:
    ids = iter([0, 0, 5])
    host = LinkEndpoint(Role.HOST, HOST_HELLO, session_ids=lambda: next(ids))
    host.connect(0.0)
    assert decode_frame(host.outgoing()[1:]).payload == b"\x05\x00\x00\x00"
    device = LinkEndpoint(Role.DEVICE, SHOE_HELLO, session_ids=lambda: 9)
    device.receive(Frame(FrameKind.RESET, 0, 0, b"\x00\x00\x00\x00").encode(), 0.0)
    assert device.outgoing() == b"" and device.state is LinkState.IDLE
    assert device.counters.ignored_frames == 1


def test_nonzero_seq_and_ack_in_other_kinds_are_ignored() -> None:
    device = LinkEndpoint(Role.DEVICE, SHOE_HELLO, session_ids=lambda: 7)
    device.receive(Frame(FrameKind.RESET, 9, 9, SESSION).encode(), 0.0)  # seq/ack not 0
    assert device.state is LinkState.HANDSHAKING
    sim = up(make_pair())
    sim.b.send(Fault(FaultCode.SHOE_LID_OPEN, "x"), sim.now)
    sim.b.outgoing()
    sim.b.receive(Frame(FrameKind.ACK, 77, 2).encode(), sim.now)  # seq 77 in an ACK
    assert sim.b.unconfirmed() == ()


def test_01_00_is_a_framing_error_and_00_00_is_idle_fill() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x00\x00") == []
    assert len(decoder.feed(b"\x01\x00")) == 1
    assert decoder.counters.framing_errors == 1


# --- 5.5: NAK resends do not count toward the retry limit -------------------------------


def test_nak_resends_do_not_count_toward_the_retry_limit() -> None:
    sim = up(make_pair())
    sim.b.send(Fault(FaultCode.SHOE_LID_OPEN, "x"), sim.now)
    sim.b.outgoing()
    for _ in range(MAX_RETRIES + 3):  # more NAKs than the retry limit
        sim.b.receive(Frame(FrameKind.NAK, 0, 1).encode(), sim.now)
        sim.b.outgoing()
    assert sim.b.state is LinkState.UP
    timeouts = 0
    while sim.b.state is LinkState.UP:
        deadline = sim.b.next_deadline()
        assert deadline is not None
        sim.now = deadline
        sim.b.receive(Frame(FrameKind.ACK, 0, 1).encode(), sim.now)  # alive, acks nothing new
        before = sim.b.counters.timeouts
        sim.b.poll(sim.now)
        timeouts += sim.b.counters.timeouts - before
        sim.b.outgoing()
    # failed at the (MAX_RETRIES + 1)-th expiry: five timer resends, NAK resends not counted
    assert timeouts == MAX_RETRIES + 1
    assert sim.b.counters.retransmits == MAX_RETRIES + 3 + MAX_RETRIES


# --- 4.5: the REFUSED state table --------------------------------------------------------


def _refused_pair() -> LinkSimulation:
    sim = make_pair(accept_peer=lambda peer: "no")
    sim.a.connect(0.0)
    assert sim.run_until(lambda: sim.b.state is LinkState.REFUSED, timeout=5)
    return sim


def test_refused_sends_no_keepalive_and_never_fails_on_silence() -> None:
    sim = _refused_pair()
    sent = sim.a.counters.frames_out, sim.b.counters.frames_out
    sim.run_until(lambda: False, timeout=60.0)
    assert (sim.a.counters.frames_out, sim.b.counters.frames_out) == sent
    assert sim.a.state is sim.b.state is LinkState.REFUSED
    assert sim.a.counters.link_failures == sim.b.counters.link_failures == 0


def test_refused_side_acknowledges_data_and_retransmits_refuse_at_most_max_retries() -> None:
    sim = make_pair(accept_peer=lambda peer: "no", back_impairments=Impairments(loss=1.0))
    sim.a.connect(0.0)  # the device's bytes never arrive: the host's Refuse is never acked
    sim.b_to_a.impairments = Impairments()
    sim.run_until(lambda: sim.a.state is LinkState.HANDSHAKING, timeout=1)
    sim.b_to_a.impairments = Impairments(loss=0.0)
    sim.run_until(lambda: sim.a.state is LinkState.REFUSED, timeout=5)
    sim.b_to_a.impairments = Impairments(loss=1.0)
    start = sim.a.counters.retransmits
    sim.run_until(lambda: False, timeout=60.0)
    assert sim.a.counters.retransmits - start <= 2 * MAX_RETRIES  # Hello + Refuse, 5 rounds max
    assert sim.a.state is LinkState.REFUSED and sim.a.counters.link_failures == 0
    # DATA in REFUSED is acknowledged (so the peer stops retransmitting)
    sim.a.receive(Frame(FrameKind.DATA, 1, 2, encode_message(StatusRequest())).encode(), sim.now)
    acks = [decode_frame(c + b"\x00") for c in sim.a.outgoing().split(b"\x00") if c]
    assert (FrameKind.ACK, 2) in [(f.kind, f.ack) for f in acks]


def test_both_refuse_first_refusal_stands() -> None:
    sim = make_pair(accept_peer=lambda peer: "host says no")
    sim.b._accept_peer = lambda peer: "device says no"
    sim.a.connect(0.0)
    sim.run_until(lambda: False, timeout=5)
    assert sim.a.state is sim.b.state is LinkState.REFUSED
    assert str(sim.a.refusal) == "refused peer: host says no"
    assert str(sim.b.refusal) == "refused peer: device says no"


def test_a_reset_revives_a_refused_side_at_once() -> None:
    sim = _refused_pair()
    sim.b._accept_peer = None
    sim.a._accept_peer = None
    sim.b.connect(sim.now)  # the re-flashed device boots
    start = sim.now
    assert sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP,
                         timeout=1)
    assert sim.now - start < 0.01  # no re-probe interval: the RESET is answered at once


# --- 6.1, 6.3: vendor ranges ---------------------------------------------------------------


def test_vendor_fault_codes_are_delivered_not_dropped() -> None:
    sim = up(make_pair())
    sim.b.send(Fault(0x8001, "hopper low"), sim.now)
    sim.b.send(FaultCleared(0x0106), sim.now)  # reserved, from a newer device
    sim.run_until(lambda: len([e for e in sim.events_a if isinstance(e, MessageReceived)]) == 2,
                  timeout=2)
    messages = [e.message for e in sim.events_a if isinstance(e, MessageReceived)]
    assert messages == [Fault(0x8001, "hopper low"), FaultCleared(0x0106)]
    assert [fault_name(m.code) for m in messages] == ["vendor_fault_0x8001",  # type: ignore[attr-defined]
                                                      "unknown_fault_0x0106"]
    assert fault_name(FaultCode.SHOE_LID_OPEN) == "shoe_lid_open"


def test_vendor_message_ids_are_acknowledged_and_tolerated() -> None:
    sim = up(make_pair())
    sim.a.receive(Frame(FrameKind.DATA, 1, 1, b"\xe5\x01\x02").encode(), sim.now)
    sim.a.receive(Frame(FrameKind.DATA, 2, 1, b"\x90").encode(), sim.now)  # not vendor: bad
    events = sim.a.events()
    assert [type(e).__name__ for e in events] == ["VendorMessage", "BadMessage"]
    assert isinstance(events[0], VendorMessage) and events[0].payload == b"\xe5\x01\x02"
    assert (sim.a.counters.vendor_messages, sim.a.counters.bad_messages) == (1, 1)
    acks = [decode_frame(c + b"\x00") for c in sim.a.outgoing().split(b"\x00") if c]
    assert acks[-1].ack == 3  # both acknowledged at the link layer


# --- 7: negotiation ----------------------------------------------------------------------------


def test_revision_negotiation_from_the_capability_bit() -> None:
    legacy = Hello(PROTOCOL_VERSION, DeviceKind.SHOE, "OLD-1", "1.0.9", 0)
    modern = Hello(PROTOCOL_VERSION, DeviceKind.SHOE, "NEW-1", "2.0", CAP_PROTOCOL_1_1)
    for device_hello, expected in ((legacy, (1, 0)), (modern, (1, 1))):
        sim = up(make_pair(device_hello=device_hello))
        assert sim.a.peer_revision == expected
        assert any(isinstance(e, LinkUp) for e in sim.events_a)
