"""Critical memory: the keyed MACs that make the store tamper-evident, and their check.

Design (docs/architecture.md, "Critical memory"):

- Every event-log entry carries HMAC-SHA256(key, previous MAC + its contents): the chain.
- Every other critical table (rounds, table state, seat totals, meta, the progressive
  meters, wagers, awards, rounds, mystery secrets and outbox) is summed into a per-table
  digest: the count of its rows and the sum, modulo 2**256, of HMAC(key, table + row) over
  its rows. SQLite triggers keep the digests current inside the writing transaction, so no
  write path can forget them; the sum is order-free, so an insert, update or delete costs
  one or two MACs, however large the table.
- One seal row binds the digests, the head of the log and a commit counter under the key.
  `Store.transaction()` re-seals every transaction that wrote something.
- An anchor file outside the store, next to the key, holds the counter and seal of the last
  durable commit, written atomically. A store behind its anchor was rolled back (an older
  copy put back, the WAL lost or cut); a store ahead of it is a power cut between the
  commit and the anchor write, which is normal.

`verify_store` is the one check: the daemon runs it at boot, `tablectl events verify` runs
it through the daemon or offline. At boot it checks everything except the part of the log
that the last full verification already covered (its checkpoint is a MACed meta row);
`full=True` checks every entry and moves the checkpoint.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from controller.errors import ControllerError

GENESIS_MAC = "0" * 64
KEY_BYTES = 32
MODULUS = 2**256
ZERO_DIGEST = "0" * 64
# A store made without a key (unit tests, offline tools on a scratch copy) is keyed with
# this public value; the daemon never opens such a store, because its key id differs.
DEVELOPMENT_KEY = b"tabled development key: never used by a live table."
CHECKPOINT_META = "chain_checkpoint"
KEY_ID_META = "key_id"

DIGEST_SCHEMA = """
CREATE TABLE IF NOT EXISTS critical_digest (
    name    TEXT PRIMARY KEY,    -- a protected table
    columns TEXT    NOT NULL,    -- JSON list of the columns its row MACs cover
    rows    INTEGER NOT NULL,
    acc     TEXT    NOT NULL     -- hex: sum of HMAC(key, table, row) mod 2**256
);
CREATE TABLE IF NOT EXISTS critical_seal (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    commit_no INTEGER NOT NULL,  -- transactions that wrote something, ever
    log_seq   INTEGER NOT NULL,  -- the last event-log entry at that commit
    log_mac   TEXT    NOT NULL,
    mac       TEXT    NOT NULL
);
"""


class StoreError(ControllerError):
    """The durable store cannot be used as it is."""


class IntegrityError(StoreError):
    """A critical-memory check failed; `check` names which one, `action` what to do next."""

    def __init__(self, check: str, detail: str, action: str = "") -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail
        self.action = action or ACTION_TAMPER


ACTION_TAMPER = ("do not play; keep the store and its critical-memory directory as evidence, "
                 "call the floor supervisor and the vendor; restore the store from its backup "
                 "or have a supervisor clear critical memory (tabled --clear-store)")
ACTION_UNUSABLE = ("do not play; check the disk and the file named (space, permissions, "
                   "damage), keep the files as evidence, then restore the store from its backup "
                   "or have a supervisor clear critical memory (tabled --clear-store)")
ACTION_INIT = ("a new table: initialise its critical memory once with 'tabled --config FILE "
               "--init-store' (docs/deployment.md)")


def key_id(key: bytes) -> str:
    """A public fingerprint of the key: which key made this store, without revealing it."""
    return hmac.new(key, b"tabled key id", hashlib.sha256).hexdigest()[:16]


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(obj: Any) -> str:
    """JSON with sorted keys, no spaces, UTF-8 as is: one text for one value."""
    return _CANONICAL.encode(obj)


def entry_mac(key: bytes, prev_mac: str, seq: int, at: float, kind: str, severity: str,
              device: str | None, round_id: int | None, payload_json: str) -> str:
    """The MAC of one log entry, in hex: HMAC-SHA256(key, UTF-8 of the canonical JSON list
    [previous MAC, seq, repr(time), kind, severity, device, round, payload JSON]); so an
    auditor holding the key can recompute it."""
    return mac_of(key, entry_material(prev_mac, seq, at, kind, severity, device, round_id,
                                      payload_json).encode("utf-8")).hex()


@lru_cache(maxsize=4)
def _keyed(key: bytes) -> hmac.HMAC:
    """HMAC-SHA256 with the key already absorbed. A card's step takes five to seven MACs
    (its log entries, the rows it changes, the seal); each copies this state instead of
    hashing the key's two padded blocks again, which was half of a MAC's cost."""
    return hmac.new(key, digestmod="sha256")


def mac_of(key: bytes, material: bytes) -> bytes:
    """HMAC-SHA256(key, material): the same bytes as hmac.digest(key, material, "sha256")."""
    keyed = _keyed(key).copy()
    keyed.update(material)
    return keyed.digest()


_json_string = json.encoder.encode_basestring  # the escaping _CANONICAL applies (UTF-8 as is)


def entry_material(prev_mac: str, seq: int, at: float, kind: str, severity: str,
                   device: str | None, round_id: int | None, payload_json: str) -> str:
    """The text entry_mac covers: canonical([prev_mac, seq, repr(at), kind, severity, device,
    round_id, payload_json]), written out field by field because it runs for every entry
    (a third of the encoder's time); the two are the same text (tests/controller/
    test_critical_memory.py compares them)."""
    return (f"[{_json_string(prev_mac)},{int.__repr__(seq)},{_json_string(repr(at))},"
            f"{_json_string(kind)},{_json_string(severity)},"
            f"{'null' if device is None else _json_string(device)},"
            f"{'null' if round_id is None else int.__repr__(round_id)},"
            f"{_json_string(payload_json)}]")


def row_mac(key: bytes, table: str, values: Sequence[Any]) -> int:
    """One protected row's MAC as a number: HMAC-SHA256(key, table name, NUL, Python's repr
    of the row's tuple), big-endian. repr is exact for SQLite's value types (int, float,
    str, bytes, None), and `digest_of` computes the same bytes in its own loop."""
    material = f"{table}\x00{tuple(values)!r}".encode()
    return int.from_bytes(mac_of(key, material), "big")


def seal_mac(key: bytes, commit_no: int, log_seq: int, log_mac: str,
             digests: Iterable[tuple[str, str, int, str]]) -> str:
    return mac_of(key, seal_material(commit_no, log_seq, log_mac, digests).encode("utf-8")).hex()


def seal_material(commit_no: int, log_seq: int, log_mac: str,
                  digests: Iterable[tuple[str, str, int, str]]) -> str:
    """The text seal_mac covers: canonical(["seal", commit_no, log_seq, log_mac,
    sorted(digests)]), written out field by field because every commit seals (the same
    text: tests/controller/test_critical_memory.py compares them)."""
    rows = ",".join(f"[{_json_string(name)},{_json_string(columns)},{int.__repr__(rows)},"
                    f"{_json_string(acc)}]" for name, columns, rows, acc in sorted(digests))
    return (f'["seal",{int.__repr__(commit_no)},{int.__repr__(log_seq)},'
            f"{_json_string(log_mac)},[{rows}]]")


def checkpoint_mac(key: bytes, seq: int, mac: str) -> str:
    return hmac.new(key, canonical(["checkpoint", seq, mac]).encode(), hashlib.sha256).hexdigest()


def install_functions(db: sqlite3.Connection, key: bytes) -> None:
    """The SQL function the digest triggers call: cm_mix(acc, sign, table, column values...)."""
    # The last row added to each table, with its MAC: an update takes out the row's old
    # values, which are most often the ones this connection last put in (the table's state,
    # the open round), so their MAC is not computed twice. A MAC depends only on the key, the
    # table and the values, so a remembered one is the MAC those values have.
    added: dict[str, tuple[tuple[Any, ...], int]] = {}

    def mix(acc: str, sign: int, table: str, *values: Any) -> str:
        known = added.get(table)
        mac = (known[1] if known is not None and _same_values(known[0], values)
               else row_mac(key, table, values))
        if sign > 0:
            added[table] = (values, mac)
        total = (int(acc, 16) + sign * mac) % MODULUS
        return f"{total:064x}"

    db.create_function("cm_mix", -1, mix, deterministic=True)


def _same_values(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether the two rows have the same repr, which is what row_mac covers: equal values
    of the same types (1 == 1.0 == True, and 0.0 == -0.0, but their reprs differ)."""
    return len(a) == len(b) and all(
        type(x) is type(y) and x == y and (type(x) is not float or x.hex() == y.hex())
        for x, y in zip(a, b))


