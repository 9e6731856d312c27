"""Benchmark of the device wire protocol: codec throughput and round-trip latency over a pty.

Run: ``.venv/bin/python bench/bench_protocol.py`` (a plain script, not a test).

Prints encode/decode throughput in frames per second, and the round-trip latency
of a request and its acknowledgement over a pseudo-terminal set to 115200 baud,
beside the wire-time lower bound of the same bytes at 115200 8N1 (10 bits per
byte / baud) and their ratio.  A Linux pty does not actually pace bytes at the
configured speed, so the measured time is protocol + asyncio + kernel overhead;
the ratio says how far that is from what a real UART would cost anyway.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import termios
import time
import tty
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import header, pi4_factor  # noqa: E402
from firmware_bridge.aio import AsyncLink  # noqa: E402
from firmware_bridge.crc import crc16, crc16_table  # noqa: E402
from firmware_bridge.frame import Frame, FrameDecoder, FrameKind  # noqa: E402
from firmware_bridge.link import BAUD_DEFAULT, BITS_PER_BYTE_8N1, Role  # noqa: E402
from firmware_bridge.messages import (  # noqa: E402
    PROTOCOL_VERSION,
    CardDrawn,
    DeviceKind,
    DeviceState,
    Hello,
    ShowPrompt,
    Status,
    StatusRequest,
    decode_message,
    encode_message,
)

ENCODE_ROUNDS = 20_000
DECODE_FRAMES = 20_000
ROUND_TRIPS = 300
CRC_ROUNDS = 20_000


def wire_time(n_bytes: int, baud: int = BAUD_DEFAULT) -> float:
    return n_bytes * BITS_PER_BYTE_8N1 / baud


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:>12,.0f} frames/s"


def bench_codec() -> None:
    samples = {
        "CardDrawn (typical, 16 B on the wire)": CardDrawn(5, 12, 2, 1, False),
        "ShowPrompt (max payload, 249 B on the wire)": ShowPrompt("x" * 238),
    }
    print("codec (one core, pure Python)")
    for label, message in samples.items():
        start = time.perf_counter()
        for seq in range(ENCODE_ROUNDS):
            wire = Frame(FrameKind.DATA, seq & 0xFF, 0, encode_message(message)).encode()
        encode_s = time.perf_counter() - start

        stream = wire * DECODE_FRAMES
        decoder = FrameDecoder()
        start = time.perf_counter()
        decoded = 0
        for offset in range(0, len(stream), 4096):  # as a serial port hands over reads
            for frame in decoder.feed(stream[offset : offset + 4096]):
                assert isinstance(frame, Frame)
                decode_message(frame.payload)
                decoded += 1
        decode_s = time.perf_counter() - start
        assert decoded == DECODE_FRAMES
        line_rate = 1 / wire_time(len(wire))
        print(f"  {label}")
        print(f"    encode (message + frame + COBS): {rate(ENCODE_ROUNDS, encode_s)}")
        print(f"    decode (COBS + CRC + message):   {rate(DECODE_FRAMES, decode_s)}")
        print(f"    line rate at 115200 8N1:         {line_rate:>12,.0f} frames/s "
              f"(codec headroom x{min(ENCODE_ROUNDS / encode_s, DECODE_FRAMES / decode_s) / line_rate:,.0f})")


def bench_crc() -> None:
    """binascii.crc_hqx (what frames use) against the old pure-Python table loop, same run."""
    frame = bytes(range(256))[:245]  # a maximum frame body: header + 240 payload bytes
    assert crc16(frame) == crc16_table(frame)
    timings = {}
    for label, function in (("table loop (old)", crc16_table), ("binascii.crc_hqx", crc16)):
        start = time.perf_counter()
        for _ in range(CRC_ROUNDS):
            function(frame)
        timings[label] = time.perf_counter() - start
    old, new = timings["table loop (old)"], timings["binascii.crc_hqx"]
    print(f"CRC-16/CCITT-FALSE of a {len(frame)}-byte frame body ({CRC_ROUNDS} rounds)")
    for label, seconds in timings.items():
        print(f"  {label:<18} {CRC_ROUNDS * len(frame) / seconds / 1e6:>10,.1f} MB/s")
    print(f"  speed-up binascii / table loop: x{old / new:,.1f}\n")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(label: str, seconds: list[float], wire_bytes: int) -> None:
    bound = wire_time(wire_bytes)
    median = statistics.median(seconds)
    print(f"  {label}")
    print(f"    bytes on the wire: {wire_bytes}; wire-time lower bound at 115200 8N1: "
          f"{bound * 1e3:.3f} ms")
    print(f"    measured: median {median * 1e3:.3f} ms, p99 {percentile(seconds, 0.99) * 1e3:.3f} ms, "
          f"min {min(seconds) * 1e3:.3f} ms")
    print(f"    ratio median / wire time: {median / bound:.2f}")


async def bench_pty() -> None:
    master, slave = os.openpty()
    tty.setraw(slave)
    attrs = termios.tcgetattr(slave)
    attrs[4] = attrs[5] = termios.B115200  # ispeed, ospeed
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    path = os.ttyname(slave)
    host_hello = Hello(PROTOCOL_VERSION, DeviceKind.HOST, "BENCH", "bench", 0)
    shoe_hello = Hello(PROTOCOL_VERSION, DeviceKind.SHOE, "BENCH-SHOE", "bench", 0)
    device = AsyncLink.over_fd(master, Role.DEVICE, shoe_hello)
    host = await AsyncLink.open_serial(path, Role.HOST, host_hello, baudrate=BAUD_DEFAULT)
    try:
        await asyncio.gather(host.wait_up(5), device.wait_up(5))
        request = Frame(FrameKind.DATA, 0, 0, encode_message(StatusRequest())).encode()
        ack = Frame(FrameKind.ACK, 0, 1).encode()
        reply_message = Status(3600, DeviceState.READY, "ok")
        reply = Frame(FrameKind.DATA, 0, 1, encode_message(reply_message)).encode()

        acked: list[float] = []
        for _ in range(ROUND_TRIPS):
            start = time.perf_counter()
            await host.send(StatusRequest())  # returns when the device's ACK arrived
            acked.append(time.perf_counter() - start)
            await device.receive()

        replied: list[float] = []
        for _ in range(ROUND_TRIPS):
            start = time.perf_counter()
            await host.send(StatusRequest())
            await device.receive()
            await device.send(reply_message)
            await host.receive()
            replied.append(time.perf_counter() - start)

        card = CardDrawn(5, 12, 2, 1, False)
        card_wire = Frame(FrameKind.DATA, 0, 0, encode_message(card)).encode()
        start = time.perf_counter()
        for _ in range(ROUND_TRIPS):
            await device.send(card)
        for _ in range(ROUND_TRIPS):
            await host.receive()
        streamed = time.perf_counter() - start

        print(f"\nround trips over a pseudo-terminal at 115200 baud ({ROUND_TRIPS} each)")
        report("host DATA StatusRequest -> device ACK", acked, len(request) + len(ack))
        report("host StatusRequest -> device Status (each side ACKs)", replied,
               len(request) + 2 * len(ack) + len(reply))
        print(f"  device -> host CardDrawn, one at a time (awaiting each ACK): "
              f"{ROUND_TRIPS / streamed:,.0f} cards/s; line rate at 115200: "
              f"{1 / wire_time(len(card_wire)):,.0f} cards/s")
        print("  counters:", {k: v for k, v in host.counters.items()
                              if k in ("retransmits", "crc_errors", "timeouts", "duplicates")})
    finally:
        await host.close()
        await device.close()
        os.close(master)
        os.close(slave)


def main() -> None:
    # No options: --help says so, and an argument it does not take is refused by name.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    header("bench_protocol: CRC, codec throughput, round trips over a pseudo-terminal")
    print(f"(a Pi 4 runs the pure-Python codec about {pi4_factor():.1f}x slower: divide the "
          "codec rates below by that for its estimate)\n")
    bench_crc()
    bench_codec()
    asyncio.run(bench_pty())


if __name__ == "__main__":
    main()
