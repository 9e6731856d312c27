"""The one check of critical memory (`verify_store`): the key, the seal, the anchor, the
log's head, every protected table's digest and the log's chain; the same call serves boot,
`tablectl events verify` and the daily full check. The chain's check (controller/memory/
chain.py) may use several processes, which check the log while this one checks the tables."""

from __future__ import annotations

import hmac
import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.errors import shown
from controller.memory.anchor import read_anchor
from controller.memory.chain import ChainRun, verify_chain
from controller.memory.digests import (
    Seal,
    _sealed_rows,
    _trigger_sql,
    digests,
    install_functions,
    log_head,
    table_columns,
)
from controller.memory.errors import ACTION_UNUSABLE, STORE_ERRORS, IntegrityError, unusable
from controller.memory.keys import CriticalPaths
from controller.memory.tables import (
    DEFINITIONS, GROUPED_KINDS, SCHEMA_VERSION, as_stored, stored_schema_number,
)
from controller.memory.macs import CHECKPOINT_META, GENESIS_MAC, KEY_ID_META, canonical, checkpoint_mac, key_id, seal_mac
from controller.text_files import loads_json


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
    # The store's schema number when a newer release wrote it: its tables' definitions and
    # the objects it holds (rulings C28) were not compared, which only that release can do.
    # The daemon refuses such a store (Store.upgrade); an offline check says what it skipped.
    newer_schema: int | None = None
    # Entries after the sealed one, all of kinds that may wait for a flush (a power cut or a
    # kill left them; `_unsealed_tail`): the store seals them when it opens.
    unsealed: int = 0


def _read_seal(db: sqlite3.Connection) -> Seal | None:
    """The store's seal row, None when it is gone. Read before anything is known to be the
    key's: a number edited into text, bytes or a fraction is named, not raised as Python's
    error nor read as another number."""
    row = db.execute("SELECT commit_no, log_seq, log_mac, mac FROM critical_seal").fetchone()
    if row is None:
        return None
    if not (type(row[0]) is int and type(row[1]) is int):
        raise IntegrityError("seal", f"the seal row's commit number or log entry is not a "
                             f"whole number ({row[0]!r}, {row[1]!r}): edited without the key")
    return Seal(row[0], row[1], str(row[2]), str(row[3]))


