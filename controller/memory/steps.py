"""A store's steps: each one transaction, sealed, committed (flushed or grouped) and its
entries given out, or rolled back whole (`Store.transaction`; docs/architecture.md,
"Durable writes").

A step opened `lazily` (the table's, through `Store.step`) begins its transaction at its
first write that is not a log entry (a joined `transaction()`), or at its end if it must
be committed. One that only appends entries that may wait for the next flush (GROUPED_KINDS:
a card inside a round and its prompt) never begins one: its entries are given out at once
and wait in memory (`unwritten`) for the next step that writes, which writes them first, in
log order (docs/rulings.md C31); in the daemon, at the latest after a pause of
`WRITTEN_AFTER_S`. SQLite's statements, each run with the processor's caches
cold from the table's own code, were almost half of a card's step. A daemon that dies loses
them, as a power cut loses them when written but not flushed (C7, C29): a kind that may wait
is one whose loss the table recovers from. A read of the log writes them first
(`write_unwritten`), and so does the step that would hold the `UNWRITTEN_LIMIT`-th.

`Steps` is itself the step's context manager, and a nested step joins the open one through
a context made once: a generator's context manager cost every step 10,000 instructions,
and a card's step opens two (the table's and the store's).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from types import TracebackType
from typing import Any

from controller.memory.delivery import Delivery
from controller.memory.durability import Durability
from controller.memory.macs import MAC_TEXTS, entry_mac, float_text, keep_mac_json
from controller.memory.schema import Event
from controller.memory.sealing import StepSeal
from controller.memory.tables import GROUPED_KINDS

INSERT_ENTRY = ("INSERT INTO events(seq, at, kind, severity, device, round_id, payload,"
                " prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)")
_INSERT_NO_DEVICE = INSERT_ENTRY.replace("(?,?,?,?,?,", "(?,?,?,?,NULL,")  # device: the fifth
# Event(...) without the named tuple's __new__, a Python function: the same tuple, two a card.
_new_event = partial(tuple.__new__, Event)
UNWRITTEN_LIMIT = 64
"""The most entries that wait in memory: a round's cards and prompts are a dozen; a
chattering seat sensor's changes, also kinds that may wait, are written every 64."""
WRITTEN_AFTER_S = 0.05
"""In the daemon (group commit's loop), the entries that wait are written in a step of their
own once this long has passed with no step writing them first: in the pause after a card at
a dealer's pace (a card a second at most), where the write delays nothing, so a daemon that
dies loses at most the last 50 ms of them; cards that come faster (a burst, the benchmarks)
share the next step's write."""

Row = tuple[int, float, str, str, str | None, int | None, str, str, str]
"""An entry's row as INSERT_ENTRY writes it."""


