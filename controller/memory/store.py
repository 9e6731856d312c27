"""The table's durable state: SQLite in WAL mode.

Every step that changes money or state is one transaction together with its entry in the
append-only event log. Each log entry carries HMAC-SHA256 over the entry before it and its
own contents, keyed with the table's secret key, and every other critical table is covered
by keyed digests and a seal (controller/memory/critical.py, docs/architecture.md "Critical
memory"): an edit, a deletion or a rollback anywhere is found by `verify()`, naming where.

Durability follows what a step records (docs/architecture.md, "Durable writes"): a step
whose events are all of GROUPED_KINDS (a card inside a round, a prompt, seat-sensor and
shuffler progress) is committed to the WAL and reaches the disk with the next flush (the
table's waits in memory until the next step that writes: `step`, docs/rulings.md C31); every
other step (money, locks, awards, meters, faults, round open and close, shoe changes) is
flushed before the transaction returns, or, with group commit (the daemon, `group_commits`),
before anything reports it (controller/memory/durability.py, delivery.py). A power cut can
lose only what no one was told of, and always a suffix of the log.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import structlog

from controller.events.codec import EventRecord, Payload
from controller.events.records import SettledWager, VigorishCollected
from controller.memory import critical, schema
from controller.memory import rounds as round_rows
from controller.memory.critical import GENESIS_MAC, IntegrityError, StoreError
from controller.memory.errors import STORE_ERRORS
from controller.memory.delivery import Delivery
from controller.memory.durability import CHECKPOINT_AFTER_COMMITS, FLUSH_TRACE_ENV, Durability
from controller.memory.entries import RecordEntries
from controller.memory.sealing import StepSeal
from controller.memory.steps import Steps
from controller.memory.schema import (
    GENESIS_HASH, OPEN_ROUND_CARDS, SAVED_AT_SEQ, STORE_TABLES,
    Event, as_read_back, entry_hash, state_json,
)
from controller.memory.tables import GROUPED_KINDS, SCHEMA_VERSION

__all__ = [  # the store's own names, and those its users import from here
    "CHECKPOINT_AFTER_COMMITS", "Event", "FLUSH_TRACE_ENV", "GENESIS_HASH", "GENESIS_MAC",
    "GROUPED_KINDS", "IntegrityError", "OPEN_ROUND_CARDS", "SAVED_AT_SEQ", "SCHEMA_VERSION",
    "STORE_TABLES", "Store", "StoreError", "entry_hash"]

log = structlog.get_logger("store")


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
                 read_only: bool = False, chain_limit: int | None = None,
                 anchor_interval_s: float = critical.ANCHOR_INTERVAL_S,
                 seal_every_step: bool = False) -> None:
        """``flush_delay_s``: the least a step's flush takes, an SD card's stand-in in
        benchmarks and tests (0 at a table; `Durability`). ``anchor_interval_s``: the most
        the anchor lags the store (`[store] anchor_interval_s`, docs/rulings.md C24).
        ``seal_every_step``: no step waits for the next one's seal (`[store]`, C29).
        ``read_only`` opens an existing store on a read-only connection with no check and no
        anchor (``reader``). ``chain_limit``: past that many entries since the last full
        check, the check leaves the log's entries to a full check the caller runs next."""
        if read_only and (paths is not None or create or check):
            raise ValueError("a read-only Store has no critical paths and neither creates "
                             "nor checks the store")
        self.path = str(path)
        self._clock = clock
        self.key = key if key is not None else critical.DEVELOPMENT_KEY
        self.paths = paths
        self.verified: critical.Verified | None = None
        self._db = schema.connect(self.path, create=create, read_only=read_only)
        self._records = RecordEntries()
        self._seal = StepSeal(self._db, self.key, every_step=seal_every_step)
        self._durability = Durability(self._db, self.path, self.key, paths,
                                      flush_delay_s=flush_delay_s,
                                      anchor_interval_s=anchor_interval_s)
        self._delivery = Delivery(self._db, self._durability)
        self._steps = Steps(self._db, self._seal, self._durability, self._delivery,
                            key=self.key, clock=clock)
        try:
            critical.install_functions(self._db, self.key)
            if read_only:
                return
            fresh = self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
            if fresh:
                if not create:
                    raise IntegrityError("store missing", f"{self.path} is empty")
                self._create()
            elif check:
                self.verified = self.verify(chain_limit=chain_limit)
                if self.verified.unsealed:  # a power cut or a kill left them: sealed now
                    self._seal.owe()
                    self._steps.seal_owed()
                self.upgrade()
            if not fresh and check and self.path != ":memory:":
                self._durability.checkpoint_at_open()
        except BaseException:
            self.close()
            raise

    def _create(self) -> None:
        with self.transaction() as db:
            schema.create(db, self.key)

    def upgrade(self) -> None:
        """After the check passed: the numbered migrations the store lacks, tables a newer
        version added, and their digests (`schema.upgrade`)."""
        with self.transaction() as db:
            schema.upgrade(db, self.key, self.path)

    def protect(self, tables: tuple[str, ...]) -> None:
        """Cover another module's tables (e.g. the progressive ledger's) by digests."""
        with self.transaction() as db:
            critical.protect(db, self.key, tables)

    def verify(self, *, full: bool = False, chain_limit: int | None = None,
               progress: Callable[[int], None] | None = None) -> critical.Verified:
        """The critical-memory check (controller.memory.check.verify_store) on this store."""
        try:
            return critical.verify_store(
                self._log_read(), self.key,
                anchor_path=self.paths.anchor if self.paths else None,
                full=full, chain_limit=chain_limit, progress=progress)
        except STORE_ERRORS as exc:
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
        try:  # a store the daemon closes ends sealed (C29): an entry removed later is found
            self._steps.seal_owed()
        except Exception as exc:  # noqa: BLE001 - goes on; the check accepts the tail as it is
            log.error("store_seal_at_close_failed", error=str(exc))
        self._delivery.close()  # what is held is flushed: its waiters are answered
        self._durability.close()  # the last durable commit's anchor, before the store
        self._db.close()

    # --- transactions ---------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        """A step is open: what is written now commits with it (or rolls back with it)."""
        return self._steps.open

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One atomic step (steps.py); nested use joins the open one (a card's nests several)."""
        return self._steps.transaction()

    def step(self) -> AbstractContextManager[object]:
        """A step for a caller that writes only through this store's methods (the table's
        step): one whose entries all may wait is held in memory (`Steps.lazily`, C31)."""
        return self._steps.lazily()

    def hold_when(self, allowed: Callable[[], bool] | None) -> None:
        """A step's entries may wait in memory only while `allowed()`, never with None
        (`Steps.hold_when`): the daemon allows it while its shoe keeps its cards (C31)."""
        self._steps.hold_when(allowed)

    def reading(self) -> AbstractContextManager[sqlite3.Connection]:
        """The connection for reads, never a step of its own (`Steps.reading`)."""
        return self._steps.reading()

    def before_commit(self, name: str, write: Callable[[], None]) -> None:
        """Run ``write`` once, as the last thing of the current step before it commits (the
        last call for a ``name`` wins); outside a step, at once in a step of its own. A record
        that a step rewrites at every stage (the table's saved state: each card and each
        state change asks for it) is written once, as the step leaves it."""
        if not self._steps.open:
            with self.transaction():
                write()
            return
        self._steps.hooks[name] = write

    def after_step(self, work: Callable[[], None]) -> None:
        """Run `work` once the current step has ended (committed or rolled back; with group
        commit, once its flush is on its way): what only tells of it, while the disk works."""
        if self._steps.open:
            self._steps.after.append(work)
        else:
            self._delivery.later([work])

    def on_durable_commit(self, listener: Callable[[critical.Seal, sqlite3.Connection], None]
                          ) -> None:
        """`listener` is given each flush's last seal (with group commit, none while commits
        are held behind it: their flush gives its own) and this connection, once what it
        covers is given out, on the writer's thread: it must not block (the witness's heads,
        controller/witness/link.py, only take a digest and hand the head to their thread)."""
        self._delivery.durable_listeners.append(listener)

    def group_commits(self, loop: asyncio.AbstractEventLoop, *, flush_in: str) -> None:
        """From now on, money steps share flushes (group commit, controller/memory/delivery.py),
        run where `flush_in` says ([store] flush_in, docs/rulings.md C30), their entries given
        out only once flushed: the daemon, once its loop runs. `when_durable` says when."""
        self._delivery.group_on(loop, flush_in)

    def when_durable(self, waiter: Callable[[BaseException | None], None]) -> None:
        """`waiter` is called (with None) once every commit made so far is on the disk and
        given out, at once if nothing is held; with the error if their flush failed. A
        reply that reports a step waits for it (the control socket's replies)."""
        self._delivery.when_durable(waiter)

    @property
    def durability(self) -> Durability:
        """Its flushes, grouped commits and checkpoints, counted (benchmarks print them)."""
        return self._durability

    def subscribe(self, listener: Callable[[Event], None], *,
                  after_each_commit: Callable[[], None] | None = None,
                  prepare: Callable[[Event], None] | None = None) -> Callable[[], None]:
        """`listener` is given every committed entry, in order; `after_each_commit`, once a
        commit's entries have all been given out (a socket writer sends them together);
        `prepare`, a held entry while a flusher thread flushes it (to encode it; tells no one)."""
        return self._delivery.subscribe(listener, after_each_commit, prepare)

    # --- event log ------------------------------------------------------------

    def append_event(self, record: EventRecord, *, severity: str | None = None,
                     device: str | None = None, round_id: int | None = None) -> Event:
        """Append one typed record (controller/events) to the hash chain, inside the
        current transaction (or its own): the only way code emits an event. Its payload is
        encoded here, once (`controller.events.entry_of`: anything but a catalogued record,
        a dict or a kind's name included, or a severity its kind does not have, is refused
        before anything is written; a record appended again is encoded once: entries.py)."""
        kind, chosen, payload, payload_json, payload_text = self._records.entry(record, severity)
        return self._steps.append(kind, chosen, device, round_id, payload, payload_json,
                                  payload_text)

    def append_entry(self, kind: str, payload: Mapping[str, Any] | None = None, *,
                     severity: str = "info", device: str | None = None,
                     round_id: int | None = None) -> Event:
        """The log's own append of a payload as given, unchecked: what `append_event` does
        once the record is encoded, and what tests of the chain's mechanics (MACs,
        durability, streaming) write with. Nothing in controller/ but the store calls it
        (tests/controller/test_event_catalogue.py)."""
        payload_json = critical.canonical(payload if type(payload) is dict else dict(payload or {}))
        return self._steps.append(kind, severity, device, round_id,
                                  as_read_back(payload, payload_json), payload_json)

    @property
    def log_seq(self) -> int:
        """The log's last entry's number (the open step's included)."""
        return self._seal.head()[0]

    def events(self, *, after_seq: int = 0, limit: int | None = None, kind: str | None = None,
               device: str | None = None, severity: str | None = None,
               since: float | None = None, oldest_first: bool = False) -> list[Event]:
        """Matching entries after `after_seq`, oldest first: the last `limit` of them, or
        with `oldest_first` the first `limit` (a reader pages forward that way)."""
        return schema.events(self._log_read(), after_seq=after_seq, limit=limit, kind=kind,
                             device=device, severity=severity, since=since,
                             oldest_first=oldest_first)

    def events_from(self, after_seq: int, count: int) -> list[Event]:
        """The first `count` entries after `after_seq`, oldest first: one page of a stream
        (`events(limit=)` gives the last ones instead)."""
        # Up to the last entry given out: one held for its flush is not reported yet.
        held = self._delivery.first_held_seq
        rows = self._log_read().execute("SELECT * FROM events WHERE seq > ? AND seq < ?"
                                        " ORDER BY seq LIMIT ?", (after_seq, held or 2**62, count))
        return [schema.event_of(row) for row in rows]

    def meta(self, key: str) -> str | None:
        """A value kept under `key` in the store's meta table (covered by its digests)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put_meta(self, key: str, value: str) -> None:
        """Keep `value` under `key`, inside the current step (or a step of its own)."""
        with self.transaction() as db:
            db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO"
                       " UPDATE SET value = excluded.value", (key, value))

    def write_unwritten(self) -> None:
        """Write the log's entries that wait in memory (steps.py), on this thread: before a
        read of the log on another connection (`reader`'s) that must see them."""
        self._steps.write_unwritten()

    def _log_read(self) -> sqlite3.Connection:
        """The connection for a read of the log: the entries waiting in memory written."""
        self._steps.write_unwritten()
        return self._db

    def reader(self) -> Store:
        """This store on a read-only connection of its own, for long reads (chain
        verification, large exports) run in a worker thread: the event loop's connection
        is never shared between threads. The caller closes it.

        The view is built afresh, not copied: it has no anchor writer, no critical paths
        and no listeners or pending writes of ours, so closing it stops nothing of this
        store's (a copy once shared the anchor's writer, and one read froze the anchor)."""
        return Store(self.path, clock=self._clock, key=self.key, create=False, check=False,
                     read_only=True)

    def verify_chain(self) -> int:
        """Recompute every entry's MAC from the first; returns the number of entries or
        raises IntegrityError naming the first entry where the chain breaks."""
        return critical.verify_chain(self._log_read(), self.key, 1, GENESIS_MAC)

    # --- table state ------------------------------------------------------------

    def save_table_state(self, state: str, data: Mapping[str, Any]) -> None:
        with self.transaction() as db:
            round_rows.save_table_state(
                db, state, state_json({**data, SAVED_AT_SEQ: self._seal.head()[0]}))

    def load_table_state(self) -> tuple[str, dict[str, Any]] | None:
        """The table's saved state as the table gave it (without the store's SAVED_AT_SEQ)."""
        saved = round_rows.saved_table_state(self._db)
        if saved is not None:
            saved[1].pop(SAVED_AT_SEQ, None)
        return saved

    def logged_after_saved_state(self, kind: str) -> list[dict[str, Any]]:
        """The payloads of the entries of `kind` logged after the table's state was last
        saved, oldest first: the steps whose changes their entries imply (a wager's)."""
        return round_rows.logged_after_saved_state(self._log_read(), kind)

    # --- rounds (controller/memory/rounds.py) ------------------------------------------------

    def open_round(self, shoe_no: int, round_no: int,
                   wagers: Sequence[Mapping[str, Any] | Payload], *,
                   simulated: bool = False) -> int:
        """A new open round, its wagers as objects or as the lock's entry's parts (their
        kept texts: part_texts.py). Its cards reach its row at `close_round`: while it is
        open each is in the log and in the saved state (`OPEN_ROUND_CARDS`)."""
        with self.transaction() as db:
            return round_rows.open_round(db, shoe_no, round_no, wagers, simulated, self._clock())

    def close_round(self, round_id: int, state: str,
                    result: Mapping[str, Any] | Payload | None,
                    settlements: Sequence[SettledWager], cards: Sequence[Mapping[str, Any]]
                    ) -> None:
        """Settle or void a round once, with its result (a part's kept text is written:
        part_texts.py), cards and settlements; never twice: a second attempt raises."""
        with self.transaction() as db:
            round_rows.close_round(db, round_id, state, result, settlements, cards, self._clock())

    def rounds(self, *, limit: int = 10, after_round_id: int | None = None
               ) -> list[dict[str, Any]]:
        """The last `limit` rounds, oldest first; with `after_round_id`, the first `limit`
        rounds after it instead (a reader pages through every round that way)."""
        return round_rows.rounds(self._log_read(), limit, after_round_id)

    def round(self, round_id: int) -> dict[str, Any] | None:
        return round_rows.one_round(self._log_read(), round_id)

    def open_rounds(self) -> list[dict[str, Any]]:
        return round_rows.open_rounds(self._log_read())

    def seat_totals(self) -> dict[int, dict[str, int]]:
        return round_rows.seat_totals(self._db)

    def collect_vigorish(self, seat: int) -> int:
        """631a.13(d)(2): marked vigorish collected; returns the cents collected."""
        with self.transaction() as db:
            if owed := round_rows.collect_vigorish(db, seat):
                self.append_event(VigorishCollected(seat, owed))
            return owed
