"""The table's durable state: SQLite in WAL mode.

Every step that changes money or state is one transaction together with its
entry in the append-only event log. Each log entry carries HMAC-SHA256 over the
entry before it and its own contents, keyed with the table's secret key, and
every other critical table is covered by keyed digests and a seal
(controller/critical.py, docs/architecture.md "Critical memory"): an edit, a
deletion or a rollback anywhere is found by `verify()`, which names where.

Durability follows what a step records (docs/architecture.md, "Durable writes"):
a step whose events are all of GROUPED_KINDS (a card inside a round, a prompt,
seat-sensor and shuffler progress) is committed to the WAL and reaches the disk
with the next flush; every other step (money, locks, awards, meters, faults,
round open and close, shoe changes) is flushed before the transaction returns,
and so before the daemon acts on it or reports it. A power cut can lose only
grouped steps after the last flush, and always a suffix of the log.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from controller import critical
from controller.anchor_writer import AnchorWriter
from controller.events.catalogue import KINDS
from controller.events.codec import EventRecord, decode
from controller.events.records import VigorishCollected
from controller.critical import (  # noqa: F401 - re-exported: the store's own errors
    GENESIS_MAC,
    IntegrityError,
    StoreError,
)

log = structlog.get_logger("store")

SCHEMA_VERSION = 2  # 2: keyed MACs, table digests and the seal (critical memory)
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}
"""Schema N-1 -> N, one function per number N up to SCHEMA_VERSION (none yet: every release
so far writes schema 2). `Store.upgrade` runs the missing ones once, in order, after the
store's check passed, in one transaction with the new number. A release that adds a table
or column adds SCHEMA_VERSION + 1 here (docs/deployment.md, "Upgrade and roll back")."""
GENESIS_HASH = GENESIS_MAC
STORE_TABLES = ("meta", "rounds", "table_state", "seat_totals")

FLUSH_TRACE_ENV = "TABLE_STORE_FLUSH_TRACE"
"""Names a file to which every flush appends how far the WAL is on the disk (the HIL
power-cut test of unflushed steps; unset at a table)."""

CHECKPOINT_AFTER_COMMITS = 500
"""Commits between WAL checkpoints (each a page or a few: about SQLite's own 1000-page
default). The store checkpoints itself, right after a flushed step, so a checkpoint's two
flushes never land on a card's decision."""

GROUPED_KINDS = frozenset({"card", "burn_card", "prompt", "seat_sensor", "shuffle_progress",
                           "late_sensor_change"})
"""Event kinds whose step may wait for the next flush. A lost card is found by the shoe's
card index: inside a round it voids the round, a lost burn card counts as burned (ruling
C7, docs/rulings.md); a lost prompt is issued again by the restored state; sensor and
shuffler progress are shown live, not relied on. Nothing here moves money or decides a
wager. The shoe's first card, which says how many to burn (631a.5(f)), is not grouped."""

OPEN_ROUND_CARDS = "round_cards"
"""The key of the table's saved state (`save_table_state`) holding the open round's cards
(its `round_id` beside it) as they stood when the state was saved: a card costs no write of
the round's row; `close_round` writes the cards there."""

SAVED_AT_SEQ = "saved_at_seq"
"""The key `save_table_state` adds to the saved state: the log's last entry when it was
saved. A card that moves nothing but the shoe's position and the open round's cards does not
save the state (its log entry, in the same commit, holds both); the open round's cards are
those saved, then those logged after it (`Store._open_round_cards`)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq       INTEGER PRIMARY KEY,
    at        REAL    NOT NULL,
    kind      TEXT    NOT NULL,
    severity  TEXT    NOT NULL,
    device    TEXT,
    round_id  INTEGER,
    payload   TEXT    NOT NULL,
    prev_hash TEXT    NOT NULL,
    hash      TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS rounds (
    round_id    INTEGER PRIMARY KEY,
    shoe_no     INTEGER NOT NULL,
    round_no    INTEGER NOT NULL,
    state       TEXT    NOT NULL,      -- open, settled, void
    simulated   INTEGER NOT NULL DEFAULT 0,
    wagers      TEXT    NOT NULL,      -- JSON list of {seat, wager, amount_cents}
    cards       TEXT    NOT NULL,      -- JSON list of {index, card, hand, slot}, at close
    result      TEXT,                  -- JSON
    settlements TEXT,                  -- JSON list
    opened_at   REAL    NOT NULL,
    settled_at  REAL
);
CREATE TABLE IF NOT EXISTS table_state (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    state TEXT NOT NULL,
    data  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS seat_totals (
    seat        INTEGER PRIMARY KEY,
    net_cents   INTEGER NOT NULL,
    wagered_cents INTEGER NOT NULL,
    vig_owed_cents INTEGER NOT NULL DEFAULT 0
);
"""