def table_columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]


def _trigger_sql(table: str, columns: Sequence[str]) -> list[str]:
    def values(prefix: str) -> str:
        return ", ".join(f'{prefix}."{c}"' for c in columns)

    update = 'UPDATE critical_digest SET {rows}acc = {acc} WHERE name = \'{t}\';'
    add = f"cm_mix(acc, 1, '{table}', {values('NEW')})"
    sub = f"cm_mix(acc, -1, '{table}', {values('OLD')})"
    both = f"cm_mix(cm_mix(acc, -1, '{table}', {values('OLD')}), 1, '{table}', {values('NEW')})"
    return [
        f'CREATE TRIGGER "cm_ins_{table}" AFTER INSERT ON "{table}" BEGIN '
        + update.format(rows="rows = rows + 1, ", acc=add, t=table) + " END",
        f'CREATE TRIGGER "cm_del_{table}" AFTER DELETE ON "{table}" BEGIN '
        + update.format(rows="rows = rows - 1, ", acc=sub, t=table) + " END",
        f'CREATE TRIGGER "cm_upd_{table}" AFTER UPDATE ON "{table}" BEGIN '
        + update.format(rows="", acc=both, t=table) + " END",
    ]


def protect(db: sqlite3.Connection, key: bytes, tables: Iterable[str]) -> None:
    """Cover these tables by digests (inside the caller's transaction); idempotent.

    A table seen for the first time, or whose columns changed (a schema migration, run
    only after the store passed its check), gets fresh triggers and a digest computed
    from its present rows.
    """
    for table in tables:
        columns = table_columns(db, table)
        row = db.execute("SELECT columns FROM critical_digest WHERE name = ?", (table,)).fetchone()
        if row is not None and json.loads(row[0]) == columns:
            continue
        for kind in ("ins", "del", "upd"):
            db.execute(f'DROP TRIGGER IF EXISTS "cm_{kind}_{table}"')
        rows, acc = digest_of(db, key, table, columns)
        db.execute("INSERT INTO critical_digest(name, columns, rows, acc) VALUES (?,?,?,?)"
                   " ON CONFLICT(name) DO UPDATE SET columns = excluded.columns,"
                   " rows = excluded.rows, acc = excluded.acc",
                   (table, json.dumps(columns), rows, acc))
        for statement in _trigger_sql(table, columns):
            db.execute(statement)


