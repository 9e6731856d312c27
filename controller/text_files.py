"""Reading a text file a person wrote (a configuration, a Rules Submission, a card list):
the one place that turns its bytes into text, and a TOML file's text into a document; and
JSON text that came from outside the process (a file beside the store, a broker's message,
a value read from a store before its check) into a value.

Such files are UTF-8 (TOML's specification says so), and a file saved in another encoding
(a comment with an "é" from a Windows editor) raised UnicodeDecodeError, which no reader
caught: the daemon and tablectl stopped on a traceback. Here it is an error naming the byte
and where it is; for TOML, `tomllib.TOMLDecodeError`, which every reader already answers
as "not valid TOML".
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from controller.errors import ControllerError


class NotUtf8(ControllerError, ValueError):
    """The file's bytes are not UTF-8 text; the message names the first byte that is not."""


MAX_TEXT_FILE_BYTES = 16 * 1024 * 1024
"""Far beyond any configuration, Rules Submission or card list (a few KiB; a card list of a
hundred shoes under 1 MiB)."""


def read_regular_file(path: str | Path, limit: int = MAX_TEXT_FILE_BYTES) -> bytes:
    """A regular file's bytes, at most `limit`; OSError naming what is wrong otherwise."""
    # O_NONBLOCK: opening a named pipe must not wait for a writer before it is refused (a
    # regular file's reads ignore the flag).
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a device, a pipe or a socket); "
                                        "allowed: a file")
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise OSError(errno.EFBIG, f"over {limit:,} bytes; allowed: a file of at most "
                                   f"{limit:,} bytes")
    return raw


def read_utf8(path: str | Path) -> str:
    """The file's text. OSError when it cannot be read (`read_regular_file`: `/dev/zero` was
    read until the process ran out of memory, a named pipe waited for a writer for ever);
    NotUtf8 when it is not UTF-8."""
    raw = read_regular_file(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise NotUtf8(f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at line {line}, "
                      f"column {column}") from None


def read_toml(path: str | Path) -> dict[str, Any]:
    """The document in the TOML file at `path`. OSError when it cannot be read;
    tomllib.TOMLDecodeError when it is not UTF-8 or not TOML."""
    try:
        text = read_utf8(path)
    except NotUtf8 as exc:
        raise tomllib.TOMLDecodeError(
            f"{exc} (a TOML file is UTF-8: save it in that encoding)") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except ValueError:  # Python's own limit on converting a number's digits
        raise tomllib.TOMLDecodeError(
            "a number of more than 4,300 digits, which no setting takes") from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion
        raise tomllib.TOMLDecodeError(
            "arrays or tables nested too deeply to read (no setting nests more than a few)"
        ) from None


def loads_json(text: str | bytes) -> Any:
    """json.loads, with a value nested too deeply to decode raised as the ValueError every
    reader of such text already answers, not as RecursionError: the decoder recurses once
    a level, and a line of 100,000 '[' (an edit, a damaged file, a hostile peer) stopped
    the daemon's start, `tablectl` and the pit page's handler on a traceback."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None
