"""When a store's commits reach the disk (docs/architecture.md, "Durable writes").

The store commits in WAL mode with synchronous=NORMAL, so SQLite itself flushes only at
checkpoints; `Durability` flushes the WAL after every commit that must be durable (what
synchronous=FULL would do for all), counts what it flushed and grouped, checkpoints the
WAL now and then after a flushed commit, and hands each durable commit's seal to the
anchor's writer. A power cut loses only grouped commits after the last flush.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable

from controller.memory.anchor import ANCHOR_INTERVAL_S, Anchor, AnchorFile, AnchorWriter
from controller.memory.digests import Seal
from controller.memory.flush_times import FlushTimes
from controller.memory.keys import CriticalPaths
from controller.memory.macs import key_id

FLUSH_TRACE_ENV = "TABLE_STORE_FLUSH_TRACE"
"""Names a file to which every flush appends how far the WAL is on the disk (the HIL
power-cut test of unflushed steps; unset at a table)."""

CHECKPOINT_AFTER_COMMITS = 2000
"""Commits between WAL checkpoints, each run right after a flushed step, so a checkpoint's
flushes never land on a card's decision. A checkpoint costs three flushes; a benchmark shoe
is about 830 commits, so 2,000 make it one in about 2.4 shoes (1.2 flushes a shoe, where
500 cost 5), counted, not sized, because the count is known on the store's thread without
reading SQLite's files (docs/rulings.md C25). The WAL stays bounded: a commit is about four
pages (16 KiB), so its file holds about 32 MiB (the 500 before: 8 MiB; 48 MiB at most with
CHECKPOINT_WAITS_FOR_A_ROUND_END), which a restart reads once and `checkpoint_at_open`
copies in."""

CHECKPOINT_WAITS_FOR_A_ROUND_END = 1000
"""Commits a due checkpoint may wait, in a daemon, for a flushed step that ends a round.
A checkpoint holds the loop for three flushes and its copy (15-30 ms here with 5 ms
flushes; on an SD card three of its flushes): after a wager's flush the lock-out that came
next waited for it (the slowest lock-out of every benchmark run, 26-34 ms), after a lock's
flush the round's first cards. After a settlement it holds only the next round's first
wagers, while the dealer pays. A round ends every dozen commits or so; a table whose rounds
stop ending (no play, only a dealer's commands) checkpoints at any flushed step after this
many more."""

CHECKPOINT_AFTER_GROUPED_COMMITS = 5000
"""A table that only records grouped steps for hours (a chattering sensor: a page or two a
commit) still checkpoints, after this many commits with no flushed step among them (as
before C25: ten times the 500 then)."""


SLEEP_LEAST_S = 0.0001
"""Less of a stand-in flush left than this is not slept: a sleep's own wake-up is longer."""


def slow_storage_wait(delay_s: float, started: float | None = None) -> None:
    """The stand-in for slow storage (`[store] flush_delay_ms`; bench/bench_latency.py's
    reference flush too): a flush timed from `started` (time.perf_counter) is made to take
    `delay_s` in all, since on an SD card the card's flush is the flush and this machine's
    own disk's is inside it; without `started`, `delay_s` is waited on top."""
    left = delay_s
    if started is not None:
        left -= time.perf_counter() - started
    if left > SLEEP_LEAST_S:
        time.sleep(left)  # the flush waits, as on an SD card


class Durability:
    """The flushes, checkpoints and anchor of one store's writing connection."""

    def __init__(self, db: sqlite3.Connection, path: str, key: bytes,
                 paths: CriticalPaths | None, *, flush_delay_s: float = 0.0,
                 anchor_interval_s: float = ANCHOR_INTERVAL_S) -> None:
        """``flush_delay_s``: how long a flush takes on the storage this stands in for (an
        SD card; benchmarks and tests of slow storage, 0 at a table): a step's flush takes
        at least that long in all (`_slow_storage`). ``anchor_interval_s``: the most the
        anchor lags the store (`[store] anchor_interval_s`, docs/rulings.md C24)."""
        if flush_delay_s < 0:
            raise ValueError(f"flush_delay_s = {flush_delay_s}: must be >= 0")
        if anchor_interval_s < 0:
            raise ValueError(f"anchor_interval_s = {anchor_interval_s}: must be >= 0")
        self._anchor_interval_s = anchor_interval_s
        self._db = db
        self._commits = db.cursor()  # COMMIT on a kept cursor: Connection.execute makes one
        self._path = path
        self._key = key
        self._paths = paths
        self._flush_delay_s = flush_delay_s
        self._key_id = key_id(key)  # each anchor names it: made once, not at every money step
        self._flush_trace = os.environ.get(FLUSH_TRACE_ENV, "")
        self._commits_since_checkpoint = 0
        self.anchor_writer: AnchorWriter[Anchor] | None = None  # at the first anchor
        self._anchor_file: AnchorFile | None = None
        self.flushed_commits = 0
        """Commits flushed to disk since the store was opened (benchmarks print it)."""
        self.grouped_commits = 0
        """Commits left in the WAL for the next flush."""
        self.checkpoints = 0
        """WAL checkpoints run."""
        self.checkpoint_flushes = 0
        """The flushes SQLite made for them: the WAL before its pages are copied, the
        database after, and the WAL's header when the next write starts it over."""
        self.flush_times = FlushTimes()
        """How long the steps' flushes took (`tablectl status`, the metrics), each recorded
        once what it covered is reported."""

    def close(self) -> None:
        """Write the last durable commit's anchor (before the store closes)."""
        if self.anchor_writer is not None:
            self.anchor_writer.close()
            self.anchor_writer = None

    def commit(self, flush: bool) -> bool:
        """COMMIT, flushed or grouped; returns whether this commit is durable."""
        self._commits.execute("COMMIT")
        self._commits_since_checkpoint += 1
        if flush:
            self.flush_now()
        else:
            self.grouped_commits += 1
        return flush

    def flush_now(self) -> None:
        """Flush the WAL in this thread: every commit made so far is on the disk."""
        mark = self.flush_mark()
        seconds = self.flush_in_thread()
        self.flushed_in_thread(mark)
        self.flush_times.add(seconds)

    def flush_mark(self) -> str | None:
        """Before a flush, on the store's thread: how far the WAL is (only when traced,
        FLUSH_TRACE_ENV), which is what the flush will have put on the disk."""
        if not self._flush_trace or self._path == ":memory:":
            return None
        with open(self._path + "-wal", "rb") as wal:
            salt = os.pread(wal.fileno(), 8, 16).hex()
        shm = os.open(self._path + "-shm", os.O_RDONLY)
        try:
            frames = int.from_bytes(os.pread(shm, 4, 16), sys.byteorder)
        finally:
            os.close(shm)
        page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return f"{salt} {frames} {page_size}"

    def flush_in_thread(self, at_flush: Callable[[], object] = lambda: None) -> float:
        """The flush itself, which touches no connection: any thread may run it (group
        commit runs it in a thread of its own, controller/memory/delivery.py). What
        synchronous=FULL does at a WAL commit: flush the WAL, and with it every commit
        before. ``at_flush`` is called just before the flush's own call, when nothing is
        left between this thread and the disk but that call. Returns the seconds it took
        (for `flush_times`)."""
        started = time.perf_counter()
        if self._path == ":memory:":
            at_flush()
        else:
            fd = os.open(self._path + "-wal", os.O_RDONLY)
            try:
                at_flush()
                os.fdatasync(fd)
            finally:
                os.close(fd)
        self._slow_storage(1, started)
        return time.perf_counter() - started

    def flushed_in_thread(self, mark: str | None) -> None:
        """Back on the store's thread: count the flush; trace how far it reached."""
        self.flushed_commits += 1
        if mark is not None:
            # Test seam (TABLE_STORE_FLUSH_TRACE): the HIL power-cut test cuts the WAL back
            # to exactly what a power cut would leave. The WAL header's salt names the WAL's
            # cycle; the wal-index (the -shm file) holds the number of valid frames, in this
            # machine's byte order (SQLite's file format).
            with open(self._flush_trace, "a", encoding="ascii") as trace:
                trace.write(mark + "\n")

    def committed(self, seal: Seal, *, durable: bool) -> None:
        """Every commit that wrote something ends here. Only a durable one (flushed: it and
        every grouped commit before it are on the disk) moves the anchor, to its own seal:
        after a power cut the store may be ahead of its anchor, never behind."""
        if not durable or self._paths is None:
            return
        if self.anchor_writer is None:
            self._anchor_file = AnchorFile(self._paths.anchor, self._key)
            self.anchor_writer = AnchorWriter(self._anchor_file.write,
                                              interval_s=self._anchor_interval_s)
        # Off the event loop and coalesced (controller/memory/anchor.py): the anchor lags the
        # store by at most its interval (ruling C24), which a power cut could give as well.
        self.anchor_writer.submit(Anchor(self._key_id, seal.commit_no, seal.log_seq,
                                         seal.mac))

    def checkpoint_if_due(self, flushed: bool, *, round_ended: bool = True) -> None:
        """The WAL copied into the database, after a flushed step every CHECKPOINT_AFTER_COMMITS
        commits (never in a card's step), and in a daemon after one that ended a round
        (`round_ended`) if one comes within CHECKPOINT_WAITS_FOR_A_ROUND_END commits more. A
        table that only records grouped steps for hours (a chattering sensor) still
        checkpoints, after CHECKPOINT_AFTER_GROUPED_COMMITS."""
        due = CHECKPOINT_AFTER_COMMITS if flushed else CHECKPOINT_AFTER_GROUPED_COMMITS
        if self._commits_since_checkpoint < due:
            return
        if flushed and not round_ended and (
                self._commits_since_checkpoint < due + CHECKPOINT_WAITS_FOR_A_ROUND_END):
            return
        # PASSIVE: copies what no reader needs; it flushes the WAL and the database file
        # (when it copied anything).
        self._checkpoint()
        # The next writer starts the WAL over from its beginning, which costs that step a
        # few hundred microseconds here (0.3 ms against 0.02 ms), and a flush of the WAL's
        # new header, more on an SD card. Rewriting the header's unused user_version with
        # its own value is that write: it takes the cost here, after a step already
        # flushed, not in the next card's.
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        salt = self._wal_salt()
        self._db.execute(f"PRAGMA user_version = {int(version)}")
        if salt != self._wal_salt():  # a new cycle of the WAL: SQLite flushed its header
            self.checkpoint_flushes += 1
            self._slow_storage(1)
        self._commits_since_checkpoint = 0

    def checkpoint_at_open(self) -> None:
        """A daemon killed before its next checkpoint leaves its WAL behind, and the store
        checkpoints only after flushed steps: a table restarted often (power cuts, a crash
        loop) would otherwise carry an ever longer WAL."""
        self._checkpoint()

    def _checkpoint(self) -> None:
        copied = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[2]
        self.checkpoints += 1
        if self._path != ":memory:" and copied > 0:
            self.checkpoint_flushes += 2  # the WAL, then the database (SQLite's own)
            self._slow_storage(2)

    def _wal_salt(self) -> bytes:
        """The WAL header's salt, which SQLite changes each time it starts the WAL over."""
        if self._path == ":memory:":
            return b""
        try:
            with open(self._path + "-wal", "rb") as wal:
                return os.pread(wal.fileno(), 8, 16)
        except FileNotFoundError:
            return b""

    def flushes(self) -> dict[str, int]:
        """Every flush of this store's files since it was opened, by what made it: the
        steps' (each durable step, or each group of them), the checkpoints' and the
        anchor's."""
        return {"steps": self.flushed_commits, "checkpoints": self.checkpoint_flushes,
                "anchor": self._anchor_file.flushes if self._anchor_file is not None else 0}

    def _slow_storage(self, flushes: int, started: float | None = None) -> None:
        """`flush_delay_s` a flush (`slow_storage_wait`): a step's flush, timed from
        `started`, takes it in all; SQLite's checkpoint flushes, made inside its call and
        not timed one by one here, each take it on top (the stricter choice for them; they
        never delay a report)."""
        if self._flush_delay_s:
            slow_storage_wait(self._flush_delay_s * flushes, started)
