"""The per-table digests and the seal: SQLite triggers sum each protected row's MAC into
its table's digest inside the writing transaction, and the seal binds the digests, the log's
head and a commit counter under the key (docs/architecture.md, "Critical memory")."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any, NamedTuple

from controller.memory.errors import IntegrityError
from controller.memory.macs import GENESIS_MAC, MODULUS, mac_of, seal_mac
from controller.text_files import loads_json


def digest_text(total: int) -> str:
    """A table's digest (a sum already reduced modulo 2**256) as stored: 64 hex digits, the
    same as f"{total:064x}", for about half the instructions (a settlement mixes a dozen)."""
    return total.to_bytes(32, "big").hex()


def install_functions(db: sqlite3.Connection, key: bytes) -> None:
    """The SQL function the digest triggers call: cm_mix(acc, sign, table, column values...)."""
    # The MACs of the rows this connection last mixed in or out, by the material they
    # cover (the table and the values' repr, `row_mac`): an update takes out a row's old
    # values, which are most often ones this connection put in (the table's state, the
    # open round, a seat's totals from the last settlement), so their MAC is not computed
    # twice. A MAC depends only on the key and that material, so a remembered one is exact.
    known: dict[str, int] = {}
    # The digests this connection last wrote, by their text: the next row of the same table
    # (a settlement's seats, an update's second half) gets that text back as `acc`, which
    # is then not read as a number again (64 hex digits: a tenth of a small row's mix).
    totals: dict[str, int] = {}

    def mix(acc: str, sign: int, table: str, *values: Any) -> str:
        material = f"{table}\x00{values!r}"
        mac = known.get(material)
        if mac is None:
            if len(known) >= _REMEMBERED_ROWS:
                known.clear()
            mac = known[material] = int.from_bytes(mac_of(key, material.encode()), "big")
        before = totals.get(acc)
        if before is None:
            before = int(acc, 16)
        # Modulo 2**256 by a mask (the same number, negatives included); the triggers'
        # sign is 1 (a row in) or -1 (a row out): no 256-bit product or division.
        total = (before + mac if sign == 1 else before - mac) & _LOW_BITS
        text = digest_text(total)
        if len(totals) >= _REMEMBERED_ROWS:
            totals.clear()
        totals[text] = total
        return text

    db.create_function("cm_mix", -1, mix, deterministic=True)


_LOW_BITS = MODULUS - 1  # x & _LOW_BITS == x % MODULUS for every int x (MODULUS = 2**256)

# Rows whose MACs a connection remembers: a settlement changes a dozen (the round, a seat's
# totals at each seat, the table's state), and a round's steps fewer than this in all.
_REMEMBERED_ROWS = 64


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
    # row_mac, its material made here: this loop runs over the sealed rows at every boot.
    prefix, number = f"{table}\x00".encode(), int.from_bytes
    total, rows = 0, 0
    for values in cursor.execute(sql, args):
        total += number(mac_of(key, prefix + repr(values).encode()), "big")
        rows += 1
    return rows, digest_text(total % MODULUS)


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
        return prefix["rows"] + tail_rows, digest_text(total), prefix
    row = db.execute("SELECT value FROM meta WHERE key = ?", (SETTLED_META + table,)).fetchone()
    if row is None:
        return (*digest_of(db, key, table, columns), None)
    try:
        known = loads_json(row[0])
        last, known_rows, known_acc = int(known["last_rowid"]), int(known["rows"]), known["acc"]
    except (ValueError, KeyError, TypeError):
        raise IntegrityError(f"table {table}", "its settled-prefix record is unreadable") from None
    tail_rows, tail_acc = digest_of(db, key, table, columns, after_rowid=last)
    return (known_rows + tail_rows,
            digest_text((int(known_acc, 16) + int(tail_acc, 16)) % MODULUS), None)


class Seal(NamedTuple):
    """What a commit's seal binds (a named tuple: made at every commit)."""

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


_SEAL_UPDATE = ("UPDATE critical_seal SET commit_no = ?, log_seq = ?, log_mac = ?, mac = ?"
                " WHERE id = 1")
_new_seal = partial(tuple.__new__, Seal)  # Seal(...) without the named tuple's Python __new__


def reseal(db: sqlite3.Connection, key: bytes, *, last_commit_no: int | None = None,
           head: tuple[int, str] | None = None,
           table_digests: list[tuple[str, str, int, str]] | None = None,
           digests_text: str | None = None, writes: sqlite3.Cursor | None = None) -> Seal:
    """Seal what this transaction wrote (called just before its COMMIT). A caller that knows
    the sealed commit counter, the log's head or the digests as this transaction leaves
    them passes them (the store does, for every step after its first), and the digests'
    part of the seal's material if it kept it (`macs.digests_material`); otherwise they
    are read. `writes`: a cursor the caller keeps for its steps, to write the seal on."""
    known_row = last_commit_no is not None  # the caller committed that seal row itself
    if last_commit_no is None:
        row = db.execute("SELECT commit_no FROM critical_seal WHERE id = 1").fetchone()
        last_commit_no = int(row[0]) if row else 0
    commit_no = last_commit_no + 1
    seq, mac = head if head is not None else log_head(db)
    if table_digests is None:
        table_digests = digests(db)
    values = (commit_no, seq, mac, seal_mac(key, commit_no, seq, mac, table_digests,
                                            digests_text=digests_text))
    seal = _new_seal(values)
    write = (writes or db).execute
    # The row the caller committed is updated in place (every step but a store's first);
    # otherwise, or if it is gone, it is written whole. Bound from the plain tuple: sqlite3
    # reads a tuple's items directly, a subclass's through the sequence protocol.
    if not known_row or write(_SEAL_UPDATE, values).rowcount != 1:
        write("INSERT INTO critical_seal(id, commit_no, log_seq, log_mac, mac) VALUES (1,?,?,?,?)"
              " ON CONFLICT(id) DO UPDATE SET commit_no = excluded.commit_no,"
              " log_seq = excluded.log_seq, log_mac = excluded.log_mac, mac = excluded.mac", seal)
    return seal

