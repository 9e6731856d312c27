"""The store's schema and its log entries: creating and migrating its tables (their
definitions and number, and which event kinds may wait for the next flush, are
controller/memory/tables.py's), and one entry as readers get it back."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from controller.events.codec import EventRecord, decode
from controller.memory import critical
from controller.memory.macs import unchecked_encoder
from controller.memory.tables import (
    DIGEST_TABLES_SQL, SCHEMA_VERSION, STORE_TABLES_SQL, statements, stored_schema_number,
)

MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}
"""Schema N-1 -> N, one function per number N up to SCHEMA_VERSION (none yet: every release
so far writes schema 2). `Store.upgrade` runs the missing ones once, in order, after the
store's check passed, in one transaction with the new number. A release that adds a table
or column adds SCHEMA_VERSION + 1 here (docs/deployment.md, "Upgrade and roll back")."""
GENESIS_HASH = critical.GENESIS_MAC
STORE_TABLES = ("meta", "rounds", "table_state", "seat_totals")

OPEN_ROUND_CARDS = "round_cards"
"""The key of the table's saved state (`save_table_state`) holding the open round's cards
(its `round_id` beside it) as they stood when the state was saved: a card costs no write of
the round's row; `close_round` writes the cards there."""

SAVED_AT_SEQ = "saved_at_seq"
"""The key `save_table_state` adds to the saved state: the log's last entry when it was
saved. A card that moves nothing but the shoe's position and the open round's cards does not
save the state (its log entry, in the same commit, holds both); the open round's cards are
those saved, then those logged after it (`rounds.open_round_cards`)."""


class Event(NamedTuple):
    """One log entry as its readers get it. A named tuple, not a frozen dataclass: as
    immutable, and built in a quarter of the time (two a card)."""

    seq: int
    at: float
    kind: str
    severity: str
    device: str | None
    round_id: int | None
    payload: dict[str, Any]
    prev_hash: str
    hash: str
    payload_json: str  # the payload as stored: the text the entry's MAC covers

    def record(self) -> EventRecord:
        """The entry as its typed record (controller/events); EventDecodeError if the
        payload does not fit its kind."""
        return decode(self.kind, self.payload)


# The table's saved state in the order its fields come, not sorted: it is read back only by
# json.loads, and its row's MAC covers the text as stored, so it need not be canonical.
# Sorting its keys was a fifth of encoding it, at every card.
# Without the encoder's circular check (a mark per dict and list, a third of the encoding):
# the saved state is plain data made by `SavedState.to_json` (macs.unchecked_encoder).
state_json = unchecked_encoder(json.JSONEncoder(separators=(",", ":"), ensure_ascii=False))
_FLAT = frozenset({str, int, bool, type(None)})


def as_read_back(payload: Mapping[str, Any] | None, payload_json: str) -> dict[str, Any]:
    """The payload as a reader of the log gets it back from `payload_json`. A flat payload
    of strings, whole numbers, booleans and nulls under string keys comes back equal to
    itself with its keys in canonical order: it is copied that way instead of parsed (a
    card's payload and a prompt's are flat)."""
    flat = flat_read_back(payload) if payload is not None else None
    return flat if flat is not None else dict(json.loads(payload_json))


def flat_read_back(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """`as_read_back` of a flat payload, a new dict; None if it is not flat."""
    for key, value in payload.items():
        if type(key) is not str or type(value) not in _FLAT:
            return None
    return dict(sorted(payload.items()))


def entry_hash(key: bytes, prev_hash: str, seq: int, at: float, kind: str, severity: str,
               device: str | None, round_id: int | None, payload_json: str) -> str:
    """The MAC of one log entry (controller.memory.macs.entry_mac)."""
    return critical.entry_mac(key, prev_hash, seq, at, kind, severity, device, round_id,
                              payload_json)


def create(db: sqlite3.Connection, key: bytes) -> None:
    """A new store's tables, its schema number and key id, and their digests."""
    for statement in statements(STORE_TABLES_SQL, DIGEST_TABLES_SQL):
        db.execute(statement)
    db.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)",
               (str(SCHEMA_VERSION),))
    db.execute("INSERT INTO meta(key, value) VALUES (?, ?)",
               (critical.KEY_ID_META, critical.key_id(key)))
    critical.protect(db, key, STORE_TABLES)


def upgrade(db: sqlite3.Connection, key: bytes, path: str) -> None:
    """After the check passed: the numbered migrations the store lacks, tables a newer
    version added, and their digests. A store a newer release wrote (a higher schema) is
    refused: this release would misread what it does not know."""
    stored = stored_schema_number(db)
    if stored > SCHEMA_VERSION:
        raise critical.IntegrityError("store schema", (
            f"{path} was written by a newer release (store schema {stored}); this "
            f"release reads schema {SCHEMA_VERSION} and older: run the release that "
            "wrote it, or restore the store's copy from before that upgrade"))
    for number in range(stored + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[number](db)
    for statement in statements(STORE_TABLES_SQL):
        db.execute(statement)
    if stored != SCHEMA_VERSION:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                   (str(SCHEMA_VERSION),))
    critical.protect(db, key, STORE_TABLES)


def events(db: sqlite3.Connection, *, after_seq: int, limit: int | None, kind: str | None,
           device: str | None, severity: str | None, since: float | None,
           oldest_first: bool) -> list[Event]:
    """Store.events: matching entries after `after_seq`, oldest first."""
    sql = "SELECT * FROM events WHERE seq > ?"
    args: list[Any] = [after_seq]
    for column, value in (("kind", kind), ("device", device), ("severity", severity)):
        if value is not None:
            sql += f" AND {column} = ?"
            args.append(value)
    if since is not None:
        sql += " AND at >= ?"
        args.append(since)
    sql += " ORDER BY seq"
    if limit is not None and oldest_first:
        sql += " LIMIT ?"
        args.append(limit)
    elif limit is not None:
        sql = f"SELECT * FROM ({sql.replace('ORDER BY seq', 'ORDER BY seq DESC')} LIMIT ?) ORDER BY seq"
        args.append(limit)
    return [event_of(row) for row in db.execute(sql, args)]


def event_of(row: sqlite3.Row) -> Event:
    """One log entry read back (a row of `SELECT * FROM events`)."""
    return Event(row["seq"], row["at"], row["kind"], row["severity"], row["device"],
                 row["round_id"], json.loads(row["payload"]), row["prev_hash"], row["hash"],
                 row["payload"])


def connect(path: str, *, create: bool, read_only: bool) -> sqlite3.Connection:
    """The store's connection, set up as the store writes: WAL, flushed by the store itself,
    never checkpointed by SQLite on its own; or read-only (``read_only``)."""
    if path == ":memory:":
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    else:
        if create:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # mode=rw never creates a file: a missing store is never silently a new one.
        mode = "ro" if read_only else "rwc" if create else "rw"
        uri = f"file:{Path(path).absolute()}?mode={mode}"
        # isolation_level=None: the store issues BEGIN IMMEDIATE / COMMIT itself.
        db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        db.row_factory = sqlite3.Row
        if read_only:
            db.execute("PRAGMA query_only=ON")
            return db
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: SQLite itself flushes the WAL only at checkpoints; the store flushes it
        # after every step that must be durable (controller/memory/durability.py), which is
        # what FULL would do for all.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA wal_autocheckpoint=0")
        db.execute("PRAGMA foreign_keys=ON")
        # REPLACE deletes the row it replaces; only with recursive triggers does that
        # deletion reach the digest triggers.
        db.execute("PRAGMA recursive_triggers=ON")
    except BaseException:
        db.close()
        raise
    return db
