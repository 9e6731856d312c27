"""Recognising a table's store file before anything is read from it.

`tablectl events verify --store` and the support bundle are given a path by a
technician at a dead table; a wrong path (the README, a log, the configuration)
must be answered "not a table store", not reported as a broken hash chain.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from controller.memory.errors import STORE_ERRORS, store_error_text

_SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite 3 database
# Tables every store has had since its first schema (controller/memory/store.py).
_STORE_TABLES = frozenset({"events", "rounds"})


def not_a_table_store(path: Path) -> str | None:
    """Why `path` is not a table store file, or None if it looks like one.

    Reads the header and the schema only. Give it a copy of the evidence: SQLite may add
    a shared-memory file beside a database in WAL mode even when reading."""
    try:
        with path.open("rb") as fh:
            header = fh.read(len(_SQLITE_MAGIC))
    except IsADirectoryError:
        return f"{path} is a directory, not a table store file"
    if header != _SQLITE_MAGIC:
        return f"{path} is not a table store: it is not an SQLite database"
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            names = {row[0] for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            db.close()
    except STORE_ERRORS as exc:
        return f"{path} is not a readable table store: {store_error_text(exc)}"
    missing = sorted(_STORE_TABLES - names)
    if missing:
        return (f"{path} is not a table store: an SQLite database without the store's "
                f"{', '.join(missing)} table(s)")
    return None


def is_store_file(source: Path) -> bool:
    """A regular file is at `source`. A name no file can have (too long for the file system,
    a NUL in it) is none; pathlib's own test raises for those."""
    return os.path.isfile(source)


def copy_store(source: Path, folder: Path) -> Path:
    """A copy of the store `source` (with its WAL, if any) in `folder`: a check or a replay
    reads the copy, so the evidence is never written, not even by SQLite's recovery."""
    copy = folder / source.name
    for suffix in ("", "-wal"):
        part = Path(str(source) + suffix)
        if part.exists():
            shutil.copyfile(part, str(copy) + suffix)
    return copy