class Steps:
    """The steps of one store's writing connection (the event loop's thread's only)."""

    def __init__(self, db: sqlite3.Connection, seal: StepSeal, durability: Durability,
                 delivery: Delivery, *, key: bytes, clock: Callable[[], float]) -> None:
        self._db = db
        self._key = key
        self._clock = clock
        self.writes = db.cursor()  # the steps' own statements: no cursor made for each
        self._seal = seal
        self._durability = durability
        self._delivery = delivery
        self.open = False
        self.must_flush = True  # what the open step records must be flushed before it is out
        self.pending: list[Event] = []  # the open step's entries
        self.hooks: dict[str, Callable[[], None]] = {}  # `Store.before_commit`'s
        self.after: list[Callable[[], None]] = []  # `Store.after_step`'s
        self._as_is = nullcontext(db)  # hands the connection over, and does nothing else
        self._joined = _Joined(self)
        self._lazy = _Lazy(self)
        self.begun = False  # the open step's transaction has begun
        self.unwritten: list[Row] = []  # entries appended, not yet written (oldest first)
        # The list the open step began with, and how many of its rows were there then (its
        # own appends follow): a rollback keeps those, and only those.
        self._began_with: list[Row] = []
        self._carried = 0
        self._write_timer: asyncio.TimerHandle | None = None  # `_write_after_a_pause`'s
        self.hold_when(_always)

    def hold_when(self, allowed: Callable[[], bool] | None) -> None:
        """A step's entries may wait in memory only while `allowed()`; never with None, nor
        with `[store] seal_every_step`, which writes and seals every step."""
        self._may_hold = _never if allowed is None or self._seal.every_step else allowed

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """A new step (its transaction begun), or the open one joined: nested use begins the
        open step's transaction if it has not begun (whoever joins it writes) and hands over
        the connection."""
        return self._joined if self.open else self

    def reading(self) -> AbstractContextManager[sqlite3.Connection]:
        """The connection for reads: in a step, the step's (its writes are seen), or outside
        any step the connection itself, each statement reading what is committed. Never a
        step of its own, which would take the write lock to commit nothing: a progressive
        table reads its meters after every device event (35-40 us a read). A read of the
        log's entries calls `write_unwritten` first."""
        return self._as_is

    def begin(self) -> None:
        """Begin the open step's transaction, if it has not begun: the entries waiting in
        memory are written first, those earlier steps appended (not this step's own writes,
        for its seal and its flush) and then its own."""
        if self.begun:
            return
        self.writes.execute("BEGIN IMMEDIATE")
        self.begun = True
        self._seal.begin(keep_head=bool(self.unwritten))
        if self.unwritten:
            self.writes.executemany(INSERT_ENTRY, self.unwritten)
            self._seal.written_before_begin(self._carried, len(self.unwritten) - self._carried)
            self.unwritten = []

    def append(self, kind: str, severity: str, device: str | None, round_id: int | None,
               payload: dict[str, Any], payload_json: str, payload_text: str | None = None
               ) -> Event:
        """One entry on the log's chain, in the open step (or one of its own): written, or
        waiting in memory while the step has not begun. `payload_text`: the payload's JSON
        as a JSON string, if the caller has it (`macs.entry_material` writes it so)."""
        if not self.open:
            with self:
                return self.append(kind, severity, device, round_id, payload, payload_json,
                                   payload_text)
        if kind not in GROUPED_KINDS:
            self.must_flush = True
        seal = self._seal
        if not self.begun and not seal.head_known():
            self.begin()  # the head is read in a transaction, after data_version's check
        seq, prev = seal.head()
        seq += 1
        at = float(self._clock())  # SQLite gives REAL back: hash what it will return
        mac_texts = MAC_TEXTS  # local: an imported name's method call makes a bound method
        digest = entry_mac(self._key, prev, seq, at, kind, severity, device, round_id,
                           payload_json, at_text=float_text(at), payload_text=payload_text,
                           prev_text=mac_texts.get(prev))
        keep_mac_json(digest)
        if not self.begun:  # written by the next step that writes
            self.unwritten.append((seq, at, kind, severity, device, round_id, payload_json,
                                   prev, digest))
        elif device is None:  # NULL written out: None bound costs sqlite3 an adapter lookup
            self.writes.execute(_INSERT_NO_DEVICE, (seq, at, kind, severity, round_id,
                                                    payload_json, prev, digest))
        else:
            self.writes.execute(INSERT_ENTRY, (seq, at, kind, severity, device, round_id,
                                               payload_json, prev, digest))
        seal.appended(seq, digest)
        event = _new_event((seq, at, kind, severity, device, round_id, payload, prev, digest,
                            payload_json))
        self.pending.append(event)
        return event

    def write_unwritten(self) -> None:
        """Write the entries waiting in memory: in the open step's transaction, or in a step
        of its own (a read of the log sees them then)."""
        if not self.unwritten:
            return
        if self.open:
            self.begin()
        else:
            with self:
                self.begin()

    def lazily(self) -> AbstractContextManager[object]:
        """A new step whose transaction begins only when something writes in it other than
        a log entry (a nested `transaction()`, a read of the log) or at its end if it must
        be committed, or the open step joined: for a caller that writes only through the
        store's methods (the table's step), which is what lets a card's step wait in memory.
        Joined, the open step is left as it is: begun if it has begun, lazy if it is lazy."""
        return self._as_is if self.open else self._lazy

    def __enter__(self) -> sqlite3.Connection:
        self.open_step()
        self.begin()  # the caller may write through the connection it is given
        return self._db

    def open_step(self) -> None:
        self.open = True
        self.begun = False
        self.must_flush = False
        self._began_with, self._carried = self.unwritten, len(self.unwritten)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        """Rolled back if the step's body raised (its exception goes on); else its hooks
        run, it is sealed, committed and its entries given out."""
        if kind is not None:
            self._roll_back()
            return
        try:
            while self.hooks:  # a hook may ask for another: run until none is left
                self.hooks.pop(next(iter(self.hooks)))()
            if not self.begun and not self.must_flush and self._may_hold() and \
                    len(self.unwritten) < UNWRITTEN_LIMIT:
                self._hold()  # only entries that may wait: no transaction at all
                return
            self.begin()
            # A step that records nothing but writes is flushed too: only a known kind may
            # wait, and a step that may wait is sealed by the next one that may not
            # (sealing.py). One that wrote nothing has nothing to flush or seal.
            must_flush = self.must_flush or (not self.pending and self._seal.wrote)
            seal = self._seal.seal(may_wait=not must_flush)  # in the same transaction
        except BaseException:
            self._roll_back()
            raise
        delivery = self._delivery
        try:
            flushed = self._durability.commit(must_flush and not (
                delivery.grouping and (must_flush or delivery.holding)))
        except BaseException:
            self._seal.forget()  # a COMMIT that failed may or may not have reached the file
            raise
        self._seal.committed(seal)
        self.open = False
        pending, self.pending = self.pending, []
        delivery.committed(pending, seal, flushed=flushed, must_flush=must_flush)
        if self.after:  # tested by the caller: nearly every card's step leaves nothing
            self._hand_over_after()

    def _hold(self) -> None:
        """The end of a step whose entries all wait in memory: given out as a grouped
        commit's are, and owed a seal by the step that writes them (sealing.py). One that
        appended nothing (a device event that changed nothing) owes nothing."""
        if self.pending:
            self._seal.owe()
        self.open = False
        pending, self.pending = self.pending, []
        self._delivery.committed(pending, None, flushed=False, must_flush=False)
        if self.after:
            self._hand_over_after()
        loop = self._delivery.loop
        if loop is not None and self.unwritten and self._write_timer is None:
            self._write_timer = loop.call_later(WRITTEN_AFTER_S, self._write_after_a_pause)

    def _write_after_a_pause(self) -> None:
        """WRITTEN_AFTER_S after a step left entries waiting: write those still waiting (none
        if a step wrote them meanwhile; nothing once the store has closed)."""
        self._write_timer = None
        if self._delivery.loop is not None:
            self.write_unwritten()

    def seal_owed(self) -> None:
        """Seal the log's entries that no seal covers yet, in a step of its own that must be
        flushed (so `StepSeal.seal` seals it, writing nothing else); nothing if none is owed."""
        if self._seal.owed and not self.open:  # entries that wait in memory are owed too
            with self:
                self.must_flush = True

    def _hand_over_after(self) -> None:
        """After the step's commit (and its flush's start, which `committed` scheduled
        first) or its rollback: what it left for later (`Store.after_step`), when it left
        something."""
        after, self.after = self.after, []
        self._delivery.later(after)

    def _roll_back(self) -> None:
        """Nothing of the step is kept: its transaction rolled back, its entries waiting in
        memory dropped; those it began with wait on (the log's head back to their last)."""
        if self.begun:
            self._db.execute("ROLLBACK")
        self.unwritten = self._began_with[:self._carried]
        last = self.unwritten[-1] if self.unwritten else None
        self._seal.forget(head=None if last is None else (last[0], last[8]))
        self.pending.clear()
        self.hooks.clear()
        self.open = False
        if self.after:  # a journal's lines of a step that failed are written too
            self._hand_over_after()


def _always() -> bool:
    return True


def _never() -> bool:
    return False


class _Joined:
    """The open step joined by a nested `transaction()`: whoever joins it writes, so its
    transaction begins (`Steps.begin`)."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Steps) -> None:
        self._steps = steps

    def __enter__(self) -> sqlite3.Connection:
        steps = self._steps
        if not steps.begun:
            steps.begin()
        return steps.writes.connection

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        return None


class _Lazy:
    """`Steps.lazily`'s new step: opened without its transaction, ended as any step."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Steps) -> None:
        self._steps = steps

    def __enter__(self) -> None:
        self._steps.open_step()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._steps.__exit__(kind, error, trace)
