"""Golden vectors of docs/protocol.md section 8, checked WITHOUT the encoder.

Each vector is hard-coded hex.  It is decoded twice: by an independent,
deliberately naive decoder in this file (bitwise CRC, byte-by-byte COBS) and by
the reference decoder; both must yield the field values written out literally
below.  A bug shared by the reference encoder and decoder cannot hide here,
and the document cannot drift from the code (the hex must appear in the doc).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from firmware_bridge.crc import crc16, crc16_table
from firmware_bridge.frame import Frame, FrameKind, decode_frame
from firmware_bridge.messages import (
    BatchStatus,
    CardDrawn,
    CardsCommitted,
    CoverCardDrawn,
    DeviceKind,
    DeviceState,
    Fault,
    FaultCleared,
    FaultCode,
    Hello,
    Message,
    Refuse,
    RefuseCode,
    SelfTestRequest,
    SelfTestResult,
    ShoeLoaded,
    ShowMeter,
    ShowPrompt,
    ShuffleComplete,
    ShuffleProgress,
    StartShuffle,
    Status,
    StatusRequest,
    WinLight,
    catalogue_markdown,
    decode_message,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"

DATA_VECTORS: list[tuple[int, int, Message, str]] = [
    (0, 0, Hello(1, DeviceKind.HOST, 'PI-0001', 'tabled 0.1', 0),
     "02 01 01 02 1a 03 01 01 14 07 50 49 2d 30 30 30 31 0a 74 61 62 6c 65 64 20 30 2e 31 01 01 01 03 60 4e 00"),
    (0, 1, Hello(1, DeviceKind.SHOE, 'SHOE-42', '2.3.1', 0),
     "02 01 03 01 15 12 01 01 01 07 53 48 4f 45 2d 34 32 05 32 2e 33 2e 31 01 01 01 03 4c a6 00"),
    (0, 0, Hello(1, DeviceKind.HOST, 'PI-0001', 'tabled 1.1', 1),
     "02 01 01 02 1a 03 01 01 15 07 50 49 2d 30 30 30 31 0a 74 61 62 6c 65 64 20 31 2e 31 01 01 01 03 ae 9b 00"),
    # 4.2 (1.1): Refuse follows the refuser's own Hello, so it is seq 1
    (1, 1, Refuse(RefuseCode.INCOMPATIBLE_VERSION, 'version 2 != 1'),
     "05 01 01 01 11 14 02 01 0e 76 65 72 73 69 6f 6e 20 32 20 21 3d 20 31 b0 d4 00"),
    (1, 1, StatusRequest(),
     "05 01 01 01 01 04 03 90 06 00"),
    (2, 2, Status(3600, DeviceState.READY, 'ok'),
     "05 01 02 02 09 04 04 10 0e 01 01 06 02 6f 6b 1f 8a 00"),
    (2, 3, SelfTestRequest(),
     "05 01 02 03 01 04 05 f3 7a 00"),
    (3, 3, SelfTestResult(True, 'sensors ok'),
     "05 01 03 03 0d 10 06 01 0a 73 65 6e 73 6f 72 73 20 6f 6b 04 9c 00"),
    (4, 3, Fault(FaultCode.SHOE_LID_OPEN, 'lid open'),
     "05 01 04 03 0c 0f 07 01 01 08 6c 69 64 20 6f 70 65 6e 4d d8 00"),
    (5, 3, FaultCleared(FaultCode.SHOE_LID_OPEN),
     "05 01 05 03 03 06 08 01 01 a5 c9 00"),
    # 6.3 (1.1): a vendor fault code decodes (as the integer), it is not a bad message
    (4, 3, Fault(0x8001, 'vendor: hopper low'),
     "05 01 04 03 16 19 07 01 80 12 76 65 6e 64 6f 72 3a 20 68 6f 70 70 65 72 20 6c 6f 77 da e9 00"),
    (6, 3, CardDrawn(5, 12, 2, 1, False),
     "05 01 06 03 07 03 20 05 04 0c 02 01 03 49 88 00"),
    (7, 3, CoverCardDrawn(350),
     "05 01 07 03 03 06 21 5e 01 c3 fc 00"),
    (1, 1, ShoeLoaded(416, 0),
     "05 01 01 01 04 04 22 a0 01 03 5e c9 00"),
    # 6.6 (1.2, CAP_CARD_COMMIT): host to shoe, cards 0..5 of the batch are durably stored
    (4, 7, CardsCommitted(6),
     "05 01 04 07 03 03 23 06 03 e4 88 00"),
    (1, 1, StartShuffle(1, 416),
     "05 01 01 01 04 07 30 01 a0 01 1c c4 00"),
    (2, 2, ShuffleProgress(208, 416),
     "05 01 02 02 05 03 31 d0 05 a0 01 bd f9 00"),
    (3, 2, ShuffleComplete(1, 416, 0, 0, 0),
     "05 01 03 02 0a 05 32 01 a0 01 01 01 01 01 01 03 5c a2 00"),
    (1, 1, BatchStatus(255),
     "05 01 01 01 02 04 33 ff 05 01 00"),
    (1, 1, ShowMeter('major', 1234567),
     "05 01 01 01 0f 0b 40 05 6d 61 6a 6f 72 87 d6 12 01 01 01 01 03 ef 71 00"),
    (2, 1, WinLight(7, True),
     "05 01 02 01 03 06 41 07 01 1e 57 00"),
    (3, 1, ShowPrompt('No more bets'),
     "05 01 03 01 0e 11 42 0c 4e 6f 20 6d 6f 72 65 20 62 65 74 73 a2 16 00"),
]

LINK_VECTORS: list[tuple[FrameKind, int, bytes, str]] = [
    (FrameKind.ACK, 6, b"", "02 02 02 06 01 03 e7 2f 00"),
    (FrameKind.NAK, 3, b"", "02 03 02 03 01 03 a6 8e 00"),
    (FrameKind.RESET, 0, b"\x78\x56\x34\x12", "02 04 01 02 04 07 78 56 34 12 52 c6 00"),
    (FrameKind.RESET_ACK, 0, b"\x78\x56\x34\x12", "02 05 01 02 04 07 78 56 34 12 b9 e5 00"),
]


def naive_cobs_decode(data: bytes) -> bytes:
    out: list[int] = []
    i = 0
    while i < len(data):
        code = data[i]
        assert code != 0
        out.extend(data[i + 1 : i + code])
        i += code
        if code < 0xFF and i < len(data):
            out.append(0)
    return bytes(out)


def naive_crc(data: bytes) -> int:
    crc = 0xFFFF
    for byte in data:
        for bit in range(7, -1, -1):
            top = (crc >> 15) ^ ((byte >> bit) & 1)
            crc = ((crc << 1) & 0xFFFF) ^ (0x1021 if top else 0)
    return crc


def naive_parse(wire_hex: str) -> tuple[int, int, int, bytes]:
    wire = bytes.fromhex(wire_hex)
    assert wire[-1] == 0 and 0 not in wire[:-1]
    raw = naive_cobs_decode(wire[:-1])
    kind, seq, ack = raw[0], raw[1], raw[2]
    length = raw[3] | raw[4] << 8
    payload = raw[5 : 5 + length]
    assert len(raw) == 7 + length
    assert naive_crc(raw[:-2]) == raw[-2] << 8 | raw[-1]
    return kind, seq, ack, payload


def test_crc_check_value_directly() -> None:
    assert crc16(b"123456789") == 0x29B1
    assert naive_crc(b"123456789") == 0x29B1


def test_binascii_crc_equals_the_table_crc_on_every_vector() -> None:
    # docs/protocol.md 3.2: frames are checked with binascii.crc_hqx(data, 0xFFFF)
    for *_, wire_hex in DATA_VECTORS + LINK_VECTORS:  # type: ignore[operator]
        raw = naive_cobs_decode(bytes.fromhex(wire_hex)[:-1])
        body = raw[:-2]
        expected = raw[-2] << 8 | raw[-1]
        assert crc16(body) == crc16_table(body) == naive_crc(body) == expected


@pytest.mark.parametrize(("seq", "ack", "message", "wire_hex"), DATA_VECTORS,
                         ids=[type(v[2]).__name__ for v in DATA_VECTORS])
def test_data_vector(seq: int, ack: int, message: Message, wire_hex: str) -> None:
    kind, n_seq, n_ack, payload = naive_parse(wire_hex)
    assert (kind, n_seq, n_ack) == (0x01, seq, ack)
    assert payload[0] == type(message).ID
    frame = decode_frame(bytes.fromhex(wire_hex))
    assert (frame.kind, frame.seq, frame.ack, frame.payload) == (FrameKind.DATA, seq, ack, payload)
    assert decode_message(frame.payload) == message


@pytest.mark.parametrize(("kind", "ack", "payload", "wire_hex"), LINK_VECTORS,
                         ids=[v[0].name for v in LINK_VECTORS])
def test_link_vector(kind: FrameKind, ack: int, payload: bytes, wire_hex: str) -> None:
    assert naive_parse(wire_hex) == (kind, 0, ack, payload)
    assert decode_frame(bytes.fromhex(wire_hex)) == Frame(kind, 0, ack, payload)


def test_every_message_and_frame_kind_has_a_vector() -> None:
    from firmware_bridge.messages import MESSAGES

    assert {type(v[2]) for v in DATA_VECTORS} == set(MESSAGES.values())
    assert {v[0] for v in LINK_VECTORS} | {FrameKind.DATA} == set(FrameKind)


def _vector(cls: type[Message]) -> str:
    return next(wire_hex for _, _, message, wire_hex in DATA_VECTORS if type(message) is cls)


def test_field_values_spelled_out() -> None:
    # a few vectors decoded by hand, byte by byte, as a firmware author would
    payload = naive_parse(_vector(CardDrawn))[3]
    assert payload == bytes([0x20, 5, 0, 12, 2, 1, 0])  # id, index u16 LE, Q, hearts, blue, face down
    payload = naive_parse(_vector(ShowMeter))[3]
    assert int.from_bytes(payload[7:15], "little") == 1234567 and payload[1:7] == b"\x05major"
    payload = naive_parse(_vector(Fault))[3]
    assert int.from_bytes(payload[1:3], "little") == FaultCode.SHOE_LID_OPEN == 0x0101


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def test_doc_contains_every_vector() -> None:
    doc = _doc()
    for *_, wire_hex in DATA_VECTORS + LINK_VECTORS:  # type: ignore[operator]
        assert wire_hex in doc


def test_doc_catalogue_matches_code() -> None:
    doc = _doc()
    section = re.search(r"<!-- catalogue:start -->\n(.*?)\n<!-- catalogue:end -->", doc, re.S)
    assert section is not None
    assert section.group(1).strip() == catalogue_markdown().strip()


def test_doc_status_enums_match() -> None:
    doc = _doc()
    assert "2 FAULTED" in doc and DeviceState.FAULTED == 2
    assert "1 INCOMPATIBLE_VERSION" in doc and RefuseCode.INCOMPATIBLE_VERSION == 1
    for code in FaultCode:
        assert f"| 0x{int(code):04X} | {code.name} |" in doc