def digest_of(db: sqlite3.Connection, key: bytes, table: str, columns: Sequence[str], *,
              after_rowid: int = 0, up_to_rowid: int | None = None) -> tuple[int, str]:
    """(rows, sum of their row MACs) over the table, or over a rowid range of it."""
    cursor = db.cursor()
    cursor.row_factory = None  # plain tuples, exactly what the triggers hand cm_mix
    names = ", ".join(f'"{c}"' for c in columns)
    sql, args = f'SELECT {names} FROM "{table}" WHERE rowid > ?', [after_rowid]
    if up_to_rowid is not None:
        sql += " AND rowid <= ?"
        args.append(up_to_rowid)
    # row_mac, unrolled: this loop runs over the sealed rows at every boot.
    prefix, number = f"{table}\x00".encode(), int.from_bytes
    keyed = _keyed(key)
    total, rows = 0, 0
    for values in cursor.execute(sql, args):
        mac = keyed.copy()
        mac.update(prefix + repr(values).encode())
        total += number(mac.digest(), "big")
        rows += 1
    return rows, f"{total % MODULUS:064x}"


# Tables whose rows stop changing: rows before the first one matching the condition never
# change again (a round is written while open; settled or void, the store never updates it).
# A full check records such a prefix (its last rowid, rows and MAC sum) in meta, sealed like
# any meta row; boot then re-reads only the rows after it, so boot time follows the activity
# since the last full check, not the table's age. An edit inside the prefix is found by the
# next full check, as an edit to a log entry before the checkpoint is.
SETTLED_PREFIX = {"rounds": "state = 'open'"}
SETTLED_META = "settled_prefix:"