def _read_digests(db: sqlite3.Connection) -> list[tuple[str, str, int, str]]:
    """The table digests the seal covers (`digests`), read before the seal is checked: a
    row count stored as anything but an integer is named, not raised as Python's error nor
    read as one (`int` would take a 5.5 for the 5 the seal covers)."""
    if db.execute("SELECT 1 FROM critical_digest WHERE typeof(rows) != 'integer'"
                  " LIMIT 1").fetchone():
        raise IntegrityError("seal", "a table digest's row count is not a whole number: "
                             "edited without the key")
    return digests(db)


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
    seal = _read_seal(db)
    sealed = _read_digests(db)
    if seal is None or not hmac.compare_digest(seal.mac, seal_mac(
            key, seal.commit_no, seal.log_seq, seal.log_mac, sealed)):
        # Not this key's seal: the store's key id tells a store another key made from a
        # seal edited or gone. While the seal is this key's, the key id row is a sealed row
        # of the meta table like any other, and an edit of it is named by that table's
        # digest below (not as a wrong key, which would send a technician to the key file).
        stored_key_id = db.execute("SELECT value FROM meta WHERE key = ?",
                                   (KEY_ID_META,)).fetchone()
        if stored_key_id is None or stored_key_id[0] != key_id(key):
            raise IntegrityError("key", "the store was not made with this table's key (store "
                                 f"key id {stored_key_id[0] if stored_key_id else 'none'}, "
                                 f"key id {key_id(key)})")
        if seal is None:
            raise IntegrityError("seal", "the seal row is missing")
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
    unsealed = _unsealed_tail(db, key, seal, head_seq)
    if not unsealed and head_mac != seal.log_mac:
        raise IntegrityError("event log", f"the last entry, {head_seq}, is not the one sealed "
                             "(its MAC differs): the log was rewritten")
    # The chain's workers start here, so that the protected tables are checked while they
    # run; their outcome is taken in its turn below, after the tables' (`ChainRun`). The
    # checkpoint's own failure, too, is raised in its turn.
    start, prev, checkpoint_failure = 1, GENESIS_MAC, None
    if not full:
        try:
            start, prev = _checkpoint(db, key)
        except IntegrityError as exc:
            checkpoint_failure = exc
    chain = checkpoint_failure is None and (
        chain_limit is None or full or head_seq - start + 1 <= chain_limit)
    protected = {name for name, *_ in sealed}
    triggers: dict[str, list[str]] = {}  # the digest triggers' text, by protected table
    foreign: list[tuple[str, str, str]] = []  # (type, name, table) of what no release makes
    definitions: dict[str, str] = {}  # each table's CREATE statement, by name
    for kind, name, table, sql in db.execute(_SCHEMA_OBJECTS):
        if kind == "table":
            definitions[str(name)] = str(sql)
        elif kind == "trigger" and str(name).startswith("cm_") and table in protected:
            triggers.setdefault(str(table), []).append(str(sql))
        else:  # a digest-like trigger on an unprotected table (the log's, say) too
            foreign.append((str(kind), str(name), str(table)))
    run = ChainRun(db, key, start, prev, head_seq, workers) if chain else None
    try:
        state_rows = 0
        settled: dict[str, dict[str, Any]] = {}
        columns_of: dict[str, list[str]] = {}  # each protected table's sealed columns
        for name, columns_json, rows, acc in sealed:
            if name not in tables:
                raise IntegrityError(f"table {name}", f"the table is missing (dropped); it held "
                                     f"{rows} rows")
            columns = columns_of[name] = json.loads(columns_json)
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

        # SQLite's page check runs while the chain's workers do (a full check only): after
        # them it ran alone on one of two cores, a tenth of the whole check. Its verdict
        # still comes last, in its turn below.
        pages_failure = _sqlite_check(db) if full else None
        if checkpoint_failure is not None:
            raise checkpoint_failure
        if run is None:
            start = head_seq + 1
        if start == 1:  # the whole log is read: say how many entries are gone, not the first
            _count_entries(db, head_seq)
        checked = run.result(progress) if run is not None else 0
    finally:
        if run is not None:
            run.stop()
    for name, columns in columns_of.items():  # the data first: it names the edit better
        if triggers.get(name, []) != sorted(_trigger_sql(name, columns)):
            raise IntegrityError(f"table {name}", "its digest triggers were removed or changed")
    # A newer release's store may define its tables otherwise and hold more: it is refused by
    # its schema number as soon as the check passes (Store.upgrade), naming both numbers;
    # an offline check says it did not compare it (`Verified.newer_schema`).
    schema_number = stored_schema_number(db)
    if schema_number <= SCHEMA_VERSION:
        for name, stored in definitions.items():
            if name in DEFINITIONS and as_stored(stored) != DEFINITIONS[name]:
                raise IntegrityError(f"table {name}", "its definition differs from the one "
                                     "this software creates (a column's type or a constraint "
                                     "changed)")
        _refuse_foreign_objects(foreign)
    if pages_failure is not None:
        raise pages_failure
    return Verified(checked, head_seq, start, state_rows, seal.commit_no, behind, head_mac, settled,
                    schema_number if schema_number > SCHEMA_VERSION else None, unsealed)


