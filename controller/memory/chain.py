"""The event log's chain check: every entry's MAC recomputed from its stored fields, each
entry linked to the one before it (docs/architecture.md, "Critical memory"). A long stretch
is split into ranges checked at once by worker processes of their own (`ChainRun`).

A worker is a fresh interpreter that imports this module and what it needs (sqlite3, the
MACs, the errors: about 40 ms), not a multiprocessing child: one of those imports its
parent's main module again, which in the daemon's check is the whole daemon (0.3-0.5 s of
CPU here before the first entry is read, and again for every worker).
"""

from __future__ import annotations

import hmac
import json
import pickle
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.memory.errors import ACTION_TAMPER, IntegrityError
from controller.memory.macs import KNOWN_JSON_STRINGS, json_string, known_json_string, mac_pads

PARALLEL_CHAIN_ENTRIES = 200_000
"""A stretch of the log this long or longer is checked by several processes at once
(`verify_chain`'s `workers`): each entry's MAC covers the previous entry's MAC as stored
beside it, so every range checks alone, and the ranges' joins are checked after."""

_ROWS = ("SELECT seq, at, kind, severity, device, round_id, payload, prev_hash, hash"
         " FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq")
# The worker's own start: the parent's import path first (as multiprocessing gives its
# children), so a daemon run from a source tree finds this module as its parent did.
_WORKER = ("import sys, json; sys.path[:] = json.loads(sys.stdin.readline()); "
           "from controller.memory.chain import _serve; _serve()")


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
        self._workers: list[subprocess.Popen[bytes]] = []
        if workers > 1 and end - start + 1 >= PARALLEL_CHAIN_ENTRIES and sys.executable:
            path = db.execute("PRAGMA database_list").fetchone()[2]
            if path:  # not an in-memory store, which no other process can see
                self._start_workers(str(Path(path).absolute()), workers)

    def _start_workers(self, path: str, workers: int) -> None:
        start, end = self._start, self._end
        bounds = [start + (end - start + 1) * n // workers for n in range(workers + 1)]
        ranges = [(lo, hi - 1) for lo, hi in zip(bounds, bounds[1:]) if lo < hi]
        try:
            for lo, hi in ranges:
                worker = subprocess.Popen([sys.executable, "-c", _WORKER],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                self._workers.append(worker)
                # The key goes through the pipe, never the command line others can read.
                request = {"db": path, "key": self._key.hex(), "lo": lo, "hi": hi,
                           "prev": self._prev if lo == start else None}
                assert worker.stdin is not None
                worker.stdin.write(f"{json.dumps(sys.path)}\n{json.dumps(request)}\n".encode())
                worker.stdin.close()
        except OSError:  # no processes to be had here (limits): one pass in `result`
            self.stop()

    def result(self, progress: Callable[[int], None] | None = None) -> int:
        """The entries checked; the first failure in log order raised as IntegrityError
        (or what a worker's check raised otherwise, such as a damaged file's error)."""
        outcomes = [_outcome(worker) for worker in self._workers]
        self._workers = []
        if not outcomes or any(outcome is None for outcome in outcomes):
            # Single pass: a short stretch, or a worker that died without an answer.
            return _check_range(self._db, self._key, self._start, self._prev, self._end,
                                progress)
        count = 0
        for outcome in outcomes:  # in log order
            assert outcome is not None
            if outcome[0] == "failed":
                raise IntegrityError(*outcome[1:])
            if outcome[0] == "raised":
                raise outcome[1]
            count += outcome[1]
        return count

    def stop(self) -> None:
        for worker in self._workers:
            worker.kill()
            worker.wait()
            if worker.stdout is not None:
                worker.stdout.close()
        self._workers = []


def _outcome(worker: subprocess.Popen[bytes]) -> tuple[Any, ...] | None:
    """A worker's answer (its own pickle, through its pipe), or None if it gave none."""
    assert worker.stdout is not None
    with worker.stdout:
        answer = worker.stdout.read()
    worker.wait()
    try:
        outcome: tuple[Any, ...] = pickle.loads(answer)
    except Exception:  # no answer or a cut one: the worker died (killed, out of memory)
        return None
    return outcome


def _serve() -> None:
    """A worker process's body (`_WORKER`): one range of a parallel check, its entries `lo`
    to `hi`, the first linked to `prev` or (None) to the entry before it as stored, which
    that entry's own range checks. Answers ("ok", count), ("failed", check, detail,
    action) (an IntegrityError does not pickle) or ("raised", exception)."""
    request = json.loads(sys.stdin.readline())
    lo, hi, prev = int(request["lo"]), int(request["hi"]), request["prev"]
    outcome: tuple[Any, ...]
    try:
        db = sqlite3.connect(f"{Path(request['db']).as_uri()}?mode=ro", uri=True)
        try:
            if prev is None:
                row = db.execute("SELECT hash FROM events WHERE seq = ?", (lo - 1,)).fetchone()
                if row is None:
                    raise IntegrityError("event chain", f"entry {lo - 1} is missing (next "
                                         f"present entry is {lo})", ACTION_TAMPER)
                prev = str(row[0])
            outcome = ("ok", _check_range(db, bytes.fromhex(request["key"]), lo, prev, hi))
        finally:
            db.close()
    except IntegrityError as exc:
        outcome = ("failed", exc.check, exc.detail, exc.action)
    except Exception as exc:  # raised in the parent as a single pass would raise it
        try:
            pickle.dumps(exc)
        except Exception:
            exc = RuntimeError(f"the chain's worker failed: {exc!r}")
        outcome = ("raised", exc)
    sys.stdout.buffer.write(pickle.dumps(outcome))
    sys.stdout.flush()


def _check_range(db: sqlite3.Connection, key: bytes, start: int, prev: str, end: int,
                 progress: Callable[[int], None] | None = None) -> int:
    """One pass over entries `start`..`end`: this loop runs a million times at every start
    of the daemon, so an entry's MAC is written out here rather than by calls. It is
    macs.entry_mac's: mac_of (HMAC on the key's hashed pads, their copy methods looked up
    once) over entry_material's text, the same f-string with the same conversions, which
    fail alike on a stored value of the wrong type (tests/controller/test_parallel_chain.py
    checks entries with every kind of text against entry_mac). One step is skipped: the
    previous MAC is escaped as a JSON string only for the first entry; every later one is
    a MAC this loop has just found equal to a hex digest, which has nothing to escape."""
    cursor = db.cursor()
    cursor.row_factory = None
    inner, outer = mac_pads(key)
    copy_inner, copy_outer, compare = inner.copy, outer.copy, hmac.compare_digest
    known, json_text, float_text, int_text = (KNOWN_JSON_STRINGS, json_string,
                                             float.__repr__, int.__repr__)
    quoted_prev, expected = json_text(prev), start
    for seq, at, kind, severity, device, round_id, payload, prev_mac, mac in cursor.execute(
            _ROWS, (start, end)):
        if seq != expected:
            raise IntegrityError("event chain", f"entry {expected} is missing (next present "
                                 f"entry is {seq})")
        if prev_mac != prev:
            raise IntegrityError("event chain", f"entry {seq} does not link to entry "
                                 f"{seq - 1} (prev_hash differs)")
        digest = copy_inner()
        digest.update(
            f"[{quoted_prev},{int_text(seq)},\"{float_text(at)}\","
            f"{known.get(kind) or known_json_string(kind)},"
            f"{known.get(severity) or known_json_string(severity)},"
            f"{'null' if device is None else known.get(device) or known_json_string(device)},"
            f"{'null' if round_id is None else int_text(round_id)},{json_text(payload)}]"
            .encode())
        mac_digest = copy_outer()
        mac_digest.update(digest.digest())
        if not compare(mac_digest.hexdigest(), str(mac)):
            raise IntegrityError("event chain", f"entry {seq} ({kind}) was altered: its MAC "
                                 "does not match its contents")
        prev, quoted_prev = mac, f'"{mac}"'
        expected += 1
        if progress is not None and (expected - start) % 100_000 == 0:
            progress(expected - start)
    if expected <= end:  # the range's last entries are gone
        after = db.execute("SELECT MIN(seq) FROM events WHERE seq > ?", (expected,)).fetchone()
        raise IntegrityError("event chain", f"entry {expected} is missing " + (
            f"(next present entry is {after[0]})" if after[0] is not None
            else f"(the log ends at entry {expected - 1})"))
    return expected - start
