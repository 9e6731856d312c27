"""Coverage-guided fuzzing of the wire protocol with atheris (libFuzzer for Python).

Not a test module (pytest never collects it; tests/firmware_bridge/test_fuzz_harness.py
replays a few inputs through ``fuzz_one_input`` so it cannot rot).  atheris is
optional and not a dependency of the project.

Long run (hours, on a spare core)::

    .venv/bin/pip install atheris          # needs clang/libFuzzer on the machine
    mkdir -p /tmp/bridge-corpus
    .venv/bin/python -m firmware_bridge.fuzz_atheris --make-corpus /tmp/bridge-corpus
    .venv/bin/python -m firmware_bridge.fuzz_atheris /tmp/bridge-corpus \
        -max_len=2048 -timeout=5 -rss_limit_mb=1024 -max_total_time=14400

Replay crashes or a corpus without atheris::

    .venv/bin/python -m firmware_bridge.fuzz_atheris --replay crash-* /tmp/bridge-corpus/*

Every input is fed to: the strict frame decoder (may raise only FrameError), the
streaming decoder in fuzzer-chosen splits (may raise nothing, buffer bounded), the
message decoder (only MessageError), and a LinkEndpoint in a fuzzer-chosen state
driven by fuzzer-chosen bytes and times (may raise nothing; timers must move).
Anything else is a crash.
"""

from __future__ import annotations

import itertools
import struct
import sys
from pathlib import Path

from firmware_bridge.errors import FrameError, MessageError
from firmware_bridge.frame import MAX_ENCODED_FRAME, FrameDecoder, decode_frame
from firmware_bridge.link import LinkEndpoint, LinkState, Role
from firmware_bridge.messages import PROTOCOL_VERSION, DeviceKind, Hello, decode_message

_HOST = Hello(PROTOCOL_VERSION, DeviceKind.HOST, "FUZZ-HOST", "fuzz", 0)
_SHOE = Hello(PROTOCOL_VERSION, DeviceKind.SHOE, "FUZZ-SHOE", "fuzz", 0)


def _up_pair() -> tuple[LinkEndpoint, LinkEndpoint]:
    ids = itertools.count(1)
    host = LinkEndpoint(Role.HOST, _HOST, session_ids=lambda: next(ids))
    device = LinkEndpoint(Role.DEVICE, _SHOE, session_ids=lambda: next(ids))
    host.connect(0.0)
    for _ in range(4):
        device.receive(host.outgoing(), 0.0)
        host.receive(device.outgoing(), 0.0)
    assert host.state is LinkState.UP
    return host, device


def fuzz_one_input(data: bytes) -> None:
    """One fuzz iteration; raises only on a bug."""
    try:
        decode_frame(data)
    except FrameError:
        pass
    try:
        decode_message(data)
    except MessageError:
        pass

    if len(data) < 3:
        return
    mode, split, tick = data[0], max(1, data[1]), data[2]
    body = data[3:]

    decoder = FrameDecoder()
    for offset in range(0, len(body), split):
        decoder.feed(body[offset : offset + split])
        assert len(decoder._buffer) <= MAX_ENCODED_FRAME

    host, device = _up_pair()
    endpoint = {0: host, 1: device}.get(mode % 4) or LinkEndpoint(Role.HOST, _HOST)
    if mode % 4 == 3:
        endpoint.connect(0.0)
    now = 0.0
    for offset in range(0, len(body), split):
        now += tick / 64
        endpoint.receive(body[offset : offset + split], now)
        endpoint.poll(now)
        endpoint.outgoing()
        endpoint.events()
        deadline = endpoint.next_deadline()
        assert deadline is None or deadline > now, (deadline, now, endpoint.state)


def make_corpus(directory: Path) -> None:
    """Seed inputs: valid exchanges and the golden vectors, prefixed by mode/split/tick bytes."""
    from firmware_bridge.frame import Frame, FrameKind
    from firmware_bridge.messages import CardDrawn, StatusRequest, encode_message

    host, device = _up_pair()
    seeds = [
        Frame(FrameKind.DATA, 1, 1, encode_message(CardDrawn(1, 1, 0, 0, False))).encode(),
        Frame(FrameKind.ACK, 0, 1).encode() + Frame(FrameKind.NAK, 0, 1).encode(),
        Frame(FrameKind.RESET, 0, 0, struct.pack("<I", 99)).encode(),
        Frame(FrameKind.DATA, 1, 1, encode_message(StatusRequest())).encode(),
        b"\x00garbage\x00" + Frame(FrameKind.RESET_ACK, 0, 0, b"\x01\x00\x00\x00").encode(),
    ]
    directory.mkdir(parents=True, exist_ok=True)
    for index, seed in enumerate(seeds):
        for mode in range(4):
            (directory / f"seed-{index}-{mode}").write_bytes(bytes([mode, 7, 16]) + seed)


def main(argv: list[str]) -> None:
    if argv[1:2] == ["--make-corpus"]:
        make_corpus(Path(argv[2]))
        return
    if argv[1:2] == ["--replay"]:
        for name in argv[2:]:
            fuzz_one_input(Path(name).read_bytes())
        print(f"replayed {len(argv) - 2} inputs without a crash")
        return
    import atheris  # optional: pip install atheris

    atheris.Setup(argv, fuzz_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