def _unsealed_tail(db: sqlite3.Connection, key: bytes, seal: Seal, head_seq: int) -> int:
    """How many entries follow the sealed one, after checking them: a step that only
    appends entries that may wait for the next flush is sealed by the next step that may
    not (controller/memory/sealing.py, ruling C29), so a store the daemon did not close (a
    power cut, a kill) may end in entries of GROUPED_KINDS that no seal covers yet. They
    must follow the sealed entry, be of those kinds only and each carry its MAC: what a
    power cut may lose anyway, and nothing else. The few of them are chain-checked here
    whatever the caller's `chain_limit`, since the table restores its open round from them."""
    if head_seq == seal.log_seq:
        return 0
    ends = f"the log ends at entry {head_seq} but the seal records entry {seal.log_seq}"
    if head_seq < seal.log_seq:
        raise IntegrityError("event log", f"{ends}: entries were removed")
    sealed = db.execute("SELECT hash FROM events WHERE seq = ?", (seal.log_seq,)).fetchone()
    if seal.log_seq and (sealed is None or sealed[0] != seal.log_mac):
        raise IntegrityError("event log", f"entry {seal.log_seq}, the last one sealed, is "
                             + ("missing" if sealed is None else "not the one sealed (its MAC "
                                "differs)") + ": the log was rewritten")
    after = int(db.execute("SELECT COUNT(*) FROM events WHERE seq > ?",
                           (seal.log_seq,)).fetchone()[0])
    if after != head_seq - seal.log_seq:
        raise IntegrityError("event log", f"{ends}, and {after} entries follow it: entries "
                             "were removed or added")
    for seq, kind in db.execute("SELECT seq, kind FROM events WHERE seq > ? AND kind NOT IN"
                                f" ({','.join('?' * len(GROUPED_KINDS))}) ORDER BY seq LIMIT 1",
                                (seal.log_seq, *sorted(GROUPED_KINDS))):
        raise IntegrityError("event log", f"{ends}, and entry {seq} after it is a {kind}, "
                             "which is always sealed: entries were added or the seal put back")
    verify_chain(db, key, seal.log_seq + 1, seal.log_mac, end=head_seq)
    return head_seq - seal.log_seq


def _sqlite_check(db: sqlite3.Connection) -> Exception | None:
    """SQLite's own check of every page of the file (quick_check), in a full check only:
    the check above reads each record, but not the pages no record lives on (an index's,
    the free list), where damage would stop a query mid-shift rather than at the daily
    check, which finds it at a quiet hour (0.3 s for a 280 MiB store here). Returns its
    failure, for the caller to raise in its turn: SQLite's own error on a page it cannot
    read as one (verify_file names the store unusable), or the damage it lists."""
    try:
        found = [str(row[0]) for row in db.execute("PRAGMA quick_check(5)")]
    except STORE_ERRORS as exc:
        return exc
    if found != ["ok"]:
        return IntegrityError("store unusable", "SQLite's own check of the file found "
                              f"damaged pages no record is read from: {'; '.join(found)}",
                              ACTION_UNUSABLE)
    return None


# A store's schema: its tables, whose definitions the check compares with this software's
# (controller/memory/tables.py: a table it does not know, of a newer release, is left to the
# schema number's check), and what else it holds besides their own indexes. This software
# makes no views, no indexes of its own and no triggers but the digests' (cm_ins_, cm_del_,
# cm_upd_ on each protected table), whose text the check compares with its own; anything
# else was added outside it (docs/rulings.md C28).
_SCHEMA_OBJECTS = ("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN"
                   " ('table', 'trigger', 'view') OR (type = 'index' AND sql IS NOT NULL)"
                   " ORDER BY sql")


def _refuse_foreign_objects(found: list[tuple[str, str, str]]) -> None:
    """Any other trigger, view or index was added without the software. A trigger is the
    danger: it writes whatever it was given in the table's own steps, which the software
    then seals as its own (a seat's total credited at every log entry, say), so the data
    would pass every later check."""
    if not found:
        return
    kind, name, table = found[0]
    what = f"{kind} {shown(name)}" + (f" on {shown(table)}" if kind != "view" else "")
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    why = ("a trigger added outside the software runs in the table's own steps, and what it "
           "writes would be sealed with them" if kind == "trigger" else
           "the software makes no views and no indexes of its own: the schema was edited "
           "outside it")
    raise IntegrityError("schema", f"{what}{more} is not one of the store's own: {why}")


