"""Protocol 1.2 answers of docs/protocol.md (issue 28), on the reference link: each test
names the section and the question of the 1.2 table it checks."""

from __future__ import annotations

import pytest

from firmware_bridge.frame import Frame, FrameKind, decode_frame
from firmware_bridge.link import (
    BadMessage,
    LinkEndpoint,
    LinkState,
    LinkTiming,
    LinkUp,
    MessageReceived,
    Role,
)
from firmware_bridge.messages import CardDrawn, Refuse, RefuseCode, StatusRequest, encode_message

from .conftest import HOST_HELLO, SHOE_HELLO

SESSION = b"\x78\x56\x34\x12"


def _frames(endpoint: LinkEndpoint) -> list[Frame]:
    return [decode_frame(c + b"\x00") for c in endpoint.outgoing().split(b"\x00") if c]


def _handshaking_device() -> LinkEndpoint:
    """A shoe that took the host's RESET and sent its Hello (seq 0, ack 0)."""
    device = LinkEndpoint(Role.DEVICE, SHOE_HELLO, session_ids=lambda: 7)
    device.receive(Frame(FrameKind.RESET, 0, 0, SESSION).encode(), 0.0)
    assert [(f.kind, f.seq, f.ack) for f in _frames(device)] == [
        (FrameKind.RESET_ACK, 0, 0), (FrameKind.DATA, 0, 0)]
    return device


def _data(seq: int, ack: int, payload: bytes) -> bytes:
    return Frame(FrameKind.DATA, seq, ack, payload).encode()


def test_a_message_before_up_is_acknowledged_counted_and_never_delivered() -> None:
    # 4.2 (1.2): the host's Hello arrives, then a StatusRequest whose frame does not
    # acknowledge the shoe's Hello: the shoe is not UP yet
    device = _handshaking_device()
    device.receive(_data(0, 0, encode_message(HOST_HELLO)), 0.1)
    device.receive(_data(1, 0, encode_message(StatusRequest())), 0.1)
    assert [(f.kind, f.ack) for f in _frames(device)] == [(FrameKind.ACK, 1), (FrameKind.ACK, 2)]
    assert device.state is LinkState.HANDSHAKING and device.counters.bad_messages == 1
    events = device.events()
    assert not [e for e in events if isinstance(e, MessageReceived)]
    assert [str(e.error) for e in events if isinstance(e, BadMessage)] == [
        "StatusRequest before the handshake finished"]


def test_a_bare_01_at_seq_0_is_a_malformed_hello_acknowledged_and_refused() -> None:
    # 4.2 (1.2): first byte 0x01 is a Hello for the first-DATA rule, even undecodable
    device = _handshaking_device()
    device.receive(_data(0, 0, b"\x01"), 0.1)
    frames = _frames(device)
    assert [(f.kind, f.seq, f.ack, f.payload[:2]) for f in frames] == [
        (FrameKind.DATA, 1, 1, bytes([Refuse.ID, RefuseCode.NOT_ACCEPTED]))]
    assert device.state is LinkState.REFUSED


def test_an_undecodable_refuse_at_seq_0_is_acknowledged_and_not_acted_on() -> None:
    # 4.2 (1.2) against 5.4: the frame was received intact, so it is acknowledged
    device = _handshaking_device()
    payload = bytes([Refuse.ID, RefuseCode.NOT_ACCEPTED, 2]) + b"\xc3\x28"  # invalid UTF-8
    device.receive(_data(0, 1, payload), 0.1)
    assert [(f.kind, f.ack) for f in _frames(device)] == [(FrameKind.ACK, 1)]
    assert device.state is LinkState.HANDSHAKING and device.counters.bad_messages == 1


def test_a_refusers_resent_hello_keeps_ack_0_though_it_went_out_before_the_peers() -> None:
    # 4.2 (1.2), [M-4.2b]: the host's Hello (seq 0, ack 0) is in flight when the shoe's
    # Hello arrives and is refused; the timer resends both, and the Hello still carries
    # ack 0, so the shoe never sees its Hello acknowledged ahead of the Refuse (it used to
    # carry ack 1: the shoe went UP, then down at the Refuse)
    host = LinkEndpoint(Role.HOST, HOST_HELLO, session_ids=lambda: 0x12345678,
                        accept_peer=lambda peer: "no")
    host.connect(0.0)
    host.outgoing()
    host.receive(Frame(FrameKind.RESET_ACK, 0, 0, SESSION).encode(), 0.0)
    hello = bytes.fromhex("02 01 01 02 1a 03 01 01 14 07 50 49 2d 30 30 30 31 0a 74 61 62 6c"
                          " 65 64 20 30 2e 31 01 01 01 03 60 4e 00")  # 8.2: seq 0, ack 0
    assert host.outgoing() == hello
    host.receive(_data(0, 0, encode_message(SHOE_HELLO)), 0.1)
    refuse = bytes.fromhex("05 01 01 01 05 08 02 03 02 6e 6f 5f 78 00")  # seq 1, ack 1: 'no'
    assert host.outgoing() == b"\x00" + refuse
    host.poll(0.25)
    assert host.outgoing() == b"\x00" + hello + refuse
    shoe = _handshaking_device()
    shoe.receive(hello + refuse, 0.3)
    assert shoe.state is LinkState.REFUSED
    assert not [e for e in shoe.events() if isinstance(e, LinkUp)]


