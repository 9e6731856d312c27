"""CRC, COBS and frame codec: known values, round trips, any split, hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_bridge.cobs import cobs_decode, cobs_encode, cobs_max_encoded_size
from firmware_bridge.crc import CRC16_CHECK, crc16, crc16_table
from firmware_bridge.errors import (
    BridgeError,
    CobsError,
    CrcError,
    FrameError,
    FrameLengthError,
    UnknownFrameKindError,
)
from firmware_bridge.frame import (
    MAX_ENCODED_FRAME,
    MAX_FRAME,
    MAX_PAYLOAD,
    Frame,
    FrameDecoder,
    FrameKind,
    decode_frame,
)


def _crc_bitwise(data: bytes) -> int:
    """Independent reference: the textbook MSB-first loop, no table."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def test_crc_check_value_of_the_catalogue() -> None:
    assert CRC16_CHECK == 0x29B1
    assert crc16(b"123456789") == 0x29B1


def test_crc_of_empty_input_is_init() -> None:
    assert crc16(b"") == 0xFFFF


@given(st.binary(max_size=300))
def test_crc_table_matches_bitwise_reference(data: bytes) -> None:
    # binascii.crc_hqx (what frames use), the Python table and the spec's bitwise loop agree
    assert crc16(data) == crc16_table(data) == _crc_bitwise(data)


@given(st.binary(max_size=300), st.integers(0, 0xFFFF))
def test_binascii_crc_continues_from_any_start_value(data: bytes, start: int) -> None:
    assert crc16(data, start) == crc16_table(data, start)


@given(st.binary(max_size=300), st.integers(0, 300))
def test_crc_can_be_computed_incrementally(data: bytes, cut: int) -> None:
    assert crc16(data[cut:], crc16(data[:cut])) == crc16(data)


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [  # the examples of Cheshire & Baker / Wikipedia's COBS article
        (b"\x00", b"\x01\x01"),
        (b"\x00\x00", b"\x01\x01\x01"),
        (b"\x11\x22\x00\x33", b"\x03\x11\x22\x02\x33"),
        (b"\x11\x22\x33\x44", b"\x05\x11\x22\x33\x44"),
        (b"\x11\x00\x00\x00", b"\x02\x11\x01\x01\x01"),
        (bytes(range(1, 255)), b"\xff" + bytes(range(1, 255)) + b"\x01"),
    ],
)
def test_cobs_known_encodings(raw: bytes, encoded: bytes) -> None:
    assert cobs_encode(raw) == encoded
    assert cobs_decode(encoded) == raw


@given(st.binary(max_size=600))
def test_cobs_round_trip_and_no_zero(data: bytes) -> None:
    encoded = cobs_encode(data)
    assert 0 not in encoded
    assert len(encoded) <= cobs_max_encoded_size(len(data))
    assert cobs_decode(encoded) == data


@pytest.mark.parametrize("bad", [b"\x05\x11\x22", b"\x00", b"\x03\x11\x00"])
def test_cobs_rejects_invalid(bad: bytes) -> None:
    with pytest.raises(CobsError):
        cobs_decode(bad)


frames = st.one_of(
    st.builds(Frame, st.just(FrameKind.DATA), st.integers(0, 255), st.integers(0, 255),
              st.binary(min_size=1, max_size=MAX_PAYLOAD)),
    st.builds(Frame, st.sampled_from([FrameKind.ACK, FrameKind.NAK]), st.integers(0, 255),
              st.integers(0, 255)),
    st.builds(Frame, st.sampled_from([FrameKind.RESET, FrameKind.RESET_ACK]), st.just(0),
              st.just(0), st.binary(min_size=4, max_size=4)),
)


@given(frames)
def test_frame_round_trip(frame: Frame) -> None:
    wire = frame.encode()
    assert wire.endswith(b"\x00") and 0 not in wire[:-1]
    assert len(wire) <= MAX_ENCODED_FRAME + 1
    assert decode_frame(wire) == frame
    assert Frame.from_bytes(frame.to_bytes()) == frame