def settled_prefix(db: sqlite3.Connection, key: bytes, table: str, still_open: str,
                   columns: Sequence[str]) -> dict[str, Any]:
    first_open = db.execute(f'SELECT MIN(rowid) FROM "{table}" WHERE {still_open}').fetchone()[0]
    last = (int(first_open) - 1 if first_open is not None else
            int(db.execute(f'SELECT COALESCE(MAX(rowid), 0) FROM "{table}"').fetchone()[0]))
    rows, acc = digest_of(db, key, table, columns, up_to_rowid=last)
    return {"last_rowid": last, "rows": rows, "acc": acc}


def _sealed_rows(db: sqlite3.Connection, key: bytes, table: str, columns: Sequence[str],
                 full: bool) -> tuple[int, str, dict[str, Any] | None]:
    """(rows, MAC sum) of the whole table, read in full or after its settled prefix; and,
    for a full check, the table's new settled prefix."""
    still_open = SETTLED_PREFIX.get(table)
    if still_open is None:
        return (*digest_of(db, key, table, columns), None)
    if full:
        prefix = settled_prefix(db, key, table, still_open, columns)
        tail_rows, tail_acc = digest_of(db, key, table, columns, after_rowid=prefix["last_rowid"])
        total = (int(prefix["acc"], 16) + int(tail_acc, 16)) % MODULUS
        return prefix["rows"] + tail_rows, f"{total:064x}", prefix
    row = db.execute("SELECT value FROM meta WHERE key = ?", (SETTLED_META + table,)).fetchone()
    if row is None:
        return (*digest_of(db, key, table, columns), None)
    try:
        known = json.loads(row[0])
        last, known_rows, known_acc = int(known["last_rowid"]), int(known["rows"]), known["acc"]
    except (ValueError, KeyError, TypeError):
        raise IntegrityError(f"table {table}", "its settled-prefix record is unreadable") from None
    tail_rows, tail_acc = digest_of(db, key, table, columns, after_rowid=last)
    return (known_rows + tail_rows,
            f"{(int(known_acc, 16) + int(tail_acc, 16)) % MODULUS:064x}", None)


@dataclass(frozen=True, slots=True)
class Seal:
    commit_no: int
    log_seq: int
    log_mac: str
    mac: str


def log_head(db: sqlite3.Connection) -> tuple[int, str]:
    row = db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1])) if row else (0, GENESIS_MAC)


def digests(db: sqlite3.Connection) -> list[tuple[str, str, int, str]]:
    return [(str(r[0]), str(r[1]), int(r[2]), str(r[3])) for r in
            db.execute("SELECT name, columns, rows, acc FROM critical_digest ORDER BY name")]


def reseal(db: sqlite3.Connection, key: bytes, *, last_commit_no: int | None = None,
           head: tuple[int, str] | None = None,
           table_digests: list[tuple[str, str, int, str]] | None = None) -> Seal:
    """Seal what this transaction wrote (called just before its COMMIT). A caller that knows
    the sealed commit counter, the log's head or the digests as this transaction leaves
    them passes them (the store does, for every step after its first); otherwise they are
    read."""
    if last_commit_no is None:
        row = db.execute("SELECT commit_no FROM critical_seal WHERE id = 1").fetchone()
        last_commit_no = int(row[0]) if row else 0
    commit_no = last_commit_no + 1
    seq, mac = head if head is not None else log_head(db)
    if table_digests is None:
        table_digests = digests(db)
    seal = Seal(commit_no, seq, mac, seal_mac(key, commit_no, seq, mac, table_digests))
    db.execute("INSERT INTO critical_seal(id, commit_no, log_seq, log_mac, mac) VALUES (1,?,?,?,?)"
               " ON CONFLICT(id) DO UPDATE SET commit_no = excluded.commit_no,"
               " log_seq = excluded.log_seq, log_mac = excluded.log_mac, mac = excluded.mac",
               (seal.commit_no, seal.log_seq, seal.log_mac, seal.mac))
    return seal


# --- the anchor: outside the store ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where the last durable commit left the store: kept beside the key, not in the store."""

    key_id: str
    commit_no: int
    log_seq: int
    seal_mac: str

    def body(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "commit_no": self.commit_no, "log_seq": self.log_seq,
                "seal_mac": self.seal_mac}


def anchor_mac(key: bytes, anchor: Anchor) -> str:
    return hmac.new(key, canonical(["anchor", anchor.body()]).encode(), hashlib.sha256).hexdigest()


