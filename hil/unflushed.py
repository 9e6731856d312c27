"""What a power cut leaves of a table's store: the WAL up to its last flush.

SIGKILL alone loses nothing that reached the operating system; a real power cut also loses
what was written but not flushed. With TABLE_STORE_FLUSH_TRACE set, the daemon notes how
far the WAL is on the disk at every flush; after a kill, `cut_to_last_flush` cuts the WAL
back to exactly that and deletes SQLite's shared-memory index, which is the disk a power
cut leaves (hil/test_power_cut_unflushed.py, hil/test_card_commit.py);
`card_indexes_on_disk` reads what such a cut would leave without making it, and
`AcksAgainstTheDisk` checks the shoe's card acknowledgements against it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from controller.events import SHOE_CARD_KINDS
from controller.events.records import CardDuringFault
from firmware_bridge import messages as wire
from hil.table_harness import TableHarness

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


CARD_KINDS = tuple(sorted(SHOE_CARD_KINDS | {CardDuringFault.KIND}))
"""The log's kinds for a card that left the shoe, each with its index in the batch: those
the shoe read (the catalogue's), and one that came during a device fault."""

COPY_ATTEMPTS = 5  # copies of a store SQLite finds torn before the error is the test's


def card_indexes_on_disk(store: Path, trace: Path, scratch: Path) -> set[int]:
    """The indexes of the current batch's cards (CARD_KINDS after the last shoe_loaded) that
    a power cut now would leave: a copy of the store with its WAL cut to the last flush the
    trace names (the store itself is not touched; `scratch` is a directory for the copy).
    The daemon writes on while the copy is made: a copy that SQLite finds torn (a checkpoint
    copying pages meanwhile) is made again."""
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / "at-last-flush.sqlite"
    attempts = 0
    while True:
        for suffix in ("", "-wal"):
            target = Path(f"{copy}{suffix}")
            target.unlink(missing_ok=True)
            if Path(f"{store}{suffix}").exists():
                shutil.copyfile(f"{store}{suffix}", target)
        Path(f"{copy}-shm").unlink(missing_ok=True)
        if Path(f"{copy}-wal").exists():
            cut_to_last_flush(copy, trace)
        try:
            return _card_indexes(copy)
        except sqlite3.DatabaseError:
            attempts += 1
            if attempts == COPY_ATTEMPTS:
                raise


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


class AcksAgainstTheDisk:
    """6.6 [M-6.6a], tallied by the test: each CardsCommitted the harness's 1.2 shoe takes,
    with the current batch's card indexes that a power cut at that instant would leave
    (`card_indexes_on_disk`, read as the shoe takes it). With `first_after_each_restart`,
    only the first after each restart (a campaign's: the replay of the kept cards comes then,
    several frames in one read, and a copy of a growing store at every acknowledgement would
    cost the run more than the check is worth)."""

    def __init__(self, harness: TableHarness, trace: Path, scratch: Path, *,
                 first_after_each_restart: bool = False) -> None:
        self._harness, self._trace, self._scratch = harness, trace, scratch
        self._first_only = first_after_each_restart
        self._restarts_checked = -1
        self.seen: list[tuple[int, set[int]]] = []  # (next_index, the indexes on the disk)
        self._took = harness.shoe.on_message
        harness.shoe.on_message = self._on_message  # type: ignore[method-assign]

    def ahead_of_the_disk(self) -> list[tuple[int, int]]:
        """Acknowledgements whose last card was not on the disk: (next_index, the last card
        that was)."""
        return [(next_index, max(on_disk, default=-1)) for next_index, on_disk in self.seen
                if next_index > 0 and next_index - 1 not in on_disk]

    async def _on_message(self, message: wire.Message) -> None:
        if isinstance(message, wire.CardsCommitted):
            result = self._harness.result
            restarts = result.power_cuts + result.crash_kills
            if not self._first_only or restarts != self._restarts_checked:
                self._restarts_checked = restarts
                self.seen.append((message.next_index, card_indexes_on_disk(
                    Path(self._harness.store_path), self._trace, self._scratch)))
        await self._took(message)