@dataclass(frozen=True, slots=True)
class Event:
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


_canonical = critical.canonical
# The table's saved state in the order its fields come, not sorted: it is read back only by
# json.loads, and its row's MAC covers the text as stored, so it need not be canonical.
# Sorting its keys was a fifth of encoding it, at every card.
_state_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_FLAT = (str, int, bool, type(None))


def _as_read_back(payload: Mapping[str, Any] | None, payload_json: str) -> dict[str, Any]:
    """The payload as a reader of the log gets it back from `payload_json`. A flat payload
    of strings, whole numbers, booleans and nulls under string keys comes back equal to
    itself with its keys in canonical order: it is copied that way instead of parsed (a
    card's payload and a prompt's are flat)."""
    if payload is not None and all(type(k) is str and type(v) in _FLAT
                                   for k, v in payload.items()):
        return {key: payload[key] for key in sorted(payload)}
    return dict(json.loads(payload_json))


def _entry(record: EventRecord, severity: str | None) -> tuple[str, str, dict[str, Any]]:
    """The kind, severity and payload of a record to append; what is not a catalogued
    record, or a severity its kind does not have, is refused before anything is written."""
    if not isinstance(record, EventRecord):
        raise TypeError(f"the event log takes a typed event record (controller/events), not "
                        f"a {type(record).__name__}: build the kind's record where the event "
                        "happens")
    kind = record.KIND
    entry = KINDS.get(kind)
    if entry is None or entry.record is not type(record):
        raise TypeError(f"event record {type(record).__name__} ({kind!r}) is not the "
                        "catalogue's (controller/events/catalogue.py)")
    chosen = severity or record.severity or entry.severities[0]
    if chosen not in entry.severities:
        raise ValueError(f"event {kind!r} with severity {chosen!r}: allowed: "
                         f"{', '.join(entry.severities)} (controller/events/catalogue.py)")
    return kind, chosen, record.payload()


def entry_hash(key: bytes, prev_hash: str, seq: int, at: float, kind: str, severity: str,
               device: str | None, round_id: int | None, payload_json: str) -> str:
    """The MAC of one log entry (controller.critical.entry_mac)."""
    return critical.entry_mac(key, prev_hash, seq, at, kind, severity, device, round_id,
                              payload_json)