def write_anchor(path: Path, key: bytes, anchor: Anchor) -> None:
    """Atomically: write a temporary file, fsync it, rename it over the anchor, fsync the
    directory, so a power cut leaves either the old anchor or the new one, never half."""
    text = canonical({**anchor.body(), "mac": anchor_mac(key, anchor)}) + "\n"
    replace_durably(path, text.encode())


def replace_durably(path: Path, data: bytes) -> None:
    """`path` now holds `data`, whole, on the disk: a temporary file (mode 0600) written and
    flushed, renamed over `path`, and the directory flushed. A power cut leaves the old
    contents or the new, never half (the anchor, the witness's outbox)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_anchor(path: Path, key: bytes) -> Anchor | None:
    """The anchor, or None if there is none; raises IntegrityError if it is not genuine."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IntegrityError("anchor", f"cannot read {path}: {exc.strerror}",
                             ACTION_UNUSABLE) from None
    try:
        data = json.loads(text)
        anchor = Anchor(str(data["key_id"]), int(data["commit_no"]), int(data["log_seq"]),
                        str(data["seal_mac"]))
        genuine = hmac.compare_digest(str(data["mac"]), anchor_mac(key, anchor))
    except (ValueError, KeyError, TypeError):
        genuine = False
    if not genuine:
        raise IntegrityError("anchor", f"{path} is damaged or was not written with this "
                             "table's key")
    return anchor


# --- the key --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CriticalPaths:
    """The key and the anchor of one store: a directory only the daemon's user can open."""

    store: Path
    directory: Path

    @classmethod
    def for_store(cls, store_path: str | Path, directory: str | Path | None = None
                  ) -> CriticalPaths:
        store = Path(store_path)
        return cls(store, Path(directory) if directory else
                   store.with_name(store.stem + ".critical"))

    @property
    def key(self) -> Path:
        return self.directory / "key"

    @property
    def anchor(self) -> Path:
        return self.directory / "anchor"


def create_key(paths: CriticalPaths) -> bytes:
    """A new random key, mode 0600 in a 0700 directory; refuses to replace an existing key."""
    paths.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(paths.directory, 0o700)
    key = os.urandom(KEY_BYTES)
    fd = os.open(paths.key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key.hex().encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


def load_key(paths: CriticalPaths) -> bytes:
    try:
        text = paths.key.read_text().strip()
    except FileNotFoundError:
        if paths.store.exists():
            raise IntegrityError("key", f"no key at {paths.key}: the store at {paths.store} "
                                 "cannot be verified without the key it was made with",
                                 "restore the critical-memory directory from its backup, or "
                                 "have a supervisor clear critical memory (tabled "
                                 "--clear-store)") from None
        raise IntegrityError("not initialised", f"no store at {paths.store} and no key at "
                             f"{paths.key}", ACTION_INIT) from None
    except PermissionError:
        raise IntegrityError("key", f"{paths.key} is not readable by this user; the key is "
                             "readable by the daemon's user only", "run this as the daemon's "
                             "user (sudo -u tabled ...)") from None
    except OSError as exc:
        raise IntegrityError("key", f"cannot read {paths.key}: {exc.strerror}",
                             ACTION_UNUSABLE) from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise IntegrityError("key", f"{paths.key} does not hold a {KEY_BYTES}-byte key in hex")
    return key


def unusable(path: Path, exc: sqlite3.DatabaseError) -> IntegrityError:
    """What SQLite's error means for the technician: the same words at boot and offline."""
    text = str(exc)
    if "disk is full" in text or getattr(exc, "sqlite_errorcode", 0) == 13:  # SQLITE_FULL
        return IntegrityError("store unusable", f"the disk holding {path} is full",
                              "free space on the disk (or replace it), then restart the daemon;"
                              " the store itself is kept")
    if "readonly" in text or "unable to open" in text:
        return IntegrityError("store unusable", f"{path} cannot be opened for writing ({text})",
                              "give the daemon's user read and write permission on the store "
                              "and its directory, then restart the daemon")
    if "disk I/O error" in text:
        return IntegrityError("store unusable", f"{path} cannot be written or read (disk I/O "
                              "error: a full, read-only or failing disk)", ACTION_UNUSABLE)
    if "not a database" in text:
        return IntegrityError("store unusable", f"{path} is not a SQLite store: its header is "
                              "damaged", ACTION_UNUSABLE)
    return IntegrityError("store unusable", f"{path}: {text} (damaged pages)", ACTION_UNUSABLE)



# --- the check --------------------------------------------------------------------------------


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