@settings(max_examples=60, deadline=None)
@given(st.lists(frames, min_size=1, max_size=8), st.data())
def test_decoder_any_split(frame_list: list[Frame], data: st.DataObject) -> None:
    stream = b"".join(f.encode() for f in frame_list)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
    decoder = FrameDecoder()
    got = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        got += decoder.feed(stream[a:b])
    assert got == frame_list


def test_decoder_byte_at_a_time_after_garbage() -> None:
    frame = Frame(FrameKind.DATA, 7, 3, b"\x20\x01\x02")
    decoder = FrameDecoder()
    results: list[object] = []
    for byte in b"\x13\x37garbage\xff\x00" + frame.encode():
        results += decoder.feed(bytes([byte]))
    assert results[-1] == frame
    assert all(isinstance(r, FrameError) for r in results[:-1])
    assert decoder.counters.resyncs == len(results) - 1


def test_decoder_rejects_overlong_before_buffering_it() -> None:
    decoder = FrameDecoder()
    results = decoder.feed(b"\x01" * 10_000)
    assert len(results) == 1 and isinstance(results[0], FrameLengthError)
    assert len(decoder._buffer) == 0  # nothing of the flood was kept
    good = Frame(FrameKind.ACK, 0, 9)
    assert decoder.feed(b"\x01" * 500 + b"\x00" + good.encode()) == [good]
    assert decoder.counters.oversize == 1 and decoder.counters.resyncs == 1


def test_crc_error_is_typed_and_counted() -> None:
    wire = bytearray(Frame(FrameKind.ACK, 0, 1).encode())
    wire[3] ^= 0x40
    with pytest.raises(CrcError):
        decode_frame(bytes(wire))
    decoder = FrameDecoder()
    assert isinstance(decoder.feed(bytes(wire))[0], CrcError)
    assert decoder.counters.crc_errors == 1


def _raw(kind: int, seq: int, ack: int, length: int, payload: bytes) -> bytes:
    body = bytes([kind, seq, ack]) + length.to_bytes(2, "little") + payload
    return cobs_encode(body + crc16(body).to_bytes(2, "big")) + b"\x00"


@pytest.mark.parametrize(
    ("wire", "error"),
    [
        (_raw(0x01, 0, 0, 5, b"\x01"), FrameLengthError),  # length field disagrees
        (_raw(0x01, 0, 0, 0x1000, b"\x01"), FrameLengthError),  # length over the maximum
        (_raw(0x09, 0, 0, 0, b""), UnknownFrameKindError),
        (_raw(0x02, 0, 0, 1, b"\x01"), FrameLengthError),  # ACK must be empty
        (_raw(0x04, 0, 0, 2, b"\x01\x02"), FrameLengthError),  # RESET carries 4 bytes
        (_raw(0x01, 0, 0, 0, b""), FrameLengthError),  # DATA needs a message id
        (cobs_encode(b"\x02\x00") + b"\x00", FrameLengthError),  # shorter than a header
        (cobs_encode(bytes(MAX_FRAME + 1)) + b"\x00", FrameLengthError),
    ],
)
def test_bad_frames_raise_typed_errors(wire: bytes, error: type[FrameError]) -> None:
    with pytest.raises(error):
        decode_frame(wire)
    assert isinstance(FrameDecoder().feed(wire)[0], error)


def test_errors_mix_in_builtins() -> None:
    assert issubclass(CrcError, ValueError) and issubclass(CrcError, BridgeError)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_fuzz_decode_frame_only_raises_frame_errors(data: bytes) -> None:
    try:
        decode_frame(data)
    except FrameError:
        pass


@settings(max_examples=250, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=6))
def test_fuzz_decoder_never_raises_and_stays_bounded(chunks: list[bytes]) -> None:
    decoder = FrameDecoder()
    for chunk in chunks:
        for item in decoder.feed(chunk):
            assert isinstance(item, (Frame, FrameError))
        assert len(decoder._buffer) <= MAX_ENCODED_FRAME
