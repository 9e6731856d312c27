"""Consistent Overhead Byte Stuffing (Cheshire & Baker, 1999).

COBS removes every 0x00 from a frame so that 0x00 can delimit frames on a byte
stream: a receiver that starts mid-frame, or sees garbage, resynchronises at
the next 0x00.  Overhead is one byte per 254 bytes of data, at most.
"""

from __future__ import annotations

from firmware_bridge.errors import CobsError

_MAX_RUN = 254  # a block holds at most 254 non-zero bytes (code byte 0xFF)


def cobs_max_encoded_size(size: int) -> int:
    """Largest COBS encoding of ``size`` bytes (without the 0x00 delimiter)."""
    return size + 1 + size // _MAX_RUN


def cobs_encode(data: bytes | bytearray) -> bytes:
    """Encode ``data`` so that the result contains no 0x00 byte."""
    out = bytearray()
    for segment in bytes(data).split(b"\x00"):
        while len(segment) >= _MAX_RUN:
            out.append(_MAX_RUN + 1)
            out += segment[:_MAX_RUN]
            segment = segment[_MAX_RUN:]
        out.append(len(segment) + 1)
        out += segment
    return bytes(out)


def cobs_decode(encoded: bytes | bytearray | memoryview) -> bytes:
    """Decode one COBS block sequence (without its delimiter); raises CobsError if invalid."""
    data = bytes(encoded)
    out = bytearray()
    pos = 0
    end_of_data = len(data)
    while pos < end_of_data:
        code = data[pos]
        if code == 0:
            raise CobsError(f"COBS: 0x00 inside a frame at offset {pos}")
        block_end = pos + code
        if block_end > end_of_data:
            raise CobsError(
                f"COBS: block at offset {pos} claims {code - 1} bytes, only "
                f"{end_of_data - pos - 1} remain"
            )
        block = data[pos + 1 : block_end]
        if 0 in block:
            raise CobsError(f"COBS: 0x00 inside the block at offset {pos}")
        out += block
        pos = block_end
        # a full block (0xFF) implies no zero; the last block never implies one
        if code != _MAX_RUN + 1 and pos < end_of_data:
            out.append(0)
    return bytes(out)
