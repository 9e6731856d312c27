"""What a power cut leaves of a table's store: the WAL up to its last flush.

SIGKILL alone loses nothing that reached the operating system; a real power cut also loses
what was written but not flushed. With TABLE_STORE_FLUSH_TRACE set, the daemon notes how
far the WAL is on the disk at every flush; after a kill, `cut_to_last_flush` cuts the WAL
back to exactly that and deletes SQLite's shared-memory index, which is the disk a power
cut leaves (hil/test_power_cut_unflushed.py, hil/test_card_commit.py);
`card_indexes_on_disk` reads what such a cut would leave without making it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

WAL_HEADER_BYTES, FRAME_HEADER_BYTES = 32, 24


def cut_to_last_flush(store: Path, trace: Path) -> int:
    """Leave the store as a power cut would after the last flush; returns the bytes cut."""
    wal = Path(f"{store}-wal")
    lines = trace.read_text(encoding="ascii").split()
    salt, frames, page_size = lines[-3], int(lines[-2]), int(lines[-1])
    size = wal.stat().st_size
    with wal.open("r+b") as f:
        f.seek(16)
        current_salt = f.read(8).hex()
        # A WAL that restarted after the last flush holds nothing flushed of its new cycle
        # (the checkpoint before the restart put every flushed frame in the database file).
        keep = (WAL_HEADER_BYTES + frames * (FRAME_HEADER_BYTES + page_size)
                if current_salt == salt else 0)
        f.truncate(min(keep, size))
    Path(f"{store}-shm").unlink(missing_ok=True)
    return size - min(keep, size)


def last_seq(store: Path) -> int:
    db = sqlite3.connect(store)
    try:
        return db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
    finally:
        db.close()


CARD_KINDS = ("burn_first_card", "burn_card", "card", "card_face_up", "card_discarded",
              "card_during_fault")
"""The log's kinds for a card that left the shoe, each with its index in the batch."""


COPY_ATTEMPTS = 5  # copies of a store SQLite finds torn before the error is the test's


def card_indexes_on_disk(store: Path, trace: Path, scratch: Path) -> set[int]:
    """The indexes of the current batch's cards (CARD_KINDS after the last shoe_loaded) that
    a power cut now would leave: a copy of the store with its WAL cut to the last flush the
    trace names (the store itself is not touched; `scratch` is a directory for the copy).
    The daemon writes on while the copy is made: a copy that SQLite finds torn (a checkpoint
    copying pages meanwhile) is made again."""
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / "at-last-flush.sqlite"
    for attempt in range(1, COPY_ATTEMPTS + 1):
        for suffix in ("", "-wal"):
            source, target = Path(f"{store}{suffix}"), Path(f"{copy}{suffix}")
            target.unlink(missing_ok=True)
            if source.exists():
                target.write_bytes(source.read_bytes())
        Path(f"{copy}-shm").unlink(missing_ok=True)
        if Path(f"{copy}-wal").exists():
            cut_to_last_flush(copy, trace)
        try:
            return _card_indexes(copy)
        except sqlite3.DatabaseError:
            if attempt == COPY_ATTEMPTS:
                raise
    return set()  # not reached: the last attempt returns or raises


def _card_indexes(store: Path) -> set[int]:
    db = sqlite3.connect(store)
    try:
        rows = db.execute(
            f"SELECT payload FROM events WHERE kind IN ({','.join('?' * len(CARD_KINDS))})"
            " AND seq > (SELECT COALESCE(MAX(seq), 0) FROM events WHERE kind = 'shoe_loaded')",
            CARD_KINDS).fetchall()
    finally:
        db.close()
    return {json.loads(payload)["index"] for (payload,) in rows}
