"""structlog configuration: one JSON object per line on stdout.

Under systemd (JOURNAL_STREAM set) each line starts with the sd-daemon
priority prefix (`<3>` error, `<4>` warning, `<6>` info, `<7>` debug) so the
journal records the right priority without a journald library. The table id,
shoe number and round id are bound with contextvars and appear in every event
of a round.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

_PRIORITY = {"critical": 2, "error": 3, "warning": 4, "info": 6, "debug": 7}


def _journal_prefix(_: Any, method_name: str, event_dict: MutableMapping[str, Any]
                    ) -> MutableMapping[str, Any]:
    event_dict["_priority"] = _PRIORITY.get(event_dict.get("level", method_name), 6)
    return event_dict


def _unencodable(value: Any) -> Any:
    """What structlog's JSONRenderer writes for a value JSON has no form for: its
    `__structlog__()` if it has one, else its repr."""
    as_logged = getattr(value, "__structlog__", None)
    return as_logged() if callable(as_logged) else repr(value)


class _JournalRenderer:
    """One line of JSON, as structlog's JSONRenderer writes it (json.dumps' separators, keys
    in the order given), through one encoder made once: json.dumps with a `default` builds
    a new encoder for every line."""

    def __init__(self, with_prefix: bool) -> None:
        self._encode = json.JSONEncoder(default=_unencodable).encode
        self._with_prefix = with_prefix

    def __call__(self, logger: Any, name: str, event_dict: MutableMapping[str, Any]) -> str:
        priority = event_dict.pop("_priority", 6)
        line = self._encode(event_dict)
        return f"<{priority}>{line}" if self._with_prefix else line


class _LineWriter:
    """structlog's logger: each line written and flushed in one write, its newline with it
    (print writes the two apart: two system calls a line when the output is unbuffered, as
    under a supervisor that sets PYTHONUNBUFFERED). `stream` None: sys.stdout as it is at
    each line (a test's capture replaces it)."""

    _lock = threading.Lock()  # threads log too (the store's flusher); lines never interleave

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def msg(self, message: str) -> None:
        stream = self._stream or sys.stdout
        with self._lock:
            stream.write(message + "\n")
            stream.flush()

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


debug_enabled = True
"""Whether debug lines are written: structlog's own default writes every level, and
configure_logging sets it. A caller with a line per card builds it only when it is."""


LOG_LEVELS = ("debug", "info", "warning", "error")  # what a --log-level may say


def add_log_level_argument(parser: argparse.ArgumentParser) -> None:
    """Every program's `--log-level`: one of LOG_LEVELS, another word refused by name."""
    parser.add_argument("--log-level", default="info", choices=LOG_LEVELS,
                        help="debug, info, warning or error (default info)")


def configure_logging(*, level: str = "info", stream: TextIO | None = None,
                      journal_prefix: bool | None = None) -> None:
    """Configure structlog for the daemon. `journal_prefix` defaults to "running under systemd"."""
    global debug_enabled
    threshold = getattr(logging, level.upper(), logging.INFO)
    debug_enabled = threshold <= logging.DEBUG
    if journal_prefix is None:
        journal_prefix = bool(os.environ.get("JOURNAL_STREAM"))
    writer = _LineWriter(stream)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _journal_prefix,
            _JournalRenderer(journal_prefix),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=lambda *_: writer,
        cache_logger_on_first_use=False,
    )
    # Libraries and the stdlib-only modules (sdnotify, watchdog) log through `logging`;
    # send their records through the same renderer so the journal gets one format.
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.contextvars.merge_contextvars,
                           structlog.processors.add_log_level,
                           structlog.processors.TimeStamper(fmt="iso", utc=True)],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    _journal_prefix, _JournalRenderer(journal_prefix)],
    ))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(threshold)
    # transitions narrates every callback at INFO; the table logs its own transitions.
    logging.getLogger("transitions").setLevel(logging.WARNING)


def bind_table(table_id: str) -> None:
    structlog.contextvars.bind_contextvars(table_id=table_id)


def bind_round(shoe_no: int | None, round_id: int | None) -> None:
    structlog.contextvars.bind_contextvars(shoe_no=shoe_no, round_id=round_id)
