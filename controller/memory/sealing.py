"""Each step's seal, from what the store's own connection last committed.

A step re-seals what it wrote in the same transaction (controller/memory/digests.py,
`reseal`). To seal, it needs the log's head, the seal's commit counter and the protected
tables' digests; `StepSeal` keeps them as this connection's last commit left them, so a
step does not read them back. They hold until a step of ours rolls back or another
connection commits (SQLite's data_version says so); either forgets them and the next step
reads. The digests also hold while our steps only append log entries (the log has no
digest triggers).

A step that only appends entries of kinds that may wait for the next flush (GROUPED_KINDS:
a card inside a round and its prompt) is not sealed at all: the next step that must be
flushed seals the log's head with it, so every flush that something is reported or
acknowledged on (a money step's, the shoe's `CardsCommitted`, the witness's heads, the
anchor) covers a seal over all it holds. Such an unsealed tail is what a power cut may
lose anyway (ruling C7): a store whose tail is gone, even one a checkpoint or the system's
writeback had put on the disk, is the store a power cut just before that tail would have
left. So the check accepts one, chain-checked and of those kinds only, and the store seals
it when it opens and when it closes (docs/rulings.md C29). Not sealing a card saves its
seal's MAC and the seal row's write: a sixth of a card's instructions.
"""

from __future__ import annotations

import sqlite3

from controller.memory.digests import Seal, digests, log_head, reseal
from controller.memory.macs import digests_material


class StepSeal:
    """The seal of the step in progress on one writing connection."""

    def __init__(self, db: sqlite3.Connection, key: bytes, *, every_step: bool = False) -> None:
        """``every_step``: seal every step that writes, a step that may wait for the next
        flush too (`[store] seal_every_step`; docs/rulings.md C29 lets such a step wait)."""
        self._db = db
        self._every_step = every_step
        self._cursor = db.cursor()  # one for every step's reads and seal, not one each time
        self._key = key
        self._log_head: tuple[int, str] | None = None
        self._commit_no: int | None = None
        self._digests: list[tuple[str, str, int, str]] | None = None
        self._digests_text = ""  # their part of the seal's material, while they hold
        self._appended = 0  # log entries appended by the step in progress
        self._changes = 0  # the connection's total_changes when the step began
        self._data_version = -1
        self.owed = False  # log entries of ours (or found at open) that no seal covers yet

    def begin(self, *, keep_head: bool = False) -> None:
        """A step's transaction began (its BEGIN IMMEDIATE ran). `keep_head`: entries of
        ours wait in memory (steps.py), chained to the head this connection knows."""
        version = self._cursor.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:  # another connection committed since our last step
            # The log's head stays ours while entries of ours wait to be written: they
            # follow it, and the check judges whatever the other connection wrote.
            self.forget(head=self._log_head if keep_head else None)
            self._data_version = version
        self._appended = 0
        self._changes = self._db.total_changes

    @property
    def every_step(self) -> bool:
        """`[store] seal_every_step`: every step that appends is written and sealed."""
        return self._every_step

    def head_known(self) -> bool:
        """The log's head is this connection's own (else `head` reads it, in a transaction)."""
        return self._log_head is not None

    def head(self) -> tuple[int, str]:
        """The log's last entry (seq, MAC) in the step in progress: this connection's own
        if it holds, else read."""
        if self._log_head is None:
            self._log_head = log_head(self._db)
        return self._log_head

    def appended(self, seq: int, mac: str) -> None:
        """The step appended this log entry."""
        self._log_head = (seq, mac)
        self._appended += 1

    def written_before_begin(self, carried: int, own: int) -> None:
        """The step in progress, just begun, wrote the entries that waited in memory
        (steps.py): `carried` that earlier steps appended, not its own writes (for `wrote`
        and its seal), and `own` it appended itself before its transaction began."""
        self._changes += carried
        self._appended += own

    def owe(self) -> None:
        """The log holds entries no seal covers (the check found them at open, or a step
        left its entries waiting in memory, steps.py): the next step that writes seals
        them, or `Steps.seal_owed`'s."""
        self.owed = True

    @property
    def wrote(self) -> bool:
        """The step in progress wrote something (a trigger's write counts too)."""
        return self._db.total_changes != self._changes

    def seal(self, *, may_wait: bool) -> Seal | None:
        """Re-seal what this step wrote, just before its COMMIT. A step that `may_wait` for
        the next flush and wrote only log entries (GROUPED_KINDS), or nothing, is not sealed:
        the next step that may not wait seals them, even one that wrote nothing itself
        (`Steps.seal_owed`'s), so every flushed step carries a seal over what it flushes."""
        written = self._db.total_changes - self._changes  # trigger writes count too
        if written == self._appended:  # only log entries, if anything: the digests hold
            if may_wait and not self._every_step:
                self.owed = self.owed or bool(written)
                return None
            if not written and not self.owed:
                return None
        else:  # a row besides the log's: digests moved
            self._digests = None
        if self._digests is None:
            self._digests = digests(self._db)
            self._digests_text = digests_material(self._digests)
        return reseal(self._db, self._key, last_commit_no=self._commit_no,
                      head=self._log_head, table_digests=self._digests,
                      digests_text=self._digests_text, writes=self._cursor)

    def committed(self, seal: Seal | None) -> None:
        if seal is not None:
            self._commit_no = seal.commit_no
            self.owed = False

    def forget(self, *, head: tuple[int, str] | None = None) -> None:
        """A step that did not commit leaves nothing it wrote to be trusted: the log's head
        (unless given: the last entry still waiting in memory), the commit counter and the
        digests are read from the store again."""
        self._log_head = head
        self._commit_no = self._digests = None
