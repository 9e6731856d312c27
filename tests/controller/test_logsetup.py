"""The daemon's log lines (controller/logsetup.py): one JSON object a line, as structlog's
JSONRenderer writes it, each line written in one write with its newline."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from controller import logsetup
from controller.logsetup import configure_logging


class _Stream:
    """A text stream that notes each write and flush."""

    def __init__(self) -> None:
        self.writes: list[str] = []
        self.flushes = 0

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        self.flushes += 1


class _Unencodable:
    def __repr__(self) -> str:
        return "<a value JSON has no form for>"


@pytest.fixture
def stream() -> Iterator[_Stream]:
    root = logging.getLogger()
    saved = (structlog.get_config(), root.handlers[:], root.level, logsetup.debug_enabled)
    bound = structlog.contextvars.get_contextvars()  # an earlier test's table or round
    structlog.contextvars.clear_contextvars()
    out = _Stream()
    configure_logging(level="info", stream=out, journal_prefix=True)  # type: ignore[arg-type]
    try:
        yield out
    finally:
        structlog.configure(**saved[0])
        root.handlers[:], logsetup.debug_enabled = saved[1], saved[3]
        root.setLevel(saved[2])
        structlog.contextvars.bind_contextvars(**bound)


def test_a_line_is_one_write_with_its_newline_and_flushed(stream: _Stream) -> None:
    structlog.get_logger("table").warning("wager_refused", seat=3, reason="caf\u00e9",
                                          amounts=[500, None], odd=_Unencodable())
    assert len(stream.writes) == 1 and stream.flushes == 1
    line = stream.writes[0]
    assert line.startswith("<4>{") and line.endswith("}\n") and line.count("\n") == 1
    fields = json.loads(line[3:])
    timestamp = fields.pop("timestamp")
    assert timestamp.endswith("Z")
    assert fields == {"seat": 3, "reason": "caf\u00e9", "amounts": [500, None],
                      "odd": "<a value JSON has no form for>", "event": "wager_refused",
                      "level": "warning"}
    # json.dumps' own text (its separators, non-ASCII escaped), as JSONRenderer wrote it
    assert line[3:-1] == json.dumps(json.loads(line[3:]))


def test_debug_lines_are_not_written_at_info(stream: _Stream) -> None:
    structlog.get_logger("table").debug("card", index=1)
    assert stream.writes == []
