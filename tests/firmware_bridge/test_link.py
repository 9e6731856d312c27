"""Link layer state machine on a fake clock: handshake, delivery, timers, resets, refusals."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from firmware_bridge.errors import (
    IncompatibleVersionError,
    LinkBusyError,
    LinkDownError,
    LinkRefusedError,
    LinkTimeoutError,
)
from firmware_bridge.frame import Frame, FrameKind, decode_frame
from firmware_bridge.impairment import Impairments, LinkSimulation
from firmware_bridge.link import (
    BadMessage,
    HANDSHAKE_TIMEOUT,
    KEEPALIVE_IDLE,
    MAX_RETRIES,
    SILENCE_TIMEOUT,
    LinkDown,
    LinkEndpoint,
    LinkState,
    LinkTiming,
    LinkUp,
    MessageAcked,
    MessageReceived,
    PeerRefused,
    Role,
)
from firmware_bridge.messages import (
    CardDrawn,
    DeviceKind,
    Hello,
    StatusRequest,
    encode_message,
)

from .conftest import HOST_HELLO, SHOE_HELLO, make_pair


def up(sim: LinkSimulation) -> LinkSimulation:
    sim.a.connect(sim.now)
    assert sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP,
                         timeout=5)
    return sim


def received(events: Sequence[object]) -> list[object]:
    return [e.message for e in events if isinstance(e, MessageReceived)]


def card(i: int) -> CardDrawn:
    return CardDrawn(i, i % 13 + 1, i % 4, 1, False)


def test_handshake_exchanges_hellos(sim: LinkSimulation) -> None:
    up(sim)
    assert sim.a.peer == SHOE_HELLO and sim.b.peer == HOST_HELLO
    assert [type(e) for e in sim.events_a] == [LinkUp]
    assert [type(e) for e in sim.events_b] == [LinkUp]


def test_messages_delivered_in_order_and_acked(sim: LinkSimulation) -> None:
    up(sim)
    tickets = [sim.b.send(card(i), sim.now) for i in range(10)]
    sim.a.send(StatusRequest(), sim.now)
    sim.run_until(lambda: len(received(sim.events_a)) == 10, timeout=5)
    sim.run_until(lambda: sum(isinstance(e, MessageAcked) for e in sim.events_b) == 10, timeout=5)
    assert received(sim.events_a) == [card(i) for i in range(10)]
    assert received(sim.events_b) == [StatusRequest()]
    assert [e.ticket for e in sim.events_b if isinstance(e, MessageAcked)] == tickets


def test_window_limits_frames_in_flight(sim: LinkSimulation) -> None:
    up(sim)
    for i in range(10):
        sim.b.send(card(i), sim.now)
    data_frames = [f for f in _frames(sim.b.outgoing()) if f.kind is FrameKind.DATA]
    assert len(data_frames) == sim.b.timing.window


def _frames(wire: bytes) -> list[Frame]:
    return [decode_frame(part) for part in wire.split(b"\x00") if part]


def test_send_requires_up_and_queue_is_bounded(sim: LinkSimulation) -> None:
    with pytest.raises(LinkDownError):
        sim.b.send(card(0), sim.now)
    up(sim)
    limit = sim.b.timing.send_queue_limit + sim.b.timing.window
    for i in range(limit):
        sim.b.send(card(i), sim.now)
    with pytest.raises(LinkBusyError):
        sim.b.send(card(limit), sim.now)


def test_lost_frame_is_retransmitted_after_timeout(sim: LinkSimulation) -> None:
    up(sim)
    sim.b.send(card(0), sim.now)
    sim.b.outgoing()  # the DATA frame is lost on the wire
    assert sim.run_until(lambda: received(sim.events_a) == [card(0)], timeout=2)
    assert sim.b.counters.retransmits >= 1 and sim.b.counters.timeouts >= 1


def test_duplicate_data_is_suppressed(sim: LinkSimulation) -> None:
    up(sim)
    sim.b.send(card(0), sim.now)
    wire = sim.b.outgoing()
    sim.a.receive(wire + wire, sim.now)
    sim.run_until(lambda: False, timeout=0.5)
    assert received(sim.events_a) == [card(0)]
    assert sim.a.counters.duplicates == 1


def test_gap_is_naked_and_filled_go_back_n(sim: LinkSimulation) -> None:
    up(sim)
    sim.b.send(card(0), sim.now)
    sim.b.outgoing()  # seq 0 lost
    sim.b.send(card(1), sim.now)
    sim.a.receive(sim.b.outgoing(), sim.now)  # seq 1 arrives first
    assert sim.a.counters.out_of_order == 1 and sim.a.counters.naks_sent == 1
    sim.b.receive(sim.a.outgoing(), sim.now)  # the NAK: b resends 0 and 1 at once
    assert sim.b.counters.naks_received == 1 and sim.b.counters.retransmits == 2
    sim.run_until(lambda: len(received(sim.events_a)) == 2, timeout=1)
    assert received(sim.events_a) == [card(0), card(1)]


@pytest.mark.parametrize(("one_way", "low", "high"), [(0.002, 0.05, 0.06), (0.3, 0.6, 1.2)])
def test_rto_adapts_to_measured_round_trip(one_way: float, low: float, high: float) -> None:
    sim = up(make_pair(Impairments(delay=one_way)))
    settled = 0
    for i in range(20):
        if i == 10:  # the first samples may retransmit while RTO climbs from its initial value
            settled = sim.b.counters.retransmits
        sim.b.send(card(i), sim.now)
        sim.run_until(lambda: not sim.b.unconfirmed(), timeout=10)
    assert low <= sim.b.rto <= high
    assert sim.b.counters.retransmits == settled


def test_keepalive_keeps_an_idle_link_up(sim: LinkSimulation) -> None:
    up(sim)
    sim.run_until(lambda: False, timeout=SILENCE_TIMEOUT * 4)
    assert sim.a.state is LinkState.UP and sim.b.state is LinkState.UP
    assert sim.a.counters.keepalives_sent >= int(SILENCE_TIMEOUT * 4 / KEEPALIVE_IDLE) - 1


def test_silent_peer_fails_the_link() -> None:
    sim = up(make_pair())
    sim.b_to_a.impairments.loss = 1.0  # device unplugged
    sim.run_until(lambda: sim.a.state is LinkState.FAILED, timeout=SILENCE_TIMEOUT + 1)
    down = [e for e in sim.events_a if isinstance(e, LinkDown)]
    assert len(down) == 1 and isinstance(down[0].error, LinkTimeoutError)
    assert "silent" in down[0].reason
    assert sim.a.counters.link_failures == 1


def test_unacknowledged_message_fails_the_link_after_retries() -> None:
    # device keeps talking (keepalives) but never acknowledges our DATA
    sim = up(make_pair(timing=LinkTiming(silence_timeout=100, handshake_timeout=5)))
    sim.a_to_b.impairments.loss = 1.0
    sim.a.send(StatusRequest(), sim.now)
    sim.run_until(lambda: sim.a.state is LinkState.FAILED, timeout=30)
    down = [e for e in sim.events_a if isinstance(e, LinkDown)][0]
    assert "retransmissions" in down.reason
    assert [u.message for u in down.unconfirmed] == [StatusRequest()]
    assert sim.a.counters.retransmits == MAX_RETRIES


def test_handshake_times_out_when_peer_hello_never_arrives() -> None:
    sim = make_pair()
    sim.a.connect(sim.now)
    sim.run_until(lambda: sim.a.state is LinkState.HANDSHAKING, timeout=1)
    sim.b_to_a.impairments.loss = 1.0
    assert sim.run_until(lambda: sim.a.state is LinkState.FAILED, timeout=HANDSHAKE_TIMEOUT + 1)


def test_host_keeps_resetting_until_the_device_appears() -> None:
    sim = make_pair()
    sim.a_to_b.impairments.loss = 1.0
    sim.a.connect(sim.now)
    sim.run_until(lambda: False, timeout=10)
    assert sim.a.state is LinkState.RESETTING and sim.a.counters.resets_sent > 10
    sim.a_to_b.impairments.loss = 0.0
    assert sim.run_until(lambda: sim.a.state is LinkState.UP, timeout=2)


def test_device_reboot_rehandshakes_and_reports_unconfirmed_messages() -> None:
    sim = up(make_pair())
    sim.a.send(StatusRequest(), sim.now)
    sim.a.outgoing()  # in flight when the device reboots
    sim.b = LinkEndpoint(Role.DEVICE, SHOE_HELLO, session_ids=lambda: 0xBEEF)
    sim.b.connect(sim.now)  # a rebooted device announces RESET
    assert sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP,
                         timeout=3)
    down = [e for e in sim.events_a if isinstance(e, LinkDown)]
    assert len(down) == 1 and "peer" in down[0].reason
    assert [u.message for u in down[0].unconfirmed] == [StatusRequest()]
    assert [type(e) for e in sim.events_a].count(LinkUp) == 2
    assert received(sim.events_b) == []  # the old session's message is not replayed


def test_repeated_reset_of_the_same_session_is_not_a_new_session(sim: LinkSimulation) -> None:
    sim.a.connect(sim.now)
    reset = sim.a.outgoing()
    sim.b.receive(reset, sim.now)
    sim.a.receive(sim.b.outgoing(), sim.now)
    sim.b.receive(reset, sim.now)  # a delayed copy of the RESET
    sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP, timeout=3)
    assert not [e for e in sim.events_b if isinstance(e, LinkDown)]
    assert sim.b.counters.resets_received == 2


def test_simultaneous_resets_converge(sim: LinkSimulation) -> None:
    sim.a.connect(sim.now)
    sim.b.connect(sim.now)
    assert sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP,
                         timeout=3)


def test_own_echoed_reset_is_ignored(sim: LinkSimulation) -> None:
    sim.a.connect(sim.now)
    sim.a.receive(sim.a.outgoing(), sim.now)
    assert sim.a.state is LinkState.RESETTING


def test_incompatible_version_is_refused_naming_both_versions() -> None:
    future_shoe = Hello(2, DeviceKind.SHOE, "SHOE-99", "shoe 9.0", 0)
    sim = make_pair(device_hello=future_shoe)
    sim.a.connect(sim.now)
    sim.run_until(lambda: sim.a.state is LinkState.REFUSED and sim.b.state is LinkState.REFUSED,
                  timeout=3)
    assert sim.a.state is LinkState.REFUSED
    refused = [e for e in sim.events_a if isinstance(e, PeerRefused)]
    assert refused and refused[0].local
    assert isinstance(refused[0].error, IncompatibleVersionError)
    assert "version 2" in refused[0].reason and "version 1" in refused[0].reason
    assert not [e for e in sim.events_a if isinstance(e, LinkUp)]


def test_hello_of_a_future_layout_still_gets_a_version_refusal() -> None:
    sim = make_pair()
    sim.a.connect(sim.now)
    reset = _frames(sim.a.outgoing())[0]
    sim.a.receive(Frame(FrameKind.RESET_ACK, 0, 0, reset.payload).encode(), sim.now)
    assert sim.a.state is LinkState.HANDSHAKING
    # a v7 Hello with fields this version does not know: only id and version are fixed
    sim.a.receive(Frame(FrameKind.DATA, 0, 0, b"\x01\x07\x01\xff\xff\xff").encode(), sim.now)
    assert sim.a.state is LinkState.REFUSED
    assert isinstance(sim.a.refusal, IncompatibleVersionError)


def test_application_refusal_reaches_the_peer() -> None:
    sim = make_pair(accept_peer=lambda peer: "unknown serial " + peer.serial_number)
    sim.a.connect(sim.now)
    sim.run_until(lambda: sim.b.state is LinkState.REFUSED, timeout=3)
    refused_b = [e for e in sim.events_b if isinstance(e, PeerRefused)]
    assert refused_b and not refused_b[0].local
    assert isinstance(refused_b[0].error, LinkRefusedError)
    assert "unknown serial SHOE-42" in refused_b[0].reason
    assert not [e for e in sim.events_a + sim.events_b if isinstance(e, LinkUp)]


def test_device_refuses_a_device_posing_as_host() -> None:
    sim = make_pair(host_hello=Hello(1, DeviceKind.SHUFFLER, "X", "y", 0))
    sim.a.connect(sim.now)
    sim.run_until(lambda: sim.b.state is LinkState.REFUSED, timeout=3)
    assert "expected the host" in str(sim.b.refusal)


def test_bad_message_in_intact_frame_is_counted_not_delivered(sim: LinkSimulation) -> None:
    up(sim)
    bad = Frame(FrameKind.DATA, 1, 1, b"\x20\x00\x00\x0e\x00\x00\x00").encode()  # rank 14
    sim.a.receive(bad, sim.now)
    assert sim.a.counters.bad_messages == 1
    assert received(sim.events_a) == []
    sim.b.send(card(5), sim.now)  # the bad frame still consumed seq 1 at the link layer
    sim.run_until(lambda: False, timeout=0.5)
    assert sim.a.state is LinkState.UP


def test_local_reconnect_reports_link_down(sim: LinkSimulation) -> None:
    up(sim)
    sim.a.connect(sim.now)
    assert isinstance(sim.a.events()[-1], LinkDown)
    assert sim.run_until(lambda: sim.a.state is LinkState.UP, timeout=3)


def test_counters_dict_names(sim: LinkSimulation) -> None:
    up(sim)
    names = set(sim.a.counters.as_dict())
    assert {"crc_errors", "resyncs", "retransmits", "duplicates", "timeouts", "frames_in",
            "frames_out", "naks_sent", "naks_received", "resets_sent"} <= names


def test_payload_of_hello_is_what_docs_say() -> None:
    assert encode_message(HOST_HELLO)[:2] == b"\x01\x01"


def test_message_from_the_wrong_kind_of_node_is_rejected(sim: LinkSimulation) -> None:
    up(sim)
    sim.b.send(StatusRequest(), sim.now)  # a shoe may not send a host's request
    sim.run_until(lambda: sim.a.counters.bad_messages == 1, timeout=1)
    assert received(sim.events_a) == []
    bad = [e for e in sim.events_a if isinstance(e, BadMessage)]
    assert "may not be sent by a shoe" in str(bad[0].error)


def test_device_goes_back_to_resetting_after_failure_and_host_finds_it() -> None:
    sim = up(make_pair())
    sim.a_to_b.impairments.loss = 1.0  # the host stops talking (daemon stopped)
    sim.run_until(lambda: sim.b.state is LinkState.RESETTING, timeout=SILENCE_TIMEOUT + 1)
    assert [e for e in sim.events_b if isinstance(e, LinkDown)]
    resets = sim.b.counters.resets_sent
    sim.run_until(lambda: False, timeout=2)
    assert sim.b.counters.resets_sent >= resets + 3  # announcing itself every 0.5 s
    sim.a_to_b.impairments.loss = 0.0
    assert sim.run_until(lambda: sim.a.state is LinkState.UP and sim.b.state is LinkState.UP,
                         timeout=5)


@pytest.mark.parametrize("baud", [1200, 9600, 19200, 57600, 115200, 921600])
def test_timing_for_any_baud_rate_is_consistent(baud: int) -> None:
    timing = LinkTiming.for_baudrate(baud)  # __post_init__ validates the ordering
    two_max_frames = 2 * 249 * 10 / baud
    assert timing.min_rto >= two_max_frames or baud > 115200  # faster links keep the floor
    assert timing.max_rto < timing.silence_timeout
    assert timing.keepalive_idle < timing.silence_timeout


def test_refusal_reason_is_cut_to_fit_by_utf8_bytes() -> None:
    sim = make_pair(accept_peer=lambda peer: "♠" * 300)  # 900 UTF-8 bytes
    sim.a.connect(sim.now)
    sim.run_until(lambda: sim.b.state is LinkState.REFUSED, timeout=3)
    refused = [e for e in sim.events_b if isinstance(e, PeerRefused)]
    assert refused and "♠♠♠" in refused[0].reason


def test_raising_accept_peer_refuses_instead_of_crashing() -> None:
    def broken(peer: Hello) -> str | None:
        raise KeyError("config")

    sim = make_pair(accept_peer=broken)
    sim.a.connect(sim.now)
    sim.run_until(lambda: sim.a.state is LinkState.REFUSED, timeout=3)
    assert "accept_peer failed" in str(sim.a.refusal)


def test_malformed_hello_of_our_version_is_refused_at_once() -> None:
    sim = make_pair()
    sim.a.connect(sim.now)
    reset = _frames(sim.a.outgoing())[0]
    sim.a.receive(Frame(FrameKind.RESET_ACK, 0, 0, reset.payload).encode(), sim.now)
    # version 1, device kind 9 (unknown)
    bad_hello = b"\x01\x01\x09\x00\x00\x00\x00\x00\x00"
    sim.a.receive(Frame(FrameKind.DATA, 0, 0, bad_hello).encode(), sim.now)
    assert sim.a.state is LinkState.REFUSED
    assert "malformed Hello" in str(sim.a.refusal)
