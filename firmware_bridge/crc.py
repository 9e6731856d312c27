"""CRC-16/CCITT-FALSE, the frame check of docs/protocol.md.

Parameters (Rocksoft model, as catalogued by reveng): width 16, poly 0x1021,
init 0xFFFF, refin false, refout false, xorout 0x0000, check 0x29B1 over the
ASCII bytes "123456789".  Table driven: firmware can use the same table or the
bitwise loop in docs/protocol.md.
"""

from __future__ import annotations

CRC16_POLY = 0x1021
CRC16_INIT = 0xFFFF
CRC16_CHECK = 0x29B1  # crc16(b"123456789"), the catalogue's check value


def _make_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ CRC16_POLY) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return tuple(table)


_TABLE = _make_table()


def crc16(data: bytes | bytearray | memoryview, crc: int = CRC16_INIT) -> int:
    """CRC-16/CCITT-FALSE of ``data``; pass a previous result as ``crc`` to continue a running CRC."""
    table = _TABLE
    for byte in data:
        crc = ((crc << 8) & 0xFF00) ^ table[(crc >> 8) ^ byte]
    return crc
