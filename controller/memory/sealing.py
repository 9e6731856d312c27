"""Each step's seal, from what the store's own connection last committed.

A step re-seals what it wrote in the same transaction (controller/memory/digests.py,
`reseal`). To seal, it needs the log's head, the seal's commit counter and the protected
tables' digests; `StepSeal` keeps them as this connection's last commit left them, so a
step does not read them back. They hold until a step of ours rolls back or another
connection commits (SQLite's data_version says so); either forgets them and the next step
reads. The digests also hold while our steps only append log entries (the log has no
digest triggers), which is every card that does not save the table's state.
"""

from __future__ import annotations

import sqlite3

from controller.memory.digests import Seal, digests, log_head, reseal
from controller.memory.macs import digests_material


class StepSeal:
    """The seal of the step in progress on one writing connection."""

    def __init__(self, db: sqlite3.Connection, key: bytes) -> None:
        self._db = db
        self._cursor = db.cursor()  # one for every step's reads and seal, not one each time
        self._key = key
        self._log_head: tuple[int, str] | None = None
        self._commit_no: int | None = None
        self._digests: list[tuple[str, str, int, str]] | None = None
        self._digests_text = ""  # their part of the seal's material, while they hold
        self._appended = 0  # log entries appended by the step in progress
        self._changes = 0  # the connection's total_changes when the step began
        self._data_version = -1

    def begin(self) -> None:
        """A step began (its BEGIN IMMEDIATE ran)."""
        version = self._cursor.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:  # another connection committed since our last step
            self.forget()
            self._data_version = version
        self._appended = 0
        self._changes = self._db.total_changes

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

    def seal(self) -> Seal | None:
        """Re-seal what this step wrote, just before its COMMIT (a step that only read
        seals nothing)."""
        written = self._db.total_changes - self._changes  # trigger writes count too
        if not written:
            return None
        if written != self._appended:  # a row besides the log's: digests moved
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

    def forget(self) -> None:
        """A step that did not commit leaves nothing it wrote to be trusted: the log's head,
        the commit counter and the digests are read from the store again."""
        self._log_head = self._commit_no = self._digests = None
