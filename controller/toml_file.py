"""Reading a TOML file: the one place that turns its bytes into a document.

TOML is UTF-8 (its specification says so), and `tomllib` decodes the bytes itself: a file
saved in another encoding (a comment with an "é" from a Windows editor) raised
UnicodeDecodeError, which no reader of a configuration, a Rules Submission or a secrets
file caught, so the daemon and tablectl stopped on a traceback. Here it is a
`tomllib.TOMLDecodeError` naming the byte and where it is, which every reader already
answers as "not valid TOML".
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


def read_toml(path: str | Path) -> dict[str, Any]:
    """The document in the file at `path`. OSError when it cannot be read;
    tomllib.TOMLDecodeError when it is not UTF-8 or not TOML."""
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise tomllib.TOMLDecodeError(
            f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at line {line}, column {column} "
            "(a TOML file is UTF-8: save it in that encoding)") from None
    return tomllib.loads(text)
