"""A store's steps: each one transaction, sealed, committed (flushed or grouped) and its
entries given out, or rolled back whole (`Store.transaction`; docs/architecture.md,
"Durable writes").

`Steps` is itself the step's context manager, and a nested step joins the open one through
a context made once: a generator's context manager cost every step 10,000 instructions,
and a card's step opens two (the table's and the store's).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType

from controller.memory.delivery import Delivery
from controller.memory.durability import Durability
from controller.memory.schema import Event
from controller.memory.sealing import StepSeal


class Steps:
    """The steps of one store's writing connection (the event loop's thread's only)."""

    def __init__(self, db: sqlite3.Connection, seal: StepSeal, durability: Durability,
                 delivery: Delivery) -> None:
        self._db = db
        self.writes = db.cursor()  # the steps' own statements: no cursor made for each
        self._seal = seal
        self._durability = durability
        self._delivery = delivery
        self.open = False
        self.must_flush = True  # what the open step records must be flushed before it is out
        self.pending: list[Event] = []  # the open step's entries
        self.hooks: dict[str, Callable[[], None]] = {}  # `Store.before_commit`'s
        self.after: list[Callable[[], None]] = []  # `Store.after_step`'s
        self._joined = nullcontext(db)

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """A new step, or the open one joined: nested use only hands over the connection."""
        return self._joined if self.open else self

    def reading(self) -> AbstractContextManager[sqlite3.Connection]:
        """The connection for reads: the open step's, joined (its writes are seen), or
        outside any step the connection itself, each statement reading what is committed.
        Never a step of its own, which would take the write lock to commit nothing: a
        progressive table reads its meters after every device event (35-40 us a read)."""
        return self._joined

    def __enter__(self) -> sqlite3.Connection:
        self.writes.execute("BEGIN IMMEDIATE")
        self._seal.begin()
        self.open = True
        self.must_flush = False
        return self._db

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

    def seal_owed(self) -> None:
        """Seal the log's entries that no seal covers yet, in a step of its own that must be
        flushed (so `StepSeal.seal` seals it, writing nothing else); nothing if none is owed."""
        if self._seal.owed and not self.open:
            with self:
                self.must_flush = True

    def _hand_over_after(self) -> None:
        """After the step's commit (and its flush's start, which `committed` scheduled
        first) or its rollback: what it left for later (`Store.after_step`), when it left
        something."""
        after, self.after = self.after, []
        self._delivery.later(after)

    def _roll_back(self) -> None:
        self._seal.forget()
        self._db.execute("ROLLBACK")
        self.pending.clear()
        self.hooks.clear()
        self.open = False
        if self.after:  # a journal's lines of a step that failed are written too
            self._hand_over_after()