def test_each_copy_of_a_duplicate_gets_its_own_acknowledgement() -> None:
    # 5.4 (1.2), [M-5.4b]: three copies, each in its own read, three ACKs
    device = _handshaking_device()
    frame = _data(0, 0, encode_message(Refuse(RefuseCode.NOT_ACCEPTED, "no")))
    acks = []
    for at in (0.1, 0.2, 0.3):
        device.receive(frame, at)
        acks += [(f.kind, f.ack) for f in _frames(device)]
    assert acks == [(FrameKind.ACK, 1)] * 3


def test_a_nak_resend_restarts_the_timer_with_the_current_rto_without_doubling() -> None:
    # 5.5 (1.2): the Hello went out at 0.0 with RTO 0.25; a NAK at 0.1 resends it and the
    # next timer expiry is 0.1 + 0.25, after which (a timer expiry) the RTO doubles
    device = _handshaking_device()
    device.receive(Frame(FrameKind.NAK, 0, 0).encode(), 0.1)
    assert [(f.kind, f.seq) for f in _frames(device)] == [(FrameKind.DATA, 0)]
    assert (device.rto, device.next_deadline()) == (0.25, pytest.approx(0.35))
    device.poll(0.35)
    assert [(f.kind, f.seq) for f in _frames(device)] == [(FrameKind.DATA, 0)]
    assert device.rto == 0.5


def test_refused_naks_a_gap_but_not_a_crc_error() -> None:
    # 4.5 (1.2): DATA is received as in 5.4 in REFUSED (a gap is NAKed); a CRC error is not
    device = _handshaking_device()
    device.receive(_data(0, 1, encode_message(Refuse(RefuseCode.NOT_ACCEPTED, "no"))), 0.1)
    assert device.state is LinkState.REFUSED
    _frames(device)
    device.receive(_data(3, 1, encode_message(StatusRequest())), 0.2)
    assert [(f.kind, f.ack) for f in _frames(device)] == [(FrameKind.NAK, 1)]
    bad = bytearray(_data(1, 1, encode_message(StatusRequest())))
    bad[-2] ^= 0x01  # a COBS data byte of the CRC: still framed, wrong CRC
    device.receive(bytes(bad), 0.3)
    assert _frames(device) == [] and device.counters.crc_errors == 1


def test_the_first_keepalive_is_due_one_second_after_the_last_handshake_frame() -> None:
    # 5.6 (1.2): idle time counts from the last frame of any kind this side sent
    device = _handshaking_device()
    device.receive(_data(0, 1, encode_message(HOST_HELLO)), 0.2)  # UP; our ACK at 0.2
    assert device.state is LinkState.UP
    assert [(f.kind, f.ack) for f in _frames(device)] == [(FrameKind.ACK, 1)]
    device.poll(1.19)
    assert _frames(device) == []
    device.poll(1.2)
    assert [(f.kind, f.ack) for f in _frames(device)] == [(FrameKind.ACK, 1)]


def _up_device(timing: LinkTiming | None = None) -> LinkEndpoint:
    """A shoe UP at t = 0.0, its last frame (the ACK of the host's Hello) sent then."""
    device = LinkEndpoint(Role.DEVICE, SHOE_HELLO, session_ids=lambda: 7, timing=timing)
    device.receive(Frame(FrameKind.RESET, 0, 0, SESSION).encode(), 0.0)
    device.receive(_data(0, 1, encode_message(HOST_HELLO)), 0.0)
    assert device.state is LinkState.UP
    device.outgoing()
    return device


@pytest.mark.parametrize(("baud", "quiet_s"), [(115200, 0.010), (9600, 0.120)])
def test_a_frame_after_a_quiet_line_opens_with_a_delimiter(baud: int, quiet_s: float) -> None:
    # 3.3: a sender may send extra delimiters; the reference opens a frame that follows
    # QUIET_LINE of quiet (10 ms at 115200, scaled with the line as the timeouts are) with
    # one, so noise on the idle line, or a closing delimiter the line corrupted, cannot join
    # the peer's partial frame to it. The frames of one burst share their delimiters.
    device = _up_device(LinkTiming.for_baudrate(baud))
    first, second = CardDrawn(0, 9, 2, 0, False), CardDrawn(1, 5, 1, 0, False)
    device.send(first, quiet_s * 0.9)
    assert device.outgoing() == _data(1, 1, encode_message(first))  # after the Hello, seq 0
    device.send(second, quiet_s * 2.0)  # the line quiet 1.1 x QUIET_LINE: a delimiter first
    device.send(CardDrawn(2, 1, 0, 0, False), quiet_s * 2.0)  # the same burst: none
    assert device.outgoing() == (b"\x00" + _data(2, 1, encode_message(second))
                                 + _data(3, 1, encode_message(CardDrawn(2, 1, 0, 0, False))))
