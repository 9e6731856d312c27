"""The one check of critical memory (`verify_store`): the key, the seal, the anchor, the
log's head, every protected table's digest and the log's chain; the same call serves boot,
`tablectl events verify` and the daily full check. The chain's check may use several
processes (`verify_chain`)."""

from __future__ import annotations

import hmac
import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.memory.anchor import read_anchor
from controller.memory.digests import _sealed_rows, _trigger_sql, digests, log_head, table_columns, Seal
from controller.memory.errors import ACTION_TAMPER, IntegrityError
from controller.memory.macs import CHECKPOINT_META, GENESIS_MAC, KEY_ID_META, canonical, checkpoint_mac, entry_mac, key_id, seal_mac


@dataclass(frozen=True, slots=True)
class Verified:
    entries: int          # log entries whose MAC was recomputed
    log_seq: int          # the last entry in the log
    from_seq: int         # first entry checked (1 for a full check)
    state_rows: int       # protected rows whose MACs were recomputed
    commit_no: int
    anchor_behind: int    # durable commits the anchor had not yet recorded (power cut)
    log_mac: str = GENESIS_MAC  # the MAC of entry `log_seq`, read in the same snapshot
    settled: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # full check only


def verify_store(db: sqlite3.Connection, key: bytes, *, anchor_path: Path | None,
                 full: bool = False, chain_limit: int | None = None,
                 progress: Callable[[int], None] | None = None, workers: int = 1) -> Verified:
    """Check the store on `db` (which must see committed data only). Raises IntegrityError
    naming the first failure; the same call serves boot, `tablectl events verify` and the
    daily full check. `chain_limit`: where more than that many entries follow the last full
    check's checkpoint, none of them is read here (the seal still covers the log's head):
    the daemon's start, whose full check of the whole history follows at once in a process
    of its own and holds play until it passes, so that ready never waits on the history.
    `workers`: processes the chain's check may use (`verify_chain`)."""
    # The anchor first, before the first read starts the snapshot (a deferred BEGIN): it only
    # ever moves to a commit already made, so read first it is never ahead of the seal read
    # next, however the table writes meanwhile. Read after the seal, a durable commit made in
    # between would look like a rollback. Its failure is still reported in its turn below.
    anchor_failure: IntegrityError | None = None
    try:
        anchor = read_anchor(anchor_path, key) if anchor_path is not None else None
    except IntegrityError as exc:
        anchor, anchor_failure = None, exc
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for required in ("meta", "events", "critical_digest", "critical_seal"):
        if required not in tables:
            raise IntegrityError("schema", f"table {required} is missing (dropped)")
    stored_key_id = db.execute("SELECT value FROM meta WHERE key = ?", (KEY_ID_META,)).fetchone()
    if stored_key_id is None or stored_key_id[0] != key_id(key):
        raise IntegrityError("key", "the store was not made with this table's key "
                             f"(store key id {stored_key_id[0] if stored_key_id else 'none'}, "
                             f"key id {key_id(key)})")

    seal_row = db.execute("SELECT commit_no, log_seq, log_mac, mac FROM critical_seal").fetchone()
    if seal_row is None:
        raise IntegrityError("seal", "the seal row is missing")
    seal = Seal(int(seal_row[0]), int(seal_row[1]), str(seal_row[2]), str(seal_row[3]))
    sealed = digests(db)
    if not hmac.compare_digest(seal.mac, seal_mac(key, seal.commit_no, seal.log_seq,
                                                  seal.log_mac, sealed)):
        raise IntegrityError("seal", f"the seal of commit {seal.commit_no} does not match the "
                             "table digests and log head it covers (edited without the key)")

    behind = 0
    if anchor_failure is not None:
        raise anchor_failure
    if anchor is None:
        if anchor_path is not None:
            raise IntegrityError("anchor", "the anchor file is missing; the store cannot be "
                                 "shown to be the latest")
    else:
        if anchor.key_id != key_id(key):
            raise IntegrityError("anchor", "the anchor was made with another key")
        if seal.commit_no < anchor.commit_no:
            raise IntegrityError("rollback", f"the store is at commit {seal.commit_no} (log "
                                 f"entry {seal.log_seq}) but its anchor recorded commit "
                                 f"{anchor.commit_no} (log entry {anchor.log_seq}): an older "
                                 "copy was put back, or the WAL was cut or damaged")
        if seal.commit_no == anchor.commit_no and not hmac.compare_digest(seal.mac,
                                                                          anchor.seal_mac):
            raise IntegrityError("rollback", f"commit {seal.commit_no} in the store is not the "
                                 "commit its anchor recorded: the store was replaced")
        behind = seal.commit_no - anchor.commit_no

    head_seq, head_mac = log_head(db)
    if head_seq != seal.log_seq:
        raise IntegrityError("event log", f"the log ends at entry {head_seq} but the seal "
                             f"records entry {seal.log_seq}: entries were removed or added")
    if head_mac != seal.log_mac:
        raise IntegrityError("event log", f"the last entry, {head_seq}, is not the one sealed "
                             "(its MAC differs): the log was rewritten")
    triggers: dict[str, list[str]] = {}
    for table, sql in db.execute("SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger'"
                                 " AND name LIKE 'cm\\_%' ESCAPE '\\' ORDER BY sql"):
        triggers.setdefault(str(table), []).append(str(sql))
    state_rows = 0
    settled: dict[str, dict[str, Any]] = {}
    for name, columns_json, rows, acc in sealed:
        if name not in tables:
            raise IntegrityError(f"table {name}", f"the table is missing (dropped); it held "
                                 f"{rows} rows")
        columns = json.loads(columns_json)
        if table_columns(db, name) != columns:
            raise IntegrityError(f"table {name}", "its columns differ from the sealed ones")
        found, found_acc, prefix = _sealed_rows(db, key, name, columns, full)
        if prefix is not None:
            settled[name] = prefix
        state_rows += found
        if found != rows:
            raise IntegrityError(f"table {name}", f"{rows} rows sealed, {found} found (rows "
                                 "deleted or inserted)")
        if found_acc != acc:
            raise IntegrityError(f"table {name}", "a row differs from what was sealed "
                                 "(edited without the key)")

    start, prev = 1, GENESIS_MAC
    if not full:
        start, prev = _checkpoint(db, key)
    chain = chain_limit is None or full or head_seq - start + 1 <= chain_limit
    if not chain:
        start = head_seq + 1
    if start == 1:  # the whole log is read: say how many entries are gone, not just the first
        count = int(db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        if count != head_seq:
            gap = db.execute("SELECT MIN(seq) FROM events e WHERE seq > 1 AND NOT EXISTS"
                             " (SELECT 1 FROM events WHERE seq = e.seq - 1)").fetchone()[0]
            first = db.execute("SELECT MIN(seq) FROM events").fetchone()[0]
            missing, present = (1, first) if first != 1 else (
                db.execute("SELECT MAX(seq) FROM events WHERE seq < ?", (gap,)).fetchone()[0] + 1, gap)
            raise IntegrityError("event chain", f"entry {missing} is missing (next present entry "
                                 f"is {present}); {head_seq - count} of {head_seq} entries are gone")
    checked = verify_chain(db, key, start, prev, progress, end=head_seq,
                           workers=workers) if chain else 0
    for name, columns_json, _rows, _acc in sealed:  # the data first: it names the edit better
        if triggers.get(name, []) != sorted(_trigger_sql(name, json.loads(columns_json))):
            raise IntegrityError(f"table {name}", "its digest triggers were removed or changed")
    return Verified(checked, head_seq, start, state_rows, seal.commit_no, behind, head_mac, settled)


def _checkpoint(db: sqlite3.Connection, key: bytes) -> tuple[int, str]:
    """(first entry to check, MAC it must link to) from the last full verification."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (CHECKPOINT_META,)).fetchone()
    if row is None:
        return 1, GENESIS_MAC
    try:
        data = json.loads(row[0])
        seq, mac, tag = int(data["seq"]), str(data["mac"]), str(data["tag"])
    except (ValueError, KeyError, TypeError):
        raise IntegrityError("checkpoint", "the chain checkpoint is unreadable") from None
    if not hmac.compare_digest(tag, checkpoint_mac(key, seq, mac)):
        raise IntegrityError("checkpoint", "the chain checkpoint was not written with the key")
    return seq + 1, mac


def checkpoint_value(key: bytes, seq: int, mac: str) -> str:
    return canonical({"seq": seq, "mac": mac, "tag": checkpoint_mac(key, seq, mac)})


PARALLEL_CHAIN_ENTRIES = 200_000
"""A stretch of the log this long or longer is checked by several processes at once
(`verify_chain`'s `workers`): each entry's MAC covers the previous entry's MAC as stored
beside it, so every range checks alone, and the ranges' joins are checked after."""


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
    if workers > 1 and end - start + 1 >= PARALLEL_CHAIN_ENTRIES:
        path = db.execute("PRAGMA database_list").fetchone()[2]
        if path:
            from concurrent.futures.process import BrokenProcessPool

            try:
                return _verify_chain_in_parallel(path, key, start, prev, end, workers)
            except (BrokenProcessPool, OSError, RuntimeError):
                pass  # no processes to be had here (limits, a frozen main): one pass below
    cursor = db.cursor()
    cursor.row_factory = None
    expected, count = start, 0
    for seq, at, kind, severity, device, round_id, payload, prev_mac, mac in cursor.execute(
            "SELECT seq, at, kind, severity, device, round_id, payload, prev_hash, hash"
            " FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq", (start, end)):
        if seq != expected:
            raise IntegrityError("event chain", f"entry {expected} is missing (next present "
                                 f"entry is {seq})")
        if prev_mac != prev:
            raise IntegrityError("event chain", f"entry {seq} does not link to entry "
                                 f"{seq - 1} (prev_hash differs)")
        if not hmac.compare_digest(entry_mac(key, prev, seq, at, kind, severity, device,
                                             round_id, payload), str(mac)):
            raise IntegrityError("event chain", f"entry {seq} ({kind}) was altered: its MAC "
                                 "does not match its contents")
        prev, expected, count = mac, expected + 1, count + 1
        if progress is not None and count % 100_000 == 0:
            progress(count)
    if expected <= end:  # the range's last entries are gone
        after = db.execute("SELECT MIN(seq) FROM events WHERE seq > ?", (expected,)).fetchone()
        raise IntegrityError("event chain", f"entry {expected} is missing " + (
            f"(next present entry is {after[0]})" if after[0] is not None
            else f"(the log ends at entry {expected - 1})"))
    return count


def _verify_chain_in_parallel(path: str, key: bytes, start: int, prev: str, end: int,
                              workers: int) -> int:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    bounds = [start + (end - start + 1) * n // workers for n in range(workers + 1)]
    ranges = [(lo, hi - 1) for lo, hi in zip(bounds, bounds[1:]) if lo < hi]
    with ProcessPoolExecutor(len(ranges), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_verify_range, path, key, lo, hi, prev if lo == start else None)
                   for lo, hi in ranges]
        outcomes = [future.result() for future in futures]  # in log order
    count = 0
    for outcome in outcomes:
        if outcome[0] == "failed":
            raise IntegrityError(*outcome[1:])
        count += outcome[1]
    return count


def _verify_range(path: str, key: bytes, lo: int, hi: int, prev: str | None
                  ) -> tuple[Any, ...]:
    """One range of a parallel check, in its own process: entries `lo`..`hi`, the first
    linked to `prev` or (None) to the entry before it as stored, which that entry's own
    range checks. An IntegrityError travels as its parts (it does not pickle)."""
    db = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True)
    try:
        if prev is None:
            row = db.execute("SELECT hash FROM events WHERE seq = ?", (lo - 1,)).fetchone()
            if row is None:
                return ("failed", "event chain", f"entry {lo - 1} is missing (next present "
                        f"entry is {lo})", ACTION_TAMPER)
            prev = str(row[0])
        return ("ok", verify_chain(db, key, lo, prev, end=hi))
    except IntegrityError as exc:
        return ("failed", exc.check, exc.detail, exc.action)
    finally:
        db.close()


def reason_text(exc: IntegrityError) -> str:
    return f"{exc.check}: {exc.detail}"


def as_mapping(verified: Verified) -> Mapping[str, Any]:
    return {"entries": verified.entries, "log_seq": verified.log_seq,
            "from_seq": verified.from_seq, "state_rows": verified.state_rows,
            "commit_no": verified.commit_no, "anchor_behind": verified.anchor_behind}

