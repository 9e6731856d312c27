"""The event log's chain check: every entry's MAC recomputed from its stored fields, each
entry linked to the one before it (docs/architecture.md, "Critical memory"). A long stretch
is split into ranges checked at once by worker processes of their own (`ChainRun`).

A worker is a fresh interpreter (controller/fresh_process.py) that imports this module and
what it needs (sqlite3, the MACs, the errors: 0.05 s of CPU here), not a multiprocessing
child, which imported the whole daemon again before it read an entry.
"""

from __future__ import annotations

import hmac
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

from controller.fresh_process import FreshProcess
from controller.memory.errors import ACTION_TAMPER, IntegrityError
from controller.memory.macs import entry_mac, mac_json

PARALLEL_CHAIN_ENTRIES = 200_000
"""A stretch of the log this long or longer is checked by several processes at once
(`verify_chain`'s `workers`): each entry's MAC covers the previous entry's MAC as stored
beside it, so every range checks alone, and the ranges' joins are checked after."""

_ROWS = ("SELECT seq, at, kind, severity, device, round_id, payload, prev_hash, hash"
         " FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq")


def verify_chain(db: sqlite3.Connection, key: bytes, start: int, prev: str,
                 progress: Callable[[int], None] | None = None, *, end: int | None = None,
                 workers: int = 1) -> int:
    """Recompute every MAC from entry `start` (which must link to `prev`) to `end` (the
    log's last entry when None). With `workers` > 1 and a stretch of at least
    PARALLEL_CHAIN_ENTRIES, ranges of it are checked in that many processes, each on a
    read-only connection of its own (the entries up to `end` are never rewritten by the
    table, so every process reads the same ones); the first failure in log order is
    raised, as a single pass would."""
    if end is None:
        end = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])
    return ChainRun(db, key, start, prev, end, workers).result(progress)


class ChainRun:
    """`verify_chain` begun at once: a long stretch's worker processes start when this is
    made, so that its caller (`verify_store`) checks the protected tables meanwhile;
    `result` waits for them (or checks a short stretch in this process then) and `stop`
    ends any still running, when the caller failed first."""

    def __init__(self, db: sqlite3.Connection, key: bytes, start: int, prev: str, end: int,
                 workers: int) -> None:
        self._db, self._key, self._start, self._prev, self._end = db, key, start, prev, end
        self._workers: list[FreshProcess] = []
        if workers > 1 and end - start + 1 >= PARALLEL_CHAIN_ENTRIES and sys.executable:
            path = db.execute("PRAGMA database_list").fetchone()[2]
            if path:  # not an in-memory store, which no other process can see
                self._start_workers(str(Path(path).absolute()), workers)

    def _start_workers(self, path: str, workers: int) -> None:
        try:
            for lo, hi in ranges(self._start, self._end, workers):
                self._workers.append(FreshProcess(
                    "controller.memory.chain:check_range", path, self._key, lo, hi,
                    self._prev if lo == self._start else None))
        except OSError:  # no processes to be had here (limits): one pass in `result`
            self.stop()

    def result(self, progress: Callable[[int], None] | None = None) -> int:
        """The entries checked; the first failure in log order raised as IntegrityError
        (or what a worker's check raised otherwise, such as a damaged file's error)."""
        workers, self._workers = self._workers, []
        try:
            # In log order: a range's failure is raised before any later range's.
            return sum(worker.result() for worker in workers) if workers else (
                _check_range(self._db, self._key, self._start, self._prev, self._end,
                             progress))
        except ChildProcessError:  # a worker died without an answer: one pass here
            return _check_range(self._db, self._key, self._start, self._prev, self._end,
                                progress)
        finally:
            for worker in workers:
                worker.stop()

    def stop(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._workers = []


def full_check_workers() -> int:
    """The processes a full check's chain is split over (`verify_chain`'s `workers`): one a
    core, as the daemon's start, `tablectl events verify --full` offline and the benchmark's
    floor all use; one pass where the count is unknown."""
    return os.cpu_count() or 1


def ranges(start: int, end: int, workers: int) -> list[tuple[int, int]]:
    """Entries `start`..`end` split into at most `workers` ranges (first, last) of nearly
    equal length, in log order: the workers' shares of a long stretch (`ChainRun`)."""
    bounds = [start + (end - start + 1) * n // workers for n in range(workers + 1)]
    return [(lo, hi - 1) for lo, hi in zip(bounds, bounds[1:]) if lo < hi]


def check_range(path: str, key: bytes, lo: int, hi: int, prev: str | None) -> int:
    """A worker's range (`ChainRun`), in its own process on a read-only connection of its
    own: entries `lo` to `hi`, the first linked to `prev` or (None) to the entry before it
    as stored, which that entry's own range checks."""
    db = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True)
    try:
        if prev is None:
            row = db.execute("SELECT hash FROM events WHERE seq = ?", (lo - 1,)).fetchone()
            if row is None:
                raise IntegrityError("event chain", f"entry {lo - 1} is missing (next present "
                                     f"entry is {lo})", ACTION_TAMPER)
            prev = str(row[0])
        return _check_range(db, key, lo, prev, hi)
    finally:
        db.close()


def _check_range(db: sqlite3.Connection, key: bytes, start: int, prev: str, end: int,
                 progress: Callable[[int], None] | None = None) -> int:
    """One pass over entries `start`..`end`: each entry's MAC recomputed by macs.entry_mac,
    the one owner of an entry's MAC and the text it covers, as the store made it (a copy
    written out here saved 8 % of this loop, not worth a second owner)."""
    cursor = db.cursor()
    cursor.row_factory = None
    compare = hmac.compare_digest
    expected = start
    # json_string(prev) for entry_mac's `prev_text`: None (escaped there) for the
    # range's first entry, whose previous MAC was read, not checked; after that the stored
    # MAC just found equal to the hex digest made here, as its JSON text (`mac_json`, as the
    # store keeps the MACs it makes: hex needs no escaping). The same text, without
    # escaping 64 characters again: 1,500 of about 45,000 instructions an entry. Only a
    # stored text: another type (a schema edited to store one) is left to entry_material,
    # which refuses it as before.
    prev_text: str | None = None
    for seq, at, kind, severity, device, round_id, payload, prev_mac, mac in cursor.execute(
            _ROWS, (start, end)):
        if seq != expected:
            raise IntegrityError("event chain", f"entry {expected} is missing (next present "
                                 f"entry is {seq})")
        if prev_mac != prev:
            raise IntegrityError("event chain", f"entry {seq} does not link to entry "
                                 f"{seq - 1} (prev_hash differs)")
        try:
            digest = entry_mac(key, prev, seq, at, kind, severity, device, round_id, payload,
                               prev_text=prev_text)
        except (TypeError, ValueError):  # a field edited to another type (text for a time)
            raise IntegrityError("event chain", f"entry {seq} ({kind}) was altered: a field "
                                 "holds a value of another type than the entry was written "
                                 "with") from None
        if not compare(digest, str(mac)):
            raise IntegrityError("event chain", f"entry {seq} ({kind}) was altered: its MAC "
                                 "does not match its contents")
        prev, prev_text = mac, mac_json(digest) if type(mac) is str else None
        expected += 1
        if progress is not None and (expected - start) % 100_000 == 0:
            progress(expected - start)
    if expected <= end:  # the range's last entries are gone
        after = db.execute("SELECT MIN(seq) FROM events WHERE seq > ?", (expected,)).fetchone()
        raise IntegrityError("event chain", f"entry {expected} is missing " + (
            f"(next present entry is {after[0]})" if after[0] is not None
            else f"(the log ends at entry {expected - 1})"))
    return expected - start
