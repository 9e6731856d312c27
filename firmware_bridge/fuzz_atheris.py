"""Coverage-guided fuzzing of the wire protocol with atheris (libFuzzer for Python).

Not a test module (pytest never collects it).  tests/firmware_bridge/test_fuzz_harness.py
replays inputs through ``fuzz_one_input`` so it cannot rot, and
tests/firmware_bridge/test_fuzz_smoke.py runs it under libFuzzer for a few thousand
inputs, failing on any crash and requiring coverage to grow from the seed corpus.
atheris comes with the ``test`` extra on x86_64 Linux (docs/dependencies.md).

The code under test is instrumented: every function and method of the
``firmware_bridge`` modules, once they are imported (``instrument_package``; the
harness lives inside the package it fuzzes, so the package is already loaded and
``atheris.instrument_imports`` would come too late).  ``--instrument-all`` uses
``atheris.instrument_all()`` instead (the standard library too: slower per input).  Without that,
libFuzzer sees no coverage, warns "no interesting inputs", and the corpus collapses
to one byte: it fuzzes blind.  The seed corpus is every golden vector of
docs/protocol.md section 8 (tables and timed transcripts), plus a few exchanges.

Long run (hours, on a spare core)::

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

import inspect
import itertools
import re
import struct
import sys
from pathlib import Path
from typing import Any

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


DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"
_WIRE_COLUMN = re.compile(r"`((?:[0-9a-f]{2} )+00)`")
_TRANSCRIPT_LINE = re.compile(r"^(?:t=\s*[\d.]+\s+)?\w+ -> \w+\s+((?:[0-9a-f]{2} )*[0-9a-f]{2})\b", re.M)


def golden_vectors() -> list[bytes]:
    """The wire bytes of every golden vector in docs/protocol.md section 8 (tables and
    timed exchanges); from firmware_bridge.transcript if the document is not at hand."""
    if DOC.exists():
        section = DOC.read_text(encoding="utf-8").split("## 8. Golden test vectors", 1)[-1]
        found = _WIRE_COLUMN.findall(section) + _TRANSCRIPT_LINE.findall(section)
        return [bytes.fromhex(text) for text in dict.fromkeys(found)]
    from firmware_bridge import transcript

    return [line.wire for scenario in transcript.SCENARIOS.values() for line in scenario()]


def make_corpus(directory: Path) -> int:
    """Seed inputs: the golden vectors and valid exchanges, prefixed by mode/split/tick
    bytes; returns how many files were written."""
    from firmware_bridge.frame import Frame, FrameKind
    from firmware_bridge.messages import CardDrawn, StatusRequest, encode_message

    seeds = golden_vectors() + [
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
    return 4 * len(seeds)


def instrument_package(atheris: Any, package: str = "firmware_bridge") -> int:
    """Instrument every function and method defined in ``package``'s loaded modules (as
    ``atheris.instrument_imports(include=[package])`` would at import); returns how many."""
    done: set[int] = set()

    def instrument(function: Any) -> None:
        code = getattr(function, "__code__", None)
        if code is not None and id(code) not in done and code.co_filename.startswith(root):
            atheris.instrument_func(function)
            done.add(id(function.__code__))

    root = str(Path(__file__).resolve().parent)
    for name, module in list(sys.modules.items()):
        if not (name == package or name.startswith(package + ".")) or module is None:
            continue
        for value in list(vars(module).values()):
            if inspect.isfunction(value):
                instrument(value)
            elif inspect.isclass(value) and value.__module__ == name:
                for member in vars(value).values():
                    for function in (member, getattr(member, "__func__", None),
                                     getattr(member, "fget", None), getattr(member, "fset", None)):
                        if inspect.isfunction(function):
                            instrument(function)
    return len(done)


def main(argv: list[str]) -> None:
    if argv[1:2] == ["--make-corpus"]:
        make_corpus(Path(argv[2]))
        return
    if argv[1:2] == ["--replay"]:
        for name in argv[2:]:
            fuzz_one_input(Path(name).read_bytes())
        print(f"replayed {len(argv) - 2} inputs without a crash")
        return
    import atheris  # the test extra on x86_64 Linux (docs/dependencies.md)

    # everything the harness reaches is imported by now (module top): instrument it, so
    # libFuzzer sees which branches of the decoders and the link an input took
    if "--instrument-all" in argv:
        argv = [arg for arg in argv if arg != "--instrument-all"]
        atheris.instrument_all()
    elif "--no-instrument" in argv:  # what the 1.0 harness did: libFuzzer fuzzes blind
        argv = [arg for arg in argv if arg != "--no-instrument"]
    else:
        print(f"INFO: instrumented {instrument_package(atheris)} functions of firmware_bridge",
              file=sys.stderr)
    atheris.Setup(argv, fuzz_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