def _count_entries(db: sqlite3.Connection, head_seq: int) -> None:
    """A whole log's check first counts its entries: a missing stretch is named by its
    first entry and how many of the log's entries are gone."""
    count = int(db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    if count != head_seq:
        gap = db.execute("SELECT MIN(seq) FROM events e WHERE seq > 1 AND NOT EXISTS"
                         " (SELECT 1 FROM events WHERE seq = e.seq - 1)").fetchone()[0]
        first = db.execute("SELECT MIN(seq) FROM events").fetchone()[0]
        missing, present = (1, first) if first != 1 else (
            db.execute("SELECT MAX(seq) FROM events WHERE seq < ?", (gap,)).fetchone()[0] + 1, gap)
        raise IntegrityError("event chain", f"entry {missing} is missing (next present entry "
                             f"is {present}); {head_seq - count} of {head_seq} entries are gone")


def _checkpoint(db: sqlite3.Connection, key: bytes) -> tuple[int, str]:
    """(first entry to check, MAC it must link to) from the last full verification."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (CHECKPOINT_META,)).fetchone()
    if row is None:
        return 1, GENESIS_MAC
    try:
        data = loads_json(row[0])
        seq, mac, tag = int(data["seq"]), str(data["mac"]), str(data["tag"])
    except (ValueError, KeyError, TypeError):
        raise IntegrityError("checkpoint", "the chain checkpoint is unreadable") from None
    if not hmac.compare_digest(tag, checkpoint_mac(key, seq, mac)):
        raise IntegrityError("checkpoint", "the chain checkpoint was not written with the key")
    return seq + 1, mac


def checkpoint_value(key: bytes, seq: int, mac: str) -> str:
    return canonical({"seq": seq, "mac": mac, "tag": checkpoint_mac(key, seq, mac)})


def verify_file(store_path: str, key: bytes, paths: CriticalPaths | None, *,
                full: bool, progress: Callable[[int], None] | None = None,
                workers: int = 1, private_copy: bool = False) -> Verified:
    """The same check on a connection of its own (read-only, one snapshot): for the
    daemon's full verification in a worker thread or a process of its own (controller/
    offload.py, which starts that process with this module's imports only) and for offline
    `tablectl` (which checks a copy, so messages name `paths.store`, the original).

    `private_copy`: `store_path` is a copy made for this check, opened read-write as the
    daemon opens its store at boot. SQLite reads a schema more leniently on a read-only
    connection (a CHECK constraint naming a column that a damaged definition no longer
    has passes there and fails at boot), and the technician must get the boot's words."""
    uri = f"file:{Path(store_path).absolute()}" + ("" if private_copy else "?mode=ro")
    shown = paths.store if paths is not None else Path(store_path)
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except STORE_ERRORS as exc:
        raise unusable(shown, exc) from None
    try:
        install_functions(db, key)
        db.execute("BEGIN")  # one read snapshot for the whole check
        return verify_store(db, key, anchor_path=paths.anchor if paths else None,
                            full=full, progress=progress, workers=workers)
    except STORE_ERRORS as exc:
        raise unusable(shown, exc) from None
    finally:
        db.close()


def reason_text(exc: IntegrityError) -> str:
    return f"{exc.check}: {exc.detail}"


def as_mapping(verified: Verified) -> Mapping[str, Any]:
    return {"entries": verified.entries, "log_seq": verified.log_seq,
            "from_seq": verified.from_seq, "state_rows": verified.state_rows,
            "commit_no": verified.commit_no, "anchor_behind": verified.anchor_behind,
            "unsealed": verified.unsealed}