class Store:
    """One SQLite database per table. Not thread-safe: owned by the event loop's thread.

    `key` is the table's critical-memory key (None: the public development key, for tests
    and scratch copies). `paths` names the anchor kept beside the key; with it, every
    durable commit moves the anchor. An existing store is verified before anything is
    written to it (`check=False` leaves that to the caller, e.g. to report instead of
    raise); `create=False` refuses to make a new, empty store where none is.
    """

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time,
                 key: bytes | None = None, paths: critical.CriticalPaths | None = None,
                 create: bool = True, check: bool = True, flush_delay_s: float = 0.0,
                 read_only: bool = False, chain_limit: int | None = None) -> None:
        """``flush_delay_s`` is added to every flush, the way an SD card's flush behaves
        (benchmarks and tests of slow storage; 0 at a table). ``read_only`` opens an existing
        store on a read-only connection with no check and no anchor (``reader``). ``chain_limit``:
        past that many entries since the last full check, the check leaves the log's entries
        to a full check the caller runs next (critical.verify_store)."""
        if read_only and (paths is not None or create or check):
            raise ValueError("a read-only Store has no critical paths and neither creates "
                             "nor checks the store")
        if flush_delay_s < 0:
            raise ValueError(f"flush_delay_s = {flush_delay_s}: must be >= 0")
        self.path = str(path)
        self._clock = clock
        self._flush_delay_s = flush_delay_s
        self.flushed_commits = 0
        """Commits flushed to disk since this Store was opened (benchmarks print it)."""
        self.grouped_commits = 0
        """Commits left in the WAL for the next flush."""
        self.checkpoints = 0
        """WAL checkpoints run (two flushes each)."""
        self._commits_since_checkpoint = 0
        self._tx_must_flush = True
        self._flush_trace = os.environ.get(FLUSH_TRACE_ENV, "")
        self.key = key if key is not None else critical.DEVELOPMENT_KEY
        self.paths = paths
        self._anchor_writer: AnchorWriter[critical.Anchor] | None = None  # at the first anchor
        self.verified: critical.Verified | None = None
        self._in_tx = False
        self._listeners: list[Callable[[Event], None]] = []
        self._after_commit: list[Callable[[], None]] = []
        self._durable_listeners: list[Callable[[critical.Seal, sqlite3.Connection], None]] = []
        self._pending: list[Event] = []
        self._before_commit: dict[str, Callable[[], None]] = {}
        # What this connection last committed, kept so that a step does not read it back:
        # the log's head and the seal's commit counter. They hold until a step of ours
        # rolls back or another connection commits (SQLite's data_version says so); either
        # forgets them (`_forget`) and the next step reads.
        self._log_head: tuple[int, str] | None = None
        self._commit_no: int | None = None
        # The protected tables' digests as our last seal read them; they hold while our
        # steps only append log entries (the log has no digest triggers), which is every
        # card that does not save the table's state.
        self._digests: list[tuple[str, str, int, str]] | None = None
        self._appended = 0  # log entries appended by the step in progress
        self._data_version = -1
        if self.path == ":memory:":
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        else:
            if create:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            # mode=rw never creates a file: a missing store is never silently a new one.
            mode = "ro" if read_only else "rwc" if create else "rw"
            uri = f"file:{Path(self.path).absolute()}?mode={mode}"
            # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None,
                                       check_same_thread=False)
        try:
            self._db.row_factory = sqlite3.Row
            critical.install_functions(self._db, self.key)
            if read_only:
                self._db.execute("PRAGMA query_only=ON")
                return
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL: SQLite itself flushes the WAL only at checkpoints; _commit flushes it
            # after every step that must be durable, which is what FULL would do for all.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._db.execute("PRAGMA foreign_keys=ON")
            # REPLACE deletes the row it replaces; only with recursive triggers does that
            # deletion reach the digest triggers.
            self._db.execute("PRAGMA recursive_triggers=ON")
            fresh = self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
            if fresh:
                if not create:
                    raise IntegrityError("store missing", f"{self.path} is empty")
                self._create()
            elif check:
                self.verified = self.verify(chain_limit=chain_limit)
                self.upgrade()
            if not fresh and check and self.path != ":memory:":
                # A daemon killed before its next checkpoint leaves its WAL behind, and the
                # store checkpoints only after flushed steps: a table restarted often (power
                # cuts, a crash loop) would otherwise carry an ever longer WAL.
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                self.checkpoints += 1
        except BaseException:
            self.close()
            raise

    def _create(self) -> None:
        with self.transaction() as db:
            for statement in (_SCHEMA + critical.DIGEST_SCHEMA).split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT INTO meta(key, value) VALUES ('schema_version', ?)",
                       (str(SCHEMA_VERSION),))
            db.execute("INSERT INTO meta(key, value) VALUES (?, ?)",
                       (critical.KEY_ID_META, critical.key_id(self.key)))
            critical.protect(db, self.key, STORE_TABLES)

    def upgrade(self) -> None:
        """After the check passed: the numbered migrations the store lacks, tables a newer
        version added, and their digests. A store a newer release wrote (a higher schema) is
        refused: this release would misread what it does not know."""
        with self.transaction() as db:
            stored = int(self.meta("schema_version") or SCHEMA_VERSION)
            if stored > SCHEMA_VERSION:
                raise IntegrityError("store schema", (
                    f"{self.path} was written by a newer release (store schema {stored}); this "
                    f"release reads schema {SCHEMA_VERSION} and older: run the release that "
                    "wrote it, or restore the store's copy from before that upgrade"))
            for number in range(stored + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[number](db)
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            if stored != SCHEMA_VERSION:
                db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                           (str(SCHEMA_VERSION),))
            critical.protect(db, self.key, STORE_TABLES)

    def protect(self, tables: tuple[str, ...]) -> None:
        """Cover another module's tables (e.g. the progressive ledger's) by digests."""
        with self.transaction() as db:
            critical.protect(db, self.key, tables)

    def verify(self, *, full: bool = False, chain_limit: int | None = None,
               progress: Callable[[int], None] | None = None) -> critical.Verified:
        """The critical-memory check (controller.critical.verify_store) on this store."""
        try:
            return critical.verify_store(
                self._db, self.key, anchor_path=self.paths.anchor if self.paths else None,
                full=full, chain_limit=chain_limit, progress=progress)
        except sqlite3.DatabaseError as exc:
            raise critical.unusable(Path(self.path), exc) from None

    def set_checkpoint(self, seq: int, mac: str,
                       settled: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """A full verification reached entry `seq` (and found these settled prefixes,
        critical.SETTLED_PREFIX): later boots start after them."""
        rows = [(critical.CHECKPOINT_META, critical.checkpoint_value(self.key, seq, mac))]
        rows += [(critical.SETTLED_META + table, critical.canonical(dict(prefix)))
                 for table, prefix in (settled or {}).items()]
        with self.transaction() as db:
            db.executemany("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO"
                           " UPDATE SET value = excluded.value", rows)

    def close(self) -> None:
        if self._anchor_writer is not None:
            self._anchor_writer.close()  # the last durable commit's anchor, before the store
            self._anchor_writer = None
        self._db.close()

    # --- transactions ---------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        """A step is open: what is written now commits with it (or rolls back with it)."""
        return self._in_tx

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One atomic step. Nested use joins the outer transaction: it only hands over the
        connection (a card's step nests five or six; a generator each was 1 us apiece)."""
        if self._in_tx:
            return nullcontext(self._db)
        return self._step()

    @contextmanager
    def _step(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:  # another connection committed since our last step
            self._forget()
            self._data_version = version
        self._in_tx = True
        self._tx_must_flush = False
        self._appended = 0
        changes = self._db.total_changes
        try:
            yield self._db
            while self._before_commit:  # a hook may ask for another: run until none is left
                self._before_commit.pop(next(iter(self._before_commit)))()
            # Re-seal what this step wrote, in the same transaction (reads seal nothing).
            seal = None
            written = self._db.total_changes - changes  # trigger writes count too
            if written:
                if written != self._appended:  # a row besides the log's: digests moved
                    self._digests = None
                if self._digests is None:
                    self._digests = critical.digests(self._db)
                seal = critical.reseal(self._db, self.key, last_commit_no=self._commit_no,
                                       head=self._log_head, table_digests=self._digests)
        except BaseException:
            self._forget()
            self._db.execute("ROLLBACK")
            self._pending.clear()
            self._before_commit.clear()
            self._in_tx = False
            raise
        try:
            # A step that records nothing is flushed too: only a known kind may wait.
            flushed = self._commit(self._tx_must_flush or not self._pending)
        except BaseException:
            self._forget()  # a COMMIT that failed may or may not have reached the file
            raise
        if seal is not None:
            self._commit_no = seal.commit_no
        self._in_tx = False
        if seal is not None:
            self.committed(seal, durable=flushed)
        pending, self._pending = self._pending, []
        for event in pending:  # listeners see only what was committed
            for listener in self._listeners:
                listener(event)
        if pending:
            for given_out in self._after_commit:
                given_out()
        if seal is not None and flushed:
            # After the step's report, as the checkpoint below: the witness's digest of the
            # money (a few reads and a hash) is not in front of a lock-out or a settlement.
            # Nothing has written since the commit, so it reads the state the seal covers.
            for listener in self._durable_listeners:
                listener(seal, self._db)
        # Only now: what the step decided (a settlement, a lock) is out before the checkpoint's
        # two flushes, which on an SD card would otherwise delay its report.
        self._checkpoint_if_due(flushed)

    def _forget(self) -> None:
        """A step that did not commit leaves nothing it wrote to be trusted: the log's head
        and the commit counter are read from the store again."""
        self._log_head = self._commit_no = self._digests = None

    def before_commit(self, name: str, write: Callable[[], None]) -> None:
        """Run ``write`` once, as the last thing of the current step before it commits (the
        last call for a ``name`` wins); outside a step, at once in a step of its own. A record
        that a step rewrites at every stage (the table's saved state: each card and each
        state change asks for it) is written once, as the step leaves it."""
        if not self._in_tx:
            with self.transaction():
                write()
            return
        self._before_commit[name] = write

    def committed(self, seal: critical.Seal, *, durable: bool) -> None:
        """Every commit that wrote something ends here. Only a durable one (flushed: it and
        every grouped commit before it are on the disk) moves the anchor, to its own seal:
        after a power cut the store may be ahead of its anchor, never behind."""
        if not durable or self.paths is None:
            return
        if self._anchor_writer is None:
            anchor_path, key = self.paths.anchor, self.key
            self._anchor_writer = AnchorWriter(
                lambda anchor: critical.write_anchor(anchor_path, key, anchor))
        # Off the event loop and coalesced (controller/anchor_writer.py): the anchor lags the
        # store by at most ANCHOR_INTERVAL_S, which a power cut could give as well.
        self._anchor_writer.submit(critical.Anchor(
            critical.key_id(self.key), seal.commit_no, seal.log_seq, seal.mac))

    def on_durable_commit(self, listener: Callable[[critical.Seal, sqlite3.Connection], None]
                          ) -> None:
        """`listener` is given every durable commit's seal and this connection, after the
        step's committed entries were given out (before anything else writes), on the
        writer's thread: it must not block (the witness's heads,
        controller/witness/link.py, only take a digest and hand the head to their thread)."""
        self._durable_listeners.append(listener)

    def _commit(self, flush: bool) -> bool:
        """COMMIT, flushed or grouped; returns whether this commit is durable."""
        self._db.execute("COMMIT")
        self._commits_since_checkpoint += 1
        if flush:
            self._flush_wal()
            self.flushed_commits += 1
            self._slow_storage(1)
        else:
            self.grouped_commits += 1
        return flush

    def _checkpoint_if_due(self, flushed: bool) -> None:
        """The WAL copied into the database, after a flushed step every CHECKPOINT_AFTER_COMMITS
        commits (never in a card's step). A table that only records grouped steps for hours
        (a chattering sensor) still checkpoints, ten times later."""
        due = CHECKPOINT_AFTER_COMMITS * (1 if flushed else 10)
        if self._commits_since_checkpoint < due:
            return
        # PASSIVE: copies what no reader needs; it flushes the WAL and the database file.
        self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        # The next writer starts the WAL over from its beginning, which costs that step a
        # few hundred microseconds here (0.3 ms against 0.02 ms) and more on an SD card.
        # Rewriting the header's unused user_version with its own value is that write: it
        # takes the cost here, after a step already flushed, not in the next card's.
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        self._db.execute(f"PRAGMA user_version = {int(version)}")
        self._commits_since_checkpoint = 0
        self.checkpoints += 1
        self._slow_storage(2)

    def _slow_storage(self, flushes: int) -> None:
        if self._flush_delay_s:
            time.sleep(self._flush_delay_s * flushes)  # the loop waits, as on an SD card

    def _flush_wal(self) -> None:
        """What synchronous=FULL does at a WAL commit: flush the WAL, and with it every
        grouped commit before this one."""
        if self.path == ":memory:":
            return
        fd = os.open(self.path + "-wal", os.O_RDONLY)
        try:
            os.fdatasync(fd)
            if self._flush_trace:
                self._trace_flush(fd)
        finally:
            os.close(fd)

    def _trace_flush(self, wal_fd: int) -> None:
        """Test seam (TABLE_STORE_FLUSH_TRACE): note how far the WAL is on the disk now, so
        the HIL power-cut test can cut it back to exactly what a power cut would leave. The
        WAL header's salt names the WAL's cycle; the wal-index (the -shm file) holds the
        number of valid frames, in this machine's byte order (SQLite's file format)."""
        salt = os.pread(wal_fd, 8, 16).hex()
        shm = os.open(self.path + "-shm", os.O_RDONLY)
        try:
            frames = int.from_bytes(os.pread(shm, 4, 16), sys.byteorder)
        finally:
            os.close(shm)
        page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
        with open(self._flush_trace, "a", encoding="ascii") as trace:
            trace.write(f"{salt} {frames} {page_size}\n")

    def subscribe(self, listener: Callable[[Event], None], *,
                  after_each_commit: Callable[[], None] | None = None) -> Callable[[], None]:
        """`listener` is given every committed entry, in order; `after_each_commit`, once a
        commit's entries have all been given out (a socket writer sends them together)."""
        self._listeners.append(listener)
        if after_each_commit is not None:
            self._after_commit.append(after_each_commit)

        def unsubscribe() -> None:
            self._listeners.remove(listener)
            if after_each_commit is not None:
                self._after_commit.remove(after_each_commit)

        return unsubscribe

    # --- event log ------------------------------------------------------------

    def append_event(self, record: EventRecord | str,
                     legacy_payload: Mapping[str, Any] | None = None, *,
                     severity: str | None = None, device: str | None = None,
                     round_id: int | None = None) -> Event:
        """Append one typed record (controller/events) to the hash chain, inside the
        current transaction (or its own): the only way code emits an event. Its payload is
        encoded here, once. `severity`: the record's own, else the catalogue's first for its
        kind; it must be one the catalogue lists for the kind. Anything but a catalogued
        record is refused (TypeError).

        TRANSITIONAL: a kind and a dict (`legacy_payload`) are still taken from the table's
        files (controller/table*.py) while they are restructured; the dict must decode as
        its kind's record, which is then what is written."""
        if isinstance(record, str):
            record = decode(record, legacy_payload or {})
        elif legacy_payload is not None:
            raise TypeError("a typed event record carries its own payload")
        kind, chosen, payload = _entry(record, severity)
        return self.append_entry(kind, payload, severity=chosen, device=device,
                                 round_id=round_id)

    def append_entry(self, kind: str, payload: Mapping[str, Any] | None = None, *,
                     severity: str = "info", device: str | None = None,
                     round_id: int | None = None) -> Event:
        """The log's own append of a payload as given, unchecked: what `append_event` does
        once the record is encoded, and what tests of the chain's mechanics (MACs,
        durability, streaming) write with. Nothing in controller/ but the store calls it
        (tests/controller/test_event_catalogue.py)."""
        body = payload if type(payload) is dict else dict(payload or {})
        with self.transaction() as db:
            if kind not in GROUPED_KINDS:
                self._tx_must_flush = True
            last_seq, prev = self._head(db)
            seq = last_seq + 1
            at = float(self._clock())  # SQLite gives REAL back: hash what it will return
            payload_json = _canonical(body)
            digest = critical.entry_mac(self.key, prev, seq, at, kind, severity, device,
                                        round_id, payload_json)
            db.execute(
                "INSERT INTO events(seq, at, kind, severity, device, round_id, payload, prev_hash, hash)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                (seq, at, kind, severity, device, round_id, payload_json, prev, digest),
            )
            self._log_head = (seq, digest)
            self._appended += 1
            event = Event(seq, at, kind, severity, device, round_id, _as_read_back(body,
                                                                                    payload_json),
                          prev, digest, payload_json)
            self._pending.append(event)
            return event

    def _head(self, db: sqlite3.Connection) -> tuple[int, str]:
        """The log's last entry (seq, MAC) in the step in progress: this connection's own
        if it holds (`_forget`), else read."""
        if self._log_head is None:
            self._log_head = critical.log_head(db)
        return self._log_head

    def events(self, *, after_seq: int = 0, limit: int | None = None, kind: str | None = None,
               device: str | None = None, severity: str | None = None,
               since: float | None = None, oldest_first: bool = False) -> list[Event]:
        """Matching entries after `after_seq`, oldest first: the last `limit` of them, or
        with `oldest_first` the first `limit` (a reader pages forward that way)."""
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
        return [self._event(row) for row in self._db.execute(sql, args)]

    def events_from(self, after_seq: int, count: int) -> list[Event]:
        """The first `count` entries after `after_seq`, oldest first: one page of a stream
        (`events(limit=)` gives the last ones instead)."""
        rows = self._db.execute("SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                                (after_seq, count))
        return [self._event(row) for row in rows]

    def meta(self, key: str) -> str | None:
        """A value kept under `key` in the store's meta table (covered by its digests)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put_meta(self, key: str, value: str) -> None:
        """Keep `value` under `key`, inside the current step (or a step of its own)."""
        with self.transaction() as db:
            db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO"
                       " UPDATE SET value = excluded.value", (key, value))

    def reader(self) -> Store:
        """This store on a read-only connection of its own, for long reads (chain
        verification, large exports) run in a worker thread: the event loop's connection
        is never shared between threads. The caller closes it.

        The view is built afresh, not copied: it has no anchor writer, no critical paths
        and no listeners or pending writes of ours, so closing it stops nothing of this
        store's (a copy once shared the anchor's writer, and one read froze the anchor)."""
        return Store(self.path, clock=self._clock, key=self.key, create=False, check=False,
                     read_only=True)

    @staticmethod
    def _event(row: sqlite3.Row) -> Event:
        return Event(row["seq"], row["at"], row["kind"], row["severity"], row["device"],
                     row["round_id"], json.loads(row["payload"]), row["prev_hash"], row["hash"],
                     row["payload"])

    def verify_chain(self) -> int:
        """Recompute every entry's MAC from the first; returns the number of entries or
        raises IntegrityError naming the first entry where the chain breaks."""
        return critical.verify_chain(self._db, self.key, 1, GENESIS_MAC)

    def quick_check(self) -> None:
        result = [r[0] for r in self._db.execute("PRAGMA quick_check")]
        if result != ["ok"]:
            raise IntegrityError("sqlite quick_check", "; ".join(result[:5]))

    # --- table state ------------------------------------------------------------

    def save_table_state(self, state: str, data: Mapping[str, Any]) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO table_state(id, state, data) VALUES (1, ?, ?)"
                " ON CONFLICT(id) DO UPDATE SET state = excluded.state, data = excluded.data",
                (state, _state_json({**data, SAVED_AT_SEQ: self._head(db)[0]})),
            )

    def load_table_state(self) -> tuple[str, dict[str, Any]] | None:
        """The table's saved state as the table gave it (without the store's SAVED_AT_SEQ)."""
        saved = self._saved_table_state()
        if saved is not None:
            saved[1].pop(SAVED_AT_SEQ, None)
        return saved

    def _saved_table_state(self) -> tuple[str, dict[str, Any]] | None:
        row = self._db.execute("SELECT state, data FROM table_state WHERE id = 1").fetchone()
        return (row["state"], json.loads(row["data"])) if row else None

    # --- rounds -------------------------------------------------------------------

    def open_round(self, shoe_no: int, round_no: int, wagers: list[dict[str, Any]], *,
                   simulated: bool = False) -> int:
        """A new open round. Its cards are not written to its row one by one: while it is
        open each card is in the log and the table's saved state holds them as of its last
        save (`OPEN_ROUND_CARDS`); `close_round` writes them to the row."""
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO rounds(shoe_no, round_no, state, simulated, wagers, cards, opened_at)"
                " VALUES (?, ?, 'open', ?, ?, '[]', ?)",
                (shoe_no, round_no, int(simulated), _canonical(wagers), self._clock()),
            )
            return int(cursor.lastrowid or 0)

    def close_round(self, round_id: int, state: str, result: Mapping[str, Any] | None,
                    settlements: list[dict[str, Any]],
                    cards: Sequence[Mapping[str, Any]]) -> None:
        """Settle or void a round once, with the cards it was dealt; a second attempt raises
        (never settled twice)."""
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE rounds SET state = ?, result = ?, settlements = ?, cards = ?,"
                " settled_at = ? WHERE round_id = ? AND state = 'open'",
                (state, _canonical(result) if result is not None else None,
                 _canonical(settlements), _canonical(list(cards)), self._clock(), round_id),
            )
            if cursor.rowcount != 1:
                raise StoreError(f"round {round_id} is not open: it cannot be closed twice")
            for item in settlements:
                db.execute(
                    "INSERT INTO seat_totals(seat, net_cents, wagered_cents, vig_owed_cents)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT(seat) DO UPDATE SET"
                    " net_cents = net_cents + excluded.net_cents,"
                    " wagered_cents = wagered_cents + excluded.wagered_cents,"
                    " vig_owed_cents = vig_owed_cents + excluded.vig_owed_cents",
                    (item["seat"], item["net_cents"], item["amount_cents"],
                     item.get("vig_marked_cents", 0)),
                )

    def rounds(self, *, limit: int = 10, after_round_id: int | None = None
               ) -> list[dict[str, Any]]:
        """The last `limit` rounds, oldest first; with `after_round_id`, the first `limit`
        rounds after it instead (a reader pages through every round that way)."""
        if after_round_id is not None:
            rows = self._db.execute(
                "SELECT * FROM rounds WHERE round_id > ? ORDER BY round_id LIMIT ?",
                (after_round_id, limit)).fetchall()
        else:
            rows = self._db.execute(
                "SELECT * FROM (SELECT * FROM rounds ORDER BY round_id DESC LIMIT ?)"
                " ORDER BY round_id", (limit,)).fetchall()
        return self._rounds(rows)

    def round(self, round_id: int) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM rounds WHERE round_id = ?", (round_id,)).fetchone()
        return self._rounds([row])[0] if row else None

    def open_rounds(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT * FROM rounds WHERE state = 'open' ORDER BY round_id")
        return self._rounds(rows)

    def _rounds(self, rows: Iterable[sqlite3.Row]) -> list[dict[str, Any]]:
        """Rounds as readers see them: an open round's cards so far are the table's saved
        state's and those logged after it (the row gets them when the round closes)."""
        found = [self._round(row) for row in rows]
        still_open = [r for r in found if r["state"] == "open"]
        saved = self._saved_table_state() if still_open else None
        state = saved[1] if saved else {}
        for record in still_open:
            if record["round_id"] == state.get("round_id") and OPEN_ROUND_CARDS in state:
                record["cards"] = self._open_round_cards(state)
        return found

    def _open_round_cards(self, state: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The open round's cards: those saved with the table's state, then the round's
        card entries logged after it (SAVED_AT_SEQ), in the order they were dealt."""
        cards = list(state[OPEN_ROUND_CARDS])
        if state.get(SAVED_AT_SEQ) is None:  # saved by a version that saved every card
            return cards
        for row in self._db.execute(
                "SELECT payload FROM events WHERE seq > ? AND kind = 'card' AND round_id = ?"
                " ORDER BY seq", (state[SAVED_AT_SEQ], state["round_id"])):
            logged = json.loads(row[0])
            cards.append({"index": logged["index"], "card": logged["card"],
                          "hand": logged["hand"], "slot": logged["slot"]})
        return cards

    @staticmethod
    def _round(row: sqlite3.Row) -> dict[str, Any]:
        return {
            "round_id": row["round_id"], "shoe_no": row["shoe_no"], "round_no": row["round_no"],
            "state": row["state"], "simulated": bool(row["simulated"]),
            "wagers": json.loads(row["wagers"]), "cards": json.loads(row["cards"]),
            "result": json.loads(row["result"]) if row["result"] else None,
            "settlements": json.loads(row["settlements"]) if row["settlements"] else [],
            "opened_at": row["opened_at"], "settled_at": row["settled_at"],
        }

    def seat_totals(self) -> dict[int, dict[str, int]]:
        return {
            row["seat"]: {"net_cents": row["net_cents"], "wagered_cents": row["wagered_cents"],
                          "vig_owed_cents": row["vig_owed_cents"]}
            for row in self._db.execute("SELECT * FROM seat_totals ORDER BY seat")
        }

    def collect_vigorish(self, seat: int) -> int:
        """631a.13(d)(2): marked vigorish collected; returns the cents collected."""
        with self.transaction() as db:
            row = db.execute("SELECT vig_owed_cents FROM seat_totals WHERE seat = ?", (seat,)).fetchone()
            owed = int(row["vig_owed_cents"]) if row else 0
            if owed:
                db.execute("UPDATE seat_totals SET vig_owed_cents = 0, net_cents = net_cents - ?"
                           " WHERE seat = ?", (owed, seat))
                self.append_event(VigorishCollected(seat, owed))
            return owed
