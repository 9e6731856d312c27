"""Frames: the unit the link layer sends, checked by CRC and delimited by COBS.

Decoded frame (docs/protocol.md, "Framing")::

    kind u8 | seq u8 | ack u8 | length u16 LE | payload (length bytes) | crc16 BE

On the wire: ``cobs_encode(decoded frame) + b"\\x00"``.

``FrameDecoder`` is the streaming parser.  It never trusts the wire: its buffer
is capped at the largest legal encoded frame, so an over-long frame is
rejected byte by byte, before anything is allocated for it, and the decoder
"hunts" for the next 0x00 to resynchronise.  Errors are returned as values and
counted; only ``Frame.from_bytes``/``decode_frame`` raise them.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from firmware_bridge.cobs import cobs_decode, cobs_encode, cobs_max_encoded_size
from firmware_bridge.crc import crc16
from firmware_bridge.errors import (
    CobsError,
    CrcError,
    FrameError,
    FrameLengthError,
    UnknownFrameKindError,
)

DELIMITER = 0x00
MAX_PAYLOAD = 240  # fits a firmware's 256-byte RX buffer with header, CRC and COBS overhead
HEADER_SIZE = 5  # kind, seq, ack, length u16
CRC_SIZE = 2
MIN_FRAME = HEADER_SIZE + CRC_SIZE  # 7: a frame with an empty payload
MAX_FRAME = HEADER_SIZE + MAX_PAYLOAD + CRC_SIZE  # 247 decoded bytes
MAX_ENCODED_FRAME = cobs_max_encoded_size(MAX_FRAME)  # 248 bytes between delimiters
MAX_WIRE_FRAME = MAX_ENCODED_FRAME + 1  # 249 bytes including the 0x00 delimiter
SESSION_ID_SIZE = 4  # RESET / RESET_ACK payload: u32 session id

_HEADER = struct.Struct("<BBBH")
_CRC = struct.Struct(">H")


class FrameKind(enum.IntEnum):
    """What a frame is for; see docs/protocol.md, "Link layer"."""

    DATA = 0x01  # carries one message; seq numbered, acknowledged
    ACK = 0x02  # cumulative acknowledgement; also the keepalive
    NAK = 0x03  # "resend from ack": a gap or a corrupt frame was seen
    RESET = 0x04  # start a new session (payload: u32 session id)
    RESET_ACK = 0x05  # session accepted (payload: the same u32 session id)


# payload length each kind must have: (min, max)
_PAYLOAD_BOUNDS: dict[FrameKind, tuple[int, int]] = {
    FrameKind.DATA: (1, MAX_PAYLOAD),  # at least the message id
    FrameKind.ACK: (0, 0),
    FrameKind.NAK: (0, 0),
    FrameKind.RESET: (SESSION_ID_SIZE, SESSION_ID_SIZE),
    FrameKind.RESET_ACK: (SESSION_ID_SIZE, SESSION_ID_SIZE),
}


@dataclass(frozen=True, slots=True)
class Frame:
    """One link-layer frame, decoded."""

    kind: FrameKind
    seq: int = 0
    ack: int = 0
    payload: bytes = b""

    def __post_init__(self) -> None:
        try:
            kind = FrameKind(self.kind)
        except ValueError as exc:
            raise UnknownFrameKindError(f"unknown frame kind {self.kind!r}") from exc
        low, high = _PAYLOAD_BOUNDS[kind]
        if not low <= len(self.payload) <= high:
            raise FrameLengthError(
                f"{kind.name} payload must be {low}..{high} bytes, got {len(self.payload)}"
            )
        if not (0 <= self.seq <= 0xFF and 0 <= self.ack <= 0xFF):
            raise FrameError(f"seq {self.seq} / ack {self.ack} must be 0..255")

    @property
    def unused_fields_set(self) -> bool:
        """3.1: seq is unused outside DATA, ack in RESET and RESET_ACK; True if one is not 0."""
        return (self.kind is not FrameKind.DATA and self.seq != 0) or (
            self.kind in (FrameKind.RESET, FrameKind.RESET_ACK) and self.ack != 0)

    def to_bytes(self) -> bytes:
        """The decoded frame: header, payload, CRC (not yet COBS-stuffed)."""
        body = _HEADER.pack(self.kind, self.seq, self.ack, len(self.payload)) + self.payload
        return body + _CRC.pack(crc16(body))

    def encode(self) -> bytes:
        """The bytes to put on the wire: COBS of ``to_bytes()`` and the 0x00 delimiter."""
        return cobs_encode(self.to_bytes()) + b"\x00"

    @classmethod
    def from_bytes(cls, raw: bytes | bytearray | memoryview) -> Frame:
        """Parse a decoded (un-stuffed) frame; raises a FrameError subclass if it is not valid."""
        size = len(raw)
        if size < MIN_FRAME:
            raise FrameLengthError(f"frame of {size} bytes is shorter than {MIN_FRAME}")
        if size > MAX_FRAME:
            raise FrameLengthError(f"frame of {size} bytes is longer than {MAX_FRAME}")
        body = bytes(raw[:-CRC_SIZE])
        (received_crc,) = _CRC.unpack_from(raw, size - CRC_SIZE)
        computed_crc = crc16(body)
        if received_crc != computed_crc:
            raise CrcError(f"CRC 0x{received_crc:04X} != computed 0x{computed_crc:04X}")
        kind_byte, seq, ack, length = _HEADER.unpack_from(body)
        if length > MAX_PAYLOAD:
            raise FrameLengthError(f"length field {length} exceeds the maximum {MAX_PAYLOAD}")
        if length != size - MIN_FRAME:
            raise FrameLengthError(
                f"length field {length} but the frame carries {size - MIN_FRAME} payload bytes"
            )
        try:
            kind = FrameKind(kind_byte)
        except ValueError as exc:
            raise UnknownFrameKindError(f"unknown frame kind 0x{kind_byte:02X}") from exc
        return cls(kind, seq, ack, body[HEADER_SIZE:])


def decode_frame(wire: bytes | bytearray) -> Frame:
    """Decode exactly one wire frame (COBS bytes, the trailing 0x00 optional); raises FrameError."""
    data = bytes(wire)
    if data.endswith(b"\x00"):
        data = data[:-1]
    if len(data) > MAX_ENCODED_FRAME:
        raise FrameLengthError(f"encoded frame of {len(data)} bytes exceeds {MAX_ENCODED_FRAME}")
    return Frame.from_bytes(cobs_decode(data))


@dataclass(slots=True)
class DecoderCounters:
    """What a FrameDecoder has seen; all monotonically increasing."""

    frames: int = 0  # valid frames decoded
    crc_errors: int = 0
    framing_errors: int = 0  # bad COBS, bad length field, unknown kind, short frame
    oversize: int = 0  # more than MAX_ENCODED_FRAME bytes without a delimiter
    resyncs: int = 0  # times bytes were discarded and the decoder resynchronised on 0x00
    bytes_discarded: int = 0


@dataclass(slots=True)
class FrameDecoder:
    """Streaming frame parser: bytes in any split, frames (or FrameErrors) out, bounded memory."""

    counters: DecoderCounters = field(default_factory=DecoderCounters)
    _buffer: bytearray = field(default_factory=bytearray)
    _hunting: bool = False  # discarding an over-long frame until the next delimiter

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame | FrameError]:
        """Consume ``data``; return every frame completed by it, and an error value for every bad one."""
        results: list[Frame | FrameError] = []
        chunk = bytes(data)
        start = 0
        while start < len(chunk):
            delimiter = chunk.find(b"\x00", start)
            end = len(chunk) if delimiter < 0 else delimiter
            piece = chunk[start:end]
            if self._hunting:
                self.counters.bytes_discarded += len(piece)
            elif len(self._buffer) + len(piece) > MAX_ENCODED_FRAME:
                # reject before growing the buffer past the largest legal frame
                self.counters.oversize += 1
                self.counters.bytes_discarded += len(self._buffer) + len(piece)
                results.append(
                    FrameLengthError(f"no delimiter within {MAX_ENCODED_FRAME} bytes")
                )
                self._buffer.clear()
                self._hunting = True
            else:
                self._buffer += piece
            if delimiter < 0:
                break
            start = delimiter + 1
            if self._hunting:
                self._hunting = False
                self.counters.resyncs += 1
                continue
            if self._buffer:  # consecutive delimiters are idle fill, not frames
                results.append(self._complete(bytes(self._buffer)))
                self._buffer.clear()
        return results

    def reset(self) -> None:
        """Forget any partial frame (e.g. after the port was reopened)."""
        self._buffer.clear()
        self._hunting = False

    def _complete(self, encoded: bytes) -> Frame | FrameError:
        try:
            frame = Frame.from_bytes(cobs_decode(encoded))
        except CrcError as exc:
            self.counters.crc_errors += 1
            error: FrameError = exc
        except (CobsError, FrameLengthError, UnknownFrameKindError) as exc:
            self.counters.framing_errors += 1
            error = exc
        else:
            self.counters.frames += 1
            return frame
        self.counters.resyncs += 1
        self.counters.bytes_discarded += len(encoded)
        return error
