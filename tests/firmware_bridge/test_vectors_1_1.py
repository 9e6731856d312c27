"""docs/protocol.md 8.3-8.6: the timed exchanges in the document are what two endpoints
that follow the text send, byte for byte and second for second.

Each receiver handles one frame at a time (5.10), so the vectors do not depend on how a
side batches its reads; the tests below also check the 5.10 rules on the vectors
themselves and that feeding the same bytes in any split gives the same output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from firmware_bridge import transcript
from firmware_bridge.frame import decode_frame
from firmware_bridge.link import LinkDown, LinkEndpoint, LinkState, LinkUp, PeerRefused, Role
from firmware_bridge.messages import Fault, FaultCode, Status

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _documented(section: str) -> list[str]:
    doc = DOC.read_text(encoding="utf-8")
    block = doc[doc.index(f"### {section} "):]
    body = re.search(r"```\n(.*?)\n```", block, re.S)
    assert body is not None
    return body.group(1).splitlines()


@pytest.mark.parametrize("section", sorted(transcript.SCENARIOS))
def test_document_shows_exactly_what_the_endpoints_send(section: str) -> None:
    lines = [line.render() for line in transcript.SCENARIOS[section]()]
    assert _documented(section) == lines


def test_refusal_vector_numbering() -> None:
    # 8.4 / 4.2: the refuser's Hello is seq 0 with ack 0, its Refuse seq 1 with ack 1
    lines = transcript.refusal_and_revival()
    host_data = [decode_frame(line.wire) for line in lines
                 if line.sender == "host" and line.comment.startswith("DATA")]
    assert [(f.seq, f.ack, f.payload[0]) for f in host_data[:2]] == [(0, 0, 0x01), (1, 1, 0x02)]
    # nothing on the wire while both sides are REFUSED (t = 0 .. 2 s): no keepalives
    assert [line.time for line in lines if 0.0 < line.time < 2.0] == []
    # the re-flashed device's RESET at t = 2.0 is answered at once (host rule H2)
    revival = [line for line in lines if line.time == 2.0]
    assert [line.comment.split("(")[0] for line in revival[:2]] == ["RESET", "RESET_ACK"]


def test_refused_display_never_sees_the_link_up() -> None:
    run = transcript._Run(transcript.DISPLAY_HELLO,
                          accept=lambda peer: "wrong device: found a display, expected a shoe")
    run.host.connect(0.0)
    run.settle()
    assert run.host.state is run.device.state is LinkState.REFUSED
    assert not any(isinstance(e, LinkUp) for e in run.device_events + run.host_events)
    refused = [e for e in run.device_events if isinstance(e, PeerRefused)]
    assert [e.reason for e in refused] == [
        "refused by peer: wrong device: found a display, expected a shoe"]


def test_fault_vector_order_fault_before_status() -> None:
    lines = transcript.fault_rereport_after_reconnect()
    shoe_data = [line.comment for line in lines
                 if line.sender == "shoe" and line.comment.startswith("DATA")]
    assert shoe_data[1].startswith("DATA seq 1 ack 1: Fault(code=SHOE_LID_OPEN")
    assert shoe_data[2].startswith("DATA seq 2 ack 2: Status(uptime_s=3600, state=FAULTED")


def test_fault_vector_host_receives_fault_then_status() -> None:
    run = transcript._Run(
        transcript.SHOE_HELLO,
        device_app=transcript._fault_rereporting_shoe({FaultCode.SHOE_LID_OPEN: "lid open"}),
        host_app=transcript._status_request_on_up)
    run.device.connect(0.0)
    run.settle()
    received = [type(e.message).__name__ for e in run.host_events if hasattr(e, "message")
                and isinstance(e.message, Fault | Status)]
    assert received == ["Fault", "Status"]


@pytest.mark.parametrize("baud", [9600, 57600, 115200])
def test_idle_link_stays_up_for_a_minute(baud: int) -> None:
    run = transcript._Run(transcript.SHOE_HELLO, baudrate=baud)
    run.host.connect(0.0)
    run.settle()
    run.advance(60.0)
    assert run.host.state is run.device.state is LinkState.UP
    assert not any(isinstance(e, LinkDown) for e in run.host_events + run.device_events)
    # one keepalive per second from each side: 60 s -> 60 ACKs each
    assert run.host.counters.keepalives_sent == run.device.counters.keepalives_sent == 60


@pytest.mark.parametrize("split", [1, 3, 7, 1000])
def test_what_a_side_sends_does_not_depend_on_how_its_reads_were_split(split: int) -> None:
    # 5.10: the 8.3 bytes the host sends, fed to a shoe in reads of ``split`` bytes
    host_bytes = b"".join(line.wire for line in transcript.complete_exchange()
                          if line.sender == "host")
    shoe = LinkEndpoint(Role.DEVICE, transcript.SHOE_HELLO_1_0, session_ids=lambda: 1)
    sent = bytearray()
    for start in range(0, len(host_bytes), split):
        shoe.receive(host_bytes[start:start + split], 0.0)
        sent += shoe.outgoing()
    shoe_bytes = b"".join(line.wire for line in transcript.complete_exchange()
                          if line.sender == "shoe")
    assert bytes(sent) == shoe_bytes
    assert shoe.state is LinkState.UP
